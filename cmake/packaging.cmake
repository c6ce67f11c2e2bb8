# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Two Debian packages built by CPack from the install components of cmake/install.cmake:
#   mizarmp         (component plugin)
#   mizarmp-addons  (component addons)
# `cpack --config <build>/CPackConfig.cmake -B <dir>` writes them into <dir> (tests/package/
# does that in a scratch dir). Depends come from dpkg-shlibdeps over the binaries actually
# packaged, so they are right whether the plugin is linked dynamically or statically.

# MIZARMP_PACKAGE_VERSION: the top-level CMakeLists.txt says how it orders.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME mizarmp)
set(CPACK_PACKAGE_VERSION ${MIZARMP_PACKAGE_VERSION})
# The project has no mailing list or domain, so no address would reach its maintainers. The
# default says so in the address itself: .invalid is the top-level domain reserved (RFC 6761)
# for names that can never resolve, unlike a made-up domain someone could register. Whoever
# distributes the packages sets their own address here; it is the only place that names one.
set(MIZARMP_PACKAGE_MAINTAINER "mizarmp maintainers <maintainers@mizarmp.invalid>" CACHE STRING
    "The packages' Maintainer field and changelog signature: 'Name <address>'")
set(CPACK_PACKAGE_CONTACT "${MIZARMP_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_COMPONENTS_ALL plugin addons)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_VERSION ${MIZARMP_PACKAGE_VERSION})
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Release packages carry no debug info (build-pkg is RelWithDebInfo: 80 MB a binary otherwise).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS logrotate)

set(CPACK_DEBIAN_PLUGIN_PACKAGE_NAME mizarmp)
set(CPACK_DEBIAN_PLUGIN_PACKAGE_SECTION net)
# Each description: the synopsis, then the extended description's lines (CPack indents them).
set(CPACK_COMPONENT_PLUGIN_DESCRIPTION
    "CNI plugin for the Mizar-MP network\nThe mizarmp CNI plugin in /opt/cni/bin creates a Mizar-MP port per container\ninterface and configures the interface in the pod's network namespace.\nExample network configs are in /usr/share/doc/mizarmp/examples.")
set(MIZARMP_ADDONS_SUMMARY "CSI-Addons gRPC server for the Mizar-MP network")
set(CPACK_DEBIAN_ADDONS_PACKAGE_NAME mizarmp-addons)
set(CPACK_DEBIAN_ADDONS_PACKAGE_SECTION admin)
set(CPACK_COMPONENT_ADDONS_DESCRIPTION
    "${MIZARMP_ADDONS_SUMMARY}\nmizarmp-addons serves Identity, FenceController (controller mode) and\nEncryptionKeyRotationController (node mode) on a unix socket; systemd unit\nmizarmp-addons@controller.service or mizarmp-addons@node.service.\nmizarmpctl, the operator's command-line tool, asks nodes and servers.")
set(CPACK_DEBIAN_ADDONS_PACKAGE_SUGGESTS "logrotate, cryptsetup-bin")

# mizarmp_debian_control(COMPONENT PACKAGE TMPFILES LOG_GLOB UNITS PURGE_STATE CONFFILES...):
# makes the package's maintainer scripts from packaging/debian/*.in and its conffiles list,
# and hands them to CPack.
function(mizarmp_debian_control component package tmpfiles log_glob units purge_state)
  set(MZ_PACKAGE ${package})
  set(MZ_TMPFILES ${tmpfiles})
  set(MZ_LOG_GLOB ${log_glob})
  set(MZ_UNITS "${units}")
  set(MZ_PURGE_STATE ${purge_state})
  set(dir ${PROJECT_BINARY_DIR}/packaging/${package})
  set(extra "")
  foreach(script postinst prerm postrm)
    configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/${script}.in ${dir}/${script} @ONLY
                   FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
                   GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    list(APPEND extra ${dir}/${script})
  endforeach()
  # Every file under /etc: dpkg keeps an operator's edits on upgrade and removes them on purge.
  list(JOIN ARGN "\n" conffiles)
  file(WRITE ${dir}/conffiles "${conffiles}\n")
  list(APPEND extra ${dir}/conffiles)
  string(TOUPPER ${component} upper)
  set(CPACK_DEBIAN_${upper}_PACKAGE_CONTROL_EXTRA "${extra}" PARENT_SCOPE)
endfunction()

mizarmp_debian_control(plugin mizarmp mizarmp.conf "mizarmp.log*" "" no
                       ${MIZARMP_LOGROTATE_DIR}/mizarmp)
# The units are the template's two instances, the only modes there are: deb-systemd-invoke
# takes unit names, not the glob systemctl would.
mizarmp_debian_control(addons mizarmp-addons mizarmp-addons.conf "mizarmp-addons*.log*"
                       "mizarmp-addons@controller.service mizarmp-addons@node.service" yes
                       ${MIZARMP_CONFIG_DIR}/mizarmp-addons-controller.json
                       ${MIZARMP_CONFIG_DIR}/mizarmp-addons-node.json
                       ${MIZARMP_LOGROTATE_DIR}/mizarmp-addons)

include(cmake/package_docs.cmake)
include(CPack)
