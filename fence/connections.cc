// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "fence/connections.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/log.h"

namespace mizarmp::fence {
namespace {

// The indexes of one batch, taken one at a time by the connections working on it.
class SharedIndexes {
 public:
  SharedIndexes(size_t n, const std::function<void(client::Client&, size_t)>& call)
      : n_(n), call_(call) {}

  // Calls for the next index not yet taken over `mp`, until none is left.
  void Drain(client::Client& mp) {
    for (size_t i = next_.fetch_add(1); i < n_; i = next_.fetch_add(1)) call_(mp, i);
  }

 private:
  const size_t n_;
  const std::function<void(client::Client&, size_t)>& call_;
  std::atomic<size_t> next_{0};
};

// One more connection on a thread of its own. A client that cannot be made leaves its share
// to the other connections; `error` says why.
void DrainOnNewConnection(SharedIndexes& indexes, const ClientFactory& make,
                          const std::string& log_context, Status& error) {
  log::SetThreadContext(log_context);
  auto mp = make();
  if (!mp.ok()) {
    error = mp.status();
    MZ_LOG(kWarn) << "fence: one Mizar-MP connection fewer for this pass: " << error.ToString();
    return;
  }
  indexes.Drain(**mp);
}

}  // namespace

Status ForEachOverConnections(const PassConnections& connections, size_t n,
                              const std::function<void(client::Client&, size_t)>& call) {
  SharedIndexes indexes(n, call);
  const size_t wanted = std::min(static_cast<size_t>(std::max(connections.count, 1)), n);
  const size_t on_threads = connections.first != nullptr && wanted > 0 ? wanted - 1 : wanted;
  std::vector<Status> errors(on_threads);
  std::vector<std::thread> threads;
  threads.reserve(on_threads);
  const std::string log_context = log::ThreadContext();
  for (size_t t = 0; t < on_threads && connections.more; ++t) {
    try {
      threads.emplace_back(DrainOnNewConnection, std::ref(indexes), std::cref(connections.more),
                           std::cref(log_context), std::ref(errors[t]));
    } catch (const std::system_error& e) {  // out of threads: the connections made do it all
      errors[t] =
          Status(Code::kResourceExhausted, std::string("no thread for a connection: ") + e.what());
      MZ_LOG(kWarn) << "fence: " << errors[t].message();
      break;
    }
  }
  if (connections.first != nullptr) indexes.Drain(*connections.first);
  for (std::thread& t : threads) t.join();
  Status none = FailedPreconditionError("no connection to Mizar-MP could be made");
  for (const Status& e : errors) {
    if (!e.ok()) none = e.WithContext("no connection to Mizar-MP could be made");
  }
  return none;
}

}  // namespace mizarmp::fence
