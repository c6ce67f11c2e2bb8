// SPDX-License-Identifier: Apache-2.0
// Copyright The mizarmp Authors
// keyrotation/: key store, volume resolution and the rotation sequence on real LUKS2 headers
// (image files formatted through libcryptsetup with cheap PBKDF2).
#include <libcryptsetup.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "addons/secrets.h"
#include "common/fileutil.h"
#include "keyrotation/keystore.h"
#include "keyrotation/locate.h"
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
using testing::KeyslotPbkdf;
using testing::MakeImageFile;
using testing::MakeLuksImage;
using testing::Opens;
using testing::ScopedLoopDevice;

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// The UUID of the LUKS2 header of `path`; empty when it cannot be opened.
std::string UuidOf(const std::string& path) {
  auto luks = LuksDevice::Open(path);
  EXPECT_TRUE(luks.ok()) << luks.status().ToString();
  return luks.ok() ? luks->Uuid() : std::string();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// A temp dir with a key store and a LUKS2 image whose key is in the store.
class KeyRotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = tmp_.path() + "/vol.img";
    MakeLuksImage(image_, kOldKey);
    auto store = LocalKeyStore::Open(tmp_.path() + "/keys");
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(*store);
    ASSERT_TRUE(store_->Put({"vol-1", image_, kOldKey, "", ""}).ok());
    options_.pbkdf = PbkdfOptions::CheapForTests();
    options_.hooks = &hooks_;
    options_.resolve.mount_table = tmp_.path() + "/mountinfo";
    options_.resolve.sys_block_dir = tmp_.path() + "/sys/block";
    options_.resolve.dev_dir = tmp_.path() + "/dev";
  }

  VolumeKeys Stored(const std::string& id = "vol-1") {
    auto k = store_->Get(id);
    EXPECT_TRUE(k.ok()) << k.status().ToString();
    return k.ok() ? *k : VolumeKeys{};
  }

  // Rotates vol-1 (on image_) to `new_key` in a child process killed right after `crash_after`,
  // as the server's crash hook does: what a power cut at that point leaves on disk.
  void RotateAndCrashAfter(Step crash_after, const std::string& new_key) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      CallbackHooks hooks;
      hooks.after_step = [crash_after](Step step, const std::string&) {
        if (step == crash_after) ::raise(SIGKILL);
      };
      RotatorOptions options = options_;
      options.hooks = &hooks;
      Rotator rotator(*store_, options);
      (void)rotator.Rotate({"vol-1", image_, new_key, AccessType::kBlock});
      ::_exit(0);  // the step was never reached
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "the rotation did not reach " << StepName(crash_after);
  }

  static constexpr const char* kOldKey = "old-passphrase-4711";
  TempDir tmp_;
  std::string image_;
  std::unique_ptr<LocalKeyStore> store_;
  CallbackHooks hooks_;
  RotatorOptions options_;
};

TEST(KeyRotKeyStore, DirectoryAndFilesArePrivateAndRoundTrip) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/a/keys";
  auto store = LocalKeyStore::Open(dir);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(ModeOf(dir), 0700u);
  const std::string binary_key("\x00\x01\xfe\xff key", 8);
  VolumeKeys k{"pvc/odd id%1", "/dev/sdz", binary_key,
               "pending-key",  "",         "9b2c6d0e-4f1a-4c3b-8e5d-7a6f1b2c3d4e"};
  ASSERT_TRUE((*store)->Put(k).ok());
  EXPECT_EQ(ModeOf((*store)->PathFor(k.volume_id)), 0600u);
  auto back = (*store)->Get(k.volume_id);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, k);
  auto ids = (*store)->List();
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(*ids, std::vector<std::string>{k.volume_id});
  // The file name stays inside the directory whatever the id holds.
  EXPECT_EQ(DirName((*store)->PathFor("../../etc/x")), dir);
  ASSERT_TRUE((*store)->Remove(k.volume_id).ok());
  EXPECT_EQ((*store)->Get(k.volume_id).status().code(), Code::kNotFound);
  EXPECT_TRUE((*store)->Remove(k.volume_id).ok());
}

TEST(KeyRotKeyStore, TightensAnExistingDirectory) {
  TempDir tmp;
  const std::string dir = tmp.path() + "/keys";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
  ASSERT_TRUE(LocalKeyStore::Open(dir).ok());
  EXPECT_EQ(ModeOf(dir), 0700u);
}

TEST(KeyRotKeyStore, CorruptRecordIsDataLoss) {
  TempDir tmp;
  auto store = LocalKeyStore::Open(tmp.path());
  ASSERT_TRUE(store.ok());
  WriteText((*store)->PathFor("v"), "{not json");
  EXPECT_EQ((*store)->Get("v").status().code(), Code::kDataLoss);
  // Nested far too deep to parse safely: refused before a tree is built, not a crash.
  WriteText((*store)->PathFor("v"), std::string(100000, '[') + std::string(100000, ']'));
  const Status deep = (*store)->Get("v").status();
  EXPECT_EQ(deep.code(), Code::kDataLoss) << deep.ToString();
  EXPECT_NE(deep.message().find("nests deeper than 64 levels"), std::string::npos)
      << deep.ToString();
}

