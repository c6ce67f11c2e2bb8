// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "addons/server.h"

#include <errno.h>
#include <grpc/grpc.h>
#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/support/server_interceptor.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "addons/caller.h"
#include "addons/health.h"
#include "common/file_check.h"
#include "common/fileutil.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/random.h"
#include "common/unix_socket.h"

namespace mizarmp::addons {
namespace {

using endpoint::Endpoint;

// How long the drain waits for the open health Watches to end before it sends the GOAWAY
// (Server::Drain). They end at once, unless a client stopped reading.
constexpr std::chrono::milliseconds kWatchesEnd{1000};

// "HOST:PORT" ("[V6]:PORT" too) of a side listener; empty is "none".
Status ValidateListenAddress(const char* key, const std::string& address) {
  if (address.empty()) return Status::Ok();
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? "" : address.substr(0, colon);
  if (host.empty() || !ParseInt(std::string_view(address).substr(colon + 1), 0, 65535).ok()) {
    return InvalidArgumentError(std::string(key) + " " + Quoted(address) +
                                ": want HOST:PORT (port 0..65535), e.g. 0.0.0.0:9808");
  }
  return Status::Ok();
}

// Anyone who can reach a TCP port can call it, unlike a 0600 unix socket: refuse to serve one
// unless every caller proves who it is, and unless it is encrypted or plaintext was asked for.
Status ValidateTcp(const ServerOptions& s, const std::string& endpoint) {
  if (s.tls_cert_file.empty() && !s.insecure_tcp) {
    return InvalidArgumentError("endpoint " + Quoted(endpoint) +
                                ": tcp:// needs tlsCertFile and tlsKeyFile (or insecureTcp, "
                                "for tests only)");
  }
  if (s.tls_client_ca_file.empty() && !s.requests_need_secrets) {
    return InvalidArgumentError(TcpWithoutClientAuthMessage(endpoint));
  }
  return Status::Ok();
}

// The credentials the endpoint is served with (the options validated); for a unix endpoint,
// also clears the way for its socket.
Result<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(const ServerOptions& options,
                                                                 const Endpoint& ep) {
  if (ep.kind == Endpoint::Kind::kUnix) {
    MZ_RETURN_IF_ERROR(PrepareUnixSocket(ep.path));
    return grpc::InsecureServerCredentials();
  }
  if (!options.tls_cert_file.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    MZ_ASSIGN_OR_RETURN(pair.cert_chain, ReadPemFile("tlsCertFile", options.tls_cert_file));
    MZ_ASSIGN_OR_RETURN(pair.private_key, ReadPemFile("tlsKeyFile", options.tls_key_file));
    ssl.pem_key_cert_pairs.push_back(std::move(pair));
    if (!options.tls_client_ca_file.empty()) {
      MZ_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                          ReadPemFile("tlsClientCaFile", options.tls_client_ca_file));
      ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
    } else {
      ssl.client_certificate_request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
    }
    return grpc::SslServerCredentials(ssl);
  }
  MZ_LOG(kWarn) << "serving plaintext gRPC on " << options.endpoint
                << " (insecure-tcp: for tests only)";
  return grpc::InsecureServerCredentials();
}

}  // namespace

