# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# kubelet's path (integration/cri_test.cc): Debian's containerd, isolated by
# tests/support/containerd.h and driven through the CRI runtime v1 API (proto/cri), runs pod
# sandboxes on the mizarmp network (the built plugin chained with portmap and bandwidth) against
# the mock. Root and network namespaces; skipped with the reason elsewhere, failing under CI=true.
if(TARGET mizarmp AND TARGET mizarmp-mock)
  # The sandbox image, built offline: a static pause program in a one-layer image archive.
  # Compiled with the C compiler alone, without the build's sanitizer or coverage flags: it runs
  # inside the pod, where no sanitizer runtime exists.
  set(mizarmp_cri_dir ${CMAKE_CURRENT_BINARY_DIR}/cri)
  set(mizarmp_cri_pause_image "localhost/mizarmp-pause:test")
  add_custom_command(
    OUTPUT ${mizarmp_cri_dir}/pause
    COMMAND ${CMAKE_COMMAND} -E make_directory ${mizarmp_cri_dir}
    COMMAND ${CMAKE_C_COMPILER} -static -O2 -Wall -Wextra -Werror -o ${mizarmp_cri_dir}/pause
            ${CMAKE_CURRENT_SOURCE_DIR}/cri/pause.c
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cri/pause.c
    COMMENT "pause (static) for the CRI test's sandbox image"
    VERBATIM)
  add_custom_command(
    OUTPUT ${mizarmp_cri_dir}/pause-image.tar
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cri/make_pause_image.sh ${mizarmp_cri_dir}/pause
            ${mizarmp_cri_dir}/pause-image.tar ${mizarmp_cri_pause_image}
    DEPENDS ${mizarmp_cri_dir}/pause ${CMAKE_CURRENT_SOURCE_DIR}/cri/make_pause_image.sh
    COMMENT "sandbox image archive ${mizarmp_cri_pause_image}"
    VERBATIM)
  add_custom_target(mizarmp_cri_pause_image DEPENDS ${mizarmp_cri_dir}/pause-image.tar)

  # The containerd fixture links gRPC and the CRI stubs, which the other tests do without.
  add_library(mizarmp_containerd_support STATIC support/containerd.cc)
  target_link_libraries(mizarmp_containerd_support PUBLIC mizarmp_testsupport mizarmp_proto)

  mizarmp_add_test(NAME cri_test SOURCES integration/cri_test.cc
    LIBS mizarmp_containerd_support mizarmp_mock mizarmp_common nlohmann_json::nlohmann_json
    LABELS "netns;root" TIMEOUT 300)
  target_compile_definitions(cri_test PRIVATE
    MIZARMP_CRI_PAUSE_IMAGE_ARCHIVE="${mizarmp_cri_dir}/pause-image.tar"
    MIZARMP_CRI_PAUSE_IMAGE="${mizarmp_cri_pause_image}")
  add_dependencies(cri_test mizarmp mizarmp-mock mizarmp_cri_pause_image)
  # The installer image carries the static plugin, which the sanitizer builds do not make: the
  # case that installs through it exists where the image can be built.
  if(MIZARMP_STATIC_PLUGIN AND TARGET mizarmp-install AND TARGET mizarmp-addons)
    target_compile_definitions(cri_test PRIVATE MIZARMP_CRI_INSTALLER_IMAGE=1)
    add_dependencies(cri_test mizarmp-install mizarmp-addons)
  endif()
endif()
