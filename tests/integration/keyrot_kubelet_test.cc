// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// keyrotation/kubelet.h: a key rotation request shaped exactly like the CSI-Addons sidecar's
// (volume_id = the PV's volumeHandle, parameters = its volumeAttributes, the node-stage secret,
// a volume_capability with an access mode only, no volume_path, no encryption_key) finds a LUKS2
// volume where kubelet staged it and rotates its key; vol_data.json files that do not name the
// volume, or that are not what kubelet writes, are never taken. LUKS2 headers on image files
// (and, as root, on loop devices over them); the mount table is the test's own file.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/fileutil.h"
#include "keyrotation/keystore.h"
#include "keyrotation/kubelet.h"
#include "keyrotation/resolve.h"
#include "keyrotation/rotator.h"
#include "keyrotation/service/rotation_service.h"
#include "tests/integration/keyrot_support.h"
#include "tests/support/support.h"

namespace mizarmp::keyrotation {
namespace {

using mizarmp::testing::TempDir;
using testing::ActiveKeyslots;
using testing::CallbackHooks;
using testing::MakeLuksImage;
using testing::Opens;
using testing::ScopedLoopDevice;

constexpr const char* kDriver = "luks.csi.example.com";
constexpr const char* kVolumeId = "0001-0009-rook-ceph-0000000000000002-b0f5-4a3c";
constexpr const char* kPvName = "pvc-5e1b7c2a-95d4-4f0e-9c39-1f0c5f3c9e11";
constexpr const char* kOldKey = "kubelet-old-key-2718";

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

// What kubelet writes beside a filesystem volume's globalmount (csi_attacher.go MountDevice).
std::string FilesystemVolumeData(const std::string& handle, const std::string& driver) {
  return R"({"driverName":")" + driver + R"(","volumeHandle":")" + handle + R"("})";
}

// What kubelet writes in volumeDevices/<PV>/data/ for a block volume (csi_block.go).
std::string BlockVolumeData(const std::string& handle, const std::string& driver) {
  return R"({"attachmentID":"csi-8a1c","driverName":")" + driver + R"(","nodeName":"node-1",)" +
         R"("specVolID":")" + kPvName + R"(","volumeHandle":")" + handle + R"("})";
}

// A temp dir with a kubelet root, a key store whose record for kVolumeId holds the volume's key
// but names no device (only kubelet's layout says where it is), and a LUKS2 image.
class KeyRotKubeletLayout : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = tmp_.path() + "/disk.img";
    MakeLuksImage(image_, kOldKey);
    auto store = LocalKeyStore::Open(tmp_.path() + "/keys");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    ASSERT_TRUE(store_->Put({kVolumeId, "", kOldKey, "", ""}).ok());
    hooks_.pbkdf = PbkdfOptions::CheapForTests();
    options_.pbkdf = PbkdfOptions::CheapForTests();
    options_.hooks = &hooks_;
    ResolveOptions& r = options_.resolve;
    r.mount_table = tmp_.path() + "/mountinfo";
    r.sys_block_dir = tmp_.path() + "/sys/block";
    r.dev_dir = tmp_.path() + "/dev";
    r.kubelet_dir = tmp_.path() + "/kubelet";
    r.driver_name = kDriver;
    csi_ = r.kubelet_dir + "/plugins/kubernetes.io/csi";
    WriteText(r.mount_table, "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n");
  }

  // The staging directory of Kubernetes >= 1.24 for `handle` (csi_attacher.go
  // makeDeviceMountPath), with `volume_data` beside globalmount and `source` mounted on it.
  std::string StageHashed(const std::string& handle, const std::string& volume_data,
                          const std::string& source) {
    const std::string dir = csi_ + "/" + kDriver + "/" + VolumeHandleHash(handle);
    EXPECT_TRUE(MakeDirs(dir + "/globalmount", 0750).ok());
    WriteText(dir + "/vol_data.json", volume_data);
    if (!source.empty()) Mount(source, dir + "/globalmount");
    return dir;
  }