TEST_F(KeyRotTest, RotationToASuppliedKey) {
  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-1", image_, "new-passphrase-0815", AccessType::kBlock});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Opens(image_, "new-passphrase-0815"));
  EXPECT_FALSE(Opens(image_, kOldKey));
  EXPECT_EQ(ActiveKeyslots(image_), 1);
  const VolumeKeys k = Stored();
  EXPECT_EQ(k.current, "new-passphrase-0815");
  EXPECT_TRUE(k.pending.empty());
  EXPECT_TRUE(k.previous.empty());
}

TEST_F(KeyRotTest, GeneratedKeyIs32RandomBytesAndOpensTheHeader) {
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.Rotate({"vol-1", image_, "", AccessType::kUnspecified}).ok());
  const std::string first = Stored().current;
  EXPECT_EQ(first.size(), 32u);
  EXPECT_TRUE(Opens(image_, first));
  EXPECT_FALSE(Opens(image_, kOldKey));
  // Again, with the path taken from the key store: a different key.
  ASSERT_TRUE(rotator.Rotate({"vol-1", "", "", AccessType::kUnspecified}).ok());
  const std::string second = Stored().current;
  EXPECT_NE(second, first);
  EXPECT_TRUE(Opens(image_, second));
  EXPECT_FALSE(Opens(image_, first));
  EXPECT_EQ(ActiveKeyslots(image_), 1);
}

TEST_F(KeyRotTest, FilesystemVolumeThroughTheMountTable) {
  const std::string mnt = tmp_.path() + "/mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  // mountinfo format, with an earlier mount on the same point shadowed by a later one.
  WriteText(options_.resolve.mount_table,
            "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
            "40 22 7:0 / " +
                mnt +
                " rw shared:2 - ext4 /dev/not-this-one rw\n"
                "41 40 253:3 / " +
                mnt + " rw,relatime shared:3 - ext4 " + image_ + " rw\n");
  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-1", mnt, "fs-key-1", AccessType::kMount});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Opens(image_, "fs-key-1"));
  EXPECT_FALSE(Opens(image_, kOldKey));
}

TEST_F(KeyRotTest, FilesystemVolumeThroughProcMountsFormatAndDeviceMapperSlaves) {
  const std::string mnt = tmp_.path() + "/mnt point";  // escaped as \040 in the table
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  // /dev/dm-7 -> (slaves) -> loop9, which in the test's dev dir is the image.
  ASSERT_TRUE(MakeDirs(options_.resolve.sys_block_dir + "/dm-7/slaves").ok());
  WriteText(options_.resolve.sys_block_dir + "/dm-7/slaves/loop9", "");
  ASSERT_TRUE(MakeDirs(options_.resolve.dev_dir).ok());
  ASSERT_EQ(::symlink(image_.c_str(), (options_.resolve.dev_dir + "/loop9").c_str()), 0);
  WriteText(options_.resolve.mount_table,
            "/dev/dm-7 " + tmp_.path() + "/mnt\\040point ext4 rw,relatime 0 0\n");
  auto dev = ResolveLuksDevice(mnt, AccessType::kUnspecified, options_.resolve);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, options_.resolve.dev_dir + "/loop9");
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.Rotate({"vol-1", mnt, "fs-key-2", AccessType::kUnspecified}).ok());
  EXPECT_TRUE(Opens(image_, "fs-key-2"));
  EXPECT_FALSE(Opens(image_, kOldKey));
}

// A fake device-mapper device in the test's /sys and /dev: /sys/block/<name>/dm/uuid holds
// `dm_uuid`, /sys/block/<name>/slaves lists `slaves`, and <dev>/<name> is an image of zeros
// unless the test puts something else there.
void FakeDmDevice(const ResolveOptions& o, const std::string& name, const std::string& dm_uuid,
                  const std::vector<std::string>& slaves) {
  const std::string sys = o.sys_block_dir + "/" + name;
  ASSERT_TRUE(MakeDirs(sys + "/dm").ok());
  ASSERT_TRUE(MakeDirs(sys + "/slaves").ok());
  WriteText(sys + "/dm/uuid", dm_uuid + "\n");
  for (const std::string& slave : slaves) WriteText(sys + "/slaves/" + slave, "");
  ASSERT_TRUE(MakeDirs(o.dev_dir + "/mapper").ok());
  if (::access((o.dev_dir + "/" + name).c_str(), F_OK) != 0) MakeImageFile(o.dev_dir + "/" + name);
}

// LUKS on LVM: the filesystem is on the crypt mapping (dm-5, mounted as /dev/mapper/luks-x),
// which sits on the logical volume dm-3 that holds the LUKS header, on the disk sda2. The walk
// stops under the crypt layer (dm-3), not at the bottom of the stack (sda2, the LVM PV).
TEST_F(KeyRotTest, LuksOnLvmResolvesToTheLogicalVolume) {
  const ResolveOptions& o = options_.resolve;
  ASSERT_TRUE(MakeDirs(o.dev_dir).ok());
  ASSERT_EQ(::rename(image_.c_str(), (o.dev_dir + "/dm-3").c_str()), 0);
  FakeDmDevice(o, "dm-5", "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-luks-x", {"dm-3"});
  FakeDmDevice(o, "dm-3", "LVM-Z1f2e3d4c5b6a7980", {"sda2"});
  MakeImageFile(o.dev_dir + "/sda2");
  ASSERT_EQ(::symlink("../dm-5", (o.dev_dir + "/mapper/luks-x").c_str()), 0);
  const std::string mnt = tmp_.path() + "/mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  WriteText(o.mount_table, o.dev_dir + "/mapper/luks-x " + mnt + " ext4 rw 0 0\n");
  auto dev = ResolveLuksDevice(mnt, AccessType::kMount, o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, o.dev_dir + "/dm-3");
  // A LUKS header on an LV, handed over as the LV itself: that device, not its PV.
  auto itself = DeviceUnderMapper(o.dev_dir + "/dm-3", o);
  ASSERT_TRUE(itself.ok()) << itself.status().ToString();
  EXPECT_EQ(*itself, o.dev_dir + "/dm-3");
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.Rotate({"vol-1", mnt, "lvm-key", AccessType::kMount}).ok());
  EXPECT_TRUE(Opens(o.dev_dir + "/dm-3", "lvm-key"));
  EXPECT_EQ(Stored().device, o.dev_dir + "/dm-3");
}

