# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# bench/report.py (what bench/run.sh renders bench/RESULTS.md with) on a committed, trimmed quick
# run: every section is there with the run's figures, the earlier run's come from
# bench/previous.json, and a driver that left no results reads "not measured" instead of a crash.
add_test(NAME bench_report
         COMMAND ${MIZARMP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/bench_report/test_report.py)
set_tests_properties(bench_report PROPERTIES LABELS unit TIMEOUT 120
                     ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
