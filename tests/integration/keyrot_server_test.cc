// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// EncryptionKeyRotation through gRPC: the real mizarmp-addons-testhooks --mode node process,
// killed with SIGKILL after each step of the rotation in turn (the test-only crash hook) and
// restarted; the production mizarmp-addons, which ignores the test hooks' variables; Identity in
// node mode; concurrent rotations of one volume over a real socket.
#include <grpcpp/grpcpp.h>
#include <libcryptsetup.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

#include "addons/server.h"
#include "common/fileutil.h"
#include "common/hex.h"
#include "encryptionkeyrotation/encryptionkeyrotation.grpc.pb.h"
#include "identity/identity.grpc.pb.h"
#include "keyrotation/hooks.h"
#include "keyrotation/keystore.h"
#include "keyrotation/kubelet.h"
#include "keyrotation/service/rotation_service.h"
#include "keyrotation/step.h"
#include "tests/integration/keyrot_support.h"
#include "tests/support/support.h"

namespace mizarmp::keyrotation {
namespace {

using namespace std::chrono_literals;
using mizarmp::testing::TempDir;
using testing::ActiveKeyslots;
using testing::CallbackHooks;
using testing::KeyslotPbkdf;
using testing::MakeLuksImage;
using testing::Opens;

constexpr const char* kOldKey = "integration-old-key-5150";
constexpr const char* kNewKey = "integration-new-key-8086";

std::string LogOf(const std::string& path) {
  auto text = ReadFile(path);
  return text.ok() ? *text : std::string("(no log)");
}

// The production server, whose test hooks never come from the environment, and the same server
// linked with the hooks that read it (keyrotation/hooks.h).
constexpr const char* kProductionBinary = "mizarmp-addons";
constexpr const char* kTestHooksBinary = "mizarmp-addons-testhooks";

// `binary` --mode node as a child process; SIGKILLed on destruction if still running.
class AddonsNode {
 public:
  AddonsNode(const std::string& dir, const std::string& name,
             const std::map<std::string, std::string>& env,
             const std::vector<std::string>& extra = {},
             const std::string& binary = kTestHooksBinary)
      : socket_(dir + "/" + name + ".sock"), log_(dir + "/" + name + ".log") {
    std::vector<std::string> argv = {mizarmp::testing::BinDir() + "/" + binary,
                                     "--mode",
                                     "node",
                                     "--endpoint",
                                     "unix://" + socket_,
                                     "--key-store-dir",
                                     dir + "/keys",
                                     "--kubelet-dir",
                                     dir + "/kubelet",
                                     "--log-level",
                                     "debug"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    pid_ = mizarmp::testing::SpawnProcess(argv, env, "", log_);
    channel_ = grpc::CreateChannel("unix:" + socket_, grpc::InsecureChannelCredentials());
  }
  ~AddonsNode() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      mizarmp::testing::WaitProcess(pid_, 10s);
    }
  }

  bool WaitReady() {
    return pid_ > 0 && channel_->WaitForConnected(std::chrono::system_clock::now() + 20s);
  }

  grpc::Status Rotate(const encryptionkeyrotation::EncryptionKeyRotateRequest& req,
                      std::chrono::seconds deadline = 30s) {
    auto stub = encryptionkeyrotation::EncryptionKeyRotationController::NewStub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + deadline);
    encryptionkeyrotation::EncryptionKeyRotateResponse resp;
    return stub->EncryptionKeyRotate(&ctx, req, &resp);
  }

  // waitpid with a timeout; the raw status or -1.
  int Wait(std::chrono::milliseconds timeout) {
    const int raw = mizarmp::testing::WaitProcess(pid_, timeout);
    if (raw != -1) reaped_ = true;
    return raw;
  }
  int Terminate() {
    ::kill(pid_, SIGTERM);
    return Wait(30s);
  }

  std::shared_ptr<grpc::Channel> channel() { return channel_; }
  const std::string& log() const { return log_; }

 private:
  std::string socket_;
  std::string log_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::shared_ptr<grpc::Channel> channel_;
};

const std::map<std::string, std::string> kCheapPbkdf = {{kTestPbkdfEnv, "1000"}};

encryptionkeyrotation::EncryptionKeyRotateRequest Request(const std::string& id,
                                                          const std::string& path,
                                                          const std::string& key) {
  encryptionkeyrotation::EncryptionKeyRotateRequest req;
  req.set_volume_id(id);
  req.set_volume_path(path);
  req.set_encryption_key(key);
  return req;
}