// LVM on LUKS: the filesystem is on the logical volume dm-6 (/dev/mapper/vg-lv), on the crypt
// mapping dm-5, on the disk sda2 holding the LUKS header.
TEST_F(KeyRotTest, LvmOnLuksResolvesToTheDeviceUnderTheCryptLayer) {
  const ResolveOptions& o = options_.resolve;
  ASSERT_TRUE(MakeDirs(o.dev_dir).ok());
  ASSERT_EQ(::rename(image_.c_str(), (o.dev_dir + "/sda2").c_str()), 0);
  FakeDmDevice(o, "dm-6", "LVM-Z1f2e3d4c5b6a7980", {"dm-5"});
  FakeDmDevice(o, "dm-5", "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-luks-x", {"sda2"});
  ASSERT_EQ(::symlink("../dm-6", (o.dev_dir + "/mapper/vg-lv").c_str()), 0);
  const std::string mnt = tmp_.path() + "/mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  WriteText(o.mount_table, o.dev_dir + "/mapper/vg-lv " + mnt + " xfs rw 0 0\n");
  auto dev = ResolveLuksDevice(mnt, AccessType::kMount, o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, o.dev_dir + "/sda2");
}

// An LV spanning two PVs with no crypt layer above: which one holds a header is unknowable.
TEST_F(KeyRotTest, LogicalVolumeOnTwoDisksWithoutCryptLayerIsRefused) {
  const ResolveOptions& o = options_.resolve;
  FakeDmDevice(o, "dm-6", "LVM-Z1f2e3d4c5b6a7980", {"sda2", "sdb2"});
  auto dev = DeviceUnderMapper(o.dev_dir + "/dm-6", o);
  EXPECT_EQ(dev.status().code(), Code::kFailedPrecondition) << dev.status().ToString();
  EXPECT_NE(dev.status().message().find("spans 2 devices"), std::string::npos)
      << dev.status().ToString();
}

// A block volume's device node made or bound outside /dev (what a CSI driver puts at kubelet's
// publish path for a pod) is taken by the node's own name for it, found through /sys/dev/block,
// and only when /dev has a node with its device number; a node in /dev, or a file, stays as is.
TEST_F(KeyRotTest, BlockDeviceNodeOutsideDevResolvesByItsKernelName) {
  ScopedLoopDevice loop(image_);
  if (loop.device().empty()) GTEST_SKIP() << "no loop device: " << loop.error();
  struct stat st {};
  ASSERT_EQ(::stat(loop.device().c_str(), &st), 0);
  const std::string node = tmp_.path() + "/publish-pod-1";
  ASSERT_EQ(::mknod(node.c_str(), S_IFBLK | 0600, st.st_rdev), 0) << std::strerror(errno);
  ResolveOptions o = options_.resolve;
  o.dev_dir = "/dev";
  EXPECT_EQ(KernelDeviceNode(node, o), loop.device());
  EXPECT_EQ(KernelDeviceNode(loop.device(), o), loop.device());
  EXPECT_EQ(KernelDeviceNode(image_, o), image_);
  auto dev = ResolveLuksDevice(node, AccessType::kBlock, o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, loop.device());
  o.dev_dir = tmp_.path() + "/dev";  // no node with its number there
  EXPECT_EQ(KernelDeviceNode(node, o), node);
  o.dev_dir = "/dev";
  o.sys_dev_block_dir = tmp_.path() + "/no-sys";
  EXPECT_EQ(KernelDeviceNode(node, o), node);
}

// The same for a dm-crypt mapping bound outside /dev (the plaintext device a driver binds for a
// pod): followed down its /sys slaves to the device holding the LUKS header, which rotates.
// A fake /sys and /dev; the device nodes (a number no device has) are never opened.
TEST_F(KeyRotTest, DmCryptMappingBoundOutsideDevResolvesToTheDeviceUnderIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make device nodes";
  ResolveOptions& o = options_.resolve;
  o.sys_dev_block_dir = tmp_.path() + "/sys/dev/block";
  const dev_t number = makedev(253, 77);
  ASSERT_TRUE(MakeDirs(o.dev_dir).ok());
  ASSERT_EQ(::mknod((o.dev_dir + "/dm-77").c_str(), S_IFBLK | 0600, number), 0)
      << std::strerror(errno);
  FakeDmDevice(o, "dm-77", "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-pvc-1", {"sdq"});
  ASSERT_EQ(::symlink(image_.c_str(), (o.dev_dir + "/sdq").c_str()), 0);
  ASSERT_TRUE(MakeDirs(o.sys_dev_block_dir).ok());
  ASSERT_EQ(
      ::symlink("../../devices/virtual/block/dm-77", (o.sys_dev_block_dir + "/253:77").c_str()), 0);
  const std::string publish = tmp_.path() + "/publish-pod-2";
  ASSERT_EQ(::mknod(publish.c_str(), S_IFBLK | 0600, number), 0) << std::strerror(errno);
  auto dev = ResolveLuksDevice(publish, AccessType::kBlock, o);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, o.dev_dir + "/sdq");
  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-1", publish, "bound-key", AccessType::kBlock});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Opens(image_, "bound-key"));
  EXPECT_FALSE(Opens(image_, kOldKey));
}

