// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/rotator.h"

#include <sys/random.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "common/log.h"
#include "common/strings.h"
#include "keyrotation/kubelet.h"
#include "keyrotation/locate.h"

namespace mizarmp::keyrotation {

namespace {

// "volume \"ID\"", the start of every message about one volume.
std::string Volume(const std::string& volume_id) { return "volume " + Quoted(volume_id); }

}  // namespace

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

Rotator::Rotator(KeyStore& store, RotatorOptions options)
    : store_(store), options_(std::move(options)) {}

Rotator::Guard::~Guard() {
  MutexLock lock(r_->mu_);
  r_->in_flight_.erase(id_);
}

Result<std::unique_ptr<Rotator::Guard>> Rotator::Acquire(const std::string& volume_id) {
  MutexLock lock(mu_);
  if (!in_flight_.insert(volume_id).second) {
    return AbortedError("a key rotation for " + Volume(volume_id) + " is already in progress");
  }
  return std::make_unique<Guard>(this, volume_id);
}

void Rotator::AfterStep(Step step, const std::string& volume_id) {
  MZ_LOG(kDebug) << "volume " << volume_id << ": rotation step " << static_cast<int>(step) << " "
                 << StepName(step) << " done";
  if (options_.hooks != nullptr) options_.hooks->AfterStep(step, volume_id);
}

PbkdfOptions Rotator::NewKeyslotPbkdf() const {
  if (options_.hooks != nullptr) {
    if (std::optional<PbkdfOptions> pbkdf = options_.hooks->NewKeyslotPbkdf()) return *pbkdf;
  }
  return options_.pbkdf;
}

Result<SecretString> Rotator::RandomKey() const {
  std::string key(options_.random_key_bytes, '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::getrandom(key.data() + got, key.size() - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      Wipe(key);
      return ErrnoError("getrandom", e);
    }
    got += static_cast<size_t>(n);
  }
  return SecretString(std::move(key));
}

// ---- Rotation ----

Status Rotator::Rotate(const RotateRequest& request) {
  const std::string& id = request.volume_id;
  if (id.empty()) return InvalidArgumentError("volume_id: required");
  MZ_ASSIGN_OR_RETURN(auto guard, Acquire(id));
  MZ_ASSIGN_OR_RETURN(std::optional<VolumeKeys> stored, StoredKeys(id));
  // Opened before the record is required, so a device that is not LUKS2 says so first.
  MZ_ASSIGN_OR_RETURN(LuksDevice luks, OpenVolume(request, stored));
  const std::string device = luks.path();
  if (!stored) {
    return NotFoundError(Volume(id) + " (" + device +
                         ") has no key in this node's key store, so its header cannot be "
                         "unlocked");
  }
  VolumeKeys& keys = *stored;
  MZ_RETURN_IF_ERROR(RecoverBeforeRotating(keys, luks));
  MZ_ASSIGN_OR_RETURN(const int old_slot, CheckCurrentKey(keys, luks));
  MZ_ASSIGN_OR_RETURN(const SecretString new_key, NewKey(request));
  if (new_key == keys.current) {
    MZ_LOG(kInfo) << "volume " << id << ": the requested key is already the current key";
    return Status::Ok();
  }
  if (keys.device != device) {
    MZ_LOG(kInfo) << "volume " << id << ": device is now " << device;
    keys.device = device;
  }
  // Stored with step 1, so a recovery finds this header again whatever its device is called.
  keys.luks_uuid = luks.Uuid();

  // The six durable steps (rotator.h).
  MZ_RETURN_IF_ERROR(RecordPending(keys, new_key));
  MZ_ASSIGN_OR_RETURN(const int new_slot, AddPendingKeyslot(keys, luks));
  MZ_RETURN_IF_ERROR(VerifyPendingKeyslot(keys, luks, new_slot));
  MZ_RETURN_IF_ERROR(Promote(keys));
  MZ_RETURN_IF_ERROR(FinishRetirement(keys, luks));
  MZ_LOG(kInfo) << "volume " << id << ": key rotated (keyslot " << old_slot << " -> " << new_slot
                << ") on " << device;
  return Status::Ok();
}

Result<std::optional<VolumeKeys>> Rotator::StoredKeys(const std::string& volume_id) {
  auto stored = store_.Get(volume_id);
  if (stored.ok()) return std::optional<VolumeKeys>(std::move(*stored));
  if (stored.status().IsNotFound()) return std::optional<VolumeKeys>();
  return stored.status();
}

