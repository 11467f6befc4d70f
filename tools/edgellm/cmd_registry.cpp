// `edgellm registry SUBCOMMAND --registry DIR ...`: the model registry of registry/model_registry.h.
//   add FILE --name N --version V [--sha256 HEX] [--tier T] [--task-score S] [--bench]
//                          copy a local file in (verified when --sha256 is given) and make it current;
//                          --bench then measures it (as `registry bench`)
//   bench NAME[@V] [--pp N] [--tg N] [-t N]
//                          measure prefill and decode tok/s here (the engine's bench: one warm-up, one
//                          timed run of a pp N and a tg N test) and write them into the manifest
//                          atomically; `edgellm plan` uses them
//   install URL|FILE --name N --version V --sha256 HEX [--size BYTES]
//                          download (resumable: run again after an interruption) or copy, verify,
//                          install atomically, make current
//   list [--json]          installed versions, the current one marked, unfit configurations
//   verify [NAME[@V]]      re-hash installed files (all when no name) against their manifests
//   use NAME@VERSION       make an installed version current (roll back)
//   remove NAME@VERSION
//   reset KEY              forget the crash-loop guard's marks for a configuration
// Hashing and downloading show a progress bar on stderr when it is a terminal (and a line per
// 10 % otherwise). A registry is created only by add / install; the other subcommands read an
// existing one and create nothing. Exit status (docs/cli.md): 0 ok, 1 error, 2 bad command line,
// 4 verification failed.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include <functional>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "progress.h"
#include "core/error.h"
#include "core/json.h"
#include "tools/bench/bench_runner.h"
#include "registry/crash_loop_guard.h"
#include "registry/model_registry.h"
#include "platform/cpu_topology.h"
#if defined(EDGELLM_HAVE_CURL)
#include "tools/fetch/http_download.h"
#endif

