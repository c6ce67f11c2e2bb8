# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# ctl/ and mizarmpctl: the operator CLI checked against the plugin's records, the mock and a
# running mizarmp-addons.
if(TARGET mizarmpctl)
  mizarmp_add_test(NAME mizarmpctl_test SOURCES integration/mizarmpctl_test.cc
                   LIBS mizarmp_mock mizarmp_records mizarmp_common nlohmann_json::nlohmann_json
                   LABELS "netns;root" TIMEOUT 300)
  add_dependencies(mizarmpctl_test mizarmpctl mizarmp mizarmp-addons)
endif()