  // The same for Kubernetes <= 1.23: pv/<PV name>/globalmount.
  std::string StageLegacy(const std::string& pv, const std::string& volume_data,
                          const std::string& source) {
    const std::string dir = csi_ + "/pv/" + pv;
    EXPECT_TRUE(MakeDirs(dir + "/globalmount", 0750).ok());
    WriteText(dir + "/vol_data.json", volume_data);
    if (!source.empty()) Mount(source, dir + "/globalmount");
    return dir;
  }

  // A block volume's vol_data.json (volumeDevices/<PV>/data/) and its staging and publish
  // directories, empty: the test puts the device where a driver would.
  void StageBlock(const std::string& pv, const std::string& volume_data) {
    ASSERT_TRUE(MakeDirs(csi_ + "/volumeDevices/" + pv + "/data", 0750).ok());
    WriteText(csi_ + "/volumeDevices/" + pv + "/data/vol_data.json", volume_data);
    ASSERT_TRUE(MakeDirs(csi_ + "/volumeDevices/staging/" + pv, 0750).ok());
    ASSERT_TRUE(MakeDirs(csi_ + "/volumeDevices/publish/" + pv, 0750).ok());
  }

  // A mountinfo line: `source` mounted on `point`.
  void Mount(const std::string& source, const std::string& point) {
    std::ofstream out(options_.resolve.mount_table, std::ios::app);
    const int n = ++mounts_;
    out << "3" << n << " 22 253:" << n << " / " << point << " rw,relatime shared:9 - ext4 "
        << source << " rw\n";
  }

  // The request the CSI-Addons sidecar sends (internal/sidecar/service/encryptionkeyrotation.go):
  // the PV's volumeHandle and volumeAttributes, the node-stage secret, and a capability that has
  // an access mode and no access type. Never a volume_path or an encryption_key.
  static encryptionkeyrotation::EncryptionKeyRotateRequest SidecarRequest(
      const std::string& volume_id = kVolumeId) {
    encryptionkeyrotation::EncryptionKeyRotateRequest req;
    req.set_volume_id(volume_id);
    (*req.mutable_parameters())["clusterID"] = "rook-ceph";
    (*req.mutable_parameters())["encrypted"] = "true";
    (*req.mutable_parameters())["encryptionKMSID"] = "vault-kms";
    (*req.mutable_parameters())["storage.kubernetes.io/csiProvisionerIdentity"] = "1700-8081";
    (*req.mutable_secrets())["userID"] = "csi-rbd-node";
    (*req.mutable_secrets())["userKey"] = "AQBn+node+stage+secret==";
    req.mutable_volume_capability()->mutable_access_mode()->set_mode(
        csi::v1::VolumeCapability::AccessMode::SINGLE_NODE_WRITER);
    return req;
  }

  Status RotateLikeTheSidecar(const std::string& volume_id = kVolumeId) {
    Rotator rotator(*store_, options_);
    // The server checks the node-stage secret it was configured with (secretsFile).
    KeyRotationService service(rotator, {{"userID", "csi-rbd-node"}});
    const auto req = SidecarRequest(volume_id);
    EXPECT_TRUE(req.volume_path().empty());
    EXPECT_TRUE(req.encryption_key().empty());
    EXPECT_FALSE(req.volume_capability().has_mount());
    EXPECT_FALSE(req.volume_capability().has_block());
    return service.Rotate(req);
  }

  VolumeKeys Stored() {
    auto k = store_->Get(kVolumeId);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? *k : VolumeKeys{};
  }

  // The keyslot `key` opens on `device`; -1 when none.
  static int SlotOf(const std::string& device, const std::string& key) {
    auto luks = LuksDevice::Open(device);
    if (!luks.ok()) return -1;
    auto slot = luks->FindKeyslot(key);
    return slot.ok() && slot->has_value() ? **slot : -1;
  }

