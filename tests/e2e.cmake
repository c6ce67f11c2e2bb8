# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# End to end through a real container runtime: podman's CNI backend invokes the built mizarmp
# plugin (chained with the reference portmap plugin) against mizarmp-mock as controller and
# host agent. Needs root and podman: exits 77 (skipped) without them, fails under CI=true.
if(TARGET mizarmp AND TARGET mizarmp-mock)
  add_test(NAME podman_e2e
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/podman_e2e.sh ${PROJECT_BINARY_DIR}/bin)
  set_tests_properties(podman_e2e PROPERTIES LABELS "e2e;root" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()

# The deployment's images (scripts/images.sh) built offline with podman: the installer image
# replacing a running plugin, the mizarmp-addons image serving. Images carry the static plugin,
# which the sanitizer builds do not make.
if(MIZARMP_STATIC_PLUGIN AND TARGET mizarmp-install AND TARGET mizarmp-addons)
  add_test(NAME images_e2e
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/images_e2e.sh ${PROJECT_BINARY_DIR}/bin)
  set_tests_properties(images_e2e PROPERTIES LABELS "e2e;root" TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
