# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The README's main command, scripts/demo.sh, in each of its three forms (plain, HA on etcd,
# Alcor on Open vSwitch) against this build's binaries, and once with a plugin that leaves an
# attachment record behind, which the demo must report by name (tests/demo/demo_test.sh).
# The demos share the host's bridge names and etcd ports, so they run one at a time; their cost
# (about 20 s each) starts them first, so that chain runs beside the other tests, not after them.
if(TARGET mizarmp AND TARGET mizarmp-mock AND TARGET mizarmp-addons AND TARGET mizarmpctl)
  foreach(demo plain ha alcor planted-record)
    string(REPLACE "-" "_" name "demo_${demo}")
    add_test(NAME ${name} COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/demo/demo_test.sh
                                  ${PROJECT_BINARY_DIR}/bin ${demo})
    set_tests_properties(${name} PROPERTIES LABELS "demo;e2e;root" TIMEOUT 300
                         SKIP_RETURN_CODE 77 RESOURCE_LOCK mizarmp_demo COST 20)
  endforeach()
  # The Alcor demo's node agent enforces its fence set in this host's own nftables table, which
  # the publication tests' in-process agents use and remove too.
  set_tests_properties(demo_alcor PROPERTIES RESOURCE_LOCK "mizarmp_demo;host_nftables")
endif()
