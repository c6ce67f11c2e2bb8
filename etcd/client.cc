// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "etcd/client.h"

#include <grpcpp/grpcpp.h>

#include "common/fileutil.h"
#include "common/log.h"
#include "common/strings.h"

namespace mizarmp::etcd {
namespace {

using namespace std::chrono_literals;

// Big enough for a whole fence store (65,536 fences with their records) in one Range.
constexpr int kMaxReceiveBytes = 64 << 20;
// A member that comes back is reconnected to within a second, instead of gRPC's default backoff
// of up to two minutes, so service resumes as soon as quorum returns. gRPC also takes the
// "minimum" backoff as the time one connection attempt may take, so that one stays at a second.
constexpr int kMaxReconnectBackoffMs = 1000;
constexpr int kMinConnectMs = 1000;
constexpr int kInitialReconnectBackoffMs = 100;

// True when the member could not answer in time: it is down or unreachable (UNAVAILABLE), the
// call's deadline passed on the way (DEADLINE_EXCEEDED), or the member gave up waiting for its
// cluster: without a quorum, etcd answers a linearizable read whose deadline passed while it
// waited with UNKNOWN and Go's "context deadline exceeded".
bool MemberUnreachable(const grpc::Status& s) {
  const grpc::StatusCode code = s.error_code();
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         (code == grpc::StatusCode::UNKNOWN && s.error_message() == "context deadline exceeded");
}

Result<std::string> ReadOptionFile(const char* what, const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) {
    return Status(text.status().code(),
                  std::string("etcd ") + what + " \"" + path + "\": " + text.status().message());
  }
  return text;
}

}  // namespace

struct Client::Member {
  std::string endpoint;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Auth::Stub> auth;
};

Client::Client(const Options& options)
    : call_timeout_(options.call_timeout),
      name_("etcd at " + Joined(options.endpoints, ",")),
      username_(options.username) {}

Client::~Client() = default;

Result<std::unique_ptr<Client>> Client::Connect(const Options& options) {
  if (options.endpoints.empty()) return InvalidArgumentError("etcd: no endpoints");
  if (options.cert_file.empty() != options.key_file.empty()) {
    return InvalidArgumentError("etcd: a client certificate needs its key and the other way round");
  }
  if (options.username.empty() != options.password_file.empty()) {
    return InvalidArgumentError("etcd: a username needs a password file and the other way round");
  }
  std::unique_ptr<Client> client(new Client(options));
  MZ_RETURN_IF_ERROR(client->OpenChannels(options));
  if (!options.username.empty()) {
    MZ_ASSIGN_OR_RETURN(client->password_, ReadOptionFile("password file", options.password_file));
    while (!client->password_.empty() &&
           (client->password_.back() == '\n' || client->password_.back() == '\r')) {
      client->password_.pop_back();
    }
    MZ_RETURN_IF_ERROR(client->Authenticate());
  }
  return client;
}

Status Client::OpenChannels(const Options& options) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.ca_file.empty() || !options.cert_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    if (!options.ca_file.empty()) {
      MZ_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadOptionFile("CA file", options.ca_file));
    }
    if (!options.cert_file.empty()) {
      MZ_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadOptionFile("certificate", options.cert_file));
      MZ_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadOptionFile("key", options.key_file));
    }
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kInitialReconnectBackoffMs);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinConnectMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
  // After losing a connection gRPC resolves the name again before reconnecting, at most every
  // 30 s by default: a member back after a restart would stay unreachable that long.
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, kMaxReconnectBackoffMs);
  for (const std::string& endpoint : options.endpoints) {
    auto m = std::make_unique<Member>();
    m->endpoint = endpoint;
    m->channel = grpc::CreateCustomChannel(endpoint, credentials, args);
    m->kv = etcdserverpb::KV::NewStub(m->channel);
    m->lease = etcdserverpb::Lease::NewStub(m->channel);
    m->auth = etcdserverpb::Auth::NewStub(m->channel);
    members_.push_back(std::move(m));
  }
  return Status::Ok();
}

std::string Client::Token() const {
  MutexLock lock(token_mu_);
  return token_;
}

