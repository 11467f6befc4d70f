// A size-limited tmpfs for the full-disk tests (a write that fails with ENOSPC half way must
// leave everything as it was). mount(2) of a tmpfs needs CAP_SYS_ADMIN:
//   - as root (CI runs as root), the test process mounts it directly;
//   - otherwise the current test case runs again in a child process inside a new user and mount
//     namespace (unshare(2): CLONE_NEWUSER | CLONE_NEWNS, the caller's uid mapped to root there),
//     where an unprivileged user may mount a tmpfs; the child's verdict is the test's;
//   - where neither is allowed (a container that forbids user namespaces), the case cannot run
//     here: the test fails when the environment variable CI is set (a CI machine must check it)
//     and is skipped with "NOT CHECKED ON THIS HOST" otherwise (scripts/report-skips.sh lists it).
//
//   test::SmallDisk disk(dir, "1200k");
//   if (!disk.mounted()) {
//     if (disk.ran_in_child()) return;  // the child ran the case; a failure there was reported
//     if (test::in_ci()) FAIL() << disk.why();
//     GTEST_SKIP() << "NOT CHECKED ON THIS HOST: " << disk.why();
//   }
#pragma once

#include <string>

namespace edgellm::test {

bool in_ci();  // the environment variable CI is set and not "" / "0" / "false"

class SmallDisk {
 public:
  SmallDisk(const std::string& dir, const std::string& size);
  ~SmallDisk();  // unmounts
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return mounted_; }
  bool ran_in_child() const { return ran_in_child_; }
  const std::string& why() const { return why_; }  // why the disk is not mounted here

 private:
  std::string dir_;
  bool mounted_ = false;
  bool ran_in_child_ = false;
  std::string why_;
};

}  // namespace edgellm::test
