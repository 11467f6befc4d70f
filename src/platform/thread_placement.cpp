#include "platform/thread_placement.h"

#include <cerrno>
#include <cstring>

#include "core/log.h"

#if defined(__linux__)
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace edgellm {

namespace {

#if defined(__linux__)
// The kernel thread id: setpriority(PRIO_PROCESS, tid) changes that one thread. gettid() is
// glibc >= 2.30 / musl >= 1.2.2 only; the raw syscall is everywhere.
int current_tid() { return static_cast<int>(::syscall(SYS_gettid)); }
#endif

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string s;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!s.empty()) s += ',';
    s += std::to_string(cpus[i]);
    if (j > i) s += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return s;
}

}  // namespace

std::string ThreadPlacement::to_string() const {
  std::string s = cpus.empty() ? "cpus unchanged" : "cpus " + cpu_list_text(cpus);
  s += nice ? ", nice " + std::to_string(*nice) : ", nice unchanged";
  return s;
}

PlacementResult apply_placement_to_current_thread(const ThreadPlacement& p, bool with_nice) {
  PlacementResult r;
#if defined(__linux__)
  if (!p.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    bool any = false;
    for (int cpu : p.cpus) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) {
        CPU_SET(cpu, &set);
        any = true;
      }
    }
    if (!any) {
      r.affinity_errno = EINVAL;
    } else if (sched_setaffinity(0, sizeof set, &set) != 0) {
      r.affinity_errno = errno;
    }
  }
  if (with_nice && p.nice) {
    if (setpriority(PRIO_PROCESS, static_cast<id_t>(current_tid()), *p.nice) != 0) r.nice_errno = errno;
  }
#else
  (void)p;
  (void)with_nice;
#endif
  return r;
}

std::vector<int> current_thread_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
#endif
  return cpus;
}

int current_thread_nice() {
#if defined(__linux__)
  errno = 0;
  const int v = getpriority(PRIO_PROCESS, static_cast<id_t>(current_tid()));
  return errno == 0 ? v : 0;
#else
  return 0;
#endif
}

void PlacementLog::record(const ThreadPlacement& p, const PlacementResult& r, bool with_nice) {
  if (!p.cpus.empty()) (r.affinity_errno == 0 ? affinity_applied_ : affinity_failed_).fetch_add(1);
  if (with_nice && p.nice) (r.nice_errno == 0 ? nice_applied_ : nice_denied_).fetch_add(1);
  std::string note;
  if (with_nice && p.nice && r.nice_errno != 0) {
    const bool denied = r.nice_errno == EPERM || r.nice_errno == EACCES;
    note = "thread priority: nice " + std::to_string(*p.nice) + " for worker threads " +
           (denied ? "not permitted (" + std::string(std::strerror(r.nice_errno)) +
                         ": raising priority needs CAP_SYS_NICE or RLIMIT_NICE); they keep their priority"
                   : "failed (" + std::string(std::strerror(r.nice_errno)) + ")");
  } else if (!p.cpus.empty() && r.affinity_errno != 0) {
    note = "thread affinity: " + p.to_string() + " failed (" + std::strerror(r.affinity_errno) +
           "); threads run where the system puts them";
  }
  if (note.empty()) return;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(note_mutex_);
    if (note_.empty()) {
      note_ = note;
      first = true;
    }
  }
  if (first) log_message(LogLevel::kWarn, note);  // once per pool, outside the lock
}

PlacementLog::Snapshot PlacementLog::snapshot() const {
  Snapshot s;
  s.affinity_applied = affinity_applied_.load();
  s.affinity_failed = affinity_failed_.load();
  s.nice_applied = nice_applied_.load();
  s.nice_denied = nice_denied_.load();
  std::lock_guard<std::mutex> lock(note_mutex_);
  s.note = note_;
  return s;
}

}  // namespace edgellm
