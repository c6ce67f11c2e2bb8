# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
mizarmp_add_test(NAME common_test SOURCES unit/common_test.cc LIBS mizarmp_common
                 LABELS "unit;concurrency")
mizarmp_add_test(NAME log_test SOURCES unit/log_test.cc LIBS mizarmp_common LABELS unit)
mizarmp_add_test(NAME hex_test SOURCES unit/hex_test.cc LIBS mizarmp_common LABELS unit)
mizarmp_add_test(NAME json_fields_test SOURCES unit/json_fields_test.cc LIBS mizarmp_json_fields
                 LABELS unit)
# The plugin's outcome log: its format, bounded append and rotation, and a reader of hostile files.
mizarmp_add_test(NAME cni_outcome_log_test SOURCES unit/cni_outcome_log_test.cc LIBS mizarmp_common
                 LABELS unit)
