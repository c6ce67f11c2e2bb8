// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// ovsdb::Connection: RFC 7047's JSON-RPC 1.0 over ovsdb-server's unix socket, with every wait
// bounded by poll(2) and the caller's deadline.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/unix_socket.h"
#include "ovsdb/ovsdb.h"

namespace mizarmp::ovsdb {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// What is left of `deadline` for poll(2): at least 0, at most INT_MAX ms.
int PollTimeout(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > 0x7fffffff ? 0x7fffffff : static_cast<int>(left);
}

// Waits for `events` on fd until `deadline`: OK, DEADLINE_EXCEEDED, or the errno.
Status PollFor(int fd, short events, Clock::time_point deadline, const std::string& what) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, PollTimeout(deadline));
    if (n > 0) return Status::Ok();  // readable, writable, or an error/hangup the I/O reports
    if (n == 0) return DeadlineExceededError(what + ": no answer in time");
    if (errno != EINTR) return ErrnoError(what + ": poll", errno);
  }
}

// Serialises without throwing: invalid UTF-8 in a caller's string is replaced, not an exception.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::string Connection::Where() const { return "ovsdb-server at " + socket_path_; }

Status Connection::Fail(Status status) {
  // The descriptor stays open (Shutdown() may be using it from another thread); every later
  // call fails at once.
  broken_ = true;
  broken_reason_ = status.message();
  return status;
}

Result<Connection> Connection::Open(const std::string& socket_path,
                                    std::chrono::milliseconds timeout) {
  const std::string where = "ovsdb-server at " + socket_path;
  if (socket_path.empty() || socket_path.size() > kMaxUnixPath) {
    return InvalidArgumentError(where + ": the socket path must be 1 to " +
                                std::to_string(kMaxUnixPath) + " bytes long");
  }
  const auto deadline = Clock::now() + timeout;
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return ErrnoError(where + ": socket", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    // A unix socket whose listen backlog is full answers EAGAIN; wait for it to make room.
    if (err != EAGAIN && err != EINPROGRESS) {
      return UnavailableError(where + ": connect: " + std::strerror(err));
    }
    Status ready = PollFor(fd.get(), POLLOUT, deadline, where + ": connect");
    if (!ready.ok()) return UnavailableError(ready.message());
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) so_error = errno;
    if (so_error != 0) return UnavailableError(where + ": connect: " + std::strerror(so_error));
  }
  Connection c;
  c.fd_ = std::move(fd);
  c.socket_path_ = socket_path;
  c.timeout_ = timeout;
  return c;
}

void Connection::Shutdown() {
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

Status Connection::Send(const std::string& text, Clock::time_point deadline) {
  size_t sent = 0;
  while (sent < text.size()) {
    const ssize_t n = ::send(fd_.get(), text.data() + sent, text.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status ready = PollFor(fd_.get(), POLLOUT, deadline, Where() + ": sending");
      if (!ready.ok()) return Fail(ready);  // a half-sent request leaves the stream unusable
      continue;
    }
    return Fail(UnavailableError(Where() + ": send: " + std::strerror(errno)));
  }
  return Status::Ok();
}

Result<json> Connection::Receive(Clock::time_point deadline) {
  for (;;) {
    auto next = framer_.Next();
    if (!next.ok()) return Fail(next.status().WithContext(Where()));
    if (next->has_value()) {
      json message = json::parse(**next, nullptr, /*allow_exceptions=*/false);
      if (message.is_discarded() || !message.is_object()) {
        return Fail(InternalError(Where() + ": the peer sent a message that is not JSON"));
      }
      return message;
    }
    Status ready = PollFor(fd_.get(), POLLIN, deadline, Where());
    // A timed-out reply may still come: the stream stays usable, and a late reply is told
    // apart by its id.
    if (!ready.ok()) return ready;
    char buf[65536];
    const ssize_t n = ::recv(fd_.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      framer_.Append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      return Fail(UnavailableError(Where() + ": the server closed the connection"));
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Fail(UnavailableError(Where() + ": recv: " + std::strerror(errno)));
    }
  }
}

Result<json> Connection::TransactRaw(const json& operations,
                                     std::optional<std::chrono::milliseconds> timeout) {
  if (!fd_.valid()) return UnavailableError(Where() + ": not connected");
  if (broken_) {
    return UnavailableError(Where() + ": the connection was lost earlier (" + broken_reason_ + ")");
  }
  if (!operations.is_array()) return InvalidArgumentError(Where() + ": operations not an array");
  const auto deadline = Clock::now() + timeout.value_or(timeout_);
  const uint64_t id = next_id_++;
  json params = json::array({"Open_vSwitch"});
  for (const json& op : operations) params.push_back(op);
  MZ_RETURN_IF_ERROR(Send(
      Dump(json{{"method", "transact"}, {"params", std::move(params)}, {"id", id}}), deadline));
  for (;;) {
    MZ_ASSIGN_OR_RETURN(json message, Receive(deadline));
    if (auto method = message.find("method"); method != message.end()) {
      // The server's liveness probe (RFC 7047 4.1.11) wants its params back under its id;
      // notifications (id null: "update", "locked", ...) are for monitors, which this is not.
      const auto echo_id = message.find("id");
      if (*method == "echo" && echo_id != message.end() && !echo_id->is_null()) {
        json reply{{"id", *echo_id},
                   {"result", message.value("params", json::array())},
                   {"error", nullptr}};
        MZ_RETURN_IF_ERROR(Send(Dump(reply), deadline));
      }
      continue;
    }
    const auto reply_id = message.find("id");
    // A reply to an earlier request that timed out: nobody waits for it any more.
    if (reply_id == message.end() || !reply_id->is_number_unsigned() ||
        reply_id->get<uint64_t>() != id) {
      if (reply_id == message.end()) {
        return Fail(InternalError(Where() + ": transact: a message with neither method nor id"));
      }
      continue;
    }
    const auto error = message.find("error");
    if (error != message.end() && !error->is_null()) {
      return InternalError(Where() + ": transact refused: " + Dump(*error));
    }
    const auto result = message.find("result");
    if (result == message.end() || !result->is_array()) {
      return InternalError(Where() + ": transact: the reply's result is not an array");
    }
    return std::move(*result);
  }
}

Result<json> Connection::Transact(const json& operations,
                                  std::optional<std::chrono::milliseconds> timeout) {
  MZ_ASSIGN_OR_RETURN(json results, TransactRaw(operations, timeout));
  for (size_t i = 0; i < results.size(); ++i) {
    const json& r = results[i];
    if (!r.is_object()) continue;  // null: not run, after an earlier failure
    const auto error = r.find("error");
    if (error == r.end() || error->is_null()) continue;
    std::string what =
        i < operations.size()
            ? "operation " + std::to_string(i) + " (" +
                  (operations[i].is_object() ? operations[i].value("op", std::string("?"))
                                             : std::string("?")) +
                  ")"
            : std::string("the commit");
    std::string text = error->is_string() ? error->get<std::string>() : Dump(*error);
    if (auto details = r.find("details"); details != r.end() && details->is_string()) {
      text += ": " + details->get<std::string>();
    }
    return FailedPreconditionError(Where() + ": " + what + " failed: " + text);
  }
  return results;
}

}  // namespace mizarmp::ovsdb
