# SPDX-License-Identifier: Apache-2.0
# Copyright The mizarmp Authors
# fence/: CIDR parsing and merging and the enforcement plan (unit: no servers); the fence store
# contract per backend (SQLite, and etcd on a real etcd member on loopback: in integration/).
mizarmp_add_test(NAME fence_cidrset_test SOURCES unit/fence_cidrset_test.cc
                 LIBS mizarmp_fence_core LABELS unit)
mizarmp_add_test(NAME fence_store_test SOURCES integration/fence_store_test.cc
                 LIBS mizarmp_fence_etcd sqlite3 LABELS "integration;concurrency" TIMEOUT 180)
mizarmp_add_test(NAME fence_plan_test SOURCES unit/fence_plan_test.cc
                 LIBS mizarmp_fence_core LABELS unit)
# Which nodes a pass through the port index lists by host id, and the lease read it reuses.
mizarmp_add_test(NAME listed_nodes_test SOURCES unit/listed_nodes_test.cc
                 LIBS mizarmp_fence_core LABELS unit)
# What the fence's options refuse (FenceOptions::Validate), as the configuration and the
# service see it: no store is opened, no server, no root.
mizarmp_add_test(NAME fence_options_test SOURCES unit/fence_options_test.cc
                 LIBS mizarmp_fence LABELS unit)
# The FenceController against the in-process mizarmp-mock (loopback HTTP, no agent, no root),
# and its wiring into Identity.
mizarmp_add_test(NAME fence_service_test SOURCES integration/fence_service_test.cc
                 LIBS mizarmp_fence mizarmp_records mizarmp_mock sqlite3
                 LABELS "integration;concurrency" TIMEOUT 180)
mizarmp_add_test(NAME node_fence_clients_test SOURCES integration/node_fence_clients_test.cc
                 LIBS mizarmp_fence mizarmp_records LABELS integration TIMEOUT 60)

# The FenceController through the independent Python client: every RPC over the unix socket
# and over (mutual) TLS, the error scheme, kill -9 durability (mizarmp-mock without agent).
mizarmp_add_python_test(NAME python_fence MODULE test_fence TIMEOUT 300)

# FenceController end to end (root, real netns): mizarmp-mock with its agent and mizarmp-addons
# as processes, the real plugin putting pods of two nodes into namespaces.
if(TARGET mizarmp)
  mizarmp_add_test(NAME fence_e2e_test SOURCES integration/fence_e2e_test.cc
    LIBS mizarmp_netns mizarmp_client mizarmp_proto mizarmp_common nlohmann_json::nlohmann_json
    LABELS "netns;root;concurrency" TIMEOUT 300)
  add_dependencies(fence_e2e_test mizarmp mizarmp-mock mizarmp-addons)
endif()

# The real etcd cluster fixture the etcd fence store is tested with (tests/support/etcd_cluster.h):
# 3 members on loopback, replication, quorum loss and recovery, TLS and user authentication.
mizarmp_add_test(NAME etcd_cluster_test SOURCES integration/etcd_cluster_test.cc
                 LABELS integration TIMEOUT 120)

# Replicas of mizarmp-addons (processes) sharing one fence state in a real 3-member etcd cluster:
# failover after kill -9, etcd members lost and back, a replica cut off from etcd.
mizarmp_add_test(NAME fence_ha_test SOURCES integration/fence_ha_test.cc
                 LIBS mizarmp_client mizarmp_mock mizarmp_proto mizarmp_common
                      nlohmann_json::nlohmann_json PkgConfig::HTTPLIB
                 LABELS "integration;concurrency" TIMEOUT 400)
add_dependencies(fence_ha_test mizarmp-addons)

# The pass's port finder over the port index, checked against the whole port list on random
# clusters at the in-process strict Alcor mock (loopback HTTP, no root).
mizarmp_add_test(NAME port_finder_test SOURCES integration/port_finder_test.cc
                 LIBS mizarmp_fence mizarmp_mock LABELS integration TIMEOUT 120)

# The port index's contract on both backends (SQLite, and etcd on a real etcd member on loopback)
# and what each promises of its own: SQLite's private file, etcd's batches and hostile keys.
mizarmp_add_test(NAME port_index_test SOURCES integration/port_index_test.cc
                 LIBS mizarmp_fence_etcd sqlite3 LABELS integration TIMEOUT 120)

# The fence audit's log on both backends (SQLite, and etcd on a real etcd member on loopback).
mizarmp_add_test(NAME fence_audit_test SOURCES integration/fence_audit_test.cc
                 LIBS mizarmp_fence_etcd LABELS integration TIMEOUT 120)

# The port index fed by node agents end to end in one process: the controller's publication
# endpoint (loopback TCP, client certificates), Publishers reading records, the strict Alcor mock.
# A new port inside a fence and a dead node's port are cut off, a fenced plug-mode pod's host
# link is cut (root) and restored; bad publications are refused.
# It reads the mock's journal with cpp-httplib, whose classes change with the CPPHTTPLIB_*
# macros PkgConfig::HTTPLIB defines: every file that includes httplib.h must get them, or its
# httplib::Client and the mock's are two layouts under one name (a heap corruption at -O0).
# Its in-process node agents enforce their fence sets in this host's own nftables table, which
# every case's TearDown removes: the cases run one at a time (host_nftables).
mizarmp_add_test(NAME publication_test SOURCES integration/publication_test.cc
                 LIBS mizarmp_fence mizarmp_mock mizarmp_netns PkgConfig::HTTPLIB
                 LABELS "integration;root;concurrency" TIMEOUT 120 RESOURCE_LOCK host_nftables)

# The standing fence set and the node's nftables host filter (root: a namespace per test).
mizarmp_add_test(NAME host_filter_test SOURCES integration/host_filter_test.cc
                 LIBS mizarmp_fence_core LABELS "netns;root" TIMEOUT 60)