// Whether the kernel offers device-mapper (dm-crypt mappings need it).
bool DeviceMapperAvailable() {
  auto misc = ReadFile("/proc/misc");
  return misc.ok() && misc->find("device-mapper") != std::string::npos;
}

// An active dm-crypt mapping of a LUKS2 image (libcryptsetup attaches a loop device for the
// image), deactivated on destruction whatever the test's outcome.
class ScopedCryptMapping {
 public:
  explicit ScopedCryptMapping(std::string name) : name_(std::move(name)) {}
  ScopedCryptMapping(const ScopedCryptMapping&) = delete;
  ScopedCryptMapping& operator=(const ScopedCryptMapping&) = delete;
  ~ScopedCryptMapping() {
    if (!active_) return;
    crypt_device* cd = nullptr;
    if (crypt_init_by_name(&cd, name_.c_str()) == 0) {
      const int rc = crypt_deactivate(cd, name_.c_str());
      EXPECT_EQ(rc, 0) << "crypt_deactivate(" << name_ << ")";
      crypt_free(cd);
    }
  }
  // 0 or a negative errno from libcryptsetup.
  int Activate(const std::string& image, const std::string& passphrase) {
    crypt_device* cd = nullptr;
    int rc = crypt_init(&cd, image.c_str());
    if (rc < 0) return rc;
    rc = crypt_load(cd, CRYPT_LUKS2, nullptr);
    if (rc == 0) {
      rc = crypt_activate_by_passphrase(cd, name_.c_str(), CRYPT_ANY_SLOT, passphrase.data(),
                                        passphrase.size(), 0);
    }
    crypt_free(cd);
    if (rc >= 0) {
      active_ = true;
      return 0;
    }
    return rc;
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  bool active_ = false;
};

// A filesystem volume on a real, active dm-crypt mapping: the mount table names
// /dev/mapper/NAME, and resolution goes through libcryptsetup (crypt_init_by_name) to the
// device holding the LUKS2 header. Needs root and a kernel with device-mapper; skipped
// (with the reason) elsewhere. Nothing is mounted: the mount table is the test's own file.
TEST_F(KeyRotTest, FilesystemVolumeOnARealDmCryptMapping) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to activate a dm-crypt mapping";
  ScopedCryptMapping mapping(mizarmp::testing::UniqueName("mzkr"));
  if (const int rc = mapping.Activate(image_, kOldKey); rc < 0) {
    if (!DeviceMapperAvailable()) {
      GTEST_SKIP() << "the kernel offers no device-mapper (/proc/misc), so no dm-crypt mapping";
    }
    FAIL() << "activating dm-crypt mapping " << mapping.name() << ": " << std::strerror(-rc);
  }
  const std::string mapper = "/dev/mapper/" + mapping.name();
  auto under = CryptMappingDevice(mapping.name());
  ASSERT_TRUE(under.ok()) << under.status().ToString();

  const std::string mnt = tmp_.path() + "/mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  WriteText(options_.resolve.mount_table, mapper + " " + mnt + " ext4 rw,relatime 0 0\n");
  options_.resolve.sys_block_dir = "/sys/block";
  options_.resolve.dev_dir = "/dev";
  auto dev = ResolveLuksDevice(mnt, AccessType::kMount, options_.resolve);
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(*dev, *under);

  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-1", mnt, "dm-key-1", AccessType::kMount});
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Opens(*under, "dm-key-1"));
  EXPECT_FALSE(Opens(*under, kOldKey));
  EXPECT_EQ(Stored().device, *under);
}

TEST_F(KeyRotTest, ResolutionErrors) {
  const std::string mnt = tmp_.path() + "/empty-mnt";
  ASSERT_EQ(::mkdir(mnt.c_str(), 0755), 0);
  WriteText(options_.resolve.mount_table, "/dev/sda1 / ext4 rw 0 0\n");
  Rotator rotator(*store_, options_);
  // Nothing mounted there.
  Status s = rotator.Rotate({"vol-1", mnt, "", AccessType::kMount});
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  // No such path.
  s = rotator.Rotate({"vol-1", tmp_.path() + "/nope", "", AccessType::kUnspecified});
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  // Unknown volume without a path.
  s = rotator.Rotate({"vol-unknown", "", "", AccessType::kUnspecified});
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  // Access type contradicting the path.
  s = rotator.Rotate({"vol-1", mnt, "", AccessType::kBlock});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  s = rotator.Rotate({"vol-1", image_, "", AccessType::kMount});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  // Missing volume_id.
  s = rotator.Rotate({"", image_, "", AccessType::kUnspecified});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find("volume_id"), std::string::npos);
  // A device-mapper device spanning two devices.
  ASSERT_TRUE(MakeDirs(options_.resolve.sys_block_dir + "/dm-2/slaves").ok());
  WriteText(options_.resolve.sys_block_dir + "/dm-2/slaves/sda", "");
  WriteText(options_.resolve.sys_block_dir + "/dm-2/slaves/sdb", "");
  WriteText(options_.resolve.mount_table, "/dev/dm-2 " + mnt + " xfs rw 0 0\n");
  s = rotator.Rotate({"vol-1", mnt, "", AccessType::kMount});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  // Nothing changed on the volume.
  EXPECT_TRUE(Opens(image_, kOldKey));
  EXPECT_EQ(Stored().current, kOldKey);
}

