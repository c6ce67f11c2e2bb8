// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A client of etcd's v3 gRPC API (proto/etcd/rpc.proto): the calls the fence store and the
// leader election need, over plain or TLS channels, with etcd user authentication.
//
// Endpoints: one gRPC channel per configured member. A call goes to the member that answered
// last; when that member is down or has no quorum (UNAVAILABLE, DEADLINE_EXCEEDED), a read moves
// on to the next member within the same call, and every call after a failure starts at the next
// member. A write (Txn) is never re-sent by the client: after a lost answer it may have been
// applied, so the caller decides (the fence store's writes are guarded by a revision compare
// and therefore safe to re-run from a fresh read).
//
// Errors name the cluster ("etcd at 127.0.0.1:2379,...") and keep etcd's gRPC code; a call that
// no member could answer is UNAVAILABLE. Secrets (the password, the auth token) are never in a
// message or a log line. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "etcd/options.h"
#include "etcd/rpc.grpc.pb.h"

namespace mizarmp::etcd {

class Client {
 public:
  // Reads the TLS and password files and, with a username, authenticates. Errors name the file
  // or the user (INVALID_ARGUMENT for a bad option, the read error for a file, UNAVAILABLE when
  // no member answers the authentication, UNAUTHENTICATED when it is refused).
  static Result<std::unique_ptr<Client>> Connect(const Options& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // A linearizable read unless the request says serializable; tried on each member in turn.
  Result<etcdserverpb::RangeResponse> Range(const etcdserverpb::RangeRequest& request);
  // One transaction on one member; not re-sent (see above).
  Result<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request);
  // A lease of `ttl` seconds; its id and granted TTL.
  Result<etcdserverpb::LeaseGrantResponse> LeaseGrant(std::chrono::seconds ttl);
  // Renews a lease once; the seconds it has left, 0 when it no longer exists.
  Result<int64_t> LeaseKeepAlive(int64_t lease_id);
  Status LeaseRevoke(int64_t lease_id);

  // "etcd at <endpoints>", how errors name the cluster.
  const std::string& name() const { return name_; }

 private:
  struct Member;
  explicit Client(const Options& options);

  Status OpenChannels(const Options& options);
  Status Authenticate();
  // Runs `call` against the members from the current one: each member once when `idempotent`,
  // otherwise only the current one. Adds the deadline and the auth token; re-authenticates once
  // when the token is refused.
  template <typename Call>
  Status Invoke(const char* method, bool idempotent, Call&& call);
  Status ToStatus(const std::string& what, const Member& member, const grpc::Status& s) const;
  std::string Token() const;

  std::vector<std::unique_ptr<Member>> members_;
  std::atomic<size_t> current_{0};
  const std::chrono::milliseconds call_timeout_;
  const std::string name_;
  std::string username_;
  std::string password_;  // never logged
  mutable Mutex token_mu_;
  std::string token_ MZ_GUARDED_BY(token_mu_);  // never logged
};

}  // namespace mizarmp::etcd
