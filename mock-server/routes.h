// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The mock's HTTP API (private to mock-server/): the REST routes of both wire dialects (v0.1
// and Alcor), the bearer token, the injected faults on the way in and out, and the control
// endpoints (/mock/state, /mock/faults, /mock/requests, /mock/reset, /healthz, /metrics). See
// mock.h for the API; the model (model.h) does the work, this file turns requests into calls and
// Status into answers.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "mock-server/faults.h"
#include "mock-server/journal.h"
#include "mock-server/mock.h"
#include "mock-server/model.h"
#include "mock-server/strict.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace mizarmp::mock {

// One HTTP answer: a status code and a JSON body.
struct Reply {
  int status = 200;
  nlohmann::json body;
  // The body already written out, sent instead of `body`: a port list of 10,000 ports is
  // rendered port by port, without first copying every port into one JSON array.
  std::optional<std::string> text;
};

class Routes {
 public:
  // Reads the token file of the options, if any (INVALID_ARGUMENT when it is empty, the read
  // error when it cannot be read). `model` and `faults` must outlive the routes.
  static Result<std::unique_ptr<Routes>> Create(const Options& options, Model& model,
                                                FaultInjector& faults);

  // Adds every route, the catch-all 404 and the request log to `server`.
  void Install(httplib::Server& server);
  // Wakes the requests sleeping out delay_ms, so the server can stop at once.
  void Stop();

  uint64_t requests() const { return requests_.load(); }  // REST requests, control excluded
  // The bodies of those requests' answers, in bytes: what a client's calls cost the controller
  // on the wire (a benchmark's bytes per reconcile pass).
  uint64_t response_bytes() const { return response_bytes_.load(); }

 private:
  Routes(const Options& options, std::string token, Model& model, FaultInjector& faults);

  // The pipeline of every REST request: connection faults, token, project, the handler, the
  // truncate_json fault. Returns the HTTP status answered (0: connection closed, no answer).
  int Serve(const httplib::Request& req, httplib::Response& res,
            const std::function<Reply()>& handler);
  // Records a PUT of port `id` answered with `status` in the journal and in the update counts
  // of /metrics.
  void Journal(const std::string& id, const httplib::Request& req, int status);
  bool Authorized(const httplib::Request& req) const;
  void Sleep(int ms);

  // REST handlers.
  Reply CreatePorts(const httplib::Request& req, bool bulk_url);
  Reply Created(const nlohmann::json& items, bool bulk);
  Reply GetPort(const std::string& id);
  Reply ListPorts(const httplib::Request& req);
  Reply UpdatePort(const std::string& id, const httplib::Request& req);
  Reply DeletePort(const std::string& id);
  Reply GetSubnet(const std::string& id) const;
  Reply ListSubnets() const;
  Reply UnknownPort(const std::string& id) const;

  // The seed README's routes, or the strict modes' (strict.h) in their place.
  void InstallSeed(httplib::Server& server);
  void InstallStrict(httplib::Server& server);
  // A strict route's answer as a Reply; the create routes' lose_create_answers fault.
  Reply Strict(const StrictReply& reply) const;

  // Control handlers.
  Reply State() const;
  Reply SetFaults(const httplib::Request& req);
  Reply Reset();
  // GET /metrics: the request, byte and update counts, the model's port count and the faults
  // in force, in Prometheus' text format.
  std::string Metrics() const;

  bool alcor() const { return options_.dialect == Dialect::kAlcor; }

  const Options options_;
  const std::string token_;  // empty: no check
  Model& model_;
  FaultInjector& faults_;
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> response_bytes_{0};
  UpdateJournal journal_;
  // Port updates by the HTTP status answered (0: connection closed). Unlike the journal, never
  // dropped or cleared: Prometheus reads a counter that goes down as a restart.
  mutable Mutex updates_mu_;
  std::map<int, uint64_t> updates_by_status_ MZ_GUARDED_BY(updates_mu_);
  StrictController strict_;

  Mutex mu_;
  std::condition_variable cv_;  // wakes sleeping requests on Stop()
  bool stopping_ MZ_GUARDED_BY(mu_) = false;
};

}  // namespace mizarmp::mock