TEST_F(KeyRotTest, NotLuks2IsFailedPrecondition) {
  const std::string plain = tmp_.path() + "/plain.img";
  MakeImageFile(plain);
  Rotator rotator(*store_, options_);
  Status s = rotator.Rotate({"vol-plain", plain, "", AccessType::kBlock});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_NE(s.message().find("not a LUKS2 device"), std::string::npos) << s.message();
  // A directory given as a block volume's device through the mount table would be caught
  // earlier; a character device is not LUKS2 either.
  s = rotator.Rotate({"vol-null", "/dev/null", "", AccessType::kBlock});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
}

TEST_F(KeyRotTest, LuksVolumeWithoutAStoredKeyIsNotFound) {
  const std::string other = tmp_.path() + "/other.img";
  MakeLuksImage(other, "whatever");
  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-other", other, "", AccessType::kBlock});
  EXPECT_EQ(s.code(), Code::kNotFound) << s.ToString();
  EXPECT_TRUE(Opens(other, "whatever"));
}

TEST_F(KeyRotTest, StoredKeyThatDoesNotOpenIsFailedPrecondition) {
  ASSERT_TRUE(store_->Put({"vol-1", image_, "wrong-key", "", ""}).ok());
  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-1", "", "x", AccessType::kUnspecified});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition) << s.ToString();
  EXPECT_TRUE(Opens(image_, kOldKey));
  EXPECT_FALSE(Opens(image_, "x"));
}

TEST_F(KeyRotTest, RecoveryRollsBackAPendingKeyWithoutKeyslot) {
  ASSERT_TRUE(store_->Put({"vol-1", image_, kOldKey, "never-added", ""}).ok());
  Rotator rotator(*store_, options_);
  auto r = rotator.Recover("vol-1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, RecoveryOutcome::kRolledBack);
  EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", image_, kOldKey, "", ""}));
  EXPECT_TRUE(Opens(image_, kOldKey));
}

TEST_F(KeyRotTest, RecoveryCompletesAPendingKeyWithKeyslot) {
  {
    auto luks = LuksDevice::Open(image_);
    ASSERT_TRUE(luks.ok());
    ASSERT_TRUE(luks->AddKeyslot(kOldKey, "added-key", PbkdfOptions::CheapForTests()).ok());
  }
  ASSERT_TRUE(store_->Put({"vol-1", image_, kOldKey, "added-key", ""}).ok());
  Rotator rotator(*store_, options_);
  auto r = rotator.Recover("vol-1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, RecoveryOutcome::kCompleted);
  EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", image_, "added-key", "", ""}));
  EXPECT_TRUE(Opens(image_, "added-key"));
  EXPECT_FALSE(Opens(image_, kOldKey));
}

TEST_F(KeyRotTest, RecoveryRetiresAPreviousKey) {
  {
    auto luks = LuksDevice::Open(image_);
    ASSERT_TRUE(luks.ok());
    ASSERT_TRUE(luks->AddKeyslot(kOldKey, "promoted-key", PbkdfOptions::CheapForTests()).ok());
  }
  ASSERT_TRUE(store_->Put({"vol-1", image_, "promoted-key", "", kOldKey}).ok());
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.RecoverAll().ok());
  EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", image_, "promoted-key", "", ""}));
  EXPECT_FALSE(Opens(image_, kOldKey));
  EXPECT_EQ(ActiveKeyslots(image_), 1);
  // Nothing left to do the second time.
  auto r = rotator.Recover("vol-1");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, RecoveryOutcome::kNothingToDo);
}

TEST_F(KeyRotTest, RotationFinishesAnInterruptedOneFirst) {
  ASSERT_TRUE(store_->Put({"vol-1", image_, kOldKey, "never-added", ""}).ok());
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.Rotate({"vol-1", "", "after-recovery", AccessType::kUnspecified}).ok());
  EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", image_, "after-recovery", "", "", UuidOf(image_)}));
  EXPECT_TRUE(Opens(image_, "after-recovery"));
  EXPECT_FALSE(Opens(image_, kOldKey));
}

