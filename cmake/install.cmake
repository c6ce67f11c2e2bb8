# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Where `cmake --install` and the Debian packages (cmake/packaging.cmake) put each file; README.md
# "Install" has the same table. Two components, one per package:
#   plugin  -> mizarmp:        the CNI plugin and the example network configs
#   addons  -> mizarmp-addons: the server, its default configs, the systemd unit, tmpfiles,
#                              logrotate, and mizarmpctl (the operator CLI links gRPC, which the
#                              static plugin's package does not depend on)
# mizarmp-mock, mizarmp-addons-testhooks, the tests, benchmarks and fuzz targets are never
# installed. The files systemd, logrotate and container runtimes look for are at absolute
# paths, since those programs look nowhere else (DESTDIR still applies); the unit and the
# maintainer scripts (packaging/) name the default paths below.
include(GNUInstallDirs)

set(MIZARMP_CNI_BIN_DIR "/opt/cni/bin" CACHE PATH
    "Where the CNI plugin is installed (container runtimes look in /opt/cni/bin)")
set(MIZARMP_CONFIG_DIR "/etc/mizarmp" CACHE PATH "mizarmp-addons' configuration directory")
set(MIZARMP_SYSTEMD_UNIT_DIR "/lib/systemd/system" CACHE PATH "systemd system unit directory")
set(MIZARMP_TMPFILES_DIR "/usr/lib/tmpfiles.d" CACHE PATH "systemd-tmpfiles configuration")
set(MIZARMP_LOGROTATE_DIR "/etc/logrotate.d" CACHE PATH "logrotate snippets")

set(mizarmp_packaging_dir ${PROJECT_SOURCE_DIR}/packaging)

# mizarmp: the plugin, where the runtime's CNI_PATH finds it, and the example network configs.
install(TARGETS mizarmp RUNTIME DESTINATION ${MIZARMP_CNI_BIN_DIR} COMPONENT plugin)
install(FILES ${PROJECT_SOURCE_DIR}/conf/mizarmp.conf ${PROJECT_SOURCE_DIR}/conf/mizarmp.conflist
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples COMPONENT plugin)
install(FILES ${mizarmp_packaging_dir}/tmpfiles.d/mizarmp.conf
        DESTINATION ${MIZARMP_TMPFILES_DIR} COMPONENT plugin)
install(FILES ${mizarmp_packaging_dir}/logrotate.d/mizarmp
        DESTINATION ${MIZARMP_LOGROTATE_DIR} COMPONENT plugin)

# mizarmp-addons: the server and one default config per mode (0600: an operator adds TLS and
# secret file names there), a templated unit and node mode's drop-in.
install(TARGETS mizarmp-addons mizarmpctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        COMPONENT addons)
install(FILES ${PROJECT_SOURCE_DIR}/conf/mizarmp-addons-controller.json
              ${PROJECT_SOURCE_DIR}/conf/mizarmp-addons-node.json
        DESTINATION ${MIZARMP_CONFIG_DIR} PERMISSIONS OWNER_READ OWNER_WRITE COMPONENT addons)
install(FILES ${mizarmp_packaging_dir}/systemd/mizarmp-addons@.service
        DESTINATION ${MIZARMP_SYSTEMD_UNIT_DIR} COMPONENT addons)
install(FILES ${mizarmp_packaging_dir}/systemd/mizarmp-addons@node.service.d/node.conf
        DESTINATION ${MIZARMP_SYSTEMD_UNIT_DIR}/mizarmp-addons@node.service.d COMPONENT addons)
install(FILES ${mizarmp_packaging_dir}/tmpfiles.d/mizarmp-addons.conf
        DESTINATION ${MIZARMP_TMPFILES_DIR} COMPONENT addons)
install(FILES ${mizarmp_packaging_dir}/logrotate.d/mizarmp-addons
        DESTINATION ${MIZARMP_LOGROTATE_DIR} COMPONENT addons)
