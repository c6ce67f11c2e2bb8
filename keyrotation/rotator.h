// Crash-safe rotation of a LUKS2 volume's passphrase (the key-encryption key; the volume key
// and the data are untouched).
//
// The sequence, each step durable before the next starts:
//   1 pending-recorded       the new key is stored as `pending` beside `current`
//   2 keyslot-added          a keyslot for the new key is added (unlocked with the current key)
//   3 verified               the new key is checked to open the header
//   4 promoted               the new key becomes `current`, the old one `previous`
//   5 old-keyslot-destroyed  the old key's keyslot is wiped
//   6 old-key-dropped        `previous` is dropped
// At every instant some stored key opens the header: before 4 the current key's keyslot is
// intact, from 2 on the new key's keyslot exists, and the old key is only dropped from the
// store after its keyslot is gone.
//
// Recovery (Recover/RecoverAll, run at server start and before each rotation of a volume):
//   `pending` set:  if it opens the header the rotation is finished (steps 4-6), otherwise it
//                   is rolled back (pending dropped; its keyslot never came to be).
//   `previous` set: the old key's keyslot is wiped if still there and `previous` dropped.
//
// Concurrency: one rotation or recovery per volume id at a time; a second concurrent call for
// the same volume gets ABORTED.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"
#include "keyrotation/keystore.h"
#include "keyrotation/luks.h"
#include "keyrotation/resolve.h"

namespace mizarmp::keyrotation {

enum class Step {
  kPendingRecorded = 1,
  kKeyslotAdded = 2,
  kVerified = 3,
  kPromoted = 4,
  kOldKeyslotDestroyed = 5,
  kOldKeyDropped = 6,
};
inline constexpr Step kAllSteps[] = {
    Step::kPendingRecorded, Step::kKeyslotAdded,        Step::kVerified,
    Step::kPromoted,        Step::kOldKeyslotDestroyed, Step::kOldKeyDropped};
std::string_view StepName(Step step);
// Accepts the names above or the step numbers "1".."6". INVALID_ARGUMENT otherwise.
Result<Step> ParseStep(std::string_view text);

// Test-only hooks read from the environment (never set in production):
//   MIZARMP_KEYROT_CRASH_AFTER=<step>             SIGKILL the process right after that step
//   MIZARMP_KEYROT_TEST_PBKDF2_ITERATIONS=<n>     new keyslots use PBKDF2 with n iterations
inline constexpr const char* kCrashAfterEnv = "MIZARMP_KEYROT_CRASH_AFTER";
inline constexpr const char* kTestPbkdfEnv = "MIZARMP_KEYROT_TEST_PBKDF2_ITERATIONS";

struct RotatorOptions {
  ResolveOptions resolve;
  PbkdfOptions pbkdf;               // production: libcryptsetup's defaults
  std::optional<Step> crash_after;  // test hook
  // Test hook: called after each step (before the crash hook), e.g. to hold a rotation open.
  std::function<void(Step, const std::string& volume_id)> after_step;
  size_t random_key_bytes = 32;

  // Applies the test hooks above when set. INVALID_ARGUMENT on a malformed value.
  Status ApplyTestHooksFromEnv();
};

struct RotateRequest {
  std::string volume_id;    // required
  std::string volume_path;  // optional: resolved from the key store when empty
  std::string new_key;      // optional: 32 random bytes from the kernel when empty
  AccessType access = AccessType::kUnspecified;
};

enum class RecoveryOutcome { kNothingToDo, kCompleted, kRolledBack };
std::string_view RecoveryOutcomeName(RecoveryOutcome outcome);

class Rotator {
 public:
  Rotator(KeyStore& store, RotatorOptions options);

  // Errors: INVALID_ARGUMENT (no volume_id), ABORTED (a rotation of the volume is in flight),
  // NOT_FOUND (no such volume path / nothing mounted / no record for the volume),
  // FAILED_PRECONDITION (not LUKS2, the stored key does not open the header), others from
  // libcryptsetup or the key store.
  Status Rotate(const RotateRequest& request);

  // Finishes or rolls back an interrupted rotation of one volume. ABORTED while a rotation of
  // it is in flight.
  Result<RecoveryOutcome> Recover(const std::string& volume_id);

  // Recover() for every volume in the store; logs each failure and returns the first.
  Status RecoverAll();

 private:
  // Holds a volume id in the in-flight set for its lifetime.
  class Guard {
   public:
    Guard(Rotator* r, std::string id) : r_(r), id_(std::move(id)) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard();

   private:
    Rotator* r_;
    std::string id_;
  };
  Result<std::unique_ptr<Guard>> Acquire(const std::string& volume_id);

  Result<RecoveryOutcome> RecoverLocked(VolumeKeys& keys, LuksDevice& luks);
  Status FinishRetirement(VolumeKeys& keys, LuksDevice& luks);
  void AfterStep(Step step, const std::string& volume_id);
  Result<std::string> RandomKey() const;

  KeyStore& store_;
  RotatorOptions options_;
  std::mutex mu_;
  std::set<std::string> in_flight_;
};

}  // namespace mizarmp::keyrotation