// A reboot between the crash and the recovery renamed the device (/dev/sdb -> /dev/sdc), and
// another LUKS device, one the old key also opens, now has the recorded name. Recovery works
// on the header the rotation worked on (found by its UUID), never on the one that took its name,
// and the key store follows the rename. Before the UUID was recorded, the recovery after step 5
// "rolled back" on the impostor and left the store with a key the real volume no longer takes.
TEST_F(KeyRotTest, InterruptedRotationResumesOnTheRenamedDevice) {
  const std::string renamed = tmp_.path() + "/vol-renamed.img";
  for (Step crash_after : {Step::kPendingRecorded, Step::kKeyslotAdded, Step::kVerified,
                           Step::kPromoted, Step::kOldKeyslotDestroyed}) {
    SCOPED_TRACE(StepName(crash_after));
    MakeLuksImage(image_, kOldKey);
    const std::string uuid = UuidOf(image_);
    ASSERT_TRUE(store_->Put({"vol-1", image_, kOldKey, "", ""}).ok());
    RotateAndCrashAfter(crash_after, "rotated-key");
    EXPECT_EQ(Stored().luks_uuid, uuid) << "the UUID is stored with the pending key";

    ASSERT_EQ(::rename(image_.c_str(), renamed.c_str()), 0);
    MakeLuksImage(image_, kOldKey);  // the impostor under the recorded name
    const std::string impostor_uuid = UuidOf(image_);
    ASSERT_NE(impostor_uuid, uuid);

    Rotator rotator(*store_, options_);
    auto r = rotator.Recover("vol-1");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const bool rolled_back = crash_after == Step::kPendingRecorded;
    EXPECT_EQ(*r, rolled_back ? RecoveryOutcome::kRolledBack : RecoveryOutcome::kCompleted);
    const std::string key = rolled_back ? kOldKey : "rotated-key";
    EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", renamed, key, "", "", uuid}));
    EXPECT_TRUE(Opens(renamed, key));
    EXPECT_EQ(ActiveKeyslots(renamed), 1);
    // The impostor is untouched.
    EXPECT_EQ(UuidOf(image_), impostor_uuid);
    EXPECT_TRUE(Opens(image_, kOldKey));
    EXPECT_EQ(ActiveKeyslots(image_), 1);
    ASSERT_EQ(::unlink(renamed.c_str()), 0);
  }
}

// An image moved out of its directory is found through <dev>/disk/by-uuid/<uuid> (udev's
// link); without one, recovery says which UUID it could not find and changes nothing. A later
// rotation by volume id alone uses the device found.
TEST_F(KeyRotTest, InterruptedRotationFindsAMovedDeviceByUuid) {
  const std::string uuid = UuidOf(image_);
  RotateAndCrashAfter(Step::kPromoted, "rotated-key");
  const VolumeKeys crashed = Stored();
  const std::string moved = tmp_.path() + "/elsewhere/vol.img";
  ASSERT_TRUE(MakeDirs(DirName(moved), 0700).ok());
  ASSERT_EQ(::rename(image_.c_str(), moved.c_str()), 0);

  Rotator rotator(*store_, options_);
  auto missing = rotator.Recover("vol-1");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), Code::kNotFound) << missing.status().ToString();
  EXPECT_NE(missing.status().message().find(uuid), std::string::npos)
      << missing.status().ToString();
  EXPECT_EQ(Stored(), crashed);

  const std::string by_uuid = options_.resolve.dev_dir + "/disk/by-uuid/" + uuid;
  ASSERT_TRUE(MakeDirs(DirName(by_uuid), 0700).ok());
  ASSERT_EQ(::symlink(moved.c_str(), by_uuid.c_str()), 0);
  auto r = rotator.Recover("vol-1");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, RecoveryOutcome::kCompleted);
  EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", by_uuid, "rotated-key", "", "", uuid}));
  EXPECT_FALSE(Opens(moved, kOldKey));

  ASSERT_TRUE(rotator.Rotate({"vol-1", "", "third-key", AccessType::kUnspecified}).ok());
  EXPECT_TRUE(Opens(moved, "third-key"));
  EXPECT_EQ(ActiveKeyslots(moved), 1);
}

// Two devices with the interrupted rotation's UUID (a cloned image): recovery refuses to guess,
// names both, and touches neither.
TEST_F(KeyRotTest, RecoveryRefusesAmbiguousUuid) {
  RotateAndCrashAfter(Step::kPromoted, "rotated-key");
  const VolumeKeys crashed = Stored();
  const std::string a = tmp_.path() + "/a.img";
  const std::string b = tmp_.path() + "/b.img";
  ASSERT_EQ(::rename(image_.c_str(), a.c_str()), 0);
  auto bytes = ReadFile(a);
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteFileAtomic(b, *bytes, 0600).ok());

  Rotator rotator(*store_, options_);
  auto r = rotator.Recover("vol-1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find(a), std::string::npos) << r.status().ToString();
  EXPECT_NE(r.status().message().find(b), std::string::npos) << r.status().ToString();
  EXPECT_EQ(Stored(), crashed);
  EXPECT_TRUE(Opens(a, kOldKey));
  EXPECT_TRUE(Opens(b, kOldKey));
}

// The recorded path with another header is never used, even when no other device has the UUID.
TEST_F(KeyRotTest, OpenLuksByUuidNeverReturnsAnotherHeader) {
  const std::string uuid = UuidOf(image_);
  auto found = OpenLuksByUuid(uuid, image_, options_.resolve);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->path(), image_);
  MakeLuksImage(image_, kOldKey);  // a new header, a new UUID
  auto gone = OpenLuksByUuid(uuid, image_, options_.resolve);
  EXPECT_EQ(gone.status().code(), Code::kNotFound) << gone.status().ToString();
  EXPECT_EQ(PeekLuksUuid(image_), UuidOf(image_));
  EXPECT_EQ(PeekLuksUuid(tmp_.path() + "/keys"), std::nullopt);
}

