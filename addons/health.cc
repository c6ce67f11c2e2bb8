// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/health.h"

#include <utility>

#include "common/log.h"

namespace mizarmp::addons {
namespace {

using grpc::health::v1::HealthCheckRequest;
using grpc::health::v1::HealthCheckResponse;

// A client-chosen name, shortened for a log line.
std::string ForLog(const std::string& name) {
  constexpr size_t kMax = 120;
  if (name.size() <= kMax) return "\"" + name + "\"";
  return "\"" + name.substr(0, kMax) + "...\"";
}

}  // namespace

HealthService::HealthService(HealthOptions options) : options_(options) {
  statuses_.emplace("", HealthCheckResponse::NOT_SERVING);
}

HealthService::~HealthService() { Shutdown(); }

void HealthService::AddServiceName(const std::string& name) {
  MutexLock lock(mu_);
  if (shut_down_) return;
  if (statuses_.emplace(name, HealthCheckResponse::NOT_SERVING).second) changed_.notify_all();
}

void HealthService::AddLivenessName(const std::string& name) {
  MutexLock lock(mu_);
  if (shut_down_) return;
  liveness_.insert(name);
  statuses_[name] = HealthCheckResponse::SERVING;
  changed_.notify_all();
}

void HealthService::SetServingStatus(bool serving) {
  const ServingStatus status =
      serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
  MutexLock lock(mu_);
  if (shut_down_) return;
  for (auto& [name, s] : statuses_) {
    if (!liveness_.contains(name)) s = status;
  }
  changed_.notify_all();
}

void HealthService::Shutdown() {
  MutexLock lock(mu_);
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& [name, s] : statuses_) s = HealthCheckResponse::NOT_SERVING;
  changed_.notify_all();
}

int HealthService::watches() const {
  MutexLock lock(mu_);
  return watches_;
}

HealthService::ServingStatus HealthService::StatusLocked(const std::string& name) const {
  auto it = statuses_.find(name);
  return it == statuses_.end() ? HealthCheckResponse::SERVICE_UNKNOWN : it->second;
}

grpc::Status HealthService::Check(grpc::ServerContext* /*context*/,
                                  const HealthCheckRequest* request,
                                  HealthCheckResponse* response) {
  ServingStatus status;
  {
    MutexLock lock(mu_);
    status = StatusLocked(request->service());
  }
  if (status == HealthCheckResponse::SERVICE_UNKNOWN) {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service");
  }
  response->set_status(status);
  return grpc::Status::OK;
}

grpc::Status HealthService::Watch(grpc::ServerContext* context, const HealthCheckRequest* request,
                                  grpc::ServerWriter<HealthCheckResponse>* writer) {
  const std::string& name = request->service();
  MutexLock lock(mu_);
  if (watches_ >= options_.max_watches) {
    MZ_LOG(kWarn) << "health: refusing a Watch: " << watches_ << " already open";
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "too many health watches");
  }
  ++watches_;
  // Undoes the count on every return (with the lock held, as every return below has it).
  struct Count {
    int& n;
    ~Count() { --n; }
  } count{watches_};
  MZ_LOG(kDebug) << "health: Watch " << ForLog(name) << " opened";

  bool sent_any = false;
  ServingStatus sent = HealthCheckResponse::UNKNOWN;
  for (;;) {
    const ServingStatus now = StatusLocked(name);
    if (!sent_any || now != sent) {
      HealthCheckResponse response;
      response.set_status(now);
      lock.Unlock();
      const bool written = writer->Write(response);
      lock.Lock();
      if (!written) {
        MZ_LOG(kDebug) << "health: Watch " << ForLog(name) << " ended (client gone)";
        return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
      }
      sent_any = true;
      sent = now;
      continue;  // it may have changed again while the lock was released
    }
    if (shut_down_) {
      MZ_LOG(kDebug) << "health: Watch " << ForLog(name) << " ended (server shutting down)";
      return grpc::Status::OK;
    }
    if (context->IsCancelled()) {
      MZ_LOG(kDebug) << "health: Watch " << ForLog(name) << " ended (cancelled)";
      return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
    }
    lock.WaitFor(changed_, options_.cancel_poll);
  }
}

}  // namespace mizarmp::addons
