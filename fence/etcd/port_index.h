// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The port index (fence/port_index.h) in etcd, beside an etcd fence store (fence/etcd/store.h):
// whichever replica leads sees what every node agent published through any replica.
//
// Keys, under the prefix P (PortIndexPrefix of the fence store's: beside it, not under it):
//   P a/<address>/<port>/<node>   one per published (address, port) of a node; its value the
//                                 pod ("namespace/name") the node published it for, if any.
//                                 <address>: the address key (fence/address_key.h) in lower-case
//                                 hex, so key order is address order and a CIDR is ONE range
//                                 [P a/<hex network>/, P a/<hex last>0) ('0' follows '/');
//                                 <port>: the port id with '/', '%', spaces, controls and
//                                 non-ASCII bytes percent-encoded, so the key splits back;
//                                 <node>: the publishing node, as it is (the rest of the key).
//   P n/<node>                    {"at_ms":<unix ms>,"entries":["<address>/<port>",...]}: the
//                                 node's entries' names (and the time of its last publication
//                                 that changed them), so a republication or Forget knows what
//                                 to delete without a scan; "partial":true while a batched
//                                 publication is under way.
//   P l/<node>                    {"at_ms":<unix ms>,"entries":<count>,"digest":"<hex>",
//                                 "of":<revision>,"enforced":"<fence set digest>"}: the node's
//                                 lease, what Publications() reads.
//                                 "digest": SHA-256 of the node key's entry names, present only
//                                 when every one of them is in the index; "of": the node key's
//                                 mod_revision a renewal checked the digest against (absent
//                                 when written in the same transaction as the node key, so of
//                                 the same revision).
//   P layout                      "2": the keys follow this layout. Without it (the first
//                                 layout had no lease keys) opening the index gives each node
//                                 key its lease key (one read of every node key, once), so a
//                                 node that died before the upgrade still lapses.
// Why the node is in the entry's key: two nodes may publish the same (address, port) for a while
// (a port moving between nodes); each node's republication then deletes only its own key. The
// answer names the node whose key was written last (the highest mod_revision), like SQLite's
// last INSERT OR REPLACE. Why JSON for the node key: etcdctl shows it as it is, the fence store's
// shards are JSON too, and an entry name is hex and a port id either way, which protobuf would
// not make much shorter (about 4 bytes of quotes and comma per entry). Why a lease key beside the
// node key: every node renews every third of its lease, and every pass reads every node's lease;
// the node key is some 50 bytes per entry (12 KB for 250 ports), the lease key about 130 bytes
// whatever the node published, so renewals and passes cost O(nodes), not O(ports).
//
// Writes: the renewal of an unchanged set reads the lease key and the node key's revision (not
// its value) and, when the lease key's digest is the set's and it vouches for the node key as it
// is, rewrites the lease key alone, while neither moved. Anything else takes the long way: a
// publication puts only the entries its node did not have and deletes only those it no longer
// has, then the node key and the lease key together. A writer that rewrote the node key without
// the lease key (a replica of the first layout during an upgrade) thus sends the next renewal the
// long way, never past a changed set. etcd refuses a transaction of more than 128 operations
// (--max-txn-ops, upstream's DefaultMaxTxnOps in etcd-io/etcd server/embed/config.go). A
// publication that fits is one transaction. A bigger one is several, in this order: the node key
// listing its old and new entries, marked partial, with the lease key without a digest (their
// time unchanged), the puts, the deletes, the node key and the lease key as published last. An
// interrupted publication thus leaves extra (stale) entries, never missing ones, and the node key
// names them all, so the node's next publication (which puts every entry after a partial record)
// or Forget cleans up: a stale entry costs a pass one read at Mizar-MP, a missing one would hide a
// port from a fence. Every transaction of a publication (and of Forget) compares the node key's
// mod_revision with the one read at its start (or its own last write of it): once another
// publication of the same node wrote the node key, the rest is abandoned and the publication
// starts over from a fresh read, so of two publications of one node at once (through two
// replicas) the one whose node key stays put its entries after the other's last delete. A node
// key over etcd's request limit (--max-request-bytes, 1.5 MiB: some 25,000 entries) is
// RESOURCE_EXHAUSTED.
//
// Reads: Inside() is one range per CIDR, Publications() one over P l/, each in pages of at most
// kPageKeys keys (each page continuing after the last key of the one before), so memory follows
// the answer, not the keyspace. Pages are linearizable reads each, not one snapshot: a
// publication landing between two pages shows in the later ones only, which soft state allows.
// A key or record that does not decode is logged (escaped) and skipped.
//
// Errors name the index ("port index etcd://..."); UNAVAILABLE after retrying for the call
// timeout times the number of endpoints, at least twice (like the fence store); ABORTED after 50
// lost races in a row. Thread-safe: no state but the client, which is.
#pragma once

#include <memory>
#include <string>

#include "etcd/options.h"
#include "fence/port_index.h"

namespace mizarmp::fence {

// Connects (TLS, authentication) to the cluster `location` ("etcd://host:port,...") names, with
// `client`'s files and timeout. INVALID_ARGUMENT for a prefix that does not end with '/'.
Result<std::unique_ptr<PortIndex>> OpenEtcdPortIndex(const std::string& location,
                                                     const etcd::Options& client,
                                                     const std::string& prefix);

}  // namespace mizarmp::fence
