// registry/model_registry.h: installs verified by SHA-256 (coreutils' sha256sum as the
// independent reference), atomic switching, and the failure cases that must leave the registry
// as it was: a wrong digest, a file that is not GGUF, a full disk (a 1 MiB tmpfs, when this
// process may mount one), a crash between the steps (simulated by leaving each step's files
// behind), and hostile manifests.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"
#include "registry/model_registry.h"
#include "support/small_disk.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

std::string sha256sum(const std::string& path) {
  std::FILE* p = popen(("sha256sum '" + path + "'").c_str(), "r");
  char buf[65] = {};
  const size_t n = p ? std::fread(buf, 1, 64, p) : 0;
  if (p) pclose(p);
  return std::string(buf, n);
}

std::string copy_of(const std::string& src, const std::string& dst) {
  std::ifstream in(src, std::ios::binary);
  std::ofstream out(dst, std::ios::binary);
  out << in.rdbuf();
  return dst;
}

ModelManifest named(const std::string& name, const std::string& version) {
  ModelManifest m;
  m.name = name;
  m.version = version;
  m.tier = "4GB";
  return m;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no error thrown";
  return ErrorCode::kInternal;
}

TEST(ModelRegistry, InstallVerifySwitchRemove) {
  const std::string root = test::temp_dir() + "/reg1";
  ModelRegistry reg(root);
  const std::string stories = test::shared_model("stories260K.gguf");
  const std::string zh = test::shared_model("tiny-zh-poems.gguf");
  const std::string want = sha256sum(stories);
  ASSERT_EQ(want, "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d");

  uint64_t last = 0;
  ModelRegistry::InstallOptions opt;
  opt.expected_sha256 = want;
  opt.progress = [&](uint64_t done, uint64_t) {
    last = done;
    return true;
  };
  const ModelManifest v1 = reg.install_file(stories, named("tiny", "1"), opt);
  EXPECT_EQ(v1.sha256, want);
  EXPECT_EQ(v1.weight_type, "f32");
  EXPECT_EQ(v1.size_bytes, static_cast<uint64_t>(file_size_or_minus_one(stories)));
  EXPECT_EQ(last, v1.size_bytes);
  EXPECT_EQ(sha256sum(reg.model_path(v1)), want);
  ASSERT_TRUE(reg.current("tiny"));
  EXPECT_EQ(reg.current("tiny")->version, "1");

  // A second version becomes current; the first stays installed.
  ModelRegistry::InstallOptions opt2;
  opt2.expected_sha256 = sha256sum(zh);
  const ModelManifest v2 = reg.install_file(zh, named("tiny", "2"), opt2);
  EXPECT_EQ(reg.current("tiny")->version, "2");
  EXPECT_EQ(reg.resolve("tiny@1")->sha256, want);
  EXPECT_EQ(reg.list().size(), 2u);
  EXPECT_TRUE(reg.verify(v1).ok);
  EXPECT_EQ(reg.path_for_load("tiny"), reg.model_path(v2));

  // The same version with other content is refused; with the same content it is a no-op.
  EXPECT_EQ(code_of([&] { reg.install_file(zh, named("tiny", "1"), {}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(reg.install_file(stories, named("tiny", "1"), {}).sha256, want);
  EXPECT_EQ(reg.current("tiny")->version, "1");  // make_current by default

  // Removing the current version points at the highest remaining one.
  reg.remove("tiny", "1");
  EXPECT_EQ(reg.current("tiny")->version, "2");
  EXPECT_FALSE(path_exists(reg.model_path(v1)));
  reg.remove("tiny", "2");
  EXPECT_FALSE(reg.current("tiny"));
  EXPECT_TRUE(reg.list().empty());
}

TEST(ModelRegistry, BadDigestOrFileLeavesOldServing) {
  const std::string root = test::temp_dir() + "/reg2";
  ModelRegistry reg(root);
  const std::string stories = test::shared_model("stories260K.gguf");
  reg.install_file(stories, named("m", "1"), {});

  ModelRegistry::InstallOptions bad;
  bad.expected_sha256 = std::string(64, 'a');
  EXPECT_EQ(code_of([&] { reg.install_file(test::shared_model("tiny-zh-poems.gguf"), named("m", "2"), bad); }),
            ErrorCode::kInvalidFile);
  EXPECT_EQ(reg.current("m")->version, "1");
  EXPECT_FALSE(reg.get("m", "2"));

  // Not a GGUF at all.
  const std::string junk = test::temp_dir() + "/junk.gguf";
  std::ofstream(junk) << "definitely not gguf";
  EXPECT_EQ(code_of([&] { reg.install_file(junk, named("m", "3"), {}); }), ErrorCode::kInvalidFile);
  // A truncated GGUF.
  const std::string trunc = test::temp_dir() + "/trunc.gguf";
  copy_of(stories, trunc);
  ASSERT_EQ(::truncate(trunc.c_str(), 5000), 0);
  EXPECT_EQ(code_of([&] { reg.install_file(trunc, named("m", "4"), {}); }), ErrorCode::kInvalidFile);
  // Cancelled mid-copy.
  ModelRegistry::InstallOptions cancel;
  cancel.progress = [](uint64_t, uint64_t) { return false; };
  EXPECT_EQ(code_of([&] { reg.install_file(stories, named("m", "5"), cancel); }), ErrorCode::kCancelled);

  EXPECT_EQ(reg.current("m")->version, "1");
  EXPECT_EQ(reg.list().size(), 1u);
  // Nothing left behind in tmp/.
  EXPECT_EQ(std::system(("test -z \"$(ls -A '" + reg.tmp_dir() + "')\"").c_str()), 0);
  // Bad names never touch the file system.
  EXPECT_EQ(code_of([&] { reg.install_file(stories, named("../evil", "1"), {}); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { reg.install_file(stories, named("ok", "a/b"), {}); }), ErrorCode::kInvalidArgument);
}

TEST(ModelRegistry, CorruptionAfterInstallIsCaughtBeforeLoad) {
  const std::string root = test::temp_dir() + "/reg3";
  ModelRegistry reg(root);
  const auto m = reg.install_file(test::shared_model("stories260K.gguf"), named("m", "1"), {});
  EXPECT_EQ(reg.path_for_load("m"), reg.model_path(m));
  // Flip one byte in the middle of the installed file (the stamp no longer matches: mtime).
  {
    std::fstream f(reg.model_path(m), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(m.size_bytes / 2));
    f.put('\x5a');
  }
  const auto v = reg.verify(m);
  EXPECT_FALSE(v.ok);
  EXPECT_NE(v.message.find("SHA-256"), std::string::npos) << v.message;
  EXPECT_EQ(code_of([&] { reg.path_for_load("m"); }), ErrorCode::kInvalidFile);
}

TEST(ModelRegistry, CrashBetweenStepsKeepsOldVersion) {
  const std::string root = test::temp_dir() + "/reg4";
  {
    ModelRegistry reg(root);
    reg.install_file(test::shared_model("stories260K.gguf"), named("m", "1"), {});
    // A crash after the new file was renamed into models/ but before its manifest and pointer
    // were written: leaves an orphan file. A crash after the manifest but before the pointer:
    // a manifest that is not current. Neither changes what loads.
    copy_of(test::shared_model("tiny-zh-poems.gguf"), root + "/models/m@2.gguf");
    copy_of(test::shared_model("tiny-zh-poems.gguf"), root + "/tmp/m@3.install.part");
    write_file_atomic(root + "/current/m.json.tmp", "{\"version\": \"2\"");  // torn temp file
  }
  ModelRegistry reopened(root);  // "after a restart"
  EXPECT_EQ(reopened.current("m")->version, "1");
  EXPECT_EQ(reopened.list().size(), 1u);
  EXPECT_NE(reopened.path_for_load("m").find("m@1.gguf"), std::string::npos);
}

TEST(ModelRegistry, HostileManifestsAreSkippedOrRefused) {
  const std::string root = test::temp_dir() + "/reg5";
  ModelRegistry reg(root);
  reg.install_file(test::shared_model("stories260K.gguf"), named("m", "1"), {});
  const std::string bad[] = {
      "{", "[]", "{\"name\": 5}", "{\"name\": \"x\", \"version\": \"1\", \"file\": \"../../etc/passwd\", "
      "\"size_bytes\": 1, \"sha256\": \"" + std::string(64, 'a') + "\"}",
      "{\"name\": \"x\", \"version\": \"1\", \"file\": \"x@1.gguf\", \"size_bytes\": -1, \"sha256\": \"" +
          std::string(64, 'a') + "\"}",
      "{\"name\": \"x\", \"version\": \"1\", \"file\": \"x@1.gguf\", \"size_bytes\": 1, \"sha256\": \"zz\"}"};
  int i = 0;
  for (const auto& text : bad) {
    std::ofstream(root + "/manifests/bad" + std::to_string(i++) + "@1.json") << text;
    EXPECT_EQ(code_of([&] { ModelManifest::from_json(Json::parse(text)); }), ErrorCode::kInvalidFile) << text;
  }
  EXPECT_EQ(reg.list().size(), 1u);  // only the good one
  std::ofstream(root + "/current/m.json") << "{\"version\": 7}";
  EXPECT_EQ(code_of([&] { reg.current("m"); }), ErrorCode::kInvalidFile);
}

// A full disk during the copy: a 1200 KiB tmpfs holds the registry and a 628 KB first version;
// the second version (tiny-zh-poems, several MB) cannot fit.
TEST(ModelRegistry, FullDiskLeavesEverythingAsItWas) {
  const std::string mnt = test::temp_dir() + "/small-disk";
  make_dirs(mnt);
  test::SmallDisk disk(mnt, "1200k");
  if (!disk.mounted()) {
    if (disk.ran_in_child()) return;  // ran in a user namespace (its output is above)
    if (test::in_ci()) FAIL() << disk.why();
    GTEST_SKIP() << "NOT CHECKED ON THIS HOST: " << disk.why();
  }
  {
    ModelRegistry reg(mnt + "/reg");
    // A small first version that fits: a vocab-only GGUF from shared/testdata (628 KB).
    reg.install_file(test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf"), named("m", "1"), {});
    ASSERT_EQ(reg.current("m")->version, "1");
    const auto before = reg.list();
    try {
      reg.install_file(test::shared_model("tiny-zh-poems.gguf"), named("m", "2"), {});
      ADD_FAILURE() << "a multi-MB model fit on a 1200 KiB disk?";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIo);
      EXPECT_NE(std::string(e.what()).find("No space left"), std::string::npos) << e.what();
    }
    EXPECT_EQ(reg.list().size(), before.size());
    EXPECT_EQ(reg.current("m")->version, "1");
    EXPECT_TRUE(reg.verify(*reg.current("m")).ok);
    EXPECT_EQ(std::system(("test -z \"$(ls -A '" + reg.tmp_dir() + "')\"").c_str()), 0);
  }
}

}  // namespace
}  // namespace edgellm
