// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// Node agents as the fencing benchmark simulates them, thousands in one process: each node keeps
// a WatchFenceSet stream open to its controller replica and acknowledges every set it is sent
// (fence/service/publisher.h does the same, and enforces the set in between), and opens it again
// kReopenDelay after it ended, as a real agent does when its controller restarts. One
// completion queue and one thread drive every stream, so 4,000 agents cost the benchmark no
// thread each; the controller's side is the product's own.
#pragma once

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "mizarmp/port_index.grpc.pb.h"

namespace mizarmp::bench {

class SimulatedAgents {
 public:
  // Opens a stream for each of `nodes` (node i to sockets[i % sockets.size()], unix socket
  // paths), each node having published already: an acknowledgement needs a publication.
  SimulatedAgents(const std::vector<std::string>& sockets, const std::vector<std::string>& nodes);
  ~SimulatedAgents();  // cancels every stream and waits for them to end

  // Acknowledgements the controllers accepted so far, and those they refused.
  uint64_t acknowledged() const { return acknowledged_.load(); }
  uint64_t refused() const { return refused_.load(); }
  // Streams that ended (other than by the destructor's cancel), each opened again.
  uint64_t ended() const { return ended_.load(); }

 private:
  struct Agent;
  void Drive();
  // Moves `agent` on after its one outstanding operation completed (`ok` as the queue said).
  void Step(Agent& agent, bool ok);
  void Open(Agent& agent);         // a new stream
  void Read(Agent& agent);         // the stream's next update
  void Acknowledge(Agent& agent);  // the update just read
  // On the driver's thread: cancels every stream and every pending reopening.
  void CancelAll();

  grpc::CompletionQueue queue_;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::atomic<uint64_t> acknowledged_{0}, refused_{0}, ended_{0};
  std::atomic<bool> stopping_{false};
  grpc::Alarm stop_;  // fires on the driver's thread: the destructor's signal
  std::thread driver_;
};

}  // namespace mizarmp::bench
