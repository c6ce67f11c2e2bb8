// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/fileutil.h"
#include "common/flags.h"
#include "common/ipaddr.h"
#include "common/mutex.h"
#include "common/random.h"
#include "common/retry.h"
#include "common/status.h"
#include "common/strings.h"
#include "common/uuid.h"
#include "common/watched.h"
#include "common/worker.h"
#include "tests/support/support.h"

namespace mizarmp {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  MZ_ASSIGN_OR_RETURN(int h, Half(x));
  return Half(h);
}

// The pipe's reading end drained until the writer closes it; a read error ends it early and
// shows as a shorter string in the comparison.
std::string ReadUntilEof(int fd) {
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// A waiter wakes on the next Set() with that value, sees nothing new at its timeout, and wakes
// for good once closed.
TEST(Watched, WaitersWakeOnEachNewVersionAndOnClose) {
  using namespace std::chrono_literals;
  Watched<std::string> watched;
  EXPECT_EQ(watched.Get().number, 0u);
  EXPECT_EQ(watched.Get().value, nullptr);
  EXPECT_EQ(watched.WaitPast(0, 10ms).number, 0u);  // nothing set: the timeout

  std::thread setter([&] { watched.Set("first"); });
  const auto first = watched.WaitPast(0, 60s);
  setter.join();
  ASSERT_EQ(first.number, 1u);
  EXPECT_EQ(*first.value, "first");
  watched.Set("second");
  const auto second = watched.WaitPast(first.number, 60s);
  EXPECT_EQ(second.number, 2u);
  EXPECT_EQ(*second.value, "second");
  EXPECT_EQ(*first.value, "first") << "a waiter's version changed under it";

  std::thread closer([&] { watched.Close(); });
  EXPECT_EQ(watched.WaitPast(second.number, 60s).number, 2u);
  closer.join();
  EXPECT_TRUE(watched.closed());
}

TEST(Status, ResultCarriesValueOrError) {
  EXPECT_EQ(*Quarter(8), 2);
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_EQ(r.status().WithContext("quarter").ToString(), "INVALID_ARGUMENT: quarter: odd: 3");
}

TEST(Status, PredicatesSayWhatAFailureMeans) {
  EXPECT_TRUE(UnavailableError("x").IsTransient());
  EXPECT_TRUE(DeadlineExceededError("x").IsTransient());
  EXPECT_FALSE(InvalidArgumentError("x").IsTransient());
  EXPECT_TRUE(NotFoundError("x").IsNotFound());
  EXPECT_FALSE(Status::Ok().IsNotFound());
}

TEST(Status, DependencyErrorIsUnavailableOnlyForTransientCauses) {
  Status s = DependencyError(UnavailableError("down"), "Mizar-MP: down");
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_EQ(s.message(), "Mizar-MP: down");
  EXPECT_EQ(DependencyError(DeadlineExceededError("slow"), "m").code(), Code::kUnavailable);
  EXPECT_EQ(DependencyError(InvalidArgumentError("bad"), "m").code(), Code::kUnknown);
  EXPECT_EQ(DependencyError(NotFoundError("gone"), "m").code(), Code::kUnknown);
}

TEST(Strings, TrimLowerQuoteJoin) {
  EXPECT_EQ(Trim(" \t a b \r\n"), "a b");
  EXPECT_EQ(Trim("   "), "");
  EXPECT_EQ(AsciiLower("AA:Bb:0F"), "aa:bb:0f");
  EXPECT_EQ(Quoted("x"), "\"x\"");
  EXPECT_EQ(Joined(std::vector<std::string>{"a", "b", "c"}, ", "), "a, b, c");
}

TEST(Strings, SplitKeepsEmptyParts) {
  EXPECT_EQ(Split("a,,b", ','), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", ','), (std::vector<std::string>{""}));
  EXPECT_EQ(Split("a,", ','), (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(Split("one", ','), (std::vector<std::string>{"one"}));
}

TEST(Strings, ConstantTimeEqualComparesWholeValues) {
  EXPECT_TRUE(ConstantTimeEqual("s3cret", "s3cret"));
  EXPECT_FALSE(ConstantTimeEqual("s3cres", "s3cret"));
  EXPECT_FALSE(ConstantTimeEqual("s3cre", "s3cret"));         // a prefix of the secret
  EXPECT_FALSE(ConstantTimeEqual("s3crets3cret", "s3cret"));  // the secret repeated
  EXPECT_FALSE(ConstantTimeEqual("", "s3cret"));
  EXPECT_FALSE(ConstantTimeEqual("x", ""));
  EXPECT_TRUE(ConstantTimeEqual("", ""));
}

// The checks applied to values from outside: UTF-8, log-line escaping, the JSON nesting bound.
TEST(Strings, IsValidUtf8AcceptsWellFormedTextOnly) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("/var/run/netns/cni-1234"));
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("eth\xc3"));           // cut off
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a stray continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xf0\x9f\x98"));      // cut off
}

TEST(Strings, LogEscapedKeepsALogLineOneLine) {
  EXPECT_EQ(LogEscaped("eth0"), "\"eth0\"");
  EXPECT_EQ(LogEscaped("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(LogEscaped("x\nE 2024 mizarmp[ADD] forged"), "\"x\\nE 2024 mizarmp[ADD] forged\"");
  EXPECT_EQ(LogEscaped("\r\t\x01\x7f"), "\"\\r\\t\\x01\\x7f\"");
  EXPECT_EQ(LogEscaped("p\xff"), "\"p\\xff\"");
  EXPECT_EQ(LogEscaped("caf\xc3\xa9"), "\"caf\xc3\xa9\"") << "valid UTF-8 is kept as it is";
  EXPECT_EQ(LogEscaped("\xc3"), "\"\\xc3\"");
  const std::string escaped = LogEscaped(std::string("a\0b\n\xed\xa0\x80", 6));
  EXPECT_EQ(escaped.find('\n'), std::string::npos);
  EXPECT_EQ(escaped.find('\0'), std::string::npos);
  EXPECT_TRUE(IsValidUtf8(escaped));
}

TEST(Strings, JsonNestingDepthCountsOutsideStringsAndStopsAtTheLimit) {
  EXPECT_EQ(JsonNestingDepth("{}", 64), 1u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":[1,{"b":[]}]})", 64), 4u);
  EXPECT_EQ(JsonNestingDepth(R"({"a":"[[[[{{{{\"[["})", 64), 1u);
  EXPECT_EQ(JsonNestingDepth("42", 64), 0u);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(JsonNestingDepth(deep, 64), 65u);
  EXPECT_EQ(JsonNestingDepth(std::string(64, '[') + std::string(64, ']'), 64), 64u);
}

struct FlagTarget {
  std::string name = "default";
  int64_t count = 1;
  bool verbose = false;
};

FlagTable MakeTable(FlagTarget& t) {
  FlagTable table;
  table.String("name", "NAME", "who to greet (default \"default\")", &t.name)
      .Int("count", "N", "how often (default 1)", 1, 10, [&t](int64_t n) { t.count = n; })
      .Switch("verbose", "say more", &t.verbose);
  return table;
}

TEST(Flags, ParsesEveryFormInOrder) {
  FlagTarget t;
  bool help = false;
  ASSERT_TRUE(
      MakeTable(t).Parse({"--name", "a", "--count=3", "--verbose", "--name=b"}, &help).ok());
  EXPECT_EQ(t.name, "b");  // the later one wins
  EXPECT_EQ(t.count, 3);
  EXPECT_TRUE(t.verbose);
  EXPECT_FALSE(help);
  ASSERT_TRUE(MakeTable(t).Parse({"--verbose=false"}).ok());
  EXPECT_FALSE(t.verbose);
  ASSERT_TRUE(MakeTable(t).Parse({"--count", "2", "-h", "--bogus"}, &help).ok());
  EXPECT_TRUE(help);  // --help stops the parse: what follows is not looked at
}

TEST(Flags, ErrorsNameTheFlagAndTheValue) {
  FlagTarget t;
  Status s = MakeTable(t).Parse({"--count", "11"});
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message(), "flag --count: \"11\" is not an integer in 1..10");
  s = MakeTable(t).Parse({"--count=x"});
  EXPECT_EQ(s.message(), "flag --count: \"x\" is not an integer in 1..10");
  s = MakeTable(t).Parse({"--nmae", "a"});
  EXPECT_EQ(s.message(), "flag --nmae: unknown flag (see --help)");
  s = MakeTable(t).Parse({"--name"});
  EXPECT_EQ(s.message(), "flag --name: needs a value (NAME)");
  s = MakeTable(t).Parse({"--verbose=maybe"});
  EXPECT_EQ(s.message(), "flag --verbose: \"maybe\" is not true or false");
  s = MakeTable(t).Parse({"stray"});
  EXPECT_EQ(s.message(), "argument \"stray\": expected a --flag");
  // Nothing is applied when any flag is wrong: every one is checked first.
  t = FlagTarget();
  EXPECT_FALSE(MakeTable(t).Parse({"--name", "x", "--bogus"}).ok());
  EXPECT_EQ(t.name, "default");
}

TEST(Flags, HelpListsEveryFlagFromTheSameTable) {
  FlagTarget t;
  const FlagTable table = MakeTable(t);
  const std::string help = table.Help();
  EXPECT_EQ(help,
            "  --name NAME  who to greet (default \"default\")\n"
            "  --count N    how often (default 1)\n"
            "  --verbose    say more\n");
  for (const Flag& f : table.flags()) {
    EXPECT_NE(help.find("--" + f.name), std::string::npos) << f.name;
  }
}

TEST(IpAddress, ParsesAndPrintsCanonically) {
  EXPECT_EQ(IpAddress::Parse("10.0.0.1")->ToString(), "10.0.0.1");
  EXPECT_EQ(IpAddress::Parse("2001:DB8:0:0:0:0:0:1")->ToString(), "2001:db8::1");
  EXPECT_FALSE(IpAddress::Parse("10.0.0").ok());
  EXPECT_FALSE(IpAddress::Parse("010.0.0.1").ok());
  EXPECT_FALSE(IpAddress::Parse("").ok());
  EXPECT_FALSE(IpAddress::Parse("1.2.3.4/24").ok());
  EXPECT_EQ(IpAddress::Parse("10.0.0.255")->Plus(1).ToString(), "10.0.1.0");
}

TEST(Cidr, ParsesPrefixesAndRejectsHostBitsWhenAsked) {
  auto c = Cidr::Parse("10.1.2.3/16");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->network().ToString(), "10.1.0.0");
  EXPECT_EQ(c->last().ToString(), "10.1.255.255");
  EXPECT_TRUE(c->has_host_bits());
  auto bad = Cidr::ParseNetwork("10.1.2.3/16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("10.1.2.3/16"), std::string::npos);
  EXPECT_NE(bad.status().message().find("10.1.0.0/16"), std::string::npos);
  EXPECT_EQ(Cidr::ParseNetwork("fd00::/8")->ToString(), "fd00::/8");
  EXPECT_EQ(Cidr::Parse("fd00::1", /*allow_bare=*/true)->prefix_len(), 128);
  EXPECT_FALSE(Cidr::Parse("fd00::1").ok());
  EXPECT_FALSE(Cidr::Parse("10.0.0.0/33").ok());
  EXPECT_FALSE(Cidr::Parse("10.0.0.0/").ok());
  EXPECT_FALSE(Cidr::Parse("10.0.0.0/08").ok());
  EXPECT_TRUE(Cidr::Parse("10.0.0.0/8")->Contains(*IpAddress::Parse("10.9.9.9")));
  EXPECT_FALSE(Cidr::Parse("10.0.0.0/8")->Contains(*IpAddress::Parse("11.0.0.0")));
  EXPECT_FALSE(Cidr::Parse("::/0")->Contains(*IpAddress::Parse("1.2.3.4")));
}

TEST(Uuid, Version5MatchesRfcExample) {
  // RFC 4122 errata / Python uuid.uuid5(NAMESPACE_DNS, "python.org").
  EXPECT_EQ(*UuidV5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "python.org"),
            "886313e1-3b8a-5372-9b90-0c9aee199e5d");
  EXPECT_TRUE(IsUuid(UuidV4()));
  EXPECT_NE(UuidV4(), UuidV4());
  EXPECT_FALSE(UuidV5("not-a-uuid", "x").ok());
}

// Names whose SHA-1 input (16-byte namespace + name) ends around the 55/56/64-byte padding
// boundaries and spans several blocks. Expected values from Python's uuid.uuid5.
TEST(Uuid, V5AcrossSha1BlockBoundaries) {
  const std::pair<size_t, const char*> cases[] = {
      {0, "dfd5945f-fbdc-588b-8b20-68a741267cfe"},   {39, "c19af088-3b11-5ce2-9a44-1e885703e198"},
      {40, "e6b7fe3a-7e38-5dc4-a606-7a9af1d9245c"},  {47, "445046f9-dcec-5c64-9ca1-9e1d862455c7"},
      {48, "5ae0352e-cd20-54e9-8f53-fe3fad67d27f"},  {55, "f4154e49-ea67-5445-ac7d-446bb6a0201d"},
      {56, "684afd3c-2ddc-5803-a8d9-c910a29983aa"},  {119, "e235cdbc-eda3-5dd1-bda7-51033a7c4905"},
      {200, "f35c8ea3-64c9-5b2a-89db-f8284b2577eb"},
  };
  for (const auto& [len, want] : cases) {
    std::string name;
    for (size_t i = 0; i < len; ++i) name += static_cast<char>('a' + i % 26);
    auto got = UuidV5(kPortIdNamespace, name);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, want) << "name of " << len << " bytes";
  }
}

// Ids drawn at once on many threads (as gRPC's server threads draw request ids) never repeat,
// and are not a count: their bits vary.
TEST(UniqueRandom64, NeverRepeatsAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kEach = 20000;
  std::vector<std::vector<uint64_t>> drawn(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&drawn, t] {
      for (int i = 0; i < kEach; ++i) drawn[t].push_back(UniqueRandom64());
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<uint64_t> all;
  uint64_t any_bits = 0;
  uint64_t all_bits = ~uint64_t{0};
  for (const auto& some : drawn) {
    for (uint64_t v : some) {
      all.insert(v);
      any_bits |= v;
      all_bits &= v;
    }
  }
  EXPECT_EQ(all.size(), size_t{kThreads} * kEach);
  EXPECT_EQ(any_bits, ~uint64_t{0});
  EXPECT_EQ(all_bits, 0u);
}

TEST(FileUtil, AtomicWriteSetsModeAndReplaces) {
  testing::TempDir dir;
  const std::string p = dir.path() + "/sub/dir/file.json";
  ASSERT_TRUE(MakeDirs(DirName(p), 0700).ok());
  struct stat st {};
  ASSERT_EQ(::stat(DirName(p).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_TRUE(WriteFileAtomic(p, "one").ok());
  ASSERT_TRUE(WriteFileAtomic(p, "two").ok());
  EXPECT_EQ(*ReadFile(p), "two");
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto names = ListDir(DirName(p));
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(names->size(), 1u);  // no temp files left behind
  ASSERT_TRUE(RemoveFileDurable(p).ok());
  EXPECT_TRUE(RemoveFileDurable(p).ok());
  EXPECT_EQ(ReadFile(p).status().code(), Code::kNotFound);
}

TEST(FileUtil, WholeStreamThroughAPipe) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const std::string big(200000, 'x');  // more than a pipe buffer: needs the reader running
  std::thread writer([&] {
    EXPECT_TRUE(WriteAllFd(fds[1], big).ok());
    ::close(fds[1]);
  });
  const std::string got = ReadUntilEof(fds[0]);
  writer.join();
  ::close(fds[0]);
  EXPECT_EQ(got, big);
  EXPECT_FALSE(WriteAllFd(-1, "x").ok());
}

TEST(FileUtil, LockSerializesAndSurvivesRemoval) {
  testing::TempDir dir;
  const std::string lock_path = dir.path() + "/x.lock";
  auto first = FileLock::Acquire(lock_path);
  ASSERT_TRUE(first.ok());
  std::atomic<bool> second_got{false};
  std::thread t([&] {
    auto second = FileLock::Acquire(lock_path);
    second_got = second.ok();
  });
  // The second waits in flock() behind the first: the release below is what lets it in.
  EXPECT_TRUE(testing::WaitForLockWaiter(lock_path, std::chrono::seconds(10)));
  EXPECT_FALSE(second_got.load());
  ASSERT_TRUE(first->ReleaseAndRemove().ok());
  t.join();
  EXPECT_TRUE(second_got.load());
}

// Only a transient failure is tried again, and only while a pause fits before the deadline.
TEST(RetryWhileTransient, RepeatsOnlyTransientFailuresWithinTheDeadline) {
  const auto far = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  int calls = 0;
  Status outcome = RetryWhileTransient(far, [&] {
    return ++calls < 3 ? UnavailableError("no member answered") : Status::Ok();
  });
  EXPECT_TRUE(outcome.ok());
  EXPECT_EQ(calls, 3);

  calls = 0;
  Result<int> timed_out = RetryWhileTransient(far, [&]() -> Result<int> {
    if (++calls == 1) return Status(Code::kDeadlineExceeded, "slow member");
    return 7;
  });
  ASSERT_TRUE(timed_out.ok());
  EXPECT_EQ(*timed_out, 7);

  calls = 0;
  outcome = RetryWhileTransient(far, [&] {
    ++calls;
    return InvalidArgumentError("request is too large");
  });
  EXPECT_EQ(outcome.code(), Code::kInvalidArgument);
  EXPECT_EQ(calls, 1) << "a failure that is not transient went again";

  calls = 0;
  outcome = RetryWhileTransient(std::chrono::steady_clock::now(), [&] {
    ++calls;
    return UnavailableError("no member answered");
  });
  EXPECT_EQ(outcome.code(), Code::kUnavailable);
  EXPECT_EQ(calls, 1) << "a retry went past the deadline";
}

// A worker's turns: the first at once, the next when woken, however long the pause it asked
// for; Stop ends a pause at once and ends a wait inside a turn too.
TEST(Worker, TakesTurnsWakesAndStopsWithoutWaitingOutItsPauses) {
  Mutex mu;
  std::condition_variable cv;
  int turns = 0;
  bool stop_seen = false;
  Worker worker;
  worker.Start([&] {
    MutexLock lock(mu);
    if (++turns == 3) {
      lock.Unlock();
      const bool stopped = worker.StoppedWithin(std::chrono::hours(1));
      lock.Lock();
      stop_seen = stopped;
    }
    cv.notify_all();
    return std::chrono::milliseconds(std::chrono::hours(1));
  });
  EXPECT_TRUE(worker.running());
  auto reached = [&](int n) {
    MutexLock lock(mu);
    return lock.WaitFor(cv, std::chrono::seconds(20), [&] { return turns >= n; });
  };
  ASSERT_TRUE(reached(1)) << "no first turn";
  worker.Wake();
  ASSERT_TRUE(reached(2)) << "a Wake did not end the pause";
  worker.Wake();
  ASSERT_TRUE(reached(3));
  worker.Stop();  // ends the third turn's wait, then the loop
  EXPECT_FALSE(worker.running());
  MutexLock lock(mu);
  EXPECT_TRUE(stop_seen) << "StoppedWithin did not see the Stop";
  EXPECT_EQ(turns, 3);
}

}  // namespace
}  // namespace mizarmp
