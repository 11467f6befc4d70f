// core/sha256.h against FIPS 180-4's example vectors (NIST CSRC "SHA256.pdf" / "SHA2_Additional"),
// and against coreutils' sha256sum (an independent implementation) for files of every length
// around the 64-byte block and 56-byte padding boundaries, fed in uneven pieces.
#include "core/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "core/error.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

TEST(Sha256, Fips180Vectors) {
  EXPECT_EQ(Sha256::hex_of(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256::hex_of("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256::hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256::hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmno"
                           "pqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  Sha256 h;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk);  // one million 'a'
  EXPECT_EQ(Sha256::hex(h.finish()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

std::string sha256sum(const std::string& path) {
  std::string cmd = "sha256sum '" + path + "'";
  std::FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  char buf[128] = {};
  const size_t n = std::fread(buf, 1, 64, p);
  pclose(p);
  return std::string(buf, n);
}

TEST(Sha256, MatchesCoreutilsAtBlockBoundaries) {
  std::mt19937 rng(7);
  const std::string path = test::temp_dir() + "/sha.bin";
  for (size_t len : {1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 127u, 128u, 129u, 1000u, 4096u, 100001u}) {
    std::string data(len, '\0');
    for (auto& c : data) c = static_cast<char>(rng());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_TRUE(f);
    std::fwrite(data.data(), 1, data.size(), f);
    std::fclose(f);
    const std::string want = sha256sum(path);
    ASSERT_EQ(want.size(), 64u) << "sha256sum (coreutils) must be installed";
    // Fed in uneven pieces (1, 2, 3, ... bytes) so every buffering path runs.
    Sha256 h;
    size_t off = 0;
    for (size_t piece = 1; off < len; ++piece) {
      const size_t take = std::min(piece, len - off);
      h.update(data.data() + off, take);
      off += take;
    }
    EXPECT_EQ(Sha256::hex(h.finish()), want) << "length " << len;
    uint64_t last_done = 0;
    EXPECT_EQ(sha256_file_hex(path, [&](uint64_t done, uint64_t total) {
                EXPECT_EQ(total, len);
                last_done = done;
                return true;
              }),
              want);
    EXPECT_EQ(last_done, len);
  }
}

TEST(Sha256, FileErrorsAndCancel) {
  try {
    sha256_file_hex(test::temp_dir() + "/no-such-file");
    FAIL() << "expected kIo";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
  }
  const std::string path = test::temp_dir() + "/cancel.bin";
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::string big(3 << 20, 'x');
  std::fwrite(big.data(), 1, big.size(), f);
  std::fclose(f);
  int calls = 0;
  try {
    sha256_file_hex(path, [&](uint64_t, uint64_t) { return ++calls < 2; });
    FAIL() << "expected kCancelled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCancelled);
  }
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(is_sha256_hex("E3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
  EXPECT_FALSE(is_sha256_hex("e3b0"));
  EXPECT_FALSE(is_sha256_hex(std::string(64, 'g')));
}

}  // namespace
}  // namespace edgellm