class KeyRotCrash : public ::testing::TestWithParam<Step> {};

TEST_P(KeyRotCrash, KilledAfterStepThenRestartedCompletesOrRollsBack) {
  const Step step = GetParam();
  TempDir dir;
  const std::string image = dir.path() + "/vol.img";
  MakeLuksImage(image, kOldKey);
  {
    auto store = LocalKeyStore::Open(dir.path() + "/keys");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put({"pvc-crash", image, kOldKey, "", ""}).ok());
  }

  // 1. A server that kills itself right after `step`.
  {
    auto env = kCheapPbkdf;
    env[kCrashAfterEnv] = std::string(StepName(step));
    AddonsNode node(dir.path(), "crashing", env);
    ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());
    const grpc::Status s = node.Rotate(Request("pvc-crash", image, kNewKey));
    EXPECT_FALSE(s.ok()) << "the call should die with the server";
    const int raw = node.Wait(30s);
    ASSERT_NE(raw, -1) << "server still running; log:\n" << LogOf(node.log());
    ASSERT_TRUE(WIFSIGNALED(raw)) << raw;
    EXPECT_EQ(WTERMSIG(raw), SIGKILL);
  }

  // 2. At the instant of the crash some stored key opens the header.
  auto store = LocalKeyStore::Open(dir.path() + "/keys");
  ASSERT_TRUE(store.ok());
  auto crashed = (*store)->Get("pvc-crash");
  ASSERT_TRUE(crashed.ok()) << crashed.status().ToString();
  EXPECT_TRUE(Opens(image, crashed->current) ||
              (!crashed->pending.empty() && Opens(image, crashed->pending)) ||
              (!crashed->previous.empty() && Opens(image, crashed->previous)))
      << "no stored key opens the header after step " << StepName(step);

  // 3. Restart: recovery at start finishes or rolls back.
  AddonsNode node(dir.path(), "restarted", kCheapPbkdf);
  ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());
  auto after = (*store)->Get("pvc-crash");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE(after->pending.empty());
  EXPECT_TRUE(after->previous.empty());
  EXPECT_TRUE(Opens(image, after->current));
  EXPECT_EQ(ActiveKeyslots(image), 1);
  if (step == Step::kPendingRecorded) {
    // The keyslot was never added: rolled back.
    EXPECT_EQ(after->current, kOldKey);
    EXPECT_FALSE(Opens(image, kNewKey));
  } else {
    // The new key's keyslot exists: completed.
    EXPECT_EQ(after->current, kNewKey);
    EXPECT_FALSE(Opens(image, kOldKey));
  }

  // 4. The volume rotates normally afterwards (path from the key store).
  const grpc::Status s = node.Rotate(Request("pvc-crash", "", "after-crash-key"));
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << LogOf(node.log());
  EXPECT_TRUE(Opens(image, "after-crash-key"));
  EXPECT_FALSE(Opens(image, after->current));
  const int raw = node.Terminate();
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;

  // Keys never reach the log.
  for (const std::string& log : {dir.path() + "/crashing.log", dir.path() + "/restarted.log"}) {
    const std::string text = LogOf(log);
    for (const std::string& key : {std::string(kOldKey), std::string(kNewKey),
                                   std::string("after-crash-key"), HexEncoded(kNewKey)}) {
      EXPECT_EQ(text.find(key), std::string::npos) << log << " holds a key";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryStep, KeyRotCrash, ::testing::ValuesIn(kAllSteps),
                         [](const ::testing::TestParamInfo<Step>& param_info) {
                           std::string name(StepName(param_info.param));
                           for (auto& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// The server killed after wiping the old keyslot; before it restarts, a "reboot" renames the
// device and another LUKS device that the old key opens takes the recorded name. Recovery at
// start finishes on the renamed device (found by the LUKS UUID stored with the rotation) and
// leaves the impostor alone; a rotation by volume id alone then uses the renamed device.
TEST(KeyRotNode, CrashThenDeviceRenameRecoversOnTheSameHeader) {
  TempDir dir;
  const std::string image = dir.path() + "/vol.img";
  const std::string renamed = dir.path() + "/vol-after-reboot.img";
  MakeLuksImage(image, kOldKey);
  {
    auto store = LocalKeyStore::Open(dir.path() + "/keys");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put({"pvc-renamed", image, kOldKey, "", ""}).ok());
  }
  {
    auto env = kCheapPbkdf;
    env[kCrashAfterEnv] = std::string(StepName(Step::kOldKeyslotDestroyed));
    AddonsNode node(dir.path(), "crashing", env);
    ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());
    EXPECT_FALSE(node.Rotate(Request("pvc-renamed", image, kNewKey)).ok());
    const int raw = node.Wait(30s);
    ASSERT_TRUE(raw != -1 && WIFSIGNALED(raw)) << raw << "\n" << LogOf(node.log());
  }
  ASSERT_EQ(::rename(image.c_str(), renamed.c_str()), 0);
  MakeLuksImage(image, kOldKey);

  AddonsNode node(dir.path(), "restarted", kCheapPbkdf);
  ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());
  auto store = LocalKeyStore::Open(dir.path() + "/keys");
  ASSERT_TRUE(store.ok());
  auto after = (*store)->Get("pvc-renamed");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->device, renamed) << LogOf(node.log());
  EXPECT_EQ(after->current, kNewKey);
  EXPECT_TRUE(after->previous.empty());
  EXPECT_TRUE(Opens(renamed, kNewKey));
  EXPECT_FALSE(Opens(renamed, kOldKey));
  EXPECT_TRUE(Opens(image, kOldKey)) << "the impostor was changed";
  EXPECT_EQ(ActiveKeyslots(image), 1);

  const grpc::Status s = node.Rotate(Request("pvc-renamed", "", "after-rename-key"));
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << LogOf(node.log());
  EXPECT_TRUE(Opens(renamed, "after-rename-key"));
  EXPECT_FALSE(Opens(image, "after-rename-key"));
  const int raw = node.Terminate();
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;
}

