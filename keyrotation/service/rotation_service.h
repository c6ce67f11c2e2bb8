// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// The CSI-Addons EncryptionKeyRotationController on the node, and NodeKeyRotation, the
// addons::AddonsService mizarmp-addons registers in node mode.
//
// EncryptionKeyRotate: INVALID_ARGUMENT without volume_id; UNAUTHENTICATED when the server has
// expected secrets and the request does not carry every one of them with the same value
// (addons/secrets.h); otherwise Rotator::Rotate()'s status (NOT_FOUND, FAILED_PRECONDITION,
// ABORTED, ...). volume_capability picks block vs. filesystem resolution when it says which
// (the sidecar's carries an access mode only). Without volume_path, which the sidecar never
// sends, the volume is found from volume_id where kubelet staged it (keyrotation/kubelet.h).
// Neither the secrets nor encryption_key ever reach a log line.
#pragma once

#include <grpcpp/support/status.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "addons/service.h"
#include "common/status.h"
#include "encryptionkeyrotation/encryptionkeyrotation.grpc.pb.h"
#include "keyrotation/hooks.h"
#include "keyrotation/keystore.h"
#include "keyrotation/options.h"
#include "keyrotation/rotator.h"

namespace mizarmp::keyrotation {

class KeyRotationService final
    : public encryptionkeyrotation::EncryptionKeyRotationController::Service {
 public:
  KeyRotationService(Rotator& rotator, std::map<std::string, std::string> expected_secrets);

  // Rotate() answered as a gRPC status.
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

// Key store + rotator + service, as mizarmp-addons --mode node serves them. Advertises the
// ENCRYPTIONKEYROTATION capability; has no readiness checks and no background work.
class NodeKeyRotation final : public addons::AddonsService {
 public:
  // Opens the local key store and recovers interrupted rotations (a volume that cannot be
  // recovered now is logged and retried before its next rotation). `hooks` is null in
  // production; test builds pass RotationHooksFromEnvironment()'s or their own.
  static Result<std::unique_ptr<NodeKeyRotation>> Create(const KeyRotationOptions& options,
                                                         std::unique_ptr<RotationHooks> hooks);

  grpc::Service* grpc_service() override { return service_.get(); }
  std::string health_name() const override;
  std::vector<identity::Capability> capabilities() const override;

 private:
  NodeKeyRotation() = default;
  // Declared in dependency order, so each is destroyed before what it uses.
  std::unique_ptr<RotationHooks> hooks_;
  std::unique_ptr<LocalKeyStore> store_;
  std::unique_ptr<Rotator> rotator_;
  std::unique_ptr<KeyRotationService> service_;
};

}  // namespace mizarmp::keyrotation
