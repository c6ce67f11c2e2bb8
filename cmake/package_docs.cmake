# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# The documents each Debian package carries besides its programs (cmake/packaging.cmake includes
# this): the copyright file, the changelog, lintian's overrides, and the manual pages, which are
# written at build time from the built programs' --help so that they cannot drift from them.
# Every .gz is made with gzip -9n: best compression, and no name or time stamp inside, so the
# same sources give the same bytes.

find_program(MIZARMP_PYTHON3 NAMES python3 REQUIRED)
find_program(MIZARMP_GZIP gzip REQUIRED)

set(mizarmp_docs_dir ${PROJECT_BINARY_DIR}/packaging/docs)
set(mizarmp_debian_dir ${PROJECT_SOURCE_DIR}/packaging/debian)

# The changelog's date is the commit's, so a rebuild of one commit makes the same file.
execute_process(COMMAND git log -1 --format=%cD WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
                OUTPUT_VARIABLE MIZARMP_CHANGELOG_DATE OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET)
if(NOT MIZARMP_CHANGELOG_DATE)
  string(TIMESTAMP MIZARMP_CHANGELOG_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
endif()
# A version without a Debian revision makes a native package, whose changelog lintian expects
# as changelog.gz (changelog.Debian.gz is for a package of someone else's upstream release).
configure_file(${mizarmp_debian_dir}/changelog.in ${mizarmp_docs_dir}/changelog @ONLY)
add_custom_command(OUTPUT ${mizarmp_docs_dir}/changelog.gz
                   COMMAND ${MIZARMP_GZIP} -9nkf ${mizarmp_docs_dir}/changelog
                   DEPENDS ${mizarmp_docs_dir}/changelog VERBATIM)

# mizarmp_manual_page(TARGET SUMMARY): section 8 page TARGET.8.gz from `TARGET --help`.
set(mizarmp_manual_pages "")
function(mizarmp_manual_page target summary)
  set(page ${mizarmp_docs_dir}/${target}.8)
  add_custom_command(OUTPUT ${page}.gz
                     COMMAND ${MIZARMP_PYTHON3} ${PROJECT_SOURCE_DIR}/packaging/man/help_to_man.py
                             $<TARGET_FILE:${target}> ${target} 8 ${summary}
                             "mizarmp ${PROJECT_VERSION}" ${page}
                     COMMAND ${MIZARMP_GZIP} -9nf ${page}
                     DEPENDS ${target} ${PROJECT_SOURCE_DIR}/packaging/man/help_to_man.py
                     VERBATIM)
  set(mizarmp_manual_pages ${mizarmp_manual_pages} ${page}.gz PARENT_SCOPE)
endfunction()
mizarmp_manual_page(mizarmp-addons "${MIZARMP_ADDONS_SUMMARY}")
mizarmp_manual_page(mizarmpctl "operator's command-line tool for mizarmp nodes and servers")

add_custom_target(mizarmp_package_docs ALL
                  DEPENDS ${mizarmp_docs_dir}/changelog.gz ${mizarmp_manual_pages})

install(FILES ${mizarmp_manual_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man8 COMPONENT addons)
foreach(package_component mizarmp:plugin mizarmp-addons:addons)
  string(REPLACE ":" ";" package_component ${package_component})
  list(GET package_component 0 package)
  list(GET package_component 1 component)
  install(FILES ${mizarmp_debian_dir}/copyright ${mizarmp_docs_dir}/changelog.gz
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${package} COMPONENT ${component})
  install(FILES ${mizarmp_debian_dir}/lintian-overrides/${package}
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides COMPONENT ${component})
endforeach()
