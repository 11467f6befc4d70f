// core/atomic_file.h: a file is written whole or not at all. Each writer fills a temporary file
// of its own, so two writers of one path leave one of their contents whole (with a shared
// "<path>.tmp" the second writer's O_TRUNC cut the first one's file, which it then renamed into
// place: sessions and registry manifests wrote that way until this file existed); a failure
// leaves the old content and no temporary file.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <ctime>

#include <string>
#include <thread>

#include "core/atomic_file.h"
#include "core/error.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

TEST(AtomicFile, WritesReplacesAndReadsBack) {
  const std::string path = test::temp_dir() + "/a.txt";
  write_file_atomic(path, "first");
  EXPECT_EQ(read_small_file(path), "first");
  write_file_atomic(path, std::string(100000, 'x'));
  EXPECT_EQ(read_small_file(path), std::string(100000, 'x'));
  EXPECT_EQ(file_size_or_minus_one(path), 100000);
  EXPECT_FALSE(test::temp_file_left(path));
}

TEST(AtomicFile, AFailingFillLeavesTheOldContentAndNoTemporaryFile) {
  const std::string path = test::temp_dir() + "/b.txt";
  write_file_atomic(path, "old");
  EXPECT_THROW(write_file_atomically(path,
                                     [](int fd, const std::string& tmp) {
                                       write_all(fd, "new, half", 9, tmp);
                                       throw Error(ErrorCode::kIo, "disk went away");
                                     }),
               Error);
  EXPECT_EQ(read_small_file(path), "old");
  EXPECT_FALSE(test::temp_file_left(path));
}

TEST(AtomicFile, AMissingFolderIsAnIoErrorNamingThePath) {
  const std::string path = test::temp_dir() + "/no/such/folder/c.txt";
  try {
    write_file_atomic(path, "x");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("c.txt.tmp"), std::string::npos) << e.what();
  }
}

// A writer killed half way leaves "<name>.tmp.XXXXXX"; the next write of the name removes such
// files older than an hour and leaves younger ones (another writer may still be at work) and
// other names alone.
TEST(AtomicFile, StaleTemporaryFilesOfThePathAreRemoved) {
  const std::string dir = test::temp_dir() + "/stale";
  make_dirs(dir);
  const std::string path = dir + "/s.bin";
  const std::string old_tmp = path + ".tmp.Ab12Cd", young_tmp = path + ".tmp.Ef34Gh", other = dir + "/t.bin.tmp.Ij56Kl";
  for (const std::string& f : {old_tmp, young_tmp, other}) write_file_atomic(f, "left over");
  const timespec two_hours_ago[2] = {{::time(nullptr) - 7200, 0}, {::time(nullptr) - 7200, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, old_tmp.c_str(), two_hours_ago, 0), 0);
  ASSERT_EQ(::utimensat(AT_FDCWD, other.c_str(), two_hours_ago, 0), 0);
  write_file_atomic(path, "new");
  EXPECT_EQ(read_small_file(path), "new");
  EXPECT_FALSE(path_exists(old_tmp));
  EXPECT_TRUE(path_exists(young_tmp));
  EXPECT_TRUE(path_exists(other));
}

// Options: the mode is the file's (0600 for private data), and without fsync the content is the
// same.
TEST(AtomicFile, ModeAndNoFsync) {
  const std::string path = test::temp_dir() + "/private.bin";
  AtomicWriteOptions o;
  o.mode = 0600;
  o.fsync = false;
  write_file_atomic(path, "secret", o);
  EXPECT_EQ(read_small_file(path), "secret");
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  write_file_atomic(path, "public");
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
}

// Two threads write one path 20 times each, in 64 KiB pieces with yields between them so the
// writes interleave: every read after a round is one writer's 2 MiB, whole.
TEST(AtomicFile, ConcurrentWritersOfOnePathLeaveOneWholeFile) {
  const std::string path = test::temp_dir() + "/race.bin";
  constexpr size_t kBytes = size_t{2} << 20;
  auto write_filled = [&](char byte) {
    write_file_atomically(path, [byte](int fd, const std::string& tmp) {
      const std::string piece(size_t{1} << 16, byte);
      for (size_t at = 0; at < kBytes; at += piece.size()) {
        write_all(fd, piece.data(), piece.size(), tmp);
        std::this_thread::yield();
      }
    });
  };
  for (int round = 0; round < 20; ++round) {
    std::string errors[2];
    auto run = [&](int i, char byte) {
      try {
        write_filled(byte);
      } catch (const Error& e) {
        errors[i] = e.what();
      }
    };
    std::thread a(run, 0, 'a');
    std::thread b(run, 1, 'b');
    a.join();
    b.join();
    ASSERT_EQ(errors[0], "");
    ASSERT_EQ(errors[1], "");
    const std::string got = read_small_file(path, kBytes);
    ASSERT_EQ(got.size(), kBytes);
    ASSERT_TRUE(got == std::string(kBytes, 'a') || got == std::string(kBytes, 'b')) << "round " << round;
  }
  EXPECT_FALSE(test::temp_file_left(path));
}

}  // namespace
}  // namespace edgellm
