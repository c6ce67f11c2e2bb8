# The plugin binary end to end in real network namespaces (root).
if(TARGET mizarmp)
  mizarmp_add_test(NAME plugin_netns_test SOURCES integration/plugin_netns_test.cc
    LIBS mizarmp_mock mizarmp_common nlohmann_json::nlohmann_json LABELS "netns;root" TIMEOUT 300)
  add_dependencies(plugin_netns_test mizarmp mizarmp-mock)
endif()
