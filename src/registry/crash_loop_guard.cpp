#include "registry/crash_loop_guard.h"

#include <cstdlib>

#include "core/error.h"
#include "core/json.h"
#include "core/log.h"
#include "core/atomic_file.h"

namespace edgellm {
namespace {

void check_key(const std::string& key) {
  bool ok = !key.empty() && key.size() <= 200;
  for (char c : key) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '-' || c == '@' || c == '=' || c == '/');
  }
  require(ok, ErrorCode::kInvalidArgument, [&] { return "bad crash-guard key '" + key + "'"; });
}

Json read_unfit(const std::string& path) {
  if (!path_exists(path)) return Json::object();
  try {
    Json j = Json::parse(read_small_file(path));
    if (j.is_object()) return j;
  } catch (const Error& e) {
    log_message(LogLevel::kWarn, std::string("crash guard: ignoring unreadable unfit.json: ") + e.what());
  }
  return Json::object();
}

}  // namespace

CrashLoopGuard::CrashLoopGuard(std::string dir, int max_killed_loads)
    : dir_(std::move(dir)), max_killed_loads_(max_killed_loads < 1 ? 1 : max_killed_loads) {
  make_dirs(dir_);
}

std::string CrashLoopGuard::marker_path(const std::string& key) const {
  std::string file = key;
  for (auto& c : file) {
    if (c == '/') c = '+';
  }
  return dir_ + "/loading-" + file;
}

CrashLoopGuard::Decision CrashLoopGuard::begin(const std::string& key) {
  check_key(key);
  Decision d;
  std::string reason;
  if (is_unfit(key, &reason)) {
    d.allowed = false;
    d.reason = reason;
    return d;
  }
  const std::string marker = marker_path(key);
  if (path_exists(marker)) {
    try {
      d.killed_loads = std::atoi(read_small_file(marker, 64).c_str());
    } catch (const Error&) {
      d.killed_loads = 1;  // a marker we cannot read still says a load did not finish
    }
    if (d.killed_loads < 1) d.killed_loads = 1;
  }
  if (d.killed_loads >= max_killed_loads_) {
    d.allowed = false;
    d.reason = "the process was killed during " + std::to_string(d.killed_loads) + " consecutive loads of " + key +
               " (likely out of memory): marked unfit for this device";
    mark_unfit(key, d.killed_loads, d.reason);
    remove_file(marker);
    log_message(LogLevel::kWarn, "crash guard: " + d.reason);
    return d;
  }
  write_file_atomic(marker, std::to_string(d.killed_loads + 1) + "\n");
  return d;
}

void CrashLoopGuard::end(const std::string& key) {
  check_key(key);
  remove_file(marker_path(key));
}

void CrashLoopGuard::mark_unfit(const std::string& key, int killed, const std::string& reason) {
  const std::string path = dir_ + "/unfit.json";
  Json all = read_unfit(path);
  Json entry = Json::object();
  entry.set("reason", reason);
  entry.set("killed_loads", killed);
  all.set(key, entry);
  write_file_atomic(path, all.dump(2) + "\n");
}

bool CrashLoopGuard::is_unfit(const std::string& key, std::string* reason) const {
  const Json all = read_unfit(dir_ + "/unfit.json");
  const Json* e = all.find(key);
  if (!e) return false;
  if (reason) {
    const Json* r = e->find("reason");
    *reason = (r && r->is_string()) ? r->as_string() : "marked unfit";
  }
  return true;
}

std::vector<std::string> CrashLoopGuard::unfit_keys() const {
  std::vector<std::string> keys;
  const Json all = read_unfit(dir_ + "/unfit.json");  // named: a range over a temporary's member dangles
  for (const auto& [k, v] : all.as_object()) keys.push_back(k);
  return keys;
}

void CrashLoopGuard::clear(const std::string& key) {
  check_key(key);
  remove_file(marker_path(key));
  const std::string path = dir_ + "/unfit.json";
  Json all = read_unfit(path);
  Json kept = Json::object();
  for (const auto& [k, v] : all.as_object()) {
    if (k != key) kept.set(k, v);
  }
  if (kept.size() != all.size()) write_file_atomic(path, kept.dump(2) + "\n");
}

GuardedLoad::GuardedLoad(CrashLoopGuard& guard, std::string key) : guard_(guard), key_(std::move(key)) {
  const auto d = guard_.begin(key_);
  if (!d.allowed) throw Error(ErrorCode::kUnsupported, d.reason);
}

GuardedLoad::~GuardedLoad() {
  try {
    guard_.end(key_);
  } catch (const Error& e) {
    log_message(LogLevel::kWarn, std::string("crash guard: ") + e.what());
  }
}

}  // namespace edgellm
