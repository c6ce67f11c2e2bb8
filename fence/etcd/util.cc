// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/etcd/util.h"

namespace mizarmp::fence {

Result<std::unique_ptr<etcd::Client>> ConnectToLocation(const std::string& location,
                                                        etcd::Options& options) {
  MZ_ASSIGN_OR_RETURN(options.endpoints, etcd::ParseEndpoints(location));
  return etcd::Client::Connect(options);
}

std::string PrefixEnd(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

bool RefusedUnapplied(const Status& s) {
  switch (s.code()) {
    case Code::kInvalidArgument:
    case Code::kFailedPrecondition:
    case Code::kResourceExhausted:
    case Code::kPermissionDenied:
    case Code::kUnauthenticated:
    case Code::kOutOfRange:
      return true;
    default:
      return false;
  }
}

bool TooLargeForEtcd(const Status& s) {
  return (s.code() == Code::kInvalidArgument &&
          s.message().find("request is too large") != std::string::npos) ||
         (s.code() == Code::kResourceExhausted &&
          s.message().find("larger than max") != std::string::npos);
}

etcdserverpb::RequestOp PutOp(std::string key, std::string value) {
  etcdserverpb::RequestOp op;
  op.mutable_request_put()->set_key(std::move(key));
  op.mutable_request_put()->set_value(std::move(value));
  return op;
}

etcdserverpb::RequestOp DeleteOp(std::string key) {
  etcdserverpb::RequestOp op;
  op.mutable_request_delete_range()->set_key(std::move(key));
  return op;
}

bool PutsKey(const std::vector<etcdserverpb::RequestOp>& ops, const std::string& key) {
  return std::any_of(ops.begin(), ops.end(), [&](const etcdserverpb::RequestOp& op) {
    return op.has_request_put() && op.request_put().key() == key;
  });
}

void RequireModRevision(etcdserverpb::TxnRequest& txn, const std::string& key, int64_t revision) {
  auto* compare = txn.add_compare();
  compare->set_key(key);
  compare->set_target(etcdserverpb::Compare::MOD);
  compare->set_result(etcdserverpb::Compare::EQUAL);
  compare->set_mod_revision(revision);
}

etcdserverpb::RequestOp RangeOp(std::string key, bool keys_only) {
  etcdserverpb::RequestOp op;
  op.mutable_request_range()->set_key(std::move(key));
  op.mutable_request_range()->set_keys_only(keys_only);
  return op;
}

}  // namespace mizarmp::fence