// Whether `key` opens the LUKS2 header of `image` according to the cryptsetup CLI (an
// independent reader of the header); nullopt when the CLI is not installed.
std::optional<bool> CliOpens(const std::string& image, const std::string& key) {
  const std::string cli = "/usr/sbin/cryptsetup";
  if (::access(cli.c_str(), X_OK) != 0) return std::nullopt;
  const auto run = mizarmp::testing::RunProcess(
      {cli, "open", "--test-passphrase", "--key-file", "-", image}, {}, key);
  return run.ok();
}

// The whole path of the CSI-Addons sidecar's request: the server (node mode, its drivername,
// kubeletDir and mount table) gets over gRPC exactly what the sidecar sends for a PV (volume_id
// = volumeHandle, parameters = volumeAttributes, the node-stage secret, a capability with an
// access mode only; no volume_path, no encryption_key), finds the volume where kubelet >= 1.24
// staged it, and rotates its key to a generated one.
TEST(KeyRotNode, SidecarShapedRequestRotatesAVolumeStagedByKubelet) {
  TempDir dir;
  const std::string driver = "luks.csi.example.com";
  const std::string volume_id = "0001-0009-rook-ceph-0000000000000002-5f1c";
  const std::string image = dir.path() + "/vol.img";
  MakeLuksImage(image, kOldKey);
  {
    auto store = LocalKeyStore::Open(dir.path() + "/keys");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put({volume_id, "", kOldKey, "", ""}).ok());
  }
  const std::string staging = dir.path() + "/kubelet/plugins/kubernetes.io/csi/" + driver + "/" +
                              VolumeHandleHash(volume_id);
  ASSERT_TRUE(MakeDirs(staging + "/globalmount", 0750).ok());
  ASSERT_TRUE(
      WriteFileAtomic(staging + "/vol_data.json",
                      R"({"driverName":")" + driver + R"(","volumeHandle":")" + volume_id + R"("})")
          .ok());
  const std::string table = dir.path() + "/mountinfo";
  ASSERT_TRUE(
      WriteFileAtomic(table, "36 22 7:0 / " + staging + "/globalmount rw - ext4 " + image + " rw\n")
          .ok());
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/secrets.json", R"({"userID": "csi-rbd-node"})").ok());
  AddonsNode node(dir.path(), "sidecar", kCheapPbkdf,
                  {"--drivername", driver, "--mount-table", table, "--secrets-file",
                   dir.path() + "/secrets.json"});
  ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());

  encryptionkeyrotation::EncryptionKeyRotateRequest req;
  req.set_volume_id(volume_id);
  (*req.mutable_parameters())["clusterID"] = "rook-ceph";
  (*req.mutable_parameters())["encrypted"] = "true";
  (*req.mutable_secrets())["userID"] = "csi-rbd-node";
  (*req.mutable_secrets())["userKey"] = "AQBn+node+stage+secret==";
  req.mutable_volume_capability()->mutable_access_mode()->set_mode(
      csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
  const grpc::Status s = node.Rotate(req);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << LogOf(node.log());

  auto store = LocalKeyStore::Open(dir.path() + "/keys");
  ASSERT_TRUE(store.ok());
  auto keys = (*store)->Get(volume_id);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->device, image);
  EXPECT_EQ(keys->current.size(), 32u) << "the sidecar sends no key: a generated one";
  EXPECT_TRUE(Opens(image, keys->current));
  EXPECT_FALSE(Opens(image, kOldKey));
  EXPECT_EQ(ActiveKeyslots(image), 1);
  if (const auto cli = CliOpens(image, keys->current)) {
    EXPECT_TRUE(*cli) << "cryptsetup open --test-passphrase refuses the new key";
    EXPECT_FALSE(*CliOpens(image, kOldKey)) << "cryptsetup still takes the old key";
  }

  // A volume kubelet did not stage here: NOT_FOUND naming it and where it was looked for.
  req.set_volume_id("pvc-not-on-this-node");
  const grpc::Status missing = node.Rotate(req);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::NOT_FOUND) << missing.error_message();
  EXPECT_NE(missing.error_message().find("\"pvc-not-on-this-node\""), std::string::npos)
      << missing.error_message();
  EXPECT_NE(missing.error_message().find(dir.path() + "/kubelet/plugins/kubernetes.io/csi/pv/*"),
            std::string::npos)
      << missing.error_message();

  const int raw = node.Terminate();
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;
  const std::string text = LogOf(node.log());
  EXPECT_NE(text.find(staging + "/globalmount"), std::string::npos) << text;
  EXPECT_EQ(text.find(HexEncoded(static_cast<const std::string&>(keys->current))), std::string::npos) << "the new key was logged";
  EXPECT_EQ(text.find("AQBn+node+stage+secret=="), std::string::npos) << "a secret was logged";
}

