# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# netns: the netlink library against the kernel in real network namespaces (root).
mizarmp_add_test(NAME netns_test SOURCES integration/netns_test.cc
                 LIBS mizarmp_netns mizarmp_common LABELS "netns;root;concurrency" TIMEOUT 120)
