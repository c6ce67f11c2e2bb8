# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The plugin binary end to end in real network namespaces (root).
if(TARGET mizarmp)
  mizarmp_add_test(NAME plugin_netns_test SOURCES integration/plugin_netns_test.cc
    LIBS mizarmp_mock mizarmp_common nlohmann_json::nlohmann_json LABELS "netns;root;concurrency"
    TIMEOUT 300)
  add_dependencies(plugin_netns_test mizarmp mizarmp-mock)
endif()
# The plugin binary given hostile input (invalid UTF-8, deep nesting, oversized config): the CNI
# error JSON and nothing left behind, never a crash. Loopback mock, no root.
if(TARGET mizarmp)
  mizarmp_add_test(NAME plugin_hostile_test SOURCES integration/plugin_hostile_test.cc
    LIBS mizarmp_mock mizarmp_common nlohmann_json::nlohmann_json LABELS "integration;concurrency"
    TIMEOUT 120)
  add_dependencies(plugin_hostile_test mizarmp)
endif()
# Whether this build links the plugin statically (MIZARMP_STATIC_LINK on the target; sanitizer
# and fuzz builds link it dynamically).
if(TARGET mizarmp)
  get_target_property(mizarmp_is_static mizarmp MIZARMP_STATIC_LINK)
endif()
# The plugin binary run by hand: --version, no CNI_COMMAND (no server, no root). It names the
# libraries the build used (libnl's version header) and whether they are inside the file.
if(TARGET mizarmp)
  mizarmp_add_test(NAME plugin_by_hand_test SOURCES integration/plugin_by_hand_test.cc
    LIBS mizarmp_common PkgConfig::LIBNL LABELS integration TIMEOUT 60)
  add_dependencies(plugin_by_hand_test mizarmp)
  if(mizarmp_is_static)
    target_compile_definitions(plugin_by_hand_test PRIVATE MIZARMP_STATIC_PLUGIN)
  endif()
endif()
# The self-contained plugin in an otherwise empty root (root, netns): only when the build links
# it statically.
if(TARGET mizarmp)
  if(mizarmp_is_static)
    mizarmp_add_test(NAME plugin_self_contained_test
      SOURCES integration/plugin_self_contained_test.cc
      LIBS mizarmp_mock mizarmp_common nlohmann_json::nlohmann_json LABELS "netns;root" TIMEOUT 300)
    add_dependencies(plugin_self_contained_test mizarmp)
  endif()
endif()
