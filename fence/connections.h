// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The Mizar-MP connections one enforcement pass works over, and how a batch of calls is spread
// across them. Mizar-MP has neither a bulk update nor a bulk read by id, so a pass that updates
// or reads many ports makes one call per port, over several kept-alive connections at once.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "common/status.h"
#include "mizarmp-client/client.h"

namespace mizarmp::fence {

// Makes another Mizar-MP client: one per connection, since a Client is not thread-safe.
using ClientFactory = std::function<Result<std::unique_ptr<client::Client>>()>;

// `first` (the pass's own connection, already made; may be null) and up to `count` - 1 more
// from `more`, each used by one thread.
struct PassConnections {
  client::Client* first = nullptr;
  ClientFactory more;
  int count = 1;
};

// Calls `call(client, i)` once for each i in [0, n) that some connection takes: `first` on the
// calling thread, the others each on a thread of its own (logging under the caller's request
// id), each taking the next i not yet taken, so `call` must touch nothing shared but what
// belongs to its own i. A connection that cannot be made leaves its share to the others. With
// none at all, some i are never called: the returned status says why (the caller marks those
// not called; the status is meaningless when every i was).
Status ForEachOverConnections(const PassConnections& connections, size_t n,
                              const std::function<void(client::Client&, size_t)>& call);

}  // namespace mizarmp::fence
