# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# README.md's command lines held to the programs' own --help (tests/readme/check_readme.py): a
# README that shows a subcommand or flag a program does not have fails, and the self-test plants
# one such mistake of each kind in a copy and fails unless each is reported.
set(MIZARMP_README_PROGRAMS
    --program mizarmpctl=$<TARGET_FILE:mizarmpctl>
    --program mizarmp-addons=$<TARGET_FILE:mizarmp-addons>
    --program mizarmp-mock=$<TARGET_FILE:mizarmp-mock>
    --program mizarmp-install=$<TARGET_FILE:mizarmp-install>)
add_test(NAME readme_commands
         COMMAND ${MIZARMP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/readme/check_readme.py
                 ${PROJECT_SOURCE_DIR}/README.md ${MIZARMP_README_PROGRAMS})
add_test(NAME readme_commands_self_test
         COMMAND ${MIZARMP_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/readme/check_readme.py --self-test
                 ${PROJECT_SOURCE_DIR}/README.md ${MIZARMP_README_PROGRAMS})
set_tests_properties(readme_commands readme_commands_self_test PROPERTIES
                     LABELS integration TIMEOUT 120)
