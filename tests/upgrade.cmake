# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# Upgrades that keep state: each earlier release's fence store (tests/upgrade/fixtures/, written
# by tests/upgrade/make_fixtures.sh) opened by today's FenceService, in SQLite and in a real etcd
# member on loopback, against the in-process strict Alcor mock (no root).
mizarmp_add_test(NAME upgrade_test SOURCES integration/upgrade_test.cc
                 LIBS mizarmp_fence mizarmp_mock sqlite3 LABELS integration TIMEOUT 120)
