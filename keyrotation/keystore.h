// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The node's key store: the LUKS passphrase(s) of each encrypted volume, by volume id.
//
// A record holds the device the volume lives on (and the UUID of its LUKS header, which
// identifies it after the device is renamed: keyrotation/locate.h) and its current passphrase,
// plus, while a rotation is in progress, the new passphrase not yet promoted (`pending`) or the
// old one not yet retired (`previous`). At most one of pending/previous is set. Keys are opaque
// bytes, held in SecretString (keyrotation/secret.h).
//
// LocalKeyStore, the embedded default: a 0700 directory with one 0600 file per volume, written
// atomically (temp file, fsync, rename, fsync dir). The file is JSON:
//   {"volumeId": "...", "device": "/dev/...", "luksUuid": "...", "current": "<hex>",
//    "pending": "<hex>", "previous": "<hex>"}
// ("luksUuid"/"pending"/"previous" absent when unset; records written before the UUID was
// recorded have none). The file name is "vol-" + the volume id with every byte outside
// [A-Za-z0-9._-] written as %XX, so any volume id maps to one flat file name. The copies of the
// keys Get and Put make (the file's text, the JSON document's strings, the hex) are wiped once
// done; copies inside nlohmann::json's parser and ReadFile's buffer growth are out of reach.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "keyrotation/secret.h"

namespace mizarmp::keyrotation {

struct VolumeKeys {
  std::string volume_id;
  std::string device;     // the LUKS device or image the volume lives on
  SecretString current;   // a passphrase that opens the header
  SecretString pending;   // rotation in progress: the new key, not yet promoted
  SecretString previous;  // rotation in progress: the old key, its keyslot not yet retired
  std::string luks_uuid;  // the device's LUKS header UUID; empty when not (yet) recorded

  bool operator==(const VolumeKeys&) const = default;
};

class KeyStore {
 public:
  virtual ~KeyStore() = default;
  // NOT_FOUND when no record exists for the volume.
  virtual Result<VolumeKeys> Get(const std::string& volume_id) = 0;
  // Replaces the volume's record atomically (a reader sees the old or the new record).
  virtual Status Put(const VolumeKeys& keys) = 0;
  // Removes the volume's record; a missing record is success. For tests: nothing in the
  // product removes a record yet (a deleted volume's keys stay); the key store's own tests
  // need it to show a record can go.
  virtual Status Remove(const std::string& volume_id) = 0;
  // The volume ids with a record.
  virtual Result<std::vector<std::string>> List() = 0;
};

class LocalKeyStore final : public KeyStore {
 public:
  // Creates the directory (0700) if missing and tightens an existing one to 0700.
  static Result<std::unique_ptr<LocalKeyStore>> Open(const std::string& dir);

  Result<VolumeKeys> Get(const std::string& volume_id) override;
  Status Put(const VolumeKeys& keys) override;
  Status Remove(const std::string& volume_id) override;
  Result<std::vector<std::string>> List() override;

  const std::string& dir() const { return dir_; }
  // The file holding a volume's record.
  std::string PathFor(const std::string& volume_id) const;

 private:
  explicit LocalKeyStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace mizarmp::keyrotation
