# Open vSwitch: the ovsdb library against a real ovsdb-server in a sandbox of its own
# (tests/support/ovs_sandbox.h; root for its network namespace).
mizarmp_add_test(NAME ovsdb_test SOURCES integration/ovsdb_test.cc
                 LIBS mizarmp_ovsdb mizarmp_common nlohmann_json::nlohmann_json
                 LABELS "ovs;root" TIMEOUT 120)
