// ISA dispatch: supported_isas / set_active_isa, and EDGELLM_ISA handling. The environment is read
// once per process, so the EDGELLM_ISA cases re-run this executable as a child with the variable
// set (the child-only test is skipped unless EDGELLM_DISPATCH_CHILD is set).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"

extern char** environ;

namespace edgellm::kernels {
namespace {

TEST(Dispatch, ScalarAlwaysSupportedAndFirst) {
  const std::vector<Isa> isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kScalar);
  for (size_t i = 1; i < isas.size(); ++i) EXPECT_LT(static_cast<int>(isas[i - 1]), static_cast<int>(isas[i]));
}

TEST(Dispatch, DefaultIsBestSupportedOrPin) {
  const char* env = std::getenv("EDGELLM_ISA");
  if (env && *env) {
    EXPECT_STREQ(isa_name(active_isa()), env);
  } else {
    EXPECT_EQ(active_isa(), supported_isas().back());
  }
}

TEST(Dispatch, SetActiveIsaSwitchesAndRejectsUnsupported) {
  const Isa saved = active_isa();
  for (Isa isa : supported_isas()) {
    set_active_isa(isa);
    EXPECT_EQ(active_isa(), isa);
  }
#if defined(__x86_64__)
  const Isa foreign = Isa::kNeon;
#else
  const Isa foreign = Isa::kAvx2;
#endif
  try {
    set_active_isa(foreign);
    FAIL() << "set_active_isa accepted an ISA of another architecture";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find(isa_name(foreign)), std::string::npos) << e.what();
  }
  EXPECT_EQ(active_isa(), supported_isas().back() == saved ? saved : active_isa());
  set_active_isa(saved);
}

// Runs this test binary filtered to the child test with EDGELLM_ISA=value; returns exit status.
int run_child(const std::string& isa_value, const std::string& expect) {
  char exe[4096];
  const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return -1;
  exe[len] = '\0';
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string s = *e;
    if (s.rfind("EDGELLM_ISA=", 0) == 0 || s.rfind("EDGELLM_DISPATCH_CHILD=", 0) == 0) continue;
    env_strings.push_back(s);
  }
  env_strings.push_back("EDGELLM_ISA=" + isa_value);
  env_strings.push_back("EDGELLM_DISPATCH_CHILD=" + expect);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=Dispatch.ChildChecksPin";
  char* argv[] = {exe, filter.data(), nullptr};
  // The child's gtest report would only clutter this test's output: its exit status is the result.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  const int rc = posix_spawn(&pid, exe, &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(Dispatch, ChildChecksPin) {
  const char* expect = std::getenv("EDGELLM_DISPATCH_CHILD");
  if (!expect) GTEST_SKIP() << "only runs as a child of EnvPin* tests";
  const std::string want = expect;
  if (want == "throws") {
    try {
      active_isa();
      FAIL() << "EDGELLM_ISA=" << std::getenv("EDGELLM_ISA") << " was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kUnsupported || e.code() == ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("EDGELLM_ISA"), std::string::npos) << e.what();
    }
  } else {
    EXPECT_STREQ(isa_name(active_isa()), want.c_str());
    // A pin behaves like a CPU without anything better: nothing above it is offered.
    EXPECT_STREQ(isa_name(supported_isas().back()), want.c_str());
  }
}

TEST(Dispatch, EnvPinSelectsEachSupportedIsa) {
  if (std::getenv("EDGELLM_DISPATCH_CHILD")) GTEST_SKIP();
  for (Isa isa : supported_isas()) EXPECT_EQ(run_child(isa_name(isa), isa_name(isa)), 0) << isa_name(isa);
}

TEST(Dispatch, EnvPinFailsLoudlyForUnknownOrUnsupportedIsa) {
  if (std::getenv("EDGELLM_DISPATCH_CHILD")) GTEST_SKIP();
  EXPECT_EQ(run_child("avx9000", "throws"), 0);
#if defined(__x86_64__)
  EXPECT_EQ(run_child("i8mm", "throws"), 0);
#else
  EXPECT_EQ(run_child("avx512", "throws"), 0);
#endif
}

}  // namespace
}  // namespace edgellm::kernels