TEST_F(KeyRotTest, EveryStepKeepsAStoredKeyThatOpens) {
  // Observe the store and the header after each step of a real rotation.
  std::vector<Step> seen;
  hooks_.after_step = [&](Step step, const std::string&) {
    seen.push_back(step);
    const VolumeKeys k = Stored();
    const bool some_opens = Opens(image_, k.current) ||
                            (!k.pending.empty() && Opens(image_, k.pending)) ||
                            (!k.previous.empty() && Opens(image_, k.previous));
    EXPECT_TRUE(some_opens) << "after step " << StepName(step);
    // The key that ends up current opens from the keyslot step on.
    if (step >= Step::kKeyslotAdded) {
      EXPECT_TRUE(Opens(image_, "stepwise")) << StepName(step);
    }
    EXPECT_EQ(Opens(image_, kOldKey), step < Step::kOldKeyslotDestroyed) << StepName(step);
  };
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.Rotate({"vol-1", image_, "stepwise", AccessType::kBlock}).ok());
  EXPECT_EQ(seen, std::vector<Step>(std::begin(kAllSteps), std::end(kAllSteps)));
}

TEST_F(KeyRotTest, ConcurrentRotationsOfOneVolume) {
  // Hold the first rotation open after its first step while the others arrive.
  std::mutex mu;
  std::condition_variable cv;
  bool holding = false, release = false;
  hooks_.after_step = [&](Step step, const std::string&) {
    if (step != Step::kPendingRecorded) return;
    std::unique_lock<std::mutex> lock(mu);
    holding = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
  };
  Rotator rotator(*store_, options_);
  Status first;
  std::thread t([&] { first = rotator.Rotate({"vol-1", image_, "winner", AccessType::kBlock}); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return holding; });
  }
  std::vector<std::thread> others;
  std::vector<Status> results(4);
  for (size_t i = 0; i < results.size(); ++i) {
    others.emplace_back([&, i] {
      results[i] =
          rotator.Rotate({"vol-1", image_, "loser" + std::to_string(i), AccessType::kBlock});
    });
  }
  for (auto& o : others) o.join();
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  t.join();
  EXPECT_TRUE(first.ok()) << first.ToString();
  for (const auto& r : results) EXPECT_EQ(r.code(), Code::kAborted) << r.ToString();
  EXPECT_TRUE(Opens(image_, "winner"));
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_FALSE(Opens(image_, "loser" + std::to_string(i)));
  }
  // The guard is released: the next rotation goes through.
  EXPECT_TRUE(rotator.Rotate({"vol-1", "", "next", AccessType::kUnspecified}).ok());
}

TEST(KeyRotSecrets, CheckSecrets) {
  using addons::CheckSecrets;
  google::protobuf::Map<std::string, std::string> got;
  EXPECT_TRUE(CheckSecrets(got, {}).ok());
  const std::map<std::string, std::string> want{{"token", "s3cret-value"}};
  Status s = CheckSecrets(got, want);
  EXPECT_EQ(s.code(), Code::kUnauthenticated);
  got["token"] = "wrong";
  s = CheckSecrets(got, want);
  EXPECT_EQ(s.code(), Code::kUnauthenticated);
  EXPECT_EQ(s.message().find("s3cret-value"), std::string::npos);
  EXPECT_EQ(s.message().find("wrong"), std::string::npos);
  got["token"] = "s3cret-value";
  got["extra"] = "ignored";
  EXPECT_TRUE(CheckSecrets(got, want).ok());
}

TEST_F(KeyRotTest, ServiceChecksVolumeIdThenSecrets) {
  Rotator rotator(*store_, options_);
  KeyRotationService service(rotator, {{"token", "t0k"}});
  encryptionkeyrotation::EncryptionKeyRotateRequest req;
  EXPECT_EQ(service.Rotate(req).code(), Code::kInvalidArgument);
  req.set_volume_id("vol-1");
  req.set_encryption_key("svc-key");
  EXPECT_EQ(service.Rotate(req).code(), Code::kUnauthenticated);
  EXPECT_TRUE(Opens(image_, kOldKey));
  (*req.mutable_secrets())["token"] = "t0k";
  req.mutable_volume_capability()->mutable_block();
  req.set_volume_path(image_);
  const Status s = service.Rotate(req);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Opens(image_, "svc-key"));
  EXPECT_FALSE(Opens(image_, kOldKey));
}

TEST(KeyRotSteps, NamesRoundTrip) {
  for (Step s : kAllSteps) {
    auto parsed = ParseStep(StepName(s));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, s);
    EXPECT_EQ(*ParseStep(std::to_string(static_cast<int>(s))), s);
  }
  EXPECT_EQ(ParseStep("bogus").status().code(), Code::kInvalidArgument);
}

