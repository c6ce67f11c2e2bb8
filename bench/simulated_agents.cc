// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "bench/simulated_agents.h"

#include "bench/grpc_support.h"

namespace mizarmp::bench {

// One node's stream. It has exactly one operation outstanding at a time, so the agent itself is
// the completion queue's tag and `state` says which operation completed.
struct SimulatedAgents::Agent {
  enum class State { kStarting, kReading, kAcknowledging, kFinishing, kWaiting, kDone };
  std::string node;
  std::unique_ptr<mizarmp::v1::PortIndex::Stub> stub;
  // A context serves one call only, and outlives the reader made in its call's arena.
  std::unique_ptr<grpc::ClientContext> watch;
  std::unique_ptr<grpc::Alarm> reopen;
  std::unique_ptr<grpc::ClientAsyncReader<mizarmp::v1::FenceSetUpdate>> reader;
  mizarmp::v1::FenceSetUpdate update;
  std::unique_ptr<grpc::ClientContext> ack;
  std::unique_ptr<grpc::ClientAsyncResponseReader<mizarmp::v1::AcknowledgeResponse>> ack_reader;
  mizarmp::v1::AcknowledgeResponse ack_response;
  grpc::Status status;
  State state = State::kStarting;
};

namespace {
// Streams per connection: well under gRPC's default limit of concurrent streams.
constexpr size_t kStreamsPerChannel = 100;
constexpr std::chrono::milliseconds kReopenDelay{200};
}  // namespace

SimulatedAgents::SimulatedAgents(const std::vector<std::string>& sockets,
                                 const std::vector<std::string>& nodes) {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const size_t channel = i / kStreamsPerChannel;
    if (channel == channels.size()) {
      channels.push_back(NewChannel("unix:" + sockets[i % sockets.size()],
                                    1000 + static_cast<int>(channel)));
    }
    auto agent = std::make_unique<Agent>();
    agent->node = nodes[i];
    agent->stub = mizarmp::v1::PortIndex::NewStub(channels[channel]);
    Open(*agent);
    agents_.push_back(std::move(agent));
  }
  driver_ = std::thread([this] { Drive(); });
}

SimulatedAgents::~SimulatedAgents() {
  stopping_ = true;
  stop_.Set(&queue_, std::chrono::system_clock::now(), &stop_);
  driver_.join();
}

void SimulatedAgents::Drive() {
  size_t done = 0;
  void* tag = nullptr;
  bool ok = false;
  while (done < agents_.size() && queue_.Next(&tag, &ok)) {
    if (tag == &stop_) {
      CancelAll();
      continue;
    }
    Agent& agent = *static_cast<Agent*>(tag);
    Step(agent, ok);
    if (agent.state == Agent::State::kDone) ++done;
  }
  queue_.Shutdown();
  while (queue_.Next(&tag, &ok)) {
  }
}

void SimulatedAgents::Step(Agent& agent, bool ok) {
  using State = Agent::State;
  switch (agent.state) {
    case State::kStarting:
      if (ok) return Read(agent);
      break;
    case State::kReading:
      if (ok) return Acknowledge(agent);
      break;
    case State::kAcknowledging:
      (agent.status.ok() ? acknowledged_ : refused_)++;
      return Read(agent);
    case State::kFinishing:
      if (stopping_) {
        agent.state = State::kDone;
        return;
      }
      ++ended_;
      agent.state = State::kWaiting;
      agent.reopen = std::make_unique<grpc::Alarm>();
      agent.reopen->Set(&queue_, std::chrono::system_clock::now() + kReopenDelay, &agent);
      return;
    case State::kWaiting:
      if (stopping_) {
        agent.state = State::kDone;
        return;
      }
      return Open(agent);
    case State::kDone:
      return;
  }
  agent.state = State::kFinishing;  // the stream ended: its status
  agent.reader->Finish(&agent.status, &agent);
}

void SimulatedAgents::CancelAll() {
  for (const auto& agent : agents_) {
    if (agent->state == Agent::State::kWaiting) {
      agent->reopen->Cancel();
    } else if (agent->state != Agent::State::kDone) {
      agent->watch->TryCancel();
    }
  }
}

void SimulatedAgents::Open(Agent& agent) {
  agent.state = Agent::State::kStarting;
  // The reader lives in its call's arena, which the context frees: the reader goes first.
  agent.reader.reset();
  agent.watch = std::make_unique<grpc::ClientContext>();
  mizarmp::v1::WatchFenceSetRequest request;
  request.set_node(agent.node);
  agent.reader = agent.stub->PrepareAsyncWatchFenceSet(agent.watch.get(), request, &queue_);
  agent.reader->StartCall(&agent);
}

void SimulatedAgents::Read(Agent& agent) {
  agent.state = Agent::State::kReading;
  agent.reader->Read(&agent.update, &agent);
}

void SimulatedAgents::Acknowledge(Agent& agent) {
  agent.state = Agent::State::kAcknowledging;
  mizarmp::v1::AcknowledgeRequest request;
  request.set_node(agent.node);
  request.set_fence_set_digest(agent.update.fence_set_digest());
  agent.ack_reader.reset();  // before its context, as in Open
  agent.ack = std::make_unique<grpc::ClientContext>();
  agent.ack_reader = agent.stub->PrepareAsyncAcknowledge(agent.ack.get(), request, &queue_);
  agent.ack_reader->StartCall();
  agent.ack_reader->Finish(&agent.ack_response, &agent.status, &agent);
}

}  // namespace mizarmp::bench
