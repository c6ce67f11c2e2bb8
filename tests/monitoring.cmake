# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# deploy/monitoring/ (label monitoring; promtool from Debian's prometheus package): the rules
# load, their unit tests make each alert fire and resolve, the PrometheusRule is the rule file's
# copy, each alert has its runbook section, the dashboard's queries parse, and a live controller
# and node export every metric the rules, the dashboard and the unit tests name. A real prometheus
# scrapes mizarmp-mock (its target must be up) and a controller on a 3-member etcd cluster:
# Mizar-MP stops answering, then etcd loses quorum, and the matching alerts go pending, fire and
# resolve (their for: scaled down).
set(mizarmp_monitoring ${PROJECT_SOURCE_DIR}/deploy/monitoring)
set(mizarmp_monitoring_check ${MIZARMP_PYTHON3}
    ${CMAKE_CURRENT_SOURCE_DIR}/monitoring/check_monitoring.py)
add_test(NAME Monitoring.RulesLoad COMMAND promtool check rules ${mizarmp_monitoring}/rules.yml)
add_test(NAME Monitoring.RulesUnitTests
         COMMAND promtool test rules ${CMAKE_CURRENT_SOURCE_DIR}/monitoring/rules_test.yml)
add_test(NAME Monitoring.PrometheusRuleMatchesRuleFile
         COMMAND bash ${mizarmp_monitoring}/make-prometheusrule.sh --check)
add_test(NAME Monitoring.AlertsAnnotatedAndTested
         COMMAND ${mizarmp_monitoring_check} alerts ${PROJECT_SOURCE_DIR})
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/monitoring)
add_test(NAME Monitoring.DashboardQueriesParse
         COMMAND ${mizarmp_monitoring_check} dashboard ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/monitoring)
add_test(NAME Monitoring.MetricsExported
         COMMAND ${mizarmp_monitoring_check} live ${PROJECT_SOURCE_DIR}
                 $<TARGET_FILE_DIR:mizarmp-addons>)
add_test(NAME Monitoring.AlertsFireOnFaults
         COMMAND ${MIZARMP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/monitoring/alerts_live.py
                 ${PROJECT_SOURCE_DIR} $<TARGET_FILE_DIR:mizarmp-addons>)
set_tests_properties(Monitoring.RulesLoad Monitoring.RulesUnitTests
                     Monitoring.PrometheusRuleMatchesRuleFile Monitoring.AlertsAnnotatedAndTested
                     Monitoring.DashboardQueriesParse PROPERTIES LABELS monitoring TIMEOUT 60)
set_tests_properties(Monitoring.MetricsExported Monitoring.AlertsFireOnFaults
                     PROPERTIES LABELS "monitoring;integration" TIMEOUT 120)