TEST(KeyRotNode, IdentityAdvertisesNodeServiceAndKeyRotation) {
  TempDir dir;
  AddonsNode node(dir.path(), "ident", {}, {}, kProductionBinary);
  ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());
  auto stub = identity::Identity::NewStub(node.channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  identity::GetCapabilitiesResponse resp;
  ASSERT_TRUE(stub->GetCapabilities(&ctx, {}, &resp).ok());
  bool node_service = false, rotation = false;
  for (const auto& c : resp.capabilities()) {
    if (c.has_service() && c.service().type() == identity::Capability::Service::NODE_SERVICE) {
      node_service = true;
    }
    if (c.has_encryption_key_rotation() &&
        c.encryption_key_rotation().type() ==
            identity::Capability::EncryptionKeyRotation::ENCRYPTIONKEYROTATION) {
      rotation = true;
    }
  }
  EXPECT_TRUE(node_service);
  EXPECT_TRUE(rotation);
}

TEST(KeyRotNode, SecretsAreChecked) {
  TempDir dir;
  const std::string image = dir.path() + "/vol.img";
  MakeLuksImage(image, kOldKey);
  {
    auto store = LocalKeyStore::Open(dir.path() + "/keys");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put({"pvc-s", image, kOldKey, "", ""}).ok());
  }
  ASSERT_TRUE(WriteFileAtomic(dir.path() + "/secrets.json", R"({"token": "tok-123"})").ok());
  AddonsNode node(dir.path(), "secrets", kCheapPbkdf,
                  {"--secrets-file", dir.path() + "/secrets.json"});
  ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());
  auto req = Request("pvc-s", image, kNewKey);
  EXPECT_EQ(node.Rotate(req).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  (*req.mutable_secrets())["token"] = "nope";
  EXPECT_EQ(node.Rotate(req).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(Opens(image, kOldKey));
  (*req.mutable_secrets())["token"] = "tok-123";
  const grpc::Status s = node.Rotate(req);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(Opens(image, kNewKey));
  EXPECT_FALSE(Opens(image, kOldKey));
  node.Terminate();
  const std::string text = LogOf(node.log());
  EXPECT_EQ(text.find("tok-123"), std::string::npos);
  EXPECT_EQ(text.find(kNewKey), std::string::npos);
}

// Over a real gRPC socket: while one rotation is held open after its first step, every other
// rotation of the same volume is ABORTED; exactly one succeeds.
TEST(KeyRotNode, ConcurrentRotationsOverGrpc) {
  TempDir dir;
  const std::string image = dir.path() + "/vol.img";
  MakeLuksImage(image, kOldKey);
  auto store = LocalKeyStore::Open(dir.path() + "/keys");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Put({"pvc-c", image, kOldKey, "", ""}).ok());

  std::mutex mu;
  std::condition_variable cv;
  int entered = 0;
  bool release = false;
  auto hooks = std::make_unique<CallbackHooks>();
  hooks->pbkdf = PbkdfOptions::CheapForTests();
  hooks->after_step = [&](Step step, const std::string&) {
    if (step != Step::kPendingRecorded) return;
    std::unique_lock<std::mutex> lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  KeyRotationOptions options;
  options.key_store_dir = dir.path() + "/keys";
  auto node = NodeKeyRotation::Create(options, std::move(hooks));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  addons::ServerOptions so;
  so.endpoint = "unix://" + dir.path() + "/c.sock";
  addons::Server server(so);
  server.Register(**node);
  ASSERT_TRUE(server.Start().ok());
  auto channel = grpc::CreateChannel(server.address(), grpc::InsecureChannelCredentials());
  auto call = [&](const std::string& key) {
    auto stub = encryptionkeyrotation::EncryptionKeyRotationController::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    encryptionkeyrotation::EncryptionKeyRotateResponse resp;
    return stub->EncryptionKeyRotate(&ctx, Request("pvc-c", image, key), &resp);
  };

  constexpr int kCalls = 6;
  std::vector<std::future<grpc::Status>> calls;
  calls.push_back(std::async(std::launch::async, call, std::string("key-0")));
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 20s, [&] { return entered == 1; }));
  }
  for (int i = 1; i < kCalls; ++i) {
    calls.push_back(std::async(std::launch::async, call, "key-" + std::to_string(i)));
  }
  std::vector<grpc::Status> results(kCalls);
  for (int i = 1; i < kCalls; ++i) results[i] = calls[i].get();
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  results[0] = calls[0].get();
  server.Shutdown();

  int ok = 0, aborted = 0;
  for (const auto& r : results) {
    if (r.ok()) ++ok;
    if (r.error_code() == grpc::StatusCode::ABORTED) ++aborted;
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(aborted, kCalls - 1);
  EXPECT_TRUE(results[0].ok()) << results[0].error_message();
  EXPECT_TRUE(Opens(image, "key-0"));
  EXPECT_FALSE(Opens(image, kOldKey));
  EXPECT_EQ(ActiveKeyslots(image), 1);
}