  // The rotation went through on `device`: a new, generated key (the sidecar sends none) in a
  // new keyslot opens it, the old key and its keyslot are gone, and the store follows.
  void ExpectRotated(const std::string& device, int old_slot) {
    const VolumeKeys k = Stored();
    EXPECT_EQ(k.current.size(), 32u) << "a generated key";
    EXPECT_NE(k.current, kOldKey);
    EXPECT_TRUE(k.pending.empty());
    EXPECT_TRUE(k.previous.empty());
    EXPECT_EQ(k.device, device);
    EXPECT_TRUE(Opens(device, k.current));
    EXPECT_FALSE(Opens(device, kOldKey));
    const int new_slot = SlotOf(device, k.current);
    EXPECT_GE(new_slot, 0);
    EXPECT_NE(new_slot, old_slot) << "the key moved to another keyslot";
    EXPECT_EQ(ActiveKeyslots(device), 1);
  }

  // Nothing was changed on `device`.
  void ExpectUntouched(const std::string& device) {
    EXPECT_TRUE(Opens(device, kOldKey));
    EXPECT_EQ(ActiveKeyslots(device), 1);
    EXPECT_EQ(Stored().current, kOldKey);
  }

  TempDir tmp_;
  std::string image_;
  std::string csi_;  // <kubelet>/plugins/kubernetes.io/csi
  std::unique_ptr<LocalKeyStore> store_;
  CallbackHooks hooks_;
  RotatorOptions options_;
  int mounts_ = 0;
};