Status Client::Authenticate() {
  etcdserverpb::AuthenticateRequest request;
  request.set_name(username_);
  request.set_password(password_);
  etcdserverpb::AuthenticateResponse response;
  // Without the token: this call is what gets one.
  const size_t first = current_.load();
  Status last = UnavailableError(name_ + ": no member answered");
  for (size_t i = 0; i < members_.size(); ++i) {
    const Member& m = *members_[(first + i) % members_.size()];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + call_timeout_);
    const grpc::Status s = m.auth->Authenticate(&context, request, &response);
    if (s.ok()) {
      MutexLock lock(token_mu_);
      token_ = response.token();
      return Status::Ok();
    }
    last = ToStatus("authenticating as user \"" + username_ + "\"", m, s);
    if (!MemberUnreachable(s)) return last;
  }
  return last;
}

Status Client::ToStatus(const std::string& what, const Member& member,
                        const grpc::Status& s) const {
  const Code code = MemberUnreachable(s) ? Code::kUnavailable : static_cast<Code>(s.error_code());
  return Status(code, name_ + ": " + what + " at member " + member.endpoint + ": " +
                          s.error_message() + " (" +
                          std::string(CodeName(static_cast<Code>(s.error_code()))) + ")");
}

template <typename Call>
Status Client::Invoke(const char* method, bool idempotent, Call&& call) {
  const size_t first = current_.load();
  const size_t tries = idempotent ? members_.size() : 1;
  Status last;
  bool reauthenticated = false;
  for (size_t i = 0; i < tries; ++i) {
    const size_t index = (first + i) % members_.size();
    const Member& m = *members_[index];
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + call_timeout_);
    if (!username_.empty()) context.AddMetadata("token", Token());
    const grpc::Status s = call(m, context);
    if (s.ok()) {
      current_.store(index);
      return Status::Ok();
    }
    last = ToStatus(method, m, s);
    if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED && !username_.empty() &&
        !reauthenticated) {
      // The token expired (etcd's simple tokens last minutes): get a new one, try once more.
      reauthenticated = true;
      MZ_RETURN_IF_ERROR(Authenticate());
      --i;
      continue;
    }
    if (!MemberUnreachable(s)) return last;
    // This member is down or without quorum: later calls start at the next one.
    current_.store((index + 1) % members_.size());
  }
  return last;
}

Result<etcdserverpb::RangeResponse> Client::Range(const etcdserverpb::RangeRequest& request) {
  etcdserverpb::RangeResponse response;
  MZ_RETURN_IF_ERROR(Invoke("Range", /*idempotent=*/true, [&](const Member& m, auto& context) {
    return m.kv->Range(&context, request, &response);
  }));
  return response;
}

Result<etcdserverpb::TxnResponse> Client::Txn(const etcdserverpb::TxnRequest& request) {
  etcdserverpb::TxnResponse response;
  MZ_RETURN_IF_ERROR(Invoke("Txn", /*idempotent=*/false, [&](const Member& m, auto& context) {
    return m.kv->Txn(&context, request, &response);
  }));
  return response;
}

Result<etcdserverpb::LeaseGrantResponse> Client::LeaseGrant(std::chrono::seconds ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl.count());
  etcdserverpb::LeaseGrantResponse response;
  // Not re-sent: a lost answer leaves a lease nobody renews, which etcd drops after its TTL.
  MZ_RETURN_IF_ERROR(Invoke("LeaseGrant", /*idempotent=*/false, [&](const Member& m, auto& c) {
    return m.lease->LeaseGrant(&c, request, &response);
  }));
  if (!response.error().empty()) {
    return UnavailableError(name_ + ": LeaseGrant: " + response.error());
  }
  return response;
}

Result<int64_t> Client::LeaseKeepAlive(int64_t lease_id) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseKeepAliveResponse response;
  // etcd renews over a stream only; one request and its answer per stream keeps every renewal
  // under the call deadline.
  MZ_RETURN_IF_ERROR(Invoke("LeaseKeepAlive", /*idempotent=*/true, [&](const Member& m, auto& c) {
    auto stream = m.lease->LeaseKeepAlive(&c);
    if (stream->Write(request) && stream->Read(&response)) {
      stream->WritesDone();
      c.TryCancel();  // the answer is in; do not wait for the server to close
      stream->Finish().ok();
      return grpc::Status::OK;
    }
    stream->WritesDone();
    const grpc::Status s = stream->Finish();
    return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "stream closed without an answer")
                  : s;
  }));
  return response.ttl() > 0 ? response.ttl() : 0;
}

Status Client::LeaseRevoke(int64_t lease_id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease_id);
  etcdserverpb::LeaseRevokeResponse response;
  return Invoke("LeaseRevoke", /*idempotent=*/true, [&](const Member& m, auto& context) {
    return m.lease->LeaseRevoke(&context, request, &response);
  });
}

}  // namespace mizarmp::etcd
