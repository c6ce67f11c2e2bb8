// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
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
// The record keeps the LUKS header's UUID (written with step 1), so recovery after a reboot that
// renamed the device (/dev/sdX, /dev/dm-N, a moved image) works on the same header, never on
// whatever now has the recorded name (keyrotation/locate.h).
//
// Recovery (Recover/RecoverAll, run at server start and before each rotation of a volume):
//   `pending` set:  if it opens the header the rotation is finished (steps 4-6), otherwise it
//                   is rolled back (pending dropped; its keyslot never came to be).
//   `previous` set: the old key's keyslot is wiped if still there and `previous` dropped.
//
// Keys are held in SecretString (keyrotation/secret.h) from the request to the key store, so
// each copy is wiped when it is dropped.
//
// Concurrency: one rotation or recovery per volume id at a time; a second concurrent call for
// the same volume gets ABORTED.
//
// Test builds watch or interrupt the sequence after each step, and make new keyslots cheap,
// through RotatorOptions::hooks (keyrotation/hooks.h); production passes none.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/mutex.h"
#include "common/status.h"
#include "keyrotation/hooks.h"
#include "keyrotation/keystore.h"
#include "keyrotation/luks.h"
#include "keyrotation/resolve.h"
#include "keyrotation/secret.h"
#include "keyrotation/step.h"

namespace mizarmp::keyrotation {

struct RotatorOptions {
  ResolveOptions resolve;
  PbkdfOptions pbkdf;              // production: libcryptsetup's defaults
  RotationHooks* hooks = nullptr;  // not owned; null in production (keyrotation/hooks.h)
  size_t random_key_bytes = 32;
};

struct RotateRequest {
  std::string volume_id;    // required
  std::string volume_path;  // optional: when empty, kubelet's layout, then the key store's device
  SecretString new_key;     // optional: 32 random bytes from the kernel when empty
  AccessType access = AccessType::kUnspecified;
};

enum class RecoveryOutcome { kNothingToDo, kCompleted, kRolledBack };
std::string_view RecoveryOutcomeName(RecoveryOutcome outcome);

class Rotator {
 public:
  Rotator(KeyStore& store, RotatorOptions options);

  // Without volume_path the volume is found where kubelet staged it (FindStagedVolume,
  // keyrotation/kubelet.h), else at the device its key store record names.
  // Errors: INVALID_ARGUMENT (no volume_id), ABORTED (a rotation of the volume is in flight),
  // NOT_FOUND (no such volume path / nothing mounted / not staged here and no record naming a
  // device / no record for the volume),
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
  Result<std::unique_ptr<Guard>> Acquire(const std::string& volume_id) MZ_EXCLUDES(mu_);

  // Before the sequence, in Rotate()'s order:
  // the volume's record; nullopt when it has none.
  Result<std::optional<VolumeKeys>> StoredKeys(const std::string& volume_id);
  // The device opened: the request's volume_path resolved, else where kubelet staged the volume,
  // else the one the record names (found by its LUKS UUID when it was renamed; `stored->device`
  // follows).
  Result<LuksDevice> OpenVolume(const RotateRequest& request, std::optional<VolumeKeys>& stored);
  // The device the record names, checked by the recorded LUKS UUID (looked up by it when the
  // path now holds another header or nothing; keys.device then names the new path). Records
  // without a UUID open the recorded path as it is.
  Result<LuksDevice> OpenRecorded(VolumeKeys& keys);
  // Finishes or rolls back what an interrupted rotation left in `keys`.
  Status RecoverBeforeRotating(VolumeKeys& keys, LuksDevice& luks);
  // The keyslot the current key opens; FAILED_PRECONDITION when it opens none.
  Result<int> CheckCurrentKey(const VolumeKeys& keys, LuksDevice& luks);
  // The requested key, else a random one.
  Result<SecretString> NewKey(const RotateRequest& request) const;
  Result<SecretString> RandomKey() const;

  // The six steps; each is durable when it returns OK, and ends with AfterStep().
  Status RecordPending(VolumeKeys& keys, const SecretString& new_key);            // 1
  Result<int> AddPendingKeyslot(VolumeKeys& keys, LuksDevice& luks);              // 2
  Status VerifyPendingKeyslot(VolumeKeys& keys, LuksDevice& luks, int new_slot);  // 3
  Status Promote(VolumeKeys& keys);                                               // 4
  Status DestroyOldKeyslots(VolumeKeys& keys, LuksDevice& luks);                  // 5
  Status DropOldKey(VolumeKeys& keys);                                            // 6
  // Step 2 or 3 failed with `cause`: forgets the pending key (a failure to store that is only
  // logged; recovery drops it later) and returns `cause`.
  Status DropPending(VolumeKeys& keys, const Status& cause);

  // Recovery of a volume whose rotation was interrupted (the guard is held).
  Result<RecoveryOutcome> RecoverLocked(VolumeKeys& keys, LuksDevice& luks);
  // `pending` set: promoted (completed) when its keyslot exists, else dropped (rolled back).
  Result<RecoveryOutcome> SettlePending(VolumeKeys& keys, LuksDevice& luks);
  // `previous` set: the old keyslot wiped and the old key dropped (completed), or back to the
  // old key if the promoted one does not open the header (rolled back).
  Result<RecoveryOutcome> SettlePrevious(VolumeKeys& keys, LuksDevice& luks);
  Status FinishRetirement(VolumeKeys& keys, LuksDevice& luks);  // steps 5 and 6

  void AfterStep(Step step, const std::string& volume_id);
  PbkdfOptions NewKeyslotPbkdf() const;

  KeyStore& store_;
  RotatorOptions options_;
  Mutex mu_;
  std::set<std::string> in_flight_ MZ_GUARDED_BY(mu_);  // the volumes a Guard holds
};

}  // namespace mizarmp::keyrotation