TEST(KeyRotKubelet, VolumeHandleHashIsKubeletsDirectoryName) {
  // sha256sum of the handle's bytes, lower-case hex: kubelet's fmt.Sprintf("%x", sha256.Sum256).
  EXPECT_EQ(VolumeHandleHash("pvc-0f3c"),
            "df06272d3f710ae8b23095c3bded470e6d2fb37fb41b28d4d80139d524cfb1d2");
  EXPECT_EQ(VolumeHandleHash(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(KeyRotKubelet, ParseVolumeDataTakesKubeletsFilesAndNothingElse) {
  // Every key kubelet writes (csi_mounter.go volDataKey); those not needed are ignored.
  auto full = ParseVolumeData(
      R"({"specVolID":"pv-1","volumeHandle":"vol-1","driverName":"d.example.com",)"
      R"("nodeName":"n1","attachmentID":"csi-1","volumeLifecycleMode":"Persistent",)"
      R"("seLinuxMountContext":"system_u:object_r:container_file_t:s0"})");
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->volume_handle, "vol-1");
  EXPECT_EQ(full->driver_name, "d.example.com");

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"", "not JSON"},
      {"{\"volumeHandle\":\"v\",", "not JSON"},
      {"\x01\xff\xfe", "not JSON"},
      {"[\"volumeHandle\",\"v\"]", "not a JSON object"},
      {"\"v\"", "not a JSON object"},
      {R"({"driverName":"d"})", "no \"volumeHandle\""},
      {R"({"volumeHandle":"v"})", "no \"driverName\""},
      {R"({"volumeHandle":7,"driverName":"d"})", "\"volumeHandle\" is number, not a string"},
      {R"({"volumeHandle":"v","driverName":null})", "\"driverName\" is null, not a string"},
      {R"({"volumeHandle":{"a":"v"},"driverName":"d"})", "\"volumeHandle\" is object"},
      {std::string(100000, '[') + std::string(100000, ']'), "nests deeper than 64 levels"},
  };
  for (const auto& [text, why] : refused) {
    SCOPED_TRACE(text.substr(0, 40));
    auto r = ParseVolumeData(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().ToString();
  }
}

// Kubernetes >= 1.24: the hashed directory of the driver, its vol_data.json naming the volume,
// the LUKS2 image (as a filesystem volume's device) mounted on its globalmount.
TEST_F(KeyRotKubeletLayout, SidecarRequestRotatesAFilesystemVolumeInTheHashedStagingDir) {
  const std::string dir = StageHashed(kVolumeId, FilesystemVolumeData(kVolumeId, kDriver), image_);
  auto staged = FindStagedVolume(kVolumeId, AccessType::kUnspecified, options_.resolve);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_EQ(staged->device, image_);
  EXPECT_EQ(staged->staging_path, dir + "/globalmount");
  EXPECT_EQ(staged->volume_data, dir + "/vol_data.json");

  const int old_slot = SlotOf(image_, kOldKey);
  const Status s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(image_, old_slot);
  EXPECT_EQ(Stored().luks_uuid, PeekLuksUuid(image_).value_or("?"));

  // Again: kubelet's layout still leads to it, and a second key replaces the first.
  const std::string first = Stored().current;
  ASSERT_TRUE(RotateLikeTheSidecar().ok());
  EXPECT_NE(Stored().current, first);
  EXPECT_TRUE(Opens(image_, Stored().current));
  EXPECT_FALSE(Opens(image_, first));
}

// The same on a real block device: a LUKS2 loop device mounted (in the test's mount table) on
// the globalmount; the rotation's new key opens the device.
TEST_F(KeyRotKubeletLayout, SidecarRequestRotatesALoopDeviceStagedAsAFilesystemVolume) {
  ScopedLoopDevice loop(image_);
  if (loop.device().empty()) GTEST_SKIP() << "no loop device: " << loop.error();
  options_.resolve.sys_block_dir = "/sys/block";
  options_.resolve.dev_dir = "/dev";
  StageHashed(kVolumeId, FilesystemVolumeData(kVolumeId, kDriver), loop.device());
  const int old_slot = SlotOf(loop.device(), kOldKey);
  const Status s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(loop.device(), old_slot);
}

// Kubernetes <= 1.23: pv/<PV name>/globalmount, found by its vol_data.json among other PVs'.
TEST_F(KeyRotKubeletLayout, SidecarRequestRotatesAVolumeInThePre124StagingDir) {
  const std::string other = tmp_.path() + "/other.img";
  MakeLuksImage(other, kOldKey);
  StageLegacy("pvc-other-driver", FilesystemVolumeData(kVolumeId, "other.csi.example.com"), other);
  StageLegacy("pvc-other-volume", FilesystemVolumeData("another-volume", kDriver), other);
  StageLegacy("pvc-unstaged", "", "");  // an empty vol_data.json: unusable, skipped
  const std::string dir = StageLegacy(kPvName, FilesystemVolumeData(kVolumeId, kDriver), image_);
  auto staged = FindStagedVolume(kVolumeId, AccessType::kUnspecified, options_.resolve);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_EQ(staged->staging_path, dir + "/globalmount");

  const int old_slot = SlotOf(image_, kOldKey);
  const Status s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(image_, old_slot);
  EXPECT_TRUE(Opens(other, kOldKey)) << "another driver's or volume's device was changed";
  EXPECT_EQ(ActiveKeyslots(other), 1);
}

// A block volume: its vol_data.json in volumeDevices/<PV>/data/, the LUKS2 loop device bound
// where the driver binds it for a pod (publish/<PV>/<pod UID>: here a device node made for it).
// The device found is the node's own name for it.
TEST_F(KeyRotKubeletLayout, SidecarRequestRotatesABlockVolumeBoundAtItsPublishPath) {
  ScopedLoopDevice loop(image_);
  if (loop.device().empty()) GTEST_SKIP() << "no loop device: " << loop.error();
  options_.resolve.sys_block_dir = "/sys/block";
  options_.resolve.dev_dir = "/dev";
  StageBlock(kPvName, BlockVolumeData(kVolumeId, kDriver));
  struct stat st {};
  ASSERT_EQ(::stat(loop.device().c_str(), &st), 0);
  const std::string publish =
      csi_ + "/volumeDevices/publish/" + kPvName + "/7f2b9d1e-3c4a-4b5d-8e6f-0a1b2c3d4e5f";
  ASSERT_EQ(::mknod(publish.c_str(), S_IFBLK | 0600, st.st_rdev), 0) << std::strerror(errno);
  // A second pod's publish path that nothing is bound on yet: a placeholder, not a device.
  WriteText(csi_ + "/volumeDevices/publish/" + kPvName + "/0c1d2e3f-pending", "");

  EXPECT_EQ(KernelDeviceNode(publish, options_.resolve), loop.device());
  auto staged = FindStagedVolume(kVolumeId, AccessType::kUnspecified, options_.resolve);
  ASSERT_TRUE(staged.ok()) << staged.status().ToString();
  EXPECT_EQ(staged->device, loop.device());
  EXPECT_EQ(staged->staging_path, publish);

  const int old_slot = SlotOf(loop.device(), kOldKey);
  const Status s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(loop.device(), old_slot);
}

// A block volume whose device is a LUKS2 image file the driver put in the staging directory.
TEST_F(KeyRotKubeletLayout, SidecarRequestRotatesABlockVolumeInItsStagingDir) {
  StageBlock(kPvName, BlockVolumeData(kVolumeId, kDriver));
  const std::string staged_image = csi_ + "/volumeDevices/staging/" + kPvName + "/" + kVolumeId;
  ASSERT_EQ(::rename(image_.c_str(), staged_image.c_str()), 0);
  const int old_slot = SlotOf(staged_image, kOldKey);
  const Status s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(staged_image, old_slot);
}

// kubelet's block staging directory holds no device (the driver bound it nowhere kubelet lays
// out): the device the key store recorded for the volume is used; without one, NOT_FOUND says
// where no device was bound.
TEST_F(KeyRotKubeletLayout, BlockVolumeWithoutABoundDeviceFallsBackToTheRecordedDevice) {
  StageBlock(kPvName, BlockVolumeData(kVolumeId, kDriver));
  Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("no block device is bound in"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find(csi_ + "/volumeDevices/staging/" + kPvName), std::string::npos)
      << s.ToString();
  ExpectUntouched(image_);

  ASSERT_TRUE(store_->Put({kVolumeId, image_, kOldKey, "", ""}).ok());
  const int old_slot = SlotOf(image_, kOldKey);
  s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(image_, old_slot);
}

// Where kubelet staged the volume wins over a device the record names (a path recorded before
// the volume moved); the record follows.
TEST_F(KeyRotKubeletLayout, KubeletsLayoutWinsOverAStaleRecordedDevice) {
  const std::string stale = tmp_.path() + "/stale.img";
  MakeLuksImage(stale, kOldKey);
  ASSERT_TRUE(store_->Put({kVolumeId, stale, kOldKey, "", ""}).ok());
  StageHashed(kVolumeId, FilesystemVolumeData(kVolumeId, kDriver), image_);
  const int old_slot = SlotOf(image_, kOldKey);
  ASSERT_TRUE(RotateLikeTheSidecar().ok());
  ExpectRotated(image_, old_slot);
  EXPECT_TRUE(Opens(stale, kOldKey));
}

// Nothing staged for the volume: NOT_FOUND naming the volume_id and every place looked at.
TEST_F(KeyRotKubeletLayout, NothingStagedIsNotFoundNamingThePathsTried) {
  const Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  const std::string& m = s.message();
  EXPECT_NE(m.find(std::string("volume \"") + kVolumeId + "\""), std::string::npos) << m;
  EXPECT_NE(m.find(csi_ + "/" + kDriver + "/" + VolumeHandleHash(kVolumeId) + "/vol_data.json"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(csi_ + "/pv/*/vol_data.json"), std::string::npos) << m;
  EXPECT_NE(m.find(csi_ + "/volumeDevices/*/data/vol_data.json"), std::string::npos) << m;
  EXPECT_NE(m.find("no volume_path was given and no key store record names its device"),
            std::string::npos)
      << m;
  ExpectUntouched(image_);

  // No driver name: nothing is searched, and the message says why.
  options_.resolve.driver_name.clear();
  auto r = FindStagedVolume(kVolumeId, AccessType::kUnspecified, options_.resolve);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find("no usable CSI driver name"), std::string::npos)
      << r.status().ToString();
}

// A vol_data.json that names another volume (or another driver) is never taken, whatever is
// mounted beside it, even in the directory that hashes to this volume's id.
TEST_F(KeyRotKubeletLayout, AVolumeDataNamingAnotherVolumeIsNotTaken) {
  const std::string dir =
      StageHashed(kVolumeId, FilesystemVolumeData("pvc-someone-else", kDriver), image_);
  StageLegacy("pvc-a", FilesystemVolumeData(kVolumeId, "other.csi.example.com"), image_);
  StageBlock(kPvName, BlockVolumeData(kVolumeId + std::string("-not"), kDriver));
  WriteText(csi_ + "/volumeDevices/staging/" + kPvName + "/dev", "");
  const Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find(dir + "/vol_data.json\": names volumeHandle \"pvc-someone-else\""),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("1 read, 0 naming it"), std::string::npos) << s.ToString();
  ExpectUntouched(image_);
  for (AccessType access : {AccessType::kMount, AccessType::kBlock}) {
    EXPECT_EQ(FindStagedVolume(kVolumeId, access, options_.resolve).status().code(),
              Code::kNotFound);
  }
}

