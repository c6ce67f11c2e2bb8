# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The Debian packages end to end (tests/package/package_test.sh): cpack in a scratch dir,
# apt-get install, files where README.md "Install" says, systemd-analyze verify, the installed
# server's Probe, the installed plugin's ADD/DEL through podman, apt-get purge, then an upgrade
# from a previous release that is this build packaged again with a lower version (no second
# compile: CI's time). Normal builds only: a sanitizer or fuzz build's binaries are not what
# gets packaged. Needs root and podman: exits 77 (skipped) without them, fails under CI=true.
# It installs into the system's /opt/cni/bin, /etc/mizarmp and /var/lib/mizarmp, which no
# other test uses (the podman e2e test runs the plugin from the build dir with its own CNI
# config dir), so it needs no resource lock.
if(NOT MIZARMP_SANITIZE AND NOT MIZARMP_TSAN AND MIZARMP_PYTHON_GRPC
   AND TARGET mizarmp AND TARGET mizarmp-addons AND TARGET mizarmp-mock)
  add_test(NAME package_deb
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/package/package_test.sh ${PROJECT_BINARY_DIR}
                   "${MIZARMP_PACKAGE_VERSION}" ${MIZARMP_PYTHON_GRPC})
  set_tests_properties(package_deb PROPERTIES LABELS "package;root" TIMEOUT 600
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK cpack)
  # The same packages under a booted systemd (tests/package/booted_test.sh): units start,
  # answer Probe, restart on upgrade, stop cleanly and go with a purge. Its own root, so it runs
  # beside package_deb; cpack of one build dir runs one at a time.
  add_test(NAME package_booted_systemd
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/package/booted_test.sh ${PROJECT_BINARY_DIR}
                   "${MIZARMP_PACKAGE_VERSION}")
  set_tests_properties(package_booted_systemd PROPERTIES LABELS "package;root" TIMEOUT 900
                       SKIP_RETURN_CODE 77 RESOURCE_LOCK cpack COST 500)
endif()
