#include "keyrotation/rotator.h"

#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/log.h"

namespace mizarmp::keyrotation {

std::string_view StepName(Step step) {
  switch (step) {
    case Step::kPendingRecorded:
      return "pending-recorded";
    case Step::kKeyslotAdded:
      return "keyslot-added";
    case Step::kVerified:
      return "verified";
    case Step::kPromoted:
      return "promoted";
    case Step::kOldKeyslotDestroyed:
      return "old-keyslot-destroyed";
    case Step::kOldKeyDropped:
      return "old-key-dropped";
  }
  return "unknown";
}

Result<Step> ParseStep(std::string_view text) {
  for (Step s : kAllSteps) {
    if (text == StepName(s) || text == std::to_string(static_cast<int>(s))) return s;
  }
  return InvalidArgumentError("unknown rotation step \"" + std::string(text) +
                              "\" (want pending-recorded, keyslot-added, verified, promoted, "
                              "old-keyslot-destroyed, old-key-dropped or 1..6)");
}

std::string_view RecoveryOutcomeName(RecoveryOutcome outcome) {
  switch (outcome) {
    case RecoveryOutcome::kNothingToDo:
      return "nothing to do";
    case RecoveryOutcome::kCompleted:
      return "completed";
    case RecoveryOutcome::kRolledBack:
      return "rolled back";
  }
  return "unknown";
}

Status RotatorOptions::ApplyTestHooksFromEnv() {
  if (const char* v = std::getenv(kCrashAfterEnv); v != nullptr && *v != '\0') {
    auto step = ParseStep(v);
    if (!step.ok()) return step.status().WithContext(kCrashAfterEnv);
    crash_after = *step;
    MZ_LOG(kWarn) << "test hook " << kCrashAfterEnv << ": the process kills itself after step "
                  << StepName(*step);
  }
  if (const char* v = std::getenv(kTestPbkdfEnv); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const unsigned long n = std::strtoul(v, &end, 10);
    if (end == v || *end != '\0' || n < 1000 || n > 100000000) {
      return InvalidArgumentError(std::string(kTestPbkdfEnv) + ": want an integer >= 1000, got \"" +
                                  v + "\"");
    }
    pbkdf = PbkdfOptions::CheapForTests(static_cast<uint32_t>(n));
    MZ_LOG(kWarn) << "test hook " << kTestPbkdfEnv << ": new keyslots use PBKDF2 with " << n
                  << " iterations (weak; tests only)";
  }
  return Status::Ok();
}

Rotator::Rotator(KeyStore& store, RotatorOptions options)
    : store_(store), options_(std::move(options)) {}

Rotator::Guard::~Guard() {
  std::lock_guard<std::mutex> lock(r_->mu_);
  r_->in_flight_.erase(id_);
}

Result<std::unique_ptr<Rotator::Guard>> Rotator::Acquire(const std::string& volume_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!in_flight_.insert(volume_id).second) {
    return AbortedError("a key rotation for volume \"" + volume_id + "\" is already in progress");
  }
  return std::make_unique<Guard>(this, volume_id);
}

void Rotator::AfterStep(Step step, const std::string& volume_id) {
  MZ_LOG(kDebug) << "volume " << volume_id << ": rotation step " << static_cast<int>(step) << " "
                 << StepName(step) << " done";
  if (options_.after_step) options_.after_step(step, volume_id);
  if (options_.crash_after == step) {
    MZ_LOG(kWarn) << "test hook: SIGKILL after step " << StepName(step) << " of volume "
                  << volume_id;
    ::kill(::getpid(), SIGKILL);
    for (;;) ::pause();
  }
}

Result<std::string> Rotator::RandomKey() const {
  std::string key(options_.random_key_bytes, '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("getrandom", errno);
    }
    got += static_cast<size_t>(n);
  }
  return key;
}