// What the volume's own (hashed) vol_data.json may not be: each is refused with INVALID_ARGUMENT
// naming the file and the problem, without hanging or crashing, and the volume is left alone.
TEST_F(KeyRotKubeletLayout, UnusableVolumeDataIsInvalidArgumentNamingIt) {
  const std::string dir = StageHashed(kVolumeId, "", image_);
  const std::string data = dir + "/vol_data.json";
  const std::string good = FilesystemVolumeData(kVolumeId, kDriver);
  struct Case {
    std::string what;
    std::function<void()> make;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"garbage",
       [&] {
         WriteText(data,
                   "\x7f"
                   "ELF\x02\x01\x01 not json at all");
       },
       "not JSON"},
      {"oversized", [&] { WriteText(data, good + std::string(kMaxVolumeDataBytes, ' ')); },
       "more than the 16384 a vol_data.json may have"},
      {"nested", [&] { WriteText(data, std::string(5000, '[') + std::string(5000, ']')); },
       "nests deeper than 64 levels"},
      {"wrong type", [&] { WriteText(data, R"({"volumeHandle":["x"],"driverName":"d"})"); },
       "\"volumeHandle\" is array, not a string"},
      {"symlink",
       [&] {
         WriteText(tmp_.path() + "/elsewhere.json", good);
         ASSERT_EQ(::symlink((tmp_.path() + "/elsewhere.json").c_str(), data.c_str()), 0);
       },
       "a symbolic link"},
      {"fifo", [&] { ASSERT_EQ(::mkfifo(data.c_str(), 0600), 0); }, "not a regular file"},
      {"directory", [&] { ASSERT_EQ(::mkdir(data.c_str(), 0700), 0); }, "not a regular file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ::unlink(data.c_str());
    ::rmdir(data.c_str());
    c.make();
    const Status s = RotateLikeTheSidecar();
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find("\"" + data + "\""), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find(kVolumeId), std::string::npos) << s.ToString();
    ExpectUntouched(image_);
  }
  // The same file, as kubelet writes it: taken.
  ::unlink(data.c_str());
  ::rmdir(data.c_str());
  WriteText(data, good);
  ASSERT_TRUE(RotateLikeTheSidecar().ok());
  EXPECT_FALSE(Opens(image_, kOldKey));
}