Result<LuksDevice> Rotator::OpenVolume(const RotateRequest& request,
                                       std::optional<VolumeKeys>& stored) {
  // Where the volume is: the request's path; else where kubelet staged it (the CSI-Addons
  // sidecar sends no path); else what the key store recorded.
  if (!request.volume_path.empty()) {
    MZ_ASSIGN_OR_RETURN(const std::string device,
                        ResolveLuksDevice(request.volume_path, request.access, options_.resolve));
    return LuksDevice::Open(device);
  }
  auto staged = FindStagedVolume(request.volume_id, request.access, options_.resolve);
  if (staged.ok()) return LuksDevice::Open(staged->device);
  if (stored && !stored->device.empty()) {
    // The record's device is checked by its LUKS UUID, so it stands in for kubelet's layout.
    if (staged.status().IsNotFound()) {
      MZ_LOG(kDebug) << staged.status().message() << "; using the key store's device";
    } else {
      MZ_LOG(kWarn) << staged.status().message() << "; using the key store's device instead";
    }
    return OpenRecorded(*stored);
  }
  return Status(staged.status().code(),
                staged.status().message() +
                    "; no volume_path was given and no key store record names its device");
}

Result<LuksDevice> Rotator::OpenRecorded(VolumeKeys& keys) {
  if (keys.luks_uuid.empty()) return LuksDevice::Open(keys.device);
  auto luks = OpenLuksByUuid(keys.luks_uuid, keys.device, options_.resolve);
  if (!luks.ok()) return luks.status().WithContext(Volume(keys.volume_id));
  if (luks->path() != keys.device) {
    MZ_LOG(kInfo) << "volume " << keys.volume_id << ": its LUKS header (UUID " << keys.luks_uuid
                  << ") is now at " << luks->path() << ", was " << keys.device;
    keys.device = luks->path();
  }
  return luks;
}

Status Rotator::RecoverBeforeRotating(VolumeKeys& keys, LuksDevice& luks) {
  if (keys.pending.empty() && keys.previous.empty()) return Status::Ok();
  // The interrupted rotation worked on the header the store names, which may no longer be the
  // one the volume resolves to: the same header under another name is still that one.
  const bool same = keys.luks_uuid.empty() ? keys.device.empty() || keys.device == luks.path()
                                           : keys.luks_uuid == luks.Uuid();
  if (!same) {
    MZ_ASSIGN_OR_RETURN(LuksDevice recorded, OpenRecorded(keys));
    return RecoverLocked(keys, recorded).status();
  }
  keys.device = luks.path();
  MZ_ASSIGN_OR_RETURN(const RecoveryOutcome outcome, RecoverLocked(keys, luks));
  MZ_LOG(kInfo) << "volume " << keys.volume_id << ": before rotating, an interrupted rotation was "
                << RecoveryOutcomeName(outcome);
  return Status::Ok();
}

Result<int> Rotator::CheckCurrentKey(const VolumeKeys& keys, LuksDevice& luks) {
  MZ_ASSIGN_OR_RETURN(const std::optional<int> slot, luks.FindKeyslot(keys.current));
  if (!slot) {
    return FailedPreconditionError(Volume(keys.volume_id) +
                                   ": the stored key does not open the LUKS2 header of " +
                                   Quoted(luks.path()));
  }
  return *slot;
}

Result<SecretString> Rotator::NewKey(const RotateRequest& request) const {
  if (!request.new_key.empty()) return request.new_key;
  return RandomKey();
}

Status Rotator::RecordPending(VolumeKeys& keys, const SecretString& new_key) {
  keys.pending = new_key;
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  AfterStep(Step::kPendingRecorded, keys.volume_id);
  return Status::Ok();
}

Result<int> Rotator::AddPendingKeyslot(VolumeKeys& keys, LuksDevice& luks) {
  // Unlocked with the current key.
  auto slot = luks.AddKeyslot(keys.current, keys.pending, NewKeyslotPbkdf());
  if (!slot.ok()) return DropPending(keys, slot.status().WithContext(Volume(keys.volume_id)));
  MZ_LOG(kInfo) << "volume " << keys.volume_id << ": added keyslot " << *slot << " to "
                << luks.path();
  AfterStep(Step::kKeyslotAdded, keys.volume_id);
  return *slot;
}

Status Rotator::VerifyPendingKeyslot(VolumeKeys& keys, LuksDevice& luks, int new_slot) {
  // The new key must open the header, through its own keyslot.
  auto check = luks.FindKeyslot(keys.pending);
  if (!check.ok() || *check != new_slot) {
    if (Status s = luks.DestroyKeyslot(new_slot); !s.ok()) {
      MZ_LOG(kError) << "volume " << keys.volume_id << ": " << s.ToString();
    }
    return DropPending(
        keys, InternalError(Volume(keys.volume_id) + ": the new key does not open keyslot " +
                            std::to_string(new_slot) + " of " + Quoted(luks.path())));
  }
  AfterStep(Step::kVerified, keys.volume_id);
  return Status::Ok();
}

