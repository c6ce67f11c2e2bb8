# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# mizarmp-client: JSON conversions (unit) and the REST client against the in-process mock
# (integration; loopback only, agent disabled, so no root needed).
mizarmp_add_test(NAME client_types_test SOURCES unit/client_types_test.cc
                 LIBS mizarmp_client LABELS unit)
# The same tests with ParsePortList on nlohmann's parser, the one the static plugin links
# (mizarmp-client/port_list_reader.h); the binary above has simdjson's.
mizarmp_add_test(NAME client_types_nlohmann_test SOURCES unit/client_types_test.cc
                 LIBS mizarmp_client LABELS unit PREFIX "nlohmann/")
set_target_properties(client_types_nlohmann_test PROPERTIES MIZARMP_PORT_LIST_PARSER nlohmann)
mizarmp_add_test(NAME client_mock_test SOURCES integration/client_mock_test.cc
                 LIBS mizarmp_client mizarmp_mock PkgConfig::HTTPLIB
                 LABELS "integration;concurrency")
# The real controller generations as the strict mock plays them, and the client against them.
mizarmp_add_test(NAME strict_controllers_test SOURCES integration/strict_controllers_test.cc
                 LIBS mizarmp_client mizarmp_fence mizarmp_mock PkgConfig::HTTPLIB
                 LABELS "integration;concurrency")
mizarmp_add_test(NAME tls_session_test SOURCES integration/tls_session_test.cc
                 LIBS mizarmp_client mizarmp_mock LABELS integration)
