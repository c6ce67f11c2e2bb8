# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# cni: the CNI protocol pieces and the errors module (unit), and the plugin's commands run
# in-process (cni::Run) against the in-process mock over loopback with its agent disabled
# (integration; no root, no netns).
foreach(t attachment config env version result errors)
  mizarmp_add_test(NAME cni_${t}_test SOURCES unit/cni_${t}_test.cc
                   LIBS mizarmp_cni LABELS unit)
endforeach()
mizarmp_add_test(NAME cni_commands_test SOURCES integration/cni_commands_test.cc
                 LIBS mizarmp_cni mizarmp_mock LABELS "integration;concurrency")
