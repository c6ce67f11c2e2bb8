// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The relay's side of a client connection (relay/relay.h): a socket as Beast's synchronous
// stream, with a deadline on every read and write.
#pragma once

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <limits>

namespace mizarmp::relay {

namespace asio = boost::asio;
namespace beast = boost::beast;
using beast::error_code;
using Clock = std::chrono::steady_clock;

// Milliseconds from now until `deadline`, for poll(2): 0 once it has passed.
inline int MsUntil(Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, std::numeric_limits<int>::max()));
}

// A client connection as Beast's SyncReadStream and SyncWriteStream, every read and write
// bounded by a deadline. Asio's own synchronous socket operations cannot be: after a recv(2)
// that SO_RCVTIMEO ends with EAGAIN they poll(2) the socket without a timeout, so a silent
// client would hold its thread forever. shutdown(2) of the socket (Stop) ends a wait at once.
class ClientStream {
 public:
  explicit ClientStream(int fd) : fd_(fd) {}

  // Every read and write until the next call must be done by `deadline`.
  void set_deadline(Clock::time_point deadline) { deadline_ = deadline; }

  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers, error_code& ec) {
    const asio::mutable_buffer b = FirstNonEmpty<asio::mutable_buffer>(buffers);
    ec = {};
    if (b.size() == 0) return 0;
    for (;;) {
      if (!Wait(POLLIN, ec)) return 0;
      const ssize_t n = ::recv(fd_, b.data(), b.size(), 0);
      if (n > 0) return static_cast<size_t>(n);
      if (n == 0) {
        ec = asio::error::eof;
        return 0;
      }
      if (errno != EINTR && errno != EAGAIN) return Failed(ec);
    }
  }

  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers, error_code& ec) {
    iovec iov[16];
    size_t count = 0;
    for (auto it = asio::buffer_sequence_begin(buffers);
         it != asio::buffer_sequence_end(buffers) && count < std::size(iov); ++it) {
      const asio::const_buffer b(*it);
      if (b.size() == 0) continue;
      iov[count++] = iovec{const_cast<void*>(b.data()), b.size()};
    }
    ec = {};
    if (count == 0) return 0;
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    for (;;) {
      if (!Wait(POLLOUT, ec)) return 0;
      // MSG_NOSIGNAL: a client gone away is an error here, not a SIGPIPE for the process.
      const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR && errno != EAGAIN) return Failed(ec);
    }
  }

  // The throwing forms the stream concepts ask for as well (Beast's calls use the above).
  template <class MutableBufferSequence>
  size_t read_some(const MutableBufferSequence& buffers) {
    error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  template <class ConstBufferSequence>
  size_t write_some(const ConstBufferSequence& buffers) {
    error_code ec;
    const size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

 private:
  template <class Buffer, class Sequence>
  static Buffer FirstNonEmpty(const Sequence& buffers) {
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
         ++it) {
      Buffer b(*it);
      if (b.size() != 0) return b;
    }
    return Buffer();
  }

  // Waits until the socket is ready for `events`; false (ec set) when the deadline passed first.
  bool Wait(short events, error_code& ec) {
    for (;;) {
      pollfd p{fd_, events, 0};
      const int rc = ::poll(&p, 1, MsUntil(deadline_));
      if (rc > 0) return true;  // ready, or an error or hang-up the next call reports
      if (rc == 0) {
        ec = beast::error::timeout;
        return false;
      }
      if (errno != EINTR) {
        Failed(ec);
        return false;
      }
    }
  }

  static size_t Failed(error_code& ec) {
    ec = error_code(errno, boost::system::system_category());
    return 0;
  }

  int fd_;
  Clock::time_point deadline_ = Clock::now();
};

}  // namespace mizarmp::relay
