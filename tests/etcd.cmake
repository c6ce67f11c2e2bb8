# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# etcd/: the client (locations, TLS, users) and the leader election against real etcd members on
# loopback (tests/support/etcd_cluster.h).
mizarmp_add_test(NAME etcd_test SOURCES integration/etcd_test.cc
                 LIBS mizarmp_etcd LABELS "integration;concurrency" TIMEOUT 240)