Status Rotator::FinishRetirement(VolumeKeys& keys, LuksDevice& luks) {
  auto current_slot = luks.KeyslotOf(keys.current);
  if (!current_slot.ok()) {
    return current_slot.status().WithContext("volume \"" + keys.volume_id +
                                             "\": the current key no longer opens the header");
  }
  // Wipe every keyslot the old key still opens (there is normally exactly one).
  for (int guard = 0; guard < 64 && keys.previous != keys.current; ++guard) {
    auto old_slot = luks.KeyslotOf(keys.previous);
    if (!old_slot.ok()) {
      if (old_slot.status().code() == Code::kPermissionDenied) break;  // already gone
      return old_slot.status();
    }
    if (*old_slot == *current_slot) break;
    MZ_RETURN_IF_ERROR(luks.DestroyKeyslot(*old_slot));
    MZ_LOG(kInfo) << "volume " << keys.volume_id << ": wiped old keyslot " << *old_slot << " of "
                  << luks.path();
  }
  AfterStep(Step::kOldKeyslotDestroyed, keys.volume_id);
  keys.previous.clear();
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  AfterStep(Step::kOldKeyDropped, keys.volume_id);
  return Status::Ok();
}

Result<RecoveryOutcome> Rotator::RecoverLocked(VolumeKeys& keys, LuksDevice& luks) {
  RecoveryOutcome outcome = RecoveryOutcome::kNothingToDo;
  if (!keys.pending.empty()) {
    auto pending_slot = luks.KeyslotOf(keys.pending);
    if (pending_slot.ok()) {
      // The new key's keyslot exists and opens the header: finish the rotation.
      keys.previous = keys.current;
      keys.current = keys.pending;
      keys.pending.clear();
      MZ_RETURN_IF_ERROR(store_.Put(keys));
      AfterStep(Step::kPromoted, keys.volume_id);
      outcome = RecoveryOutcome::kCompleted;
    } else if (pending_slot.status().code() == Code::kPermissionDenied) {
      // The keyslot never came to be: roll back.
      keys.pending.clear();
      MZ_RETURN_IF_ERROR(store_.Put(keys));
      MZ_LOG(kInfo) << "volume " << keys.volume_id
                    << ": interrupted rotation rolled back (the new key opened no keyslot)";
      return RecoveryOutcome::kRolledBack;
    } else {
      return pending_slot.status();
    }
  }
  if (!keys.previous.empty()) {
    if (!luks.Opens(keys.current) && luks.Opens(keys.previous)) {
      // Never expected (promotion happens only after verification), but never strand the
      // volume: go back to the key that opens it.
      keys.current = keys.previous;
      keys.previous.clear();
      MZ_RETURN_IF_ERROR(store_.Put(keys));
      MZ_LOG(kWarn) << "volume " << keys.volume_id
                    << ": the promoted key did not open the header; rolled back";
      return RecoveryOutcome::kRolledBack;
    }
    MZ_RETURN_IF_ERROR(FinishRetirement(keys, luks));
    outcome = RecoveryOutcome::kCompleted;
  }
  if (outcome == RecoveryOutcome::kCompleted) {
    MZ_LOG(kInfo) << "volume " << keys.volume_id << ": interrupted rotation completed";
  }
  return outcome;
}

Result<RecoveryOutcome> Rotator::Recover(const std::string& volume_id) {
  if (volume_id.empty()) return InvalidArgumentError("volume_id: required");
  MZ_ASSIGN_OR_RETURN(auto guard, Acquire(volume_id));
  MZ_ASSIGN_OR_RETURN(VolumeKeys keys, store_.Get(volume_id));
  if (keys.pending.empty() && keys.previous.empty()) return RecoveryOutcome::kNothingToDo;
  if (keys.device.empty()) {
    return NotFoundError("volume \"" + volume_id + "\": the key store names no device");
  }
  MZ_ASSIGN_OR_RETURN(LuksDevice luks, LuksDevice::Open(keys.device));
  return RecoverLocked(keys, luks);
}

Status Rotator::RecoverAll() {
  MZ_ASSIGN_OR_RETURN(auto ids, store_.List());
  Status first;
  for (const auto& id : ids) {
    auto r = Recover(id);
    if (!r.ok()) {
      MZ_LOG(kError) << "volume " << id << ": recovery failed: " << r.status().ToString();
      if (first.ok()) first = r.status();
    } else if (*r != RecoveryOutcome::kNothingToDo) {
      MZ_LOG(kInfo) << "volume " << id << ": recovery " << RecoveryOutcomeName(*r);
    }
  }
  return first;
}

