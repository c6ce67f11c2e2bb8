// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
#include "keyrotation/service/rotation_service.h"

#include "addons/grpc_status.h"
#include "addons/secrets.h"
#include "common/log.h"

namespace mizarmp::keyrotation {

namespace {

// Block vs. filesystem resolution, as the request's volume_capability says (unspecified when
// it says neither).
AccessType AccessOf(const encryptionkeyrotation::EncryptionKeyRotateRequest& request) {
  if (!request.has_volume_capability()) return AccessType::kUnspecified;
  if (request.volume_capability().has_block()) return AccessType::kBlock;
  if (request.volume_capability().has_mount()) return AccessType::kMount;
  return AccessType::kUnspecified;
}

}  // namespace

KeyRotationService::KeyRotationService(Rotator& rotator,
                                       std::map<std::string, std::string> expected_secrets)
    : rotator_(rotator), expected_secrets_(std::move(expected_secrets)) {}

Status KeyRotationService::Rotate(
    const encryptionkeyrotation::EncryptionKeyRotateRequest& request) {
  if (request.volume_id().empty()) {
    return InvalidArgumentError("volume_id: required");
  }
  MZ_RETURN_IF_ERROR(addons::CheckSecrets(request.secrets(), expected_secrets_));
  return rotator_.Rotate(
      {request.volume_id(), request.volume_path(), request.encryption_key(), AccessOf(request)});
}

grpc::Status KeyRotationService::EncryptionKeyRotate(
    grpc::ServerContext*, const encryptionkeyrotation::EncryptionKeyRotateRequest* request,
    encryptionkeyrotation::EncryptionKeyRotateResponse*) {
  MZ_LOG(kInfo) << "EncryptionKeyRotate volume_id=" << Quoted(request->volume_id())
                << " volume_path=" << Quoted(request->volume_path())
                << " key=" << (request->encryption_key().empty() ? "generated" : "supplied");
  const Status s = Rotate(*request);
  if (!s.ok()) {
    MZ_LOG(kWarn) << "EncryptionKeyRotate volume_id=" << Quoted(request->volume_id()) << ": "
                  << s.ToString();
  }
  return addons::ToGrpcStatus(s);
}

Result<std::unique_ptr<NodeKeyRotation>> NodeKeyRotation::Create(
    const KeyRotationOptions& options, std::unique_ptr<RotationHooks> hooks) {
  MZ_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<NodeKeyRotation> node(new NodeKeyRotation());
  node->hooks_ = std::move(hooks);
  MZ_ASSIGN_OR_RETURN(node->store_, LocalKeyStore::Open(options.key_store_dir));
  RotatorOptions rotator_options;
  if (!options.mount_table.empty()) rotator_options.resolve.mount_table = options.mount_table;
  if (!options.kubelet_dir.empty()) rotator_options.resolve.kubelet_dir = options.kubelet_dir;
  rotator_options.resolve.driver_name = options.driver_name;
  rotator_options.hooks = node->hooks_.get();
  MZ_LOG(kInfo) << "EncryptionKeyRotation: key store " << options.key_store_dir << ", mount table "
                << rotator_options.resolve.mount_table << ", kubelet "
                << rotator_options.resolve.kubelet_dir << " (driver " << Quoted(options.driver_name)
                << ")";
  node->rotator_ = std::make_unique<Rotator>(*node->store_, std::move(rotator_options));
  if (Status s = node->rotator_->RecoverAll(); !s.ok()) {
    MZ_LOG(kWarn) << "key rotation recovery left work for later: " << s.ToString();
  }
  node->service_ = std::make_unique<KeyRotationService>(*node->rotator_, options.expected_secrets);
  return node;
}

std::string NodeKeyRotation::health_name() const {
  return encryptionkeyrotation::EncryptionKeyRotationController::service_full_name();
}

std::vector<identity::Capability> NodeKeyRotation::capabilities() const {
  identity::Capability capability;
  capability.mutable_encryption_key_rotation()->set_type(
      identity::Capability::EncryptionKeyRotation::ENCRYPTIONKEYROTATION);
  return {capability};
}

}  // namespace mizarmp::keyrotation
