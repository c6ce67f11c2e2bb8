// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// A real etcd cluster of 1 or 3 members on loopback (/usr/bin/etcd, Debian etcd-server), for
// the fence store's tests and benchmarks: free ports, fresh data directories, settings tuned
// for fast elections, optional TLS client certificates and etcd user authentication, and the
// means to kill, stop and restart single members. Members die with the fixture, and also
// (setpriv --pdeathsig KILL) when the thread that started them exits, so a test that crashes or
// hits ctest's timeout leaves no etcd behind holding ports: construct and Restart() from a
// thread that outlives the cluster.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/process.h"
#include "tests/support/support.h"

namespace mizarmp::testing {

struct EtcdTls {
  // Client traffic over TLS with client certificates required (--client-cert-auth) and
  // verified against a throwaway CA (pki()); peer traffic stays plain HTTP.
  bool enabled = false;
};

class EtcdCluster {
 public:
  // Starts `members` (1 or 3) members and waits (up to 30 s) until every one serves a
  // linearizable read; error() says what failed otherwise.
  explicit EtcdCluster(int members, EtcdTls tls = {});
  // Kills (SIGKILL) and reaps every member still running; removes the data directories.
  ~EtcdCluster();
  EtcdCluster(const EtcdCluster&) = delete;
  EtcdCluster& operator=(const EtcdCluster&) = delete;

  // Empty when every member started and the cluster has a leader; else the cause, with the
  // tail of the failing member's log.
  std::string error() const { return error_; }
  int size() const { return static_cast<int>(members_.size()); }

  // Members are numbered 0..size()-1; another number throws std::out_of_range.
  // "127.0.0.1:PORT" client address per member (index = member).
  std::vector<std::string> endpoints() const;
  // The fence-store location of the whole cluster: "etcd://127.0.0.1:p1,127.0.0.1:p2,...".
  std::string Location() const;
  // The same for one member only.
  std::string Location(int member) const;

  // SIGKILL, then reaps it. No-op for a member not running.
  void Kill(int member);
  // SIGTERM, then waits for it to exit (SIGKILL after 10 s).
  void Stop(int member);
  // SIGSTOP and SIGCONT: a frozen member neither answers nor refuses, as one on a stalled disk
  // or a paused VM. No-op for a member not running.
  void Freeze(int member);
  void Thaw(int member);
  // Starts a stopped or killed member (killing it first if it still runs) again with its data
  // directory and ports, and waits (up to 30 s) until it serves a linearizable read, which needs a
  // quorum. False on timeout.
  bool Restart(int member);
  // Whether `member` answers `etcdctl endpoint health` (a linearizable read) within 2 s.
  bool Healthy(int member);
  // Whether some running member serves a linearizable read before `timeout`.
  bool WaitForQuorum(std::chrono::milliseconds timeout);

  // Runs etcdctl with `args` against `member` (-1: every member), with this cluster's TLS
  // files and, once EnableAuth ran, as root; `command_timeout` bounds each request.
  ExecResult Etcdctl(const std::vector<std::string>& args, int member = -1,
                     std::chrono::seconds command_timeout = std::chrono::seconds(5)) const;

  // Enables etcd authentication: adds root (with a password this fixture keeps) and `user`
  // with `password`, granted a role with readwrite on every key under the prefix "/". False when
  // an etcdctl step failed; error() then holds its output.
  bool EnableAuth(const std::string& user, const std::string& password);

  // The last 3000 bytes of `member`'s log (etcd's stdout and stderr), for failure messages.
  std::string LogTail(int member) const;

  // The CA, server and client certificates when TLS is enabled; nullptr otherwise.
  const Pki* pki() const { return pki_.get(); }

 private:
  struct Member {
    std::string name;
    int client_port = 0;
    int peer_port = 0;
    std::string dir;  // holds data/ and etcd.log
    std::unique_ptr<Daemon> process;
  };

  // members_[member]; std::out_of_range for a member this cluster does not have.
  Member& At(int member);
  const Member& At(int member) const;
  bool StartAll();
  bool AssignPortsAndDirs(int attempt);
  std::vector<std::string> MemberArgv(const Member& m) const;
  bool Launch(Member& m);
  bool WaitServing(int member, std::chrono::milliseconds timeout);
  bool Running(int member) const;
  std::string ClientUrl(int member) const;

  TempDir dir_;
  std::unique_ptr<Pki> pki_;
  std::vector<Member> members_;
  std::string token_;
  std::string root_password_;  // set by EnableAuth
  std::string error_;
};

}  // namespace mizarmp::testing