Status Rotator::DropPending(VolumeKeys& keys, const Status& cause) {
  keys.pending.clear();
  if (Status s = store_.Put(keys); !s.ok()) {
    MZ_LOG(kError) << "volume " << keys.volume_id << ": dropping the pending key: " << s.ToString();
  }
  return cause;
}

Status Rotator::Promote(VolumeKeys& keys) {
  keys.previous = keys.current;
  keys.current = keys.pending;
  keys.pending.clear();
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  AfterStep(Step::kPromoted, keys.volume_id);
  return Status::Ok();
}

Status Rotator::FinishRetirement(VolumeKeys& keys, LuksDevice& luks) {
  MZ_RETURN_IF_ERROR(DestroyOldKeyslots(keys, luks));
  return DropOldKey(keys);
}

Status Rotator::DestroyOldKeyslots(VolumeKeys& keys, LuksDevice& luks) {
  const std::string context =
      Volume(keys.volume_id) + ": the current key no longer opens the header";
  auto current_slot = luks.FindKeyslot(keys.current);
  if (!current_slot.ok()) return current_slot.status().WithContext(context);
  if (!*current_slot) {
    return PermissionDeniedError(context + ": the key opens no keyslot of " + Quoted(luks.path()));
  }
  // Wipe every keyslot the old key still opens (there is normally exactly one).
  for (int guard = 0; guard < 64 && keys.previous != keys.current; ++guard) {
    MZ_ASSIGN_OR_RETURN(const std::optional<int> old_slot, luks.FindKeyslot(keys.previous));
    if (!old_slot || *old_slot == **current_slot) break;  // already gone
    MZ_RETURN_IF_ERROR(luks.DestroyKeyslot(*old_slot));
    MZ_LOG(kInfo) << "volume " << keys.volume_id << ": wiped old keyslot " << *old_slot << " of "
                  << luks.path();
  }
  AfterStep(Step::kOldKeyslotDestroyed, keys.volume_id);
  return Status::Ok();
}

Status Rotator::DropOldKey(VolumeKeys& keys) {
  keys.previous.clear();
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  AfterStep(Step::kOldKeyDropped, keys.volume_id);
  return Status::Ok();
}

// ---- Recovery ----

Result<RecoveryOutcome> Rotator::Recover(const std::string& volume_id) {
  if (volume_id.empty()) return InvalidArgumentError("volume_id: required");
  MZ_ASSIGN_OR_RETURN(auto guard, Acquire(volume_id));
  MZ_ASSIGN_OR_RETURN(VolumeKeys keys, store_.Get(volume_id));
  if (keys.pending.empty() && keys.previous.empty()) return RecoveryOutcome::kNothingToDo;
  if (keys.device.empty()) {
    return NotFoundError(Volume(volume_id) + ": the key store names no device");
  }
  MZ_ASSIGN_OR_RETURN(LuksDevice luks, OpenRecorded(keys));
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

Result<RecoveryOutcome> Rotator::RecoverLocked(VolumeKeys& keys, LuksDevice& luks) {
  RecoveryOutcome outcome = RecoveryOutcome::kNothingToDo;
  if (!keys.pending.empty()) {
    MZ_ASSIGN_OR_RETURN(outcome, SettlePending(keys, luks));
    if (outcome == RecoveryOutcome::kRolledBack) return outcome;
  }
  if (!keys.previous.empty()) {
    MZ_ASSIGN_OR_RETURN(outcome, SettlePrevious(keys, luks));
    if (outcome == RecoveryOutcome::kRolledBack) return outcome;
  }
  if (outcome == RecoveryOutcome::kCompleted) {
    MZ_LOG(kInfo) << "volume " << keys.volume_id << ": interrupted rotation completed";
  }
  return outcome;
}

Result<RecoveryOutcome> Rotator::SettlePending(VolumeKeys& keys, LuksDevice& luks) {
  MZ_ASSIGN_OR_RETURN(const std::optional<int> slot, luks.FindKeyslot(keys.pending));
  if (slot) {
    // The new key's keyslot exists and opens the header: finish the rotation.
    MZ_RETURN_IF_ERROR(Promote(keys));
    return RecoveryOutcome::kCompleted;
  }
  // The keyslot never came to be: roll back.
  keys.pending.clear();
  MZ_RETURN_IF_ERROR(store_.Put(keys));
  MZ_LOG(kInfo) << "volume " << keys.volume_id
                << ": interrupted rotation rolled back (the new key opened no keyslot)";
  return RecoveryOutcome::kRolledBack;
}

Result<RecoveryOutcome> Rotator::SettlePrevious(VolumeKeys& keys, LuksDevice& luks) {
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
  return RecoveryOutcome::kCompleted;
}

}  // namespace mizarmp::keyrotation
