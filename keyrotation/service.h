// The CSI-Addons EncryptionKeyRotationController on the node, and the wiring mizarmp-addons
// uses in node mode.
//
// EncryptionKeyRotate: INVALID_ARGUMENT without volume_id; UNAUTHENTICATED when the server has
// expected secrets and the request does not carry every one of them with the same value;
// otherwise Rotator::Rotate()'s status (NOT_FOUND, FAILED_PRECONDITION, ABORTED, ...).
// volume_capability picks block vs. filesystem resolution when set. Neither the secrets nor
// encryption_key ever reach a log line.
#pragma once

#include <grpcpp/support/status.h>

#include <map>
#include <memory>
#include <string>

#include "common/status.h"
#include "encryptionkeyrotation.grpc.pb.h"
#include "fence/secrets.h"
#include "keyrotation/keystore.h"
#include "keyrotation/rotator.h"

namespace mizarmp::keyrotation {

// Secrets are checked by the helper every mizarmp-addons service shares (fence/secrets.h).
using fence::CheckSecrets;

class KeyRotationService final
    : public encryptionkeyrotation::EncryptionKeyRotationController::Service {
 public:
  KeyRotationService(Rotator& rotator, std::map<std::string, std::string> expected_secrets);

  grpc::Status EncryptionKeyRotate(
      grpc::ServerContext* context,
      const encryptionkeyrotation::EncryptionKeyRotateRequest* request,
      encryptionkeyrotation::EncryptionKeyRotateResponse* response) override;

  // The same decision without gRPC.
  Status Rotate(const encryptionkeyrotation::EncryptionKeyRotateRequest& request);

 private:
  Rotator& rotator_;
  std::map<std::string, std::string> expected_secrets_;
};

struct NodeKeyRotationConfig {
  std::string key_store_dir;
  std::string mount_table;
  std::map<std::string, std::string> expected_secrets;  // never logged
};

// Key store + rotator + service, as mizarmp-addons --mode node wires them: opens the local key
// store, applies the test hooks from the environment and recovers interrupted rotations
// (a volume that cannot be recovered now is logged and retried before its next rotation).
class NodeKeyRotation {
 public:
  static Result<std::unique_ptr<NodeKeyRotation>> Create(const NodeKeyRotationConfig& config);

  grpc::Service* service() { return service_.get(); }
  static std::string service_name() {
    return encryptionkeyrotation::EncryptionKeyRotationController::service_full_name();
  }
  Rotator& rotator() { return *rotator_; }

 private:
  NodeKeyRotation() = default;
  std::unique_ptr<LocalKeyStore> store_;
  std::unique_ptr<Rotator> rotator_;
  std::unique_ptr<KeyRotationService> service_;
};

}  // namespace mizarmp::keyrotation
