// The machine's probe results (memory bandwidth, int8 peaks: bench_runner.h's BenchMachine)
// cached in a file per machine, so `edgellm bench` measures them once instead of on every run
// (~20 s of a 260K-parameter model's 1-second bench).
//
// The file ($EDGELLM_CACHE_DIR, else $XDG_CACHE_HOME/edgellm, else ~/.cache/edgellm:
// machine-probes.json) holds one entry per machine key: the CPU name, the hardware thread count,
// the int8 probe kernels this build offers on this CPU, the bandwidth buffer size and the probe
// pass length. A key that differs (another CPU, a new kernel, another buffer) measures again;
// so does `bench --reprobe`. Entries older than kMaxAgeDays are measured again too (a machine's
// memory configuration can change under the same CPU name).
#pragma once

#include <string>

#include "tools/bench/bench_runner.h"

namespace edgellm::bench {

inline constexpr int kProbeCacheMaxAgeDays = 30;

// The default cache file (see above); empty when no folder can be named (no $HOME).
std::string default_probe_cache_path();

// What describe_machine(params) measures, read from `cache_path` when it holds a fresh entry
// for this machine and these params; otherwise measured and written there (atomically; a cache
// that cannot be written is only a note). `refresh` measures in any case. `note` (optional)
// receives one line saying which it was ("machine probes: cached 2026-12-06 (...)").
BenchMachine describe_machine_cached(const BenchParams& params, const std::string& cache_path, bool refresh,
                                     std::string* note = nullptr);

}  // namespace edgellm::bench
