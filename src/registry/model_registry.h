// The model registry: versioned model files on the device, each verified by SHA-256, installed
// and switched atomically, so that a failed download, a corrupted file, a full disk or a crash
// at any point leaves the previous version serving (also after a restart).
//
// Layout under the root folder (docs/device-fitness.md):
//   manifests/NAME@VERSION.json   one ModelManifest per installed version
//   models/NAME@VERSION.gguf      the model files (never modified after install)
//   current/NAME.json             {"version": V}: the version new loads of NAME use — the one
//                                 atomic switch of an update (rename over the old pointer)
//   verified/NAME@VERSION.json    the file state (size, mtime, inode) last verified, so a load
//                                 re-hashes only a file that changed since
//   tmp/                          copies and downloads in progress (*.part), resumable
//   guard/                        the crash-loop guard's markers (crash_loop_guard.h)
// Install order: copy/download into tmp/ while hashing -> fsync -> compare SHA-256 and size ->
// rename into models/ -> manifest (atomic write) -> current pointer (atomic write). A crash
// before the last step leaves the old pointer, so the old version keeps serving.
//
// Thread safety: a ModelRegistry object may be used from several threads; every mutating call
// takes an exclusive flock(2) on root/.lock, so several processes may share one registry too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/sha256.h"
#include "registry/model_manifest.h"

namespace edgellm {

class ModelRegistry {
 public:
  // Opens the registry at `root`, creating its folders. Throws Error(kIo).
  explicit ModelRegistry(std::string root);

  const std::string& root() const { return root_; }
  std::string tmp_dir() const { return root_ + "/tmp"; }
  std::string guard_dir() const { return root_ + "/guard"; }
  std::string model_path(const ModelManifest& m) const { return root_ + "/models/" + m.file; }

  // Every installed version, sorted by name then version. Manifests that do not parse are
  // skipped (and named by the log). Never throws for a missing folder.
  std::vector<ModelManifest> list() const;
  std::optional<ModelManifest> get(const std::string& name, const std::string& version) const;
  // The version new loads of `name` use; nullopt when none is installed.
  std::optional<ModelManifest> current(const std::string& name) const;
  // "NAME" (its current version) or "NAME@VERSION". nullopt when not installed.
  std::optional<ModelManifest> resolve(const std::string& name_or_key) const;

  struct InstallOptions {
    std::string expected_sha256;  // empty: record what the file hashes to (a local add)
    bool make_current = true;     // switch NAME to this version once installed
    HashProgress progress;        // (bytes done, total); false cancels
  };
  // Copies `src` into the registry while hashing it, then installs it as m.name@m.version
  // (m.file, size, sha256 and weight_type are filled in; the rest is kept). The file must be a
  // readable GGUF. Throws: kInvalidArgument (bad name/version, that version already installed
  // with other content), kInvalidFile (SHA-256 or size mismatch, not a GGUF), kIo (read
  // error, disk full: nothing of the new version remains), kCancelled. On any error the
  // registry is as it was.
  ModelManifest install_file(const std::string& src, ModelManifest m, const InstallOptions& options);
  // The same for a file already inside tmp_dir() (a finished download): hashed in place and
  // renamed into models/ (no copy). The temporary file is removed on failure.
  ModelManifest install_moved(const std::string& tmp_path, ModelManifest m, const InstallOptions& options);

  struct Verification {
    bool ok = false;
    std::string expected, actual;  // SHA-256 hex
    uint64_t size = 0;
    std::string message;  // why not ok
  };
  // Re-hashes the installed file; never throws for a missing or unreadable file (ok false).
  Verification verify(const ModelManifest& m, const HashProgress& progress = {}) const;

  // The path to load for "NAME" or "NAME@VERSION", verified before first use: the file is
  // re-hashed unless it is unchanged (size, mtime, inode) since its last verification.
  // Throws kInvalidArgument (not installed), kInvalidFile (SHA-256 mismatch: do not load it).
  std::string path_for_load(const std::string& name_or_key, const HashProgress& progress = {});

  // Points NAME at an installed version. Throws kInvalidArgument when not installed.
  void set_current(const std::string& name, const std::string& version);
  // Removes a version; when it was current, NAME points at the highest remaining version
  // (or at none). Requests already running on it keep their mapping (the OS frees the file's
  // blocks after the last unmap).
  void remove(const std::string& name, const std::string& version);
  // Rewrites a manifest's measurements (prefill / decode tok/s, task score) atomically.
  void update_measurements(const std::string& name, const std::string& version, double prefill_tps,
                           double decode_tps, std::optional<double> task_score);
  // Adds measured task scores to a manifest (ModelManifest::record_task_scores: the same task
  // file and metric replaced) atomically, under the registry lock. Returns the new manifest.
  // Throws kInvalidArgument when the version is not installed.
  ModelManifest record_task_scores(const std::string& name, const std::string& version,
                                   const std::vector<TaskScore>& scores);

 private:
  class Lock;
  ModelManifest finish_install(const std::string& part, const std::string& digest, uint64_t size, ModelManifest m,
                               const InstallOptions& options);
  void write_current(const std::string& name, const std::string& version);
  void write_verified_stamp(const ModelManifest& m);
  bool stamp_matches(const ModelManifest& m) const;

  std::string root_;
};

class CrashLoopGuard;
// {"models": [manifest + "current" + "path", ...], "unfit": [configuration keys]}: what
// `edgellm registry list --json` and edgellm_registry_list_json() return.
Json registry_listing_json(const ModelRegistry& registry, const CrashLoopGuard& guard);

// "q4_0", "q4_K", ... (tensor_type_name): the tensor type holding most bytes of a GGUF file's matrices. Throws
// what gguf::GgufFile::open throws (kIo, kInvalidFile).
std::string dominant_weight_type(const std::string& gguf_path);

}  // namespace edgellm