Status ServerOptions::Validate() const {
  MZ_RETURN_IF_ERROR(ValidateListenAddress("healthAddress", health_address));
  MZ_RETURN_IF_ERROR(ValidateListenAddress("metricsAddress", metrics_address));
  MZ_ASSIGN_OR_RETURN(Endpoint ep, endpoint::ParseEndpoint(endpoint));
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return InvalidArgumentError(
        "tlsCertFile/tlsKeyFile: set both or neither (one of them is missing)");
  }
  if (!tls_client_ca_file.empty() && tls_cert_file.empty()) {
    return InvalidArgumentError("tlsClientCaFile: needs tlsCertFile and tlsKeyFile as well");
  }
  if (ep.kind == Endpoint::Kind::kTcp) {
    MZ_RETURN_IF_ERROR(ValidateTcp(*this, endpoint));
  } else if (!tls_cert_file.empty() && additional_endpoint.empty()) {
    return InvalidArgumentError("tlsCertFile: TLS is only used with a tcp:// endpoint");
  }
  if (!additional_endpoint.empty()) {
    auto more = endpoint::ParseEndpoint(additional_endpoint);
    if (!more.ok() || more->kind != Endpoint::Kind::kTcp) {
      return InvalidArgumentError("endpoint " + Quoted(additional_endpoint) +
                                  ": an additional endpoint must be tcp://HOST:PORT");
    }
    MZ_RETURN_IF_ERROR(ValidateTcp(*this, additional_endpoint));
  }
  MZ_RETURN_IF_ERROR(CheckReadableFile("tlsCertFile", tls_cert_file));
  MZ_RETURN_IF_ERROR(CheckReadableFile("tlsKeyFile", tls_key_file));
  return CheckReadableFile("tlsClientCaFile", tls_client_ca_file);
}

std::string TcpWithoutClientAuthMessage(std::string_view endpoint) {
  return "endpoint " + Quoted(endpoint) +
         ": a tcp:// endpoint can be reached by anyone on the network, so its clients must be "
         "authenticated; set tlsClientCaFile (clients present a certificate signed by that CA; "
         "needs tlsCertFile and tlsKeyFile) or secretsFile (a JSON object of at least one secret "
         "every request must carry), or serve on a unix:// socket";
}

// How many calls the server is running, from the moment gRPC hands a call to the server until
// it is finished: each call gets a CallInterceptor, made when the call arrives and destroyed
// with the call. Shutdown() waits on it for the drain to empty, and first for the health Watch
// calls alone, which it also counts apart.
class CallCounter {
 public:
  void Enter(bool watch) {
    MutexLock lock(mu_);
    ++in_flight_;
    if (watch) ++watches_;
  }
  void Leave(bool watch) {
    MutexLock lock(mu_);
    --in_flight_;
    if (watch) --watches_;
    if (in_flight_ == 0 || (watch && watches_ == 0)) cv_.notify_all();
  }
  // Wakes WaitIdle() for good (the server stopped by itself).
  void Stop() {
    MutexLock lock(mu_);
    stopped_ = true;
    cv_.notify_all();
  }
  // True once no call is in flight; false at `deadline` or after Stop().
  bool WaitIdle(std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mu_);
    lock.WaitUntil(cv_, deadline,
                   [this]() MZ_REQUIRES(mu_) { return in_flight_ == 0 || stopped_; });
    return in_flight_ == 0 && !stopped_;
  }
  // True once no Watch call is in flight; false at `deadline`.
  bool WaitNoWatch(std::chrono::steady_clock::time_point deadline) {
    MutexLock lock(mu_);
    return lock.WaitUntil(cv_, deadline, [this]() MZ_REQUIRES(mu_) { return watches_ == 0; });
  }

 private:
  Mutex mu_;
  std::condition_variable cv_;
  int in_flight_ MZ_GUARDED_BY(mu_) = 0;
  int watches_ MZ_GUARDED_BY(mu_) = 0;
  bool stopped_ MZ_GUARDED_BY(mu_) = false;
};

namespace {

// The caller's "x-request-id" when it is 1..64 printable ASCII characters without spaces (so it
// can neither split nor forge a log line), else a fresh random one (16 hex digits).
std::string RequestId(std::multimap<grpc::string_ref, grpc::string_ref>* metadata) {
  if (metadata != nullptr) {
    auto it = metadata->find("x-request-id");
    if (it != metadata->end() && !it->second.empty() && it->second.size() <= 64 &&
        std::all_of(it->second.begin(), it->second.end(),
                    [](char c) { return c > 0x20 && c < 0x7f; })) {
      return std::string(it->second.data(), it->second.size());
    }
  }
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(UniqueRandom64()));
  return id;
}