// Another PV's unusable vol_data.json does not stop the search: it is skipped, and counted in
// the answer when nothing names the volume.
TEST_F(KeyRotKubeletLayout, AnotherVolumesUnusableVolumeDataIsSkipped) {
  StageLegacy("pvc-broken", std::string(kMaxVolumeDataBytes + 1, '{'), "");
  ASSERT_TRUE(MakeDirs(csi_ + "/volumeDevices/pvc-garbage/data", 0750).ok());
  WriteText(csi_ + "/volumeDevices/pvc-garbage/data/vol_data.json", "\xff\xfe\x00garbage");
  Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("1 unusable skipped"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("pvc-broken/vol_data.json\": " +
                             std::to_string(kMaxVolumeDataBytes + 1) + " bytes"),
            std::string::npos)
      << s.ToString();
  EXPECT_NE(s.message().find("pvc-garbage/data/vol_data.json\": not JSON"), std::string::npos)
      << s.ToString();

  StageLegacy(kPvName, FilesystemVolumeData(kVolumeId, kDriver), image_);
  const int old_slot = SlotOf(image_, kOldKey);
  s = RotateLikeTheSidecar();
  ASSERT_TRUE(s.ok()) << s.ToString();
  ExpectRotated(image_, old_slot);
}

// A directory with more entries than any node stages is read only up to kMaxDirEntries, and
// the answer says so.
TEST_F(KeyRotKubeletLayout, DirectoryEntriesAreBounded) {
  ASSERT_TRUE(MakeDirs(csi_ + "/pv", 0750).ok());
  for (size_t i = 0; i <= kMaxDirEntries; ++i) {
    ASSERT_EQ(::mkdir((csi_ + "/pv/pv-" + std::to_string(i)).c_str(), 0750), 0);
  }
  const Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("has more than 4096 entries and only 4096 were read"),
            std::string::npos)
      << s.ToString();
}

