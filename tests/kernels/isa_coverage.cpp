// ISA coverage check for `make test` (Makefile test-unit): reads the EDGELLM_ISA_LOG file the
// test processes appended to (kernels/dispatch.cpp: one "isa-log: <program> <isa>..." line per
// process, naming every ISA whose kernel table it made active), prints which ISA paths the run
// exercised, by kind of test, next to what this host supports, and fails when the host supports
// an ISA that
//   - no kernel test (kernels_test_*: each SIMD kernel vs the scalar reference) used, or
//   - no end-to-end test (the e2e label: greedy references, forward vs naive) ran on,
// so a kernel test that stops looping over an ISA, a detection bug that hides one, or a dropped
// EDGELLM_ISA pass fails the run instead of silently shrinking coverage. An x86 ISA the host
// lacks (AVX-512 on an AVX2-only host, AMX anywhere but on Sapphire Rapids and later Xeons) cannot
// be run here — no emulator in Debian runs them (qemu-user 7.2's TCG has neither AVX-512 nor
// AMX) — so it is reported in a WARNING block on stdout and stderr that names the claims left
// unchecked (docs/testing.md, "What depends on the host"), and fails the check when the
// ISA is listed in EDGELLM_REQUIRE_ISAS (comma-separated: a CI host that must cover it says so).
// The ARM paths run under qemu in test-arm64.
//
//   [EDGELLM_REQUIRE_ISAS=amx,avx512] edgellm_isa_coverage LOG_FILE
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "kernels/kernels.h"

namespace {

// Test binaries that run the model end to end (CMakeLists.txt EDGELLM_E2E_TESTS).
bool is_e2e(const std::string& program) {
  return program == "engine_test_reference_greedy" || program == "engine_test_forward_vs_naive";
}

// What an x86 ISA's kernels carry that only a host with it can check.
const char* unchecked_claims(edgellm::kernels::Isa isa) {
  using edgellm::kernels::Isa;
  switch (isa) {
    case Isa::kAmx:
      return "the AMX tile kernels, the default prefill path on such hosts (Repack.AmxPrefillEqualsAvx512, "
             "Repack.TiledInputsEqualAvx512, the AMX rows of MatmulMatchesReferenceOnEveryIsa and "
             "BatchedMatmulEqualsTokenByToken, Int8Peak's amx_int8 probe, the end-to-end tests on the AMX table "
             "and again at EDGELLM_ISA=avx512)";
    case Isa::kAvx512:
      return "every AVX-512 kernel against the scalar reference and the end-to-end tests on the AVX-512 table";
    default: return "its kernels against the scalar reference";
  }
}

// EDGELLM_REQUIRE_ISAS: ISAs this run must cover even where the host lacks them (then: fail).
std::set<std::string> required_isas() {
  std::set<std::string> out;
  const char* env = std::getenv("EDGELLM_REQUIRE_ISAS");
  std::istringstream list(env != nullptr ? env : "");
  for (std::string name; std::getline(list, name, ',');) {
    if (!name.empty()) out.insert(name);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s EDGELLM_ISA_LOG_FILE\n", argv[0]);
    return 2;
  }
  unsetenv("EDGELLM_ISA");  // what the host supports, not what a pin allows
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "isa-coverage: cannot read %s (was the test run given EDGELLM_ISA_LOG?)\n", argv[1]);
    return 1;
  }
  struct Count {
    int kernel = 0, e2e = 0, other = 0;
  };
  std::map<std::string, Count> used;
  size_t processes = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string tag, program, isa;
    if (!(words >> tag >> program) || tag != "isa-log:") continue;
    ++processes;
    while (words >> isa) {
      Count& c = used[isa];
      if (program.rfind("kernels_test_", 0) == 0) ++c.kernel;
      else if (is_e2e(program)) ++c.e2e;
      else ++c.other;
    }
  }
  using edgellm::kernels::Isa;
  const Isa all[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx, Isa::kNeon, Isa::kDotprod, Isa::kI8mm};
  std::set<std::string> host;
  for (Isa isa : edgellm::kernels::supported_isas()) host.insert(edgellm::kernels::isa_name(isa));
  std::printf("isa-coverage: %zu test processes; test processes that used each ISA's kernels:\n", processes);
  std::printf("  %-8s %-6s %8s %6s %6s\n", "isa", "host", "kernels", "e2e", "other");
  int missing = 0;
  const std::set<std::string> required = required_isas();
  std::string not_checked;  // the WARNING block
  for (Isa isa : all) {
    const std::string name = edgellm::kernels::isa_name(isa);
    const bool on_host = host.count(name) != 0;
    const Count c = used.count(name) ? used[name] : Count{};
#if defined(EDGELLM_ARCH_X86)
    if (!on_host && (isa == Isa::kNeon || isa == Isa::kDotprod || isa == Isa::kI8mm)) continue;
#elif defined(EDGELLM_ARCH_ARM64)
    if (!on_host && (isa == Isa::kAvx2 || isa == Isa::kAvx512 || isa == Isa::kAmx)) continue;
#endif
    std::string verdict;
    if (!on_host) {
      verdict = "NOT TESTED: this host (or build) cannot run it";
      not_checked += "  " + name + ": " + unchecked_claims(isa) + "\n";
      if (required.count(name) != 0) {
        verdict += " (required by EDGELLM_REQUIRE_ISAS)";
        ++missing;
      }
    } else if (c.kernel == 0 || c.e2e == 0) {
      verdict = std::string("MISSING: supported here but no ") + (c.kernel == 0 ? "kernel" : "end-to-end") +
                " test used it";
      ++missing;
    } else {
      verdict = "ok";
    }
    std::printf("  %-8s %-6s %8d %6d %6d  %s\n", name.c_str(), on_host ? "yes" : "no", c.kernel, c.e2e, c.other,
                verdict.c_str());
  }
  if (!not_checked.empty()) {
    const std::string block =
        "\n!!! isa-coverage: WARNING: NOT CHECKED ON THIS HOST (the CPU lacks these ISAs; no emulator in Debian runs "
        "them):\n" +
        not_checked +
        "!!! Run `make test` on a host that has them as well (docs/testing.md, \"What depends on the host\").\n\n";
    std::fputs(block.c_str(), stdout);
    std::fflush(stdout);
    std::fputs(block.c_str(), stderr);
  }
  for (const std::string& name : required) {
    bool known = false;
    for (Isa isa : all) known = known || name == edgellm::kernels::isa_name(isa);
    if (!known) {
      std::fprintf(stderr, "isa-coverage: EDGELLM_REQUIRE_ISAS names '%s', which is no ISA of this build\n",
                   name.c_str());
      ++missing;
    }
  }
  if (missing > 0) {
    std::fprintf(stderr, "isa-coverage: FAILED: %d ISA path(s) were not exercised (supported here, or required)\n",
                 missing);
    return 1;
  }
  return 0;
}