namespace edgellm::cli {
namespace {

// Hashing, copying and downloading show tools/edgellm/progress.h's display; the library calls
// (done, total) bytes.
std::function<bool(uint64_t, uint64_t)> bytes_progress(ProgressDisplay& bar) {
  return [&bar](uint64_t done, uint64_t total) {
    bar.update_bytes(done, total);
    return true;
  };
}

std::pair<std::string, std::string> split_key(const std::string& key) {
  const size_t at = key.find('@');
  require(at != std::string::npos && at > 0 && at + 1 < key.size(), ErrorCode::kInvalidArgument,
          [&] { return "'" + key + "' is not NAME@VERSION"; });
  return {key.substr(0, at), key.substr(at + 1)};
}

std::string speed(double tokens_per_second) {
  if (!(tokens_per_second > 0)) return "not measured";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f t/s", tokens_per_second);
  return buf;
}

void print_manifest(const ModelManifest& m, bool current) {
  // A speed of 0 is "never measured" (registry bench / add --bench measure it), not 0 t/s.
  std::printf("%s %-40s %-6s %10.1f MiB  sha256 %.16s...  tier %-5s  pp %s  tg %s%s\n", current ? "*" : " ",
              m.key().c_str(), m.weight_type.c_str(), m.size_bytes / 1048576.0, m.sha256.c_str(),
              m.tier.empty() ? "-" : m.tier.c_str(), speed(m.prefill_tokens_per_second).c_str(),
              speed(m.decode_tokens_per_second).c_str(),
              m.task_score ? (" score " + std::to_string(*m.task_score)).c_str() : "");
  // Measured task scores (`edgellm eval --registry`), one line each.
  for (const TaskScore& t : m.task_scores) {
    std::printf("      task %-24s %-12s %.4f  (%lld cases, sha256 %.12s..., %s)\n", t.task_file.c_str(), t.metric.c_str(),
                t.value, static_cast<long long>(t.cases), t.task_file_sha256.c_str(), t.date.c_str());
  }
}

struct BenchShape {
  int32_t n_prompt = 64;
  int32_t n_gen = 16;
  int32_t n_threads = 0;  // 0: the big cores
};

// Measures an installed model (bench/bench_runner.h: one warm-up and one timed pp and tg run, no
// bandwidth probe) and writes the speeds into its manifest (ModelRegistry::update_measurements:
// under the registry's lock, atomically). Returns the updated manifest.
ModelManifest bench_into_manifest(ModelRegistry& reg, const ModelManifest& m, const BenchShape& shape) {
  bench::BenchParams p;
  p.models = {reg.model_path(m)};
  p.n_prompt = {shape.n_prompt};
  p.n_gen = {shape.n_gen};
  p.n_threads = {shape.n_threads > 0 ? shape.n_threads : default_thread_count()};
  p.repetitions = 1;
  p.measure_bandwidth = false;
  double pp = 0, tg = 0;
  const auto records = bench::run_bench(p, bench::describe_machine(p));
  for (const auto& r : records) (r.is_generation ? tg : pp) = r.avg_ts;
  require(pp > 0 && tg > 0, ErrorCode::kInternal, "bench of " + m.key() + " measured no speed");
  reg.update_measurements(m.name, m.version, pp, tg, std::nullopt);
  std::printf("measured %s on %d threads: prefill %.1f tok/s (pp%d), decode %.1f tok/s (tg%d); manifest updated\n",
              m.key().c_str(), p.n_threads[0], pp, shape.n_prompt, tg, shape.n_gen);
  auto updated = reg.get(m.name, m.version);
  require(updated.has_value(), ErrorCode::kInternal, m.key() + " vanished while it was measured");
  return *updated;
}

int run_registry(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  std::string dir = "models/registry";
  std::string name, version, sha, tier;
  float task_score = -1;
  int64_t size = 0;
  bool json = false;
  bool bench_after = false;
  BenchShape shape;
  ArgParser ap("registry", "add|install|bench|list|verify|use|remove|reset ... [--registry DIR]");
  ap.allow_positionals(&pos, "ARGS");
  ap.add_string(shared_option("registry"), &dir, "default models/registry");
  ap.add_string("--name", &name, "NAME", "model name ([A-Za-z0-9._-])");
  ap.add_string("--version", &version, "V", "model version");
  ap.add_string("--sha256", &sha, "HEX", "expected SHA-256 of the file");
  ap.add_int64("--size", &size, "BYTES", "expected size of the file", 0);
  ap.add_string("--tier", &tier, "T", "device tier the model is meant for (4GB, 8GB, ...)");
  ap.add_float("--task-score", &task_score, "S", "task score in [0, 1] (ranks candidates in `edgellm plan`)", 0, 1);
  ap.add_flag(shared_option("json"), &json, "list");
  bool force = false;
  ap.add_flag("--force", &force, "remove: also the current version (another version becomes current)");
  ap.add_flag("--bench", &bench_after, "add / install: measure prefill and decode speed here afterwards");
  ap.add_int("--pp", &shape.n_prompt, "N", "bench: prompt tokens of the prefill test (default 64)", 1, 8192);
  ap.add_int("--tg", &shape.n_gen, "N", "bench: tokens of the decode test (default 16)", 1, 8192);
  ap.add_int(shared_option("threads"), &shape.n_threads, 0, 256, "bench; default: the big cores");
  if (!ap.parse(args)) return 0;
  require(!pos.empty(), ErrorCode::kInvalidArgument, "registry needs a subcommand\n" + ap.usage());
  const std::string sub = pos[0];
  static const char* const kSubcommands[] = {"add", "install", "bench", "list", "verify", "use", "remove", "reset"};
  require(std::find(std::begin(kSubcommands), std::end(kSubcommands), sub) != std::end(kSubcommands),
          ErrorCode::kInvalidArgument, "unknown registry subcommand '" + sub + "'\n" + ap.usage());
  // Only add / install create a registry; reading one that does not exist creates nothing.
  if (sub != "add" && sub != "install") {
    if (!registry_exists(dir)) {
      if (sub == "list") {
        if (json) {
          std::printf("{\"models\": [], \"unfit\": []}\n");
        } else {
          std::printf("(no registry at %s: edgellm registry add / install creates one)\n", dir.c_str());
        }
        return 0;
      }
      require_registry(dir);
    }
  }
  ModelRegistry reg(dir);
  CrashLoopGuard guard(reg.guard_dir());

  if (sub == "add" || sub == "install") {
    require(pos.size() == 2, ErrorCode::kInvalidArgument, "registry " + sub + " needs one FILE or URL");
    require(!name.empty() && !version.empty(), ErrorCode::kInvalidArgument, "registry " + sub + " needs --name and --version");
    require(sub == "add" || !sha.empty(), ErrorCode::kInvalidArgument,
            "registry install needs --sha256 (the published digest): an update is never installed unverified");
    ModelManifest m;
    m.name = name;
    m.version = version;
    m.tier = tier;
    m.size_bytes = static_cast<uint64_t>(size);
    if (task_score >= 0) m.task_score = task_score;
    ModelRegistry::InstallOptions io;
    io.expected_sha256 = sha;
    const std::string& src = pos[1];
    ModelManifest installed;
    if (src.rfind("http://", 0) == 0 || src.rfind("https://", 0) == 0) {
#if defined(EDGELLM_HAVE_CURL)
      m.source = src;
      const std::string part = reg.tmp_dir() + "/" + m.key() + ".download.part";
      ProgressDisplay dl("download " + m.key());
      DownloadOptions o;
      o.expected_size = static_cast<uint64_t>(size);
      o.progress = bytes_progress(dl);
      download_resumable(src, part, o);
      dl.finish();
      ProgressDisplay hb("verify " + m.key());
      io.progress = bytes_progress(hb);
      installed = reg.install_moved(part, m, io);
      hb.finish();
#else
      throw Error(ErrorCode::kUnsupported, "this build has no libcurl: download the file and pass its path");
#endif
    } else {
      ProgressDisplay cb("copy+hash " + m.key());
      io.progress = bytes_progress(cb);
      installed = reg.install_file(src, m, io);
      cb.finish();
    }
    std::printf("installed %s (%s, %.1f MiB, sha256 %s), current\n", installed.key().c_str(),
                installed.weight_type.c_str(), installed.size_bytes / 1048576.0, installed.sha256.c_str());
    if (bench_after) bench_into_manifest(reg, installed, shape);
    return 0;
  }
  if (sub == "bench") {
    require(pos.size() == 2, ErrorCode::kInvalidArgument, "registry bench needs NAME or NAME@VERSION");
    auto m = reg.resolve(pos[1]);
    require(m.has_value(), ErrorCode::kInvalidArgument, "'" + pos[1] + "' is not installed");
    bench_into_manifest(reg, *m, shape);
    return 0;
  }
  if (sub == "list") {
    const auto all = reg.list();
    if (json) {
      const Json out = registry_listing_json(reg, guard);
      std::printf("%s\n", out.dump(2).c_str());
      return 0;
    }
    for (const auto& m : all) {
      const auto cur = reg.current(m.name);
      print_manifest(m, cur && cur->version == m.version);
    }
    for (const auto& k : guard.unfit_keys()) {
      std::string why;
      guard.is_unfit(k, &why);
      std::printf("unfit: %s (%s)\n", k.c_str(), why.c_str());
    }
    if (all.empty()) std::printf("(no models in %s)\n", dir.c_str());
    return 0;
  }
  if (sub == "verify") {
    std::vector<ModelManifest> targets;
    if (pos.size() >= 2) {
      for (size_t i = 1; i < pos.size(); ++i) {
        auto m = reg.resolve(pos[i]);
        require(m.has_value(), ErrorCode::kInvalidArgument, "'" + pos[i] + "' is not installed");
        targets.push_back(*m);
      }
    } else {
      targets = reg.list();
    }
    int bad = 0;
    for (const auto& m : targets) {
      ProgressDisplay hb("verify " + m.key());
      const auto v = reg.verify(m, bytes_progress(hb));
      hb.finish();
      std::printf("%s %s%s%s\n", v.ok ? "ok  " : "FAIL", m.key().c_str(), v.ok ? "" : ": ", v.message.c_str());
      bad += v.ok ? 0 : 1;
    }
    return bad ? kExitVerifyFailed : 0;
  }
  if (sub == "use" || sub == "remove") {
    require(pos.size() == 2, ErrorCode::kInvalidArgument, "registry " + sub + " needs NAME@VERSION");
    const auto [n, v] = split_key(pos[1]);
    if (sub == "use") {
      reg.set_current(n, v);
      std::printf("%s@%s is current\n", n.c_str(), v.c_str());
    } else {
      // Removing the version in use would silently switch apps to another one: only on request.
      const auto before = reg.current(n);
      const bool was_current = before && before->version == v;
      require(!was_current || force, ErrorCode::kInvalidArgument,
              n + "@" + v + " is the current version of " + n +
                  ": make another one current first (registry use NAME@VERSION), or pass --force");
      reg.remove(n, v);
      const auto cur = reg.current(n);
      std::printf("removed %s@%s\n", n.c_str(), v.c_str());
      if (was_current) {
        std::printf(cur ? "%s is now the current version of %s\n" : "%s%s has no version left\n",
                    cur ? cur->key().c_str() : "", n.c_str());
      }
    }
    return 0;
  }
  if (sub == "reset") {
    require(pos.size() == 2, ErrorCode::kInvalidArgument, "registry reset needs a configuration KEY (see `registry list`)");
    guard.clear(pos[1]);
    std::printf("forgot the crash-loop marks of %s\n", pos[1].c_str());
    return 0;
  }
  throw Error(ErrorCode::kInternal, "registry subcommand '" + sub + "' not handled");
}

const CommandRegistration kRegistryRegistration("registry",
                                        "model registry: add, install (download + verify), bench, list, verify, use, remove",
                                        run_registry);

}  // namespace
}  // namespace edgellm::cli
