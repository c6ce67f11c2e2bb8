# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Open vSwitch: the ovsdb library against a real ovsdb-server in a sandbox of its own
# (tests/support/ovs_sandbox.h; root for its network namespace).
mizarmp_add_test(NAME ovsdb_test SOURCES integration/ovsdb_test.cc
                 LIBS mizarmp_ovsdb mizarmp_common nlohmann_json::nlohmann_json
                 LABELS "ovs;root" TIMEOUT 120)
# The strict Alcor mock as Alcor's host agent on OVS (Options::agent_ovsdb): ovsdb-server and
# ovs-vswitchd in a sandbox, taps in network namespaces.
mizarmp_add_test(NAME mock_ovs_agent_test SOURCES integration/mock_ovs_agent_test.cc
                 LIBS mizarmp_mock mizarmp_ovsdb mizarmp_netns mizarmp_common
                      nlohmann_json::nlohmann_json PkgConfig::HTTPLIB
                 LABELS "ovs;root;netns;concurrency" TIMEOUT 300)
# Plug mode: the plugin binary plugs pods into a sandboxed Open vSwitch itself, against the mock
# playing Alcor's controller and its agent on OVS (root: netns, OVS).
if(TARGET mizarmp)
  mizarmp_add_test(NAME plugin_ovs_test SOURCES integration/plugin_ovs_test.cc
    LIBS mizarmp_mock mizarmp_cni mizarmp_ovsdb mizarmp_common nlohmann_json::nlohmann_json
    LABELS "ovs;netns;root" TIMEOUT 300)
  add_dependencies(plugin_ovs_test mizarmp)
endif()
