# mizarmp-client: JSON conversions (unit) and the REST client against the in-process mock
# (integration; loopback only, agent disabled, so no root needed).
mizarmp_add_test(NAME client_types_test SOURCES unit/client_types_test.cc
                 LIBS mizarmp_client LABELS unit)
mizarmp_add_test(NAME client_mock_test SOURCES integration/client_mock_test.cc
                 LIBS mizarmp_client mizarmp_mock PkgConfig::HTTPLIB
                 LABELS "integration;concurrency")
mizarmp_add_test(NAME tls_session_test SOURCES integration/tls_session_test.cc
                 LIBS mizarmp_client mizarmp_mock LABELS integration)