// Made when a call arrives, destroyed with it: counts the call in flight for the drain, and
// records it in the metrics (method, status code, time to the status) as its status goes out.
class CallInterceptor : public grpc::experimental::Interceptor {
 public:
  CallInterceptor(std::shared_ptr<CallCounter> calls, Metrics* metrics, std::string method)
      : calls_(std::move(calls)),
        metrics_(metrics),
        method_(std::move(method)),
        watch_(method_ == HealthService::kWatchMethod) {
    calls_->Enter(watch_);
  }
  ~CallInterceptor() override { calls_->Leave(watch_); }
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using Hook = grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_INITIAL_METADATA)) {
      request_id_ = RequestId(methods->GetRecvInitialMetadata());
    }
    // The sync server runs the handler on the thread that received the message, and sends the
    // status from it: every line the handler logs carries the id.
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) {
      log::SetThreadContext("req=" + request_id_);
      SetCurrentRequestId(request_id_);
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      log::SetThreadContext("");
      SetCurrentRequestId("");
      const grpc::Status status = methods->GetSendStatus();
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started_;
      metrics_->ObserveRpc(method_, std::string(CodeName(static_cast<Code>(status.error_code()))),
                           took.count());
    }
    methods->Proceed();
  }

 private:
  std::shared_ptr<CallCounter> calls_;
  Metrics* metrics_;
  const std::string method_;
  const bool watch_;
  std::string request_id_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

class CallInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  CallInterceptorFactory(std::shared_ptr<CallCounter> calls, Metrics* metrics)
      : calls_(std::move(calls)), metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallInterceptor(calls_, metrics_, info->method() ? info->method() : "unknown");
  }

 private:
  std::shared_ptr<CallCounter> calls_;
  Metrics* metrics_;
};

}  // namespace

Server::Server(ServerOptions options)
    : options_(std::move(options)),
      health_(std::make_unique<HealthService>(HealthOptions{options_.health_watch_poll})),
      probe_health_(options_.health_address.empty() ? nullptr
                                                    : std::make_unique<HealthService>(HealthOptions{
                                                          options_.health_watch_poll})),
      calls_(std::make_shared<CallCounter>()) {
  for (HealthService* health : Healths()) health->AddLivenessName(kLivenessHealthName);
}

Server::~Server() { Shutdown(options_.shutdown_grace); }

void Server::Register(AddonsService& service) {
  MutexLock lock(mu_);
  assert(!started_ && "Server::Register after Start");
  services_.push_back(&service);
  for (HealthService* health : Healths()) health->AddServiceName(service.health_name());
  AttachLocked(service);
}

void Server::Attach(AddonsComponent& component) {
  MutexLock lock(mu_);
  assert(!started_ && "Server::Attach after Start");
  AttachLocked(component);
}

void Server::AttachLocked(AddonsComponent& component) {
  components_.push_back(&component);
  component.RegisterMetrics(metrics_.registry());
}

Status Server::Start() {
  MutexLock lock(mu_);
  if (started_) return FailedPreconditionError("server already started");
  MZ_RETURN_IF_ERROR(options_.Validate());
  MZ_ASSIGN_OR_RETURN(Endpoint ep, endpoint::ParseEndpoint(options_.endpoint));
  MZ_RETURN_IF_ERROR(Bind(ep));
  if (Status s = StartSideListeners(); !s.ok()) {
    server_->Shutdown();
    server_.reset();
    RemoveOwnSocket();
    return s;
  }
  started_ = true;
  {
    MutexLock serving_lock(serving_mu_);
    serving_reported_ = true;
    for (HealthService* health : Healths()) health->SetServingStatus(serving_);
  }
  MZ_LOG(kInfo) << "serving gRPC on " << address_
                << (options_.additional_endpoint.empty()
                        ? std::string()
                        : " and on " + options_.additional_endpoint + " (bound port " +
                              std::to_string(additional_port_) + ")");
  for (AddonsComponent* component : components_) component->Start();
  return Status::Ok();
}