Status Rotator::Rotate(const RotateRequest& request) {
  const std::string& id = request.volume_id;
  if (id.empty()) return InvalidArgumentError("volume_id: required");
  MZ_ASSIGN_OR_RETURN(auto guard, Acquire(id));

  auto stored = store_.Get(id);
  if (!stored.ok() && stored.status().code() != Code::kNotFound) return stored.status();

  // Where the volume is: the request's path, else what the key store recorded.
  std::string device;
  if (!request.volume_path.empty()) {
    MZ_ASSIGN_OR_RETURN(device,
                        ResolveLuksDevice(request.volume_path, request.access, options_.resolve));
  } else if (stored.ok() && !stored->device.empty()) {
    device = stored->device;
  } else {
    return NotFoundError("volume \"" + id +
                         "\" is unknown on this node: no volume_path given and no key store "
                         "record for it");
  }
  MZ_ASSIGN_OR_RETURN(LuksDevice luks, LuksDevice::Open(device));
  if (!stored.ok()) {
    return NotFoundError("volume \"" + id + "\" (" + device +
                         ") has no key in this node's key store, so its header cannot be "
                         "unlocked");
  }
  VolumeKeys keys = std::move(*stored);

  // Finish or roll back whatever an earlier, interrupted rotation left.
  {
    const std::string recorded_device = keys.device;
    if (!keys.pending.empty() || !keys.previous.empty()) {
      if (recorded_device != device && !recorded_device.empty()) {
        MZ_ASSIGN_OR_RETURN(LuksDevice old, LuksDevice::Open(recorded_device));
        MZ_ASSIGN_OR_RETURN(auto outcome, RecoverLocked(keys, old));
        (void)outcome;
      } else {
        MZ_ASSIGN_OR_RETURN(auto outcome, RecoverLocked(keys, luks));
        MZ_LOG(kInfo) << "volume " << id << ": before rotating, an interrupted rotation was "
                      << RecoveryOutcomeName(outcome);
      }
    }
  }

  auto old_slot = luks.KeyslotOf(keys.current);
  if (!old_slot.ok()) {
    if (old_slot.status().code() == Code::kPermissionDenied) {
      return FailedPreconditionError("volume \"" + id +
                                     "\": the stored key does not open the "
                                     "LUKS2 header of \"" +
                                     device + "\"");
    }
    return old_slot.status();
  }

  std::string new_key = request.new_key;
  if (new_key.empty()) {
    MZ_ASSIGN_OR_RETURN(new_key, RandomKey());
  }
  if (new_key == keys.current) {
    MZ_LOG(kInfo) << "volume " << id << ": the requested key is already the current key";
    return Status::Ok();
  }
  if (keys.device != device) {
    MZ_LOG(kInfo) << "volume " << id << ": device is now " << device;
    keys.device = device;
  }

  // 1: record the new key beside the current one.
  keys.pending = new_key;
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  AfterStep(Step::kPendingRecorded, id);

  auto undo_pending = [&](const Status& cause) -> Status {
    keys.pending.clear();
    if (Status s = store_.Put(keys); !s.ok()) {
      MZ_LOG(kError) << "volume " << id << ": dropping the pending key: " << s.ToString();
    }
    return cause;
  };

  // 2: a keyslot for the new key, unlocked with the current one.
  auto new_slot = luks.AddKeyslot(keys.current, new_key, options_.pbkdf);
  if (!new_slot.ok()) return undo_pending(new_slot.status().WithContext("volume \"" + id + "\""));
  MZ_LOG(kInfo) << "volume " << id << ": added keyslot " << *new_slot << " to " << device;
  AfterStep(Step::kKeyslotAdded, id);

  // 3: the new key must open the header, through its own keyslot.
  auto check = luks.KeyslotOf(new_key);
  if (!check.ok() || *check != *new_slot) {
    if (Status s = luks.DestroyKeyslot(*new_slot); !s.ok()) {
      MZ_LOG(kError) << "volume " << id << ": " << s.ToString();
    }
    return undo_pending(InternalError("volume \"" + id + "\": the new key does not open keyslot " +
                                      std::to_string(*new_slot) + " of \"" + device + "\""));
  }
  AfterStep(Step::kVerified, id);

  // 4: promote.
  keys.previous = keys.current;
  keys.current = new_key;
  keys.pending.clear();
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  AfterStep(Step::kPromoted, id);

  // 5 and 6: wipe the old keyslot, then forget the old key.
  MZ_RETURN_IF_ERROR(FinishRetirement(keys, luks));
  MZ_LOG(kInfo) << "volume " << id << ": key rotated (keyslot " << *old_slot << " -> " << *new_slot
                << ") on " << device;
  return Status::Ok();
}

}  // namespace mizarmp::keyrotation
