# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# records/: the attachment records (write, read, list, lock) and the server's cached reader.
mizarmp_add_test(NAME records_test SOURCES unit/records_test.cc LIBS mizarmp_records LABELS unit)
mizarmp_add_test(NAME records_cache_test SOURCES unit/records_cache_test.cc
                 LIBS mizarmp_records LABELS unit)