// Two places name the volume: on one device they are one answer; on two, nothing is guessed.
TEST_F(KeyRotKubeletLayout, SeveralPlacesNamingTheVolumeMustAgree) {
  StageLegacy("pv-a", FilesystemVolumeData(kVolumeId, kDriver), image_);
  StageLegacy("pv-b", FilesystemVolumeData(kVolumeId, kDriver), image_);
  auto one = FindStagedVolume(kVolumeId, AccessType::kMount, options_.resolve);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->device, image_);

  const std::string other = tmp_.path() + "/other.img";
  MakeLuksImage(other, kOldKey);
  StageLegacy("pv-c", FilesystemVolumeData(kVolumeId, kDriver), other);
  const Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("refusing to guess"), std::string::npos) << s.ToString();
  ExpectUntouched(image_);
  EXPECT_TRUE(Opens(other, kOldKey));
}

// A vol_data.json naming the volume with nothing mounted on its globalmount (kubelet crashed
// between writing it and mounting): NOT_FOUND saying so.
TEST_F(KeyRotKubeletLayout, NamedButNotMountedIsNotFound) {
  const std::string dir = StageHashed(kVolumeId, FilesystemVolumeData(kVolumeId, kDriver), "");
  const Status s = RotateLikeTheSidecar();
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_NE(s.message().find("nothing is mounted on \"" + dir + "/globalmount\""),
            std::string::npos)
      << s.ToString();
  ExpectUntouched(image_);
}

// A request that names a path keeps to it; the capability's access type, when the caller sets
// one, narrows kubelet's layout to that kind of staging.
TEST_F(KeyRotKubeletLayout, AccessTypeNarrowsTheSearch) {
  StageBlock(kPvName, BlockVolumeData(kVolumeId, kDriver));
  const std::string staged_image = csi_ + "/volumeDevices/staging/" + kPvName + "/" + kVolumeId;
  ASSERT_EQ(::rename(image_.c_str(), staged_image.c_str()), 0);
  EXPECT_EQ(FindStagedVolume(kVolumeId, AccessType::kMount, options_.resolve).status().code(),
            Code::kNotFound);
  auto block = FindStagedVolume(kVolumeId, AccessType::kBlock, options_.resolve);
  ASSERT_TRUE(block.ok()) << block.status().ToString();
  EXPECT_EQ(block->device, staged_image);
}

}  // namespace
}  // namespace mizarmp::keyrotation