TEST_F(KeyRotTest, FindKeyslotSaysWhetherAKeyOpensWithoutAnError) {
  auto luks = LuksDevice::Open(image_);
  ASSERT_TRUE(luks.ok()) << luks.status().ToString();
  auto slot = luks->FindKeyslot(kOldKey);
  ASSERT_TRUE(slot.ok()) << slot.status().ToString();
  ASSERT_TRUE(slot->has_value());
  EXPECT_GE(**slot, 0);
  EXPECT_TRUE(luks->Opens(kOldKey));
  // A key that opens nothing is an answer, not an error.
  auto none = luks->FindKeyslot("not-the-key");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(luks->Opens("not-the-key"));
  // A check that cannot be made is an error.
  EXPECT_EQ(luks->FindKeyslot("").status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(luks->Opens(""));
}

TEST_F(KeyRotTest, NewKeyslotsUseTheRotatorsPbkdfUnlessTheHooksReplaceIt) {
  options_.pbkdf = PbkdfOptions::CheapForTests(1000);
  Rotator rotator(*store_, options_);
  ASSERT_TRUE(rotator.Rotate({"vol-1", image_, "own-pbkdf", AccessType::kBlock}).ok());
  auto kdf = KeyslotPbkdf(image_, "own-pbkdf");
  ASSERT_TRUE(kdf.has_value());
  EXPECT_EQ(kdf->type, CRYPT_KDF_PBKDF2);
  EXPECT_EQ(kdf->iterations, 1000u);

  hooks_.pbkdf = PbkdfOptions::CheapForTests(2345);
  ASSERT_TRUE(rotator.Rotate({"vol-1", image_, "hooked-pbkdf", AccessType::kBlock}).ok());
  kdf = KeyslotPbkdf(image_, "hooked-pbkdf");
  ASSERT_TRUE(kdf.has_value());
  EXPECT_EQ(kdf->type, CRYPT_KDF_PBKDF2);
  EXPECT_EQ(kdf->iterations, 2345u);
}

TEST_F(KeyRotTest, StoredKeyThatDoesNotOpenSaysSo) {
  ASSERT_TRUE(store_->Put({"vol-1", image_, "wrong-key", "", ""}).ok());
  Rotator rotator(*store_, options_);
  const Status s = rotator.Rotate({"vol-1", "", "x", AccessType::kUnspecified});
  EXPECT_EQ(s.code(), Code::kFailedPrecondition);
  EXPECT_EQ(s.message(), "volume \"vol-1\": the stored key does not open the LUKS2 header of \"" +
                             image_ + "\"");
}

// Hooks that record every step and give new keyslots cheap PBKDF2, owned by NodeKeyRotation.
std::unique_ptr<RotationHooks> RecordingHooks(std::vector<Step>* seen) {
  auto hooks = std::make_unique<CallbackHooks>();
  hooks->after_step = [seen](Step step, const std::string&) { seen->push_back(step); };
  hooks->pbkdf = PbkdfOptions::CheapForTests();
  return hooks;
}

TEST_F(KeyRotTest, NodeKeyRotationIsTheEncryptionKeyRotationAddonsService) {
  KeyRotationOptions options;
  options.key_store_dir = tmp_.path() + "/keys";
  options.mount_table = options_.resolve.mount_table;
  auto node = NodeKeyRotation::Create(options, nullptr);
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  addons::AddonsService& service = **node;
  EXPECT_NE(service.grpc_service(), nullptr);
  EXPECT_EQ(service.health_name(), "encryptionkeyrotation.EncryptionKeyRotationController");
  const std::vector<identity::Capability> caps = service.capabilities();
  ASSERT_EQ(caps.size(), 1u);
  ASSERT_TRUE(caps[0].has_encryption_key_rotation());
  EXPECT_EQ(caps[0].encryption_key_rotation().type(),
            identity::Capability::EncryptionKeyRotation::ENCRYPTIONKEYROTATION);
  EXPECT_TRUE(service.readiness_checks().empty());
}

TEST_F(KeyRotTest, NodeKeyRotationRecoversAtCreationThroughItsHooks) {
  {
    auto luks = LuksDevice::Open(image_);
    ASSERT_TRUE(luks.ok());
    ASSERT_TRUE(luks->AddKeyslot(kOldKey, "added-key", PbkdfOptions::CheapForTests()).ok());
  }
  ASSERT_TRUE(store_->Put({"vol-1", image_, kOldKey, "added-key", ""}).ok());
  KeyRotationOptions options;
  options.key_store_dir = tmp_.path() + "/keys";
  std::vector<Step> seen;
  auto node = NodeKeyRotation::Create(options, RecordingHooks(&seen));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  EXPECT_EQ(Stored(), (VolumeKeys{"vol-1", image_, "added-key", "", ""}));
  EXPECT_FALSE(Opens(image_, kOldKey));
  EXPECT_EQ(seen,
            (std::vector<Step>{Step::kPromoted, Step::kOldKeyslotDestroyed, Step::kOldKeyDropped}));
}

TEST_F(KeyRotTest, NodeKeyRotationServesRotationsWithItsHooks) {
  KeyRotationOptions options;
  options.key_store_dir = tmp_.path() + "/keys";
  std::vector<Step> seen;
  auto node = NodeKeyRotation::Create(options, RecordingHooks(&seen));
  ASSERT_TRUE(node.ok()) << node.status().ToString();
  auto* service = static_cast<KeyRotationService*>((*node)->grpc_service());
  encryptionkeyrotation::EncryptionKeyRotateRequest req;
  req.set_volume_id("vol-1");
  req.set_encryption_key("node-key");
  encryptionkeyrotation::EncryptionKeyRotateResponse resp;
  const grpc::Status s = service->EncryptionKeyRotate(nullptr, &req, &resp);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(Opens(image_, "node-key"));
  EXPECT_FALSE(Opens(image_, kOldKey));
  EXPECT_EQ(seen, std::vector<Step>(std::begin(kAllSteps), std::end(kAllSteps)));
  auto kdf = KeyslotPbkdf(image_, "node-key");
  ASSERT_TRUE(kdf.has_value());
  EXPECT_EQ(kdf->type, CRYPT_KDF_PBKDF2);
  // Errors keep their code and message on the way out.
  req.clear_volume_id();
  const grpc::Status missing = service->EncryptionKeyRotate(nullptr, &req, &resp);
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(missing.error_message(), "volume_id: required");
}

}  // namespace
}  // namespace mizarmp::keyrotation
