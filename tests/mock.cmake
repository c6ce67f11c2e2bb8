# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# mizarmp-mock: the controller at the HTTP level with a raw cpp-httplib client (loopback, no
# root), and its host agent in real network namespaces (root).
mizarmp_add_test(NAME mock_test SOURCES integration/mock_test.cc
                 LIBS mizarmp_mock mizarmp_client mizarmp_netns mizarmp_common
                      nlohmann_json::nlohmann_json PkgConfig::HTTPLIB
                 LABELS "integration;concurrency")
add_dependencies(mock_test mizarmp-mock)
mizarmp_add_test(NAME mock_agent_test SOURCES integration/mock_agent_test.cc
                 LIBS mizarmp_mock mizarmp_client mizarmp_netns mizarmp_common
                      nlohmann_json::nlohmann_json PkgConfig::HTTPLIB
                 LABELS "netns;root;concurrency" TIMEOUT 300)
