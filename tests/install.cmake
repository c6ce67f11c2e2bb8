# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# install/ and mizarmp-install: the conflist template, the files put in place by rename, and a
# plugin replaced while it runs.
mizarmp_add_test(NAME installer_test SOURCES integration/installer_test.cc
                 LIBS mizarmp_install mizarmp_common nlohmann_json::nlohmann_json
                 LABELS integration TIMEOUT 120)
add_dependencies(installer_test mizarmp-install)
