# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# proto/ against the CSI-Addons spec as published (../shared/upstream/csi-addons-spec, the
# unmodified csi-addons/spec files; see its README): the descriptors of every service
# mizarmp-addons serves, and the messages and enums its RPCs reach, must match upstream's
# (tests/protos/compare_protos.py), and a mismatch planted in a copy must be reported. Skipped
# with the reason where the upstream directory is absent, never under CI=true. The Python gRPC
# tests (tests/python) drive every RPC through stubs generated from the same upstream files.
if(MIZARMP_PYTHON_GRPC)
  add_test(NAME upstream_protos
           COMMAND ${MIZARMP_PYTHON_GRPC} ${CMAKE_CURRENT_SOURCE_DIR}/protos/compare_protos.py
                   ${MIZARMP_PROTO_DIR} ${MIZARMP_UPSTREAM_PROTO_DIR})
  add_test(NAME upstream_protos_self_test
           COMMAND ${MIZARMP_PYTHON_GRPC} ${CMAKE_CURRENT_SOURCE_DIR}/protos/compare_protos.py
                   --self-test ${MIZARMP_PROTO_DIR} ${MIZARMP_UPSTREAM_PROTO_DIR})
  set_tests_properties(upstream_protos upstream_protos_self_test PROPERTIES
                       LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77
                       ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1")
endif()
