#include "keyrotation/service.h"

#include "common/log.h"

namespace mizarmp::keyrotation {

KeyRotationService::KeyRotationService(Rotator& rotator,
                                       std::map<std::string, std::string> expected_secrets)
    : rotator_(rotator), expected_secrets_(std::move(expected_secrets)) {}

Status KeyRotationService::Rotate(
    const encryptionkeyrotation::EncryptionKeyRotateRequest& request) {
  if (request.volume_id().empty()) {
    return InvalidArgumentError("volume_id: required");
  }
  MZ_RETURN_IF_ERROR(CheckSecrets(request.secrets(), expected_secrets_));
  RotateRequest r;
  r.volume_id = request.volume_id();
  r.volume_path = request.volume_path();
  r.new_key = request.encryption_key();
  if (request.has_volume_capability()) {
    if (request.volume_capability().has_block()) {
      r.access = AccessType::kBlock;
    } else if (request.volume_capability().has_mount()) {
      r.access = AccessType::kMount;
    }
  }
  return rotator_.Rotate(r);
}

grpc::Status KeyRotationService::EncryptionKeyRotate(
    grpc::ServerContext*, const encryptionkeyrotation::EncryptionKeyRotateRequest* request,
    encryptionkeyrotation::EncryptionKeyRotateResponse*) {
  MZ_LOG(kInfo) << "EncryptionKeyRotate volume_id=\"" << request->volume_id() << "\" volume_path=\""
                << request->volume_path()
                << "\" key=" << (request->encryption_key().empty() ? "generated" : "supplied");
  const Status s = Rotate(*request);
  if (!s.ok()) {
    MZ_LOG(kWarn) << "EncryptionKeyRotate volume_id=\"" << request->volume_id()
                  << "\": " << s.ToString();
  }
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), s.message());
}

Result<std::unique_ptr<NodeKeyRotation>> NodeKeyRotation::Create(
    const NodeKeyRotationConfig& config) {
  std::unique_ptr<NodeKeyRotation> node(new NodeKeyRotation());
  MZ_ASSIGN_OR_RETURN(node->store_, LocalKeyStore::Open(config.key_store_dir));
  RotatorOptions options;
  if (!config.mount_table.empty()) options.resolve.mount_table = config.mount_table;
  MZ_RETURN_IF_ERROR(options.ApplyTestHooksFromEnv());
  MZ_LOG(kInfo) << "EncryptionKeyRotation: key store " << config.key_store_dir << ", mount table "
                << options.resolve.mount_table;
  node->rotator_ = std::make_unique<Rotator>(*node->store_, std::move(options));
  if (Status s = node->rotator_->RecoverAll(); !s.ok()) {
    MZ_LOG(kWarn) << "key rotation recovery left work for later: " << s.ToString();
  }
  node->service_ = std::make_unique<KeyRotationService>(*node->rotator_, config.expected_secrets);
  return node;
}

}  // namespace mizarmp::keyrotation