// The production binary links no test hooks: with both hook variables set in its environment
// it neither kills itself after the named step nor gives the new keyslot the cheap PBKDF2;
// the keyslot gets libcryptsetup's default PBKDF.
TEST(KeyRotNode, ProductionBinaryIgnoresTheTestHookVariables) {
  TempDir dir;
  const std::string image = dir.path() + "/vol.img";
  MakeLuksImage(image, kOldKey);
  {
    auto store = LocalKeyStore::Open(dir.path() + "/keys");
    ASSERT_TRUE(store.ok());
    ASSERT_TRUE((*store)->Put({"pvc-prod", image, kOldKey, "", ""}).ok());
  }
  const std::map<std::string, std::string> env = {
      {kCrashAfterEnv, std::string(StepName(Step::kKeyslotAdded))}, {kTestPbkdfEnv, "1000"}};
  AddonsNode node(dir.path(), "production", env, {}, kProductionBinary);
  ASSERT_TRUE(node.WaitReady()) << LogOf(node.log());

  // The default PBKDF (memory-hard, benchmarked) makes this rotation take seconds.
  const grpc::Status s = node.Rotate(Request("pvc-prod", image, kNewKey), 180s);
  ASSERT_TRUE(s.ok()) << s.error_message() << "\n" << LogOf(node.log());
  EXPECT_EQ(node.Wait(200ms), -1) << "the server exited; log:\n" << LogOf(node.log());
  EXPECT_TRUE(Opens(image, kNewKey));
  EXPECT_FALSE(Opens(image, kOldKey));
  EXPECT_EQ(ActiveKeyslots(image), 1);

  const std::optional<testing::KeyslotKdf> kdf = KeyslotPbkdf(image, kNewKey);
  ASSERT_TRUE(kdf.has_value());
  const crypt_pbkdf_type* defaults = crypt_get_pbkdf_default(CRYPT_LUKS2);
  ASSERT_NE(defaults, nullptr);
  EXPECT_EQ(kdf->type, defaults->type);
  EXPECT_NE(kdf->type, CRYPT_KDF_PBKDF2);

  const int raw = node.Terminate();
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw;
  EXPECT_EQ(LogOf(node.log()).find("test hook"), std::string::npos) << LogOf(node.log());
}

}  // namespace
}  // namespace mizarmp::keyrotation