Status Server::Bind(const Endpoint& ep) {
  MZ_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                      MakeCredentials(options_, ep));
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();

  grpc::ServerBuilder builder;
  // Health is served by our sync HealthService. gRPC's default one (callback API) would make
  // this sync server run the callback queue's polling threads; keep it off even if something
  // else in the process called grpc::EnableDefaultHealthCheckService(true).
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  builder.RegisterService(health_.get());
  // gRPC sets SO_REUSEPORT by default, which would let a second server bind the same TCP port
  // and silently split the traffic. One server per endpoint.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int selected_port = 0;
  const std::string grpc_address = ep.GrpcAddress();
  builder.AddListeningPort(grpc_address, creds, &selected_port);
  int additional_port = -1;  // none asked for
  if (!options_.additional_endpoint.empty()) {
    // A tcp:// endpoint: Validate() saw to it.
    MZ_ASSIGN_OR_RETURN(const Endpoint more, endpoint::ParseEndpoint(options_.additional_endpoint));
    MZ_ASSIGN_OR_RETURN(auto more_creds, MakeCredentials(options_, more));
    additional_port = 0;
    builder.AddListeningPort(more.GrpcAddress(), more_creds, &additional_port);
  }
  for (AddonsService* service : services_) builder.RegisterService(service->grpc_service());
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> observing;
  observing.push_back(std::make_unique<CallInterceptorFactory>(calls_, &metrics_));
  builder.experimental().SetInterceptorCreators(std::move(observing));

  // The socket file is created by bind() inside BuildAndStart: with umask 077 it is born 0600
  // (no window in which another user could connect). The umask is process-wide, so keep the
  // window short; this runs during startup.
  const mode_t old_umask = ::umask(077);
  server_ = builder.BuildAndStart();
  ::umask(old_umask);
  if (!server_ || selected_port == 0 || additional_port == 0) {
    if (server_) server_->Shutdown();
    server_.reset();
    if (ep.kind == Endpoint::Kind::kUnix && selected_port != 0) ::unlink(ep.path.c_str());
    return UnavailableError(
        "gRPC could not listen on \"" +
        (selected_port == 0 ? options_.endpoint : options_.additional_endpoint) +
        "\" (address in use or not bindable)");
  }
  additional_port_ = std::max(additional_port, 0);

  if (ep.kind == Endpoint::Kind::kUnix) {
    if (::chmod(ep.path.c_str(), 0600) != 0) {
      Status s = ErrnoError("chmod 0600 \"" + ep.path + "\"", errno);
      server_->Shutdown();
      server_.reset();
      ::unlink(ep.path.c_str());
      return s;
    }
    if (auto bound = BoundSocketFile::At(ep.path); bound.ok()) socket_file_ = std::move(*bound);
    address_ = grpc_address;
  } else {
    bound_port_ = selected_port;
    Endpoint bound = ep;
    bound.port = selected_port;
    address_ = bound.GrpcAddress();
  }
  return Status::Ok();
}

std::vector<HealthService*> Server::Healths() const {
  std::vector<HealthService*> out = {health_.get()};
  if (probe_health_) out.push_back(probe_health_.get());
  return out;
}

Status Server::StartSideListeners() {
  if (!options_.metrics_address.empty()) {
    MZ_RETURN_IF_ERROR(metrics_.Serve(options_.metrics_address));
    MZ_LOG(kInfo) << "serving Prometheus metrics on " << options_.metrics_address << " (port "
                  << metrics_.port() << ")";
  }
  if (!probe_health_) return Status::Ok();
  // Plaintext and nothing but grpc.health.v1: what Kubernetes' grpc probes dial. It tells only
  // whether the server serves, which is no secret.
  grpc::ServerBuilder builder;
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.RegisterService(probe_health_.get());
  builder.AddListeningPort(options_.health_address, grpc::InsecureServerCredentials(),
                           &probe_port_);
  probe_server_ = builder.BuildAndStart();
  if (!probe_server_ || probe_port_ == 0) {
    probe_server_.reset();
    return UnavailableError("healthAddress \"" + options_.health_address +
                            "\": gRPC could not listen there (address in use or not bindable)");
  }
  MZ_LOG(kInfo) << "serving grpc.health.v1 for probes on " << options_.health_address << " (port "
                << probe_port_ << ")";
  return Status::Ok();
}

