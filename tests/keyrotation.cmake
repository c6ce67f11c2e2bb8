# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# keyrotation/: LUKS2 key rotation on image files made with libcryptsetup (unit: the library,
# the service and both definitions of the test hooks in-process), the real server in node mode
# (integration: mizarmp-addons-testhooks killed after each rotation step; the production
# mizarmp-addons ignoring the hooks' variables), and the independent Python gRPC client.
# keyrot_test and keyrot_kubelet_test live in integration/: their cases with loop devices,
# device nodes and dm-crypt need root. They keep the label unit, which CI counts them by.
mizarmp_add_test(NAME keyrot_test SOURCES integration/keyrot_test.cc
                 LIBS mizarmp_keyrotation LABELS "unit;concurrency" TIMEOUT 180)
# keyrotation/kubelet.h: requests shaped like the CSI-Addons sidecar's (no volume_path) find the
# volume in kubelet's staging layout under a temporary kubelet root; loop devices as root.
mizarmp_add_test(NAME keyrot_kubelet_test SOURCES integration/keyrot_kubelet_test.cc
                 LIBS mizarmp_keyrotation LABELS unit TIMEOUT 180)
# keyrotation/secret.h: key material is overwritten when dropped. Links the core alone, which
# builds without gRPC.
mizarmp_add_test(NAME keyrot_secret_test SOURCES unit/keyrot_secret_test.cc
                 LIBS mizarmp_keyrotation_core LABELS unit)
mizarmp_add_test(NAME keyrot_hooks_test SOURCES unit/keyrot_hooks_test.cc
                 LIBS mizarmp_keyrotation_hooks_env LABELS unit)
mizarmp_add_test(NAME keyrot_hooks_none_test SOURCES unit/keyrot_hooks_none_test.cc
                 LIBS mizarmp_keyrotation_hooks_none LABELS unit)

# The crash and PBKDF hooks need mizarmp-addons-testhooks; the production checks mizarmp-addons.
mizarmp_add_test(NAME keyrot_server_test SOURCES integration/keyrot_server_test.cc
                 LIBS mizarmp_keyrotation LABELS "integration;concurrency" TIMEOUT 240)
add_dependencies(keyrot_server_test mizarmp-addons mizarmp-addons-testhooks)

# The Python client (MIZARMP_PYTHON_GRPC is found in tests/CMakeLists.txt); it runs
# mizarmp-addons-testhooks from MIZARMP_BIN_DIR for the cheap PBKDF hook.
mizarmp_add_python_test(NAME python_keyrotation MODULE test_keyrotation TIMEOUT 180)
