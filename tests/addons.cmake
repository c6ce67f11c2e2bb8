# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# mizarmp-addons: its configuration (unit), the server framework (addons/) over a real gRPC unix
# socket with the in-process mock and the binary as a subprocess (integration), and an
# independent Python gRPC client generating its stubs from proto/ at test time (python).
mizarmp_add_test(NAME addons_config_test SOURCES unit/addons_config_test.cc
                 LIBS mizarmp_addons_config LABELS unit)
# Identity, the server's socket handling, TLS-less TCP, reflection, and the binary's SIGTERM
# drain and exit codes.
mizarmp_add_test(NAME addons_identity_test SOURCES integration/addons_identity_test.cc
                 LIBS mizarmp_addons mizarmp_client_check mizarmp_mock
                 LABELS "integration;concurrency")
# The binary is what the subprocess tests run; mizarmpctl stands in for the csi-addons sidecar.
add_dependencies(addons_identity_test mizarmp-addons mizarmpctl)
# grpc.health.v1.Health (addons/health.h): Check, Watch, shutdown with open watches, no
# callback-queue threads, in process and in the binary.
mizarmp_add_test(NAME addons_health_test SOURCES integration/addons_health_test.cc
                 LIBS mizarmp_addons mizarmp_mock LABELS "integration;concurrency" TIMEOUT 120)
add_dependencies(addons_health_test mizarmp-addons)

# Identity and grpc.health.v1.Health through stubs generated from proto/: Check per mode, Watch,
# TLS, SIGTERM (MIZARMP_PYTHON_GRPC is found in tests/CMakeLists.txt).
mizarmp_add_python_test(NAME python_identity MODULE test_identity TIMEOUT 180)
mizarmp_add_python_test(NAME python_health MODULE test_health TIMEOUT 180)

# The real mizarmp-addons binary's metrics endpoint and its probes' health listener.
mizarmp_add_test(NAME addons_metrics_test SOURCES integration/addons_metrics_test.cc
                 LIBS mizarmp_mock mizarmp_client mizarmp_proto mizarmp_common PkgConfig::GRPCPP
                   nlohmann_json::nlohmann_json
                 LABELS "integration;concurrency" TIMEOUT 120)
add_dependencies(addons_metrics_test mizarmp-addons mizarmp)

# The plugin's outcome log as node-mode /metrics counts it (addons/cni_outcomes.h).
mizarmp_add_test(NAME cni_outcomes_component_test SOURCES unit/cni_outcomes_component_test.cc
                 LIBS mizarmp_addons LABELS unit)
