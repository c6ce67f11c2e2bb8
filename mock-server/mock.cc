// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// MockServer puts the parts together: the model (controller and agent), the fault injector,
// the routes over both, and the HTTP server that serves the routes.
#include "mock-server/mock.h"

#include "common/log.h"
#include "mizarmp-client/types.h"
#include "mock-server/faults.h"
#include "mock-server/http.h"
#include "mock-server/model.h"
#include "mock-server/routes.h"

namespace mizarmp::mock {

Result<Dialect> ParseDialect(std::string_view name) {
  const auto dialect = client::ParseDialect(name);
  if (dialect.ok() && *dialect == client::Dialect::kV01) return Dialect::kV01;
  if (dialect.ok() && *dialect == client::Dialect::kAlcor) return Dialect::kAlcor;
  return InvalidArgumentError("must be v0.1 or alcor, got " + Quoted(name));
}

const char* DialectName(Dialect dialect) {
  return client::DialectName(dialect == Dialect::kAlcor ? client::Dialect::kAlcor
                                                        : client::Dialect::kV01);
}

// Declared in the order they depend on each other, so they are destroyed the other way round:
// the HTTP server (whose threads call the routes) first, the model last.
struct MockServer::Impl {
  Options options;
  std::unique_ptr<Model> model;
  std::unique_ptr<FaultInjector> faults;
  std::unique_ptr<Routes> routes;
  std::unique_ptr<HttpServer> http;
  bool started = false;
  bool stopped = false;
};

Result<std::unique_ptr<MockServer>> MockServer::Create(Options options) {
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  const Options& o = impl->options;
  MZ_ASSIGN_OR_RETURN(impl->model, Model::Create(o));
  impl->faults = std::make_unique<FaultInjector>(o.faults);
  MZ_ASSIGN_OR_RETURN(impl->routes, Routes::Create(o, *impl->model, *impl->faults));
  MZ_ASSIGN_OR_RETURN(impl->http, HttpServer::Create(o));
  std::unique_ptr<MockServer> s(new MockServer());
  s->impl_ = std::move(impl);
  return s;
}

MockServer::~MockServer() {
  if (impl_) Stop();
}

Status MockServer::Start() {
  Impl& m = *impl_;
  if (m.started) return FailedPreconditionError("mock: Start() called twice");
  MZ_RETURN_IF_ERROR(m.model->Start());
  Status st = m.http->Start([&m](httplib::Server& server) { m.routes->Install(server); });
  if (!st.ok()) {
    m.model->Stop();
    return st;
  }
  m.started = true;
  const Options& o = m.options;
  MZ_LOG(kInfo) << "mizarmp-mock listening on " << base_url() << " ("
                << DialectName(o.dialect) << " dialect, subnet "
                << m.model->cidr4().ToString()
                << (m.model->has_agent() ? ", agent on bridge " + Model::BridgeOf(o) +
                                               (o.agent_ovsdb.empty() ? "" : " (OVS)")
                                         : ", no agent")
                << ")";
  return Status::Ok();
}

void MockServer::Stop() {
  Impl& m = *impl_;
  if (!m.started || m.stopped) return;
  m.stopped = true;
  m.routes->Stop();  // first: a request sleeping out delay_ms would hold up the server's stop
  m.http->Stop();
  m.model->Stop();
  MZ_LOG(kInfo) << "mizarmp-mock on port " << m.http->port() << " stopped";
}

int MockServer::port() const { return impl_->http->port(); }

std::string MockServer::base_url() const { return impl_->http->base_url(); }

void MockServer::SetFaults(const Faults& faults) { impl_->faults->Set(faults); }

std::vector<PortSummary> MockServer::Ports() const { return impl_->model->Summaries(); }

uint64_t MockServer::requests() const { return impl_->routes->requests(); }
uint64_t MockServer::response_bytes() const { return impl_->routes->response_bytes(); }

size_t MockServer::agent_backlog() const { return impl_->model->usage().agent_backlog; }

size_t MockServer::agent_waiting() const { return impl_->model->usage().agent_waiting; }

}  // namespace mizarmp::mock
