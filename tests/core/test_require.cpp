// require(): every message form throws Error(code, message) when the check fails, and a callable
// message is built only then (require runs on per-token paths).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"

namespace edgellm {
namespace {

template <class F>
Error caught(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no Error thrown";
  return Error(ErrorCode::kInternal, "");
}

TEST(Require, PassingChecksDoNotThrowOrBuildMessages) {
  int built = 0;
  for (int i = 0; i < 1000; ++i) {
    require(true, ErrorCode::kInvalidArgument, "literal");
    require(true, ErrorCode::kInvalidArgument, std::string("string"));
    require(true, ErrorCode::kInvalidArgument, [&] {
      ++built;
      return "n = " + std::to_string(i);
    });
  }
  EXPECT_EQ(built, 0);
}

TEST(Require, EveryMessageFormThrowsItsCodeAndMessage) {
  Error a = caught([] { require(false, ErrorCode::kInvalidFile, "bad file"); });
  EXPECT_EQ(a.code(), ErrorCode::kInvalidFile);
  EXPECT_STREQ(a.what(), "bad file");

  const std::string existing = "already built";
  Error b = caught([&] { require(false, ErrorCode::kUnsupported, existing); });
  EXPECT_EQ(b.code(), ErrorCode::kUnsupported);
  EXPECT_STREQ(b.what(), "already built");

  const char* pointer = "through a pointer";
  Error c = caught([&] { require(false, ErrorCode::kIo, pointer); });
  EXPECT_STREQ(c.what(), "through a pointer");

  int built = 0;
  Error d = caught([&] {
    require(false, ErrorCode::kContextFull, [&] {
      ++built;
      return "needs " + std::to_string(42) + " positions";
    });
  });
  EXPECT_EQ(built, 1);
  EXPECT_EQ(d.code(), ErrorCode::kContextFull);
  EXPECT_STREQ(d.what(), "needs 42 positions");

  // A callable may return a C string too.
  Error e = caught([] { require(false, ErrorCode::kBusy, [] { return "late"; }); });
  EXPECT_STREQ(e.what(), "late");
}

}  // namespace
}  // namespace edgellm
