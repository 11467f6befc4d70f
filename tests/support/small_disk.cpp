#include "support/small_disk.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace edgellm::test {
namespace {

// Set in the child that re-runs a test case inside its namespaces.
constexpr const char* kChildEnv = "EDGELLM_SMALL_DISK_CHILD";
// The child's exit status when even the namespace does not allow the mount.
constexpr int kUnavailableExit = 77;

bool write_file(const char* path, const std::string& text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::string errno_text(const char* what) {
  return std::string(what) + ": " + std::strerror(errno);
}

// Runs the current test case again in a child inside a new user + mount namespace. Returns the
// child's exit status, or -1 with `why` when no child could be started there.
int run_in_namespace(std::string* why) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::string filter = std::string("--gtest_filter=") + info->test_suite_name() + "." + info->name();
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    *why = errno_text("readlink /proc/self/exe");
    return -1;
  }
  exe[n] = '\0';
  const uid_t uid = ::getuid();
  const gid_t gid = ::getgid();
  int pipe_fds[2];  // the child reports a failure before exec through it
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    *why = errno_text("pipe");
    return -1;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    *why = errno_text("fork");
    return -1;
  }
  if (pid == 0) {
    ::close(pipe_fds[0]);
    std::string err;
    // Only async-signal-safe work would be strictly allowed after fork() in a threaded process;
    // these are system calls and small strings, done before exec.
    if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
      err = errno_text("unshare(CLONE_NEWUSER | CLONE_NEWNS)");
    } else if (!write_file("/proc/self/setgroups", "deny") ||
               !write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") ||
               !write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) {
      err = errno_text("writing the namespace's uid / gid map");
    } else {
      ::mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr);  // nothing leaves the namespace
      ::setenv(kChildEnv, "1", 1);
      char* argv[] = {exe, const_cast<char*>(filter.c_str()), nullptr};
      ::execv(exe, argv);
      err = errno_text("exec");
    }
    (void)!::write(pipe_fds[1], err.data(), err.size());
    ::_exit(kUnavailableExit);
  }
  ::close(pipe_fds[1]);
  std::string err;
  char buf[256];
  for (ssize_t got; (got = ::read(pipe_fds[0], buf, sizeof buf)) > 0;) err.append(buf, static_cast<size_t>(got));
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!err.empty()) {
    *why = err;
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' && std::strcmp(ci, "0") != 0 && std::strcmp(ci, "false") != 0;
}

SmallDisk::SmallDisk(const std::string& dir, const std::string& size) : dir_(dir) {
  const std::string options = "size=" + size;
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, options.c_str()) == 0) {
    mounted_ = true;
    return;
  }
  const std::string direct = errno_text("mount -t tmpfs");
  if (std::getenv(kChildEnv) != nullptr) {
    // Inside the namespace the mount must work; when it does not, say so to the parent.
    std::fprintf(stderr, "small disk: %s in the user namespace\n", direct.c_str());
    std::fflush(nullptr);
    std::_Exit(kUnavailableExit);
  }
  std::string why;
  const int status = run_in_namespace(&why);
  if (status == 0) {
    ran_in_child_ = true;
    return;
  }
  if (status > 0 && status != kUnavailableExit) {
    ran_in_child_ = true;
    ADD_FAILURE() << "the full-disk case failed in its user namespace (exit status " << status
                  << "; its output is above)";
    return;
  }
  why_ = "cannot mount a " + size + " tmpfs at " + dir + " (" + direct + ", needs root / CAP_SYS_ADMIN) nor in a " +
         "user namespace (" + (why.empty() ? "the mount was refused there" : why) + "): the full-disk case did not run";
}

SmallDisk::~SmallDisk() {
  if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
}

}  // namespace edgellm::test
