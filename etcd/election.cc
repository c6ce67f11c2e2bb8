// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "etcd/election.h"

#include "common/log.h"

namespace mizarmp::etcd {
namespace {

// The share of a lease's TTL a candidate counts as its own: a tenth is left for clocks running
// at slightly different rates.
Election::Clock::duration Usable(std::chrono::seconds ttl) { return ttl * 9 / 10; }

}  // namespace

Election::Election(Client& client, Options options)
    : client_(client), options_(std::move(options)) {}

Election::~Election() { Stop(); }

void Election::Start() {
  // A round every third of the lease, at least 100 ms apart.
  const auto interval = std::max<std::chrono::milliseconds>(
      std::chrono::duration_cast<std::chrono::milliseconds>(options_.lease_ttl) / 3,
      std::chrono::milliseconds(100));
  rounds_.Start([this, interval] {
    Round(interval);
    return interval;
  });
}

void Election::Stop() {
  rounds_.Stop();
  StepDown("stopping");
  Resign();
}

Election::Clock::time_point Election::LeadingUntil() const {
  MutexLock lock(mu_);
  return leading_until_;
}

bool Election::LeadsFor(Clock::duration needed) const {
  return Clock::now() + needed < LeadingUntil();
}

std::string Election::leader() const {
  MutexLock lock(mu_);
  return leader_;
}

void Election::Round(std::chrono::milliseconds interval) {
  const auto sent = Clock::now();
  Status s = RenewLease(sent);
  if (s.ok()) s = Campaign();
  if (!s.ok() && !failing_) {
    MZ_LOG(kWarn) << "leader election (" << options_.key << "): " << s.message()
                  << "; retrying every " << interval.count() << " ms";
  } else if (s.ok() && failing_) {
    MZ_LOG(kInfo) << "leader election (" << options_.key << "): etcd answers again";
  }
  failing_ = !s.ok();
}

Status Election::RenewLease(Clock::time_point sent) {
  int64_t lease;
  {
    MutexLock lock(mu_);
    lease = lease_;
  }
  if (lease != 0) {
    MZ_ASSIGN_OR_RETURN(const int64_t left, client_.LeaseKeepAlive(lease));
    if (left > 0) {
      MutexLock lock(mu_);
      lease_valid_until_ = sent + Usable(std::chrono::seconds(left));
      return Status::Ok();
    }
    StepDown("its lease expired before it was renewed");
  }
  MZ_ASSIGN_OR_RETURN(const auto granted, client_.LeaseGrant(options_.lease_ttl));
  MutexLock lock(mu_);
  lease_ = granted.id();
  lease_valid_until_ = sent + Usable(std::chrono::seconds(granted.ttl()));
  return Status::Ok();
}

Status Election::Campaign() {
  int64_t lease;
  {
    MutexLock lock(mu_);
    lease = lease_;
  }
  etcdserverpb::TxnRequest txn;
  auto* absent = txn.add_compare();  // create_revision 0: nobody holds the key
  absent->set_key(options_.key);
  absent->set_target(etcdserverpb::Compare::CREATE);
  absent->set_result(etcdserverpb::Compare::EQUAL);
  absent->set_create_revision(0);
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(options_.key);
  put->set_value(options_.candidate);
  put->set_lease(lease);
  txn.add_failure()->mutable_request_range()->set_key(options_.key);
  MZ_ASSIGN_OR_RETURN(const auto answer, client_.Txn(txn));

  if (answer.succeeded()) {
    Lead(options_.candidate, /*leading=*/true);
    return Status::Ok();
  }
  const auto& kvs = answer.responses(0).response_range().kvs();
  if (kvs.empty()) {
    Lead("", /*leading=*/false);  // released in between; the next round tries again
  } else {
    Lead(kvs[0].value(), /*leading=*/kvs[0].lease() == lease);
  }
  return Status::Ok();
}

void Election::Lead(const std::string& leader, bool leading) {
  MutexLock lock(mu_);
  const bool was_leading = leading_until_ != Clock::time_point();
  if (leading) {
    leading_until_ = lease_valid_until_;
    if (!was_leading) {
      ++terms_;
      MZ_LOG(kInfo) << "leader election (" << options_.key << "): " << options_.candidate
                    << " leads (lease " << lease_ << ")";
    }
  } else {
    leading_until_ = Clock::time_point();
    if (was_leading) {
      MZ_LOG(kWarn) << "leader election (" << options_.key << "): " << options_.candidate
                    << " no longer leads; " << (leader.empty() ? "nobody" : leader)
                    << " holds the key";
    }
  }
  leader_ = leader;
}

void Election::StepDown(const std::string& why) {
  MutexLock lock(mu_);
  if (leading_until_ != Clock::time_point()) {
    MZ_LOG(kWarn) << "leader election (" << options_.key << "): " << options_.candidate
                  << " steps down: " << why;
  }
  leading_until_ = Clock::time_point();
  if (leader_ == options_.candidate) leader_.clear();
}

void Election::Resign() {
  int64_t lease;
  {
    MutexLock lock(mu_);
    lease = lease_;
    lease_ = 0;
  }
  if (lease == 0) return;
  // Revoking the lease deletes the key with it, so the next candidate need not wait a TTL.
  if (Status s = client_.LeaseRevoke(lease); !s.ok()) {
    MZ_LOG(kWarn) << "leader election (" << options_.key << "): resigning: " << s.message()
                  << "; etcd drops the key when the lease runs out";
  }
}

}  // namespace mizarmp::etcd