std::string Server::address() const {
  MutexLock lock(mu_);
  return address_;
}

bool Server::running() const {
  MutexLock lock(mu_);
  return started_ && !shut_down_;
}

void Server::SetServing(bool serving) {
  // Not under mu_: Shutdown() holds it while it stops the components, one of which may be
  // calling this. After Shutdown() the health services ignore it (HealthService::Shutdown()).
  MutexLock lock(serving_mu_);
  serving_ = serving;
  if (!serving_reported_) return;
  for (HealthService* health : Healths()) health->SetServingStatus(serving);
}

void Server::RemoveOwnSocket() {
  // Only the socket this server created: a successor may already have replaced it.
  socket_file_.RemoveIfStillThere();
}

void Server::Shutdown(std::chrono::milliseconds grace) {
  MutexLock lock(mu_);
  if (!started_ || shut_down_) return;
  shut_down_ = true;
  MZ_LOG(kInfo) << "shutting down: draining in-flight calls for up to " << grace.count() << " ms";
  Drain(grace);
  RemoveOwnSocket();
  MZ_LOG(kInfo) << "gRPC server stopped";
  // No call runs any more, so no handler can see a service stopping under it.
  for (auto it = components_.rbegin(); it != components_.rend(); ++it) (*it)->Stop();
}

void Server::Drain(std::chrono::milliseconds grace) {
  // NOT_SERVING for everything from now on; every open Watch sends that and returns, so none
  // of them holds the drain below until the grace period ends. Their ends go out before the
  // GOAWAY: once a connection's last stream is done after a GOAWAY, gRPC closes it, and a
  // client then writing to it fails its open streams with UNAVAILABLE ("Broken pipe"), even a
  // Watch whose OK status already sits in its socket. A call counts until its status is sent.
  for (HealthService* health : Healths()) health->Shutdown();
  for (AddonsService* service : services_) service->EndStreams();
  if (!calls_->WaitNoWatch(std::chrono::steady_clock::now() + kWatchesEnd)) {
    MZ_LOG(kWarn) << "a health Watch did not end within " << kWatchesEnd.count()
                  << " ms of the shutdown (a client not reading?): draining anyway";
  }
  // gRPC's drain (stop accepting; let calls finish until `grace`, then cancel them) also waits
  // for every client connection to go, which an idle client takes seconds to do after the
  // GOAWAY. So the drain runs on its own thread, and once no call is left, the connections are
  // closed: cancelling all calls when none is running disconnects them and nothing else.
  if (probe_server_) probe_server_->Shutdown(std::chrono::system_clock::now());
  grpc::Server* server = server_.get();
  std::shared_ptr<CallCounter> calls = calls_;
  std::thread drain([server, calls, grace] {
    server->Shutdown(std::chrono::system_clock::now() + grace);
    calls->Stop();
  });
  const auto deadline = std::chrono::steady_clock::now() + grace;
  if (calls_->WaitIdle(deadline)) {
    // A call gRPC matched just before the shutdown may not have reached its interceptor yet:
    // give it a moment to show up before closing connections under it.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (calls_->WaitIdle(std::chrono::steady_clock::now())) {
      MZ_LOG(kDebug) << "no call in flight: closing idle client connections";
      grpc_server_cancel_all_calls(server->c_server());
    }
  }
  drain.join();
  server_->Wait();
}

}  // namespace mizarmp::addons
