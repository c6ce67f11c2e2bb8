// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node agent's side of the port index (fence/port_index.h): mizarmp-addons in node mode
// publishes the attachments the plugin recorded on this node to the controller
// (mizarmp.v1.PortIndex/Publish, fence/service/publication_service.h), so that a fence finds this node's
// ports inside its CIDRs without listing every port at Mizar-MP.
//
// Each look at the records costs a stat per network directory when nothing changed
// (records/cache.h); looks come every publishIntervalMs, and at least twice a second while a
// fence stands, so a new pod gets the set within that. A change is published at the next look;
// an unchanged set is published
// again once a third of the lease the controller granted has passed, so a live node never lapses
// for one lost call. A failed call is retried at the next look. The whole set goes in every
// call: the controller replaces what the node published before, so nothing depends on an
// earlier call having arrived.
//
// Each answer also carries the standing fence set, which this node enforces for itself
// (fence/host_filter.h) and inside each of its pods (fence/pod_filters.h), so a fence holds on
// the surviving nodes when the fenced node's own agent is dead; and this node cuts its own pods
// inside the set (fence/link_cutter.h), so it holds on a fenced node that is alive, whatever
// Mizar-MP's agent does. The set is also
// pushed: a second thread keeps a WatchFenceSet stream open to the controller and hands each
// update to the loop, which wakes at once, enforces the set on the node and its pods and only then
// acknowledges it (Acknowledge), so a fence answers within the controller's pass rather than at
// the next publication. The stream reconnects after kWatchRetry when it ends; meanwhile the
// publications carry the set as before.
#pragma once

#include <chrono>
#include <memory>
#include <set>
#include <vector>

#include "addons/service.h"
#include "common/mutex.h"
#include "common/worker.h"
#include "fence/host_filter.h"
#include "fence/link_cutter.h"
#include "fence/pod_filters.h"
#include "fence/port_index.h"
#include "fence/service/options.h"
#include "records/cache.h"

namespace grpc {
class Channel;
}  // namespace grpc
namespace grpc {
class ClientContext;
}  // namespace grpc
namespace mizarmp::v1 {
class FenceSetUpdate;
}  // namespace mizarmp::v1

namespace mizarmp::fence {

// The attachments of `records` that belong to `node` (a record without a host id does), one
// entry per address, sorted; records without a port id or an address are left out.
std::vector<AddressedPort> NodeAttachments(
    const std::vector<records::RecordCache::Records>& records, const std::string& node);

// The links to cut of `node`'s pods with an address inside `set` (fence/link_cutter.h): the
// host end in plug mode, the pod's own interface in its namespace otherwise.
std::set<CutLink> FencedLinks(const std::vector<records::RecordCache::Records>& records,
                              const std::string& node, const FenceSet& set);

class Publisher final : public addons::AddonsComponent {
 public:
  // INVALID_ARGUMENT naming the option when the target or the TLS files are unusable.
  static Result<std::unique_ptr<Publisher>> Create(PublisherOptions options);
  ~Publisher() override;  // Stop()

  // "fence set": not ready until this node enforces a fence set the controller gave it (the
  // one it kept across a restart counts: fence/host_filter.h puts it back first), and failing
  // while nftables refuses the newest one. A node that never heard from a controller cannot
  // know which fences stand, so it does not say it is ready.
  std::vector<addons::ReadinessCheck> readiness_checks() override;
  void Start() override MZ_EXCLUDES(mu_);
  void Stop() override MZ_EXCLUDES(mu_);

  // For tests: how many publications the controller accepted.
  uint64_t published() const MZ_EXCLUDES(mu_);

 private:
  Publisher(PublisherOptions options, std::shared_ptr<grpc::Channel> channel,
            std::vector<KeptPeer> controller);
  // The loop's turn: the kept set restored at the first, then Look(); the pause before the
  // next (shorter while a fence stands). A pushed update wakes it (Worker::Wake).
  std::chrono::milliseconds Turn() MZ_EXCLUDES(mu_);
  // One look at the records, and a publication when due.
  void Look();
  // Publishes `ports` and enforces the fence set the answer carries.
  Status Publish(const std::vector<AddressedPort>& ports);
  // Enforces the set on this node's pods, when the records or the set changed since it last
  // succeeded: the set inside each pod (fence/pod_filters.h), and the pods inside the set cut,
  // those no longer inside restored (fence/link_cutter.h).
  void EnforceOnPods(const std::vector<records::RecordCache::Records>& records);
  // Enforces the set of `digest` and `cidrs` (what `source` sent), when it is another than the
  // one enforced; true when it applied one (the controller has yet to hear of it).
  bool Enforce(const std::string& digest, const std::vector<std::string>& cidrs,
               const std::string& source) MZ_EXCLUDES(mu_);
  // Enforces the update the stream brought, if any, on the node and its pods (from `records`;
  // none: unreadable) and then acknowledges the set.
  void EnforcePushed(const std::vector<records::RecordCache::Records>* records) MZ_EXCLUDES(mu_);
  Status Acknowledge(const std::string& digest);
  // The stream's turn: one WatchFenceSet call, handing each update to the loop, and its end
  // logged; the next after kWatchRetry.
  void Watch() MZ_EXCLUDES(mu_);
  // One WatchFenceSet call, until it ends; its final status.
  Status WatchOnce() MZ_EXCLUDES(mu_);

  const PublisherOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  records::RecordCache records_{options_.state_dir};
  LinkCutter cutter_{options_.state_dir + "/.fenced-links"};
  PodFilters pod_filters_;  // the loop's own
  HostFilter filter_;  // the loop's own
  // The loop's own (its thread only): what the controller last accepted, and when to publish an
  // unchanged set again.
  std::vector<AddressedPort> accepted_;
  bool accepted_any_ = false;
  std::chrono::steady_clock::time_point republish_at_;
  bool unacknowledged_ = false;  // a set was applied since the last publication
  // What EnforceOnPods last enforced in full: for these records and this set's digest.
  std::vector<records::RecordCache::Records> pods_enforced_for_records_;
  std::string pods_enforced_for_set_;
  bool restored_ = false;  // the kept set is back (the loop's first turn)
  std::string last_watch_failure_;  // the stream's own

  mutable Mutex mu_;
  bool stopping_ MZ_GUARDED_BY(mu_) = false;  // Stop() began: no stream opens any more
  uint64_t published_ MZ_GUARDED_BY(mu_) = 0;
  // The stream's latest update, until the loop takes it.
  std::unique_ptr<::mizarmp::v1::FenceSetUpdate> pushed_ MZ_GUARDED_BY(mu_);
  // filter_.digest() as the loop last left it, for the stream's requests and readiness.
  std::string enforced_ MZ_GUARDED_BY(mu_);
  Status enforce_error_ MZ_GUARDED_BY(mu_);  // the newest set's failure to apply, if it failed
  grpc::ClientContext* watch_call_ MZ_GUARDED_BY(mu_) = nullptr;  // the open stream's, to cancel
  Worker loop_;
  Worker watcher_;
};

}  // namespace mizarmp::fence
