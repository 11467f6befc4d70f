// Run-time ISA selection. One table per ISA is built at first use: the table of the next lower
// ISA of the same family, with the entries this ISA specialises overwritten (kernel_table.h).
#include "kernels/dispatch.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include "core/error.h"
#include "kernels/cpu_features.h"
#if defined(EDGELLM_ARCH_ARM64)
#include "kernels/arm/arm_kernels.h"
#endif
#if defined(EDGELLM_ARCH_X86)
#include "kernels/x86/amx/amx_kernels.h"
#endif

namespace edgellm::kernels {
namespace {

constexpr int kIsaCount = 7;

constexpr int idx(Isa isa) { return static_cast<int>(isa); }

bool cpu_supports(Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Isa::kScalar:
      return true;
#if defined(EDGELLM_ARCH_X86)
    case Isa::kAvx2:
      return f.has_avx2_kernels();
    case Isa::kAvx512:
      return f.has_avx512_kernels();
    case Isa::kAmx:
      return f.has_amx_kernels();
#endif
#if defined(EDGELLM_ARCH_ARM64)
    case Isa::kNeon:
      return f.neon;
    // The dotprod and i8mm files are compiled with +fp16 too (CMakeLists.txt), so require it.
    case Isa::kDotprod:
      return f.neon && f.dotprod && f.fp16;
    case Isa::kI8mm:
      return f.neon && f.dotprod && f.fp16 && f.i8mm;
#endif
    default:
      (void)f;
      return false;
  }
}

struct Tables {
  std::array<KernelTable, kIsaCount> table;
  std::array<bool, kIsaCount> supported{};
};

const Tables& tables() {
  static const Tables t = [] {
    Tables r;
    install_scalar(r.table[idx(Isa::kScalar)]);
    r.supported[idx(Isa::kScalar)] = true;
#if defined(EDGELLM_ARCH_X86)
    r.table[idx(Isa::kAvx2)] = r.table[idx(Isa::kScalar)];
    install_avx2(r.table[idx(Isa::kAvx2)]);
    r.supported[idx(Isa::kAvx2)] = cpu_supports(Isa::kAvx2);
    r.table[idx(Isa::kAvx512)] = r.table[idx(Isa::kAvx2)];
    install_avx512(r.table[idx(Isa::kAvx512)]);
    r.supported[idx(Isa::kAvx512)] = cpu_supports(Isa::kAvx512);
    r.table[idx(Isa::kAmx)] = r.table[idx(Isa::kAvx512)];
    amx::install(r.table[idx(Isa::kAmx)]);
    r.supported[idx(Isa::kAmx)] = cpu_supports(Isa::kAmx);
#endif
#if defined(EDGELLM_ARCH_ARM64)
    // NEON / dotprod / i8mm chain the same way (kernels/arm/arm_kernels.h).
    r.table[idx(Isa::kNeon)] = r.table[idx(Isa::kScalar)];
    install_neon(r.table[idx(Isa::kNeon)]);
    r.supported[idx(Isa::kNeon)] = cpu_supports(Isa::kNeon);
    r.table[idx(Isa::kDotprod)] = r.table[idx(Isa::kNeon)];
    install_dotprod(r.table[idx(Isa::kDotprod)]);
    r.supported[idx(Isa::kDotprod)] = cpu_supports(Isa::kDotprod);
    r.table[idx(Isa::kI8mm)] = r.table[idx(Isa::kDotprod)];
    install_i8mm(r.table[idx(Isa::kI8mm)]);
    r.supported[idx(Isa::kI8mm)] = cpu_supports(Isa::kI8mm);
#endif
    return r;
  }();
  return t;
}

Isa parse_isa(std::string_view name) {
  constexpr Isa all[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon, Isa::kDotprod, Isa::kI8mm, Isa::kAmx};
  for (Isa isa : all) {
    if (name == isa_name(isa)) return isa;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "EDGELLM_ISA='" + std::string(name) + "' is not an ISA (scalar, avx2, avx512, amx, neon, dotprod, i8mm)");
}

// EDGELLM_ISA, parsed once. A pin makes the process behave as if the CPU had nothing better:
// supported_isas() stops at the pinned ISA, so CI can exercise every lower path on one machine.
struct Pin {
  bool set = false;
  Isa isa = Isa::kScalar;
};

const Pin& pin() {
  static const Pin p = [] {
    Pin r;
    const char* env = std::getenv("EDGELLM_ISA");
    if (env != nullptr && *env != '\0') {
      r.isa = parse_isa(env);
      r.set = true;
      if (!tables().supported[idx(r.isa)]) {
        throw Error(ErrorCode::kUnsupported, std::string("EDGELLM_ISA requests ISA '") + isa_name(r.isa) +
                                                 "' but this CPU (or this build) cannot run it");
      }
    }
    return r;
  }();
  return p;
}

bool usable(Isa isa) {
  const Pin& p = pin();
  return tables().supported[idx(isa)] && (!p.set || idx(isa) <= idx(p.isa));
}

void require_usable(Isa isa, const char* origin) {
  if (!tables().supported[idx(isa)]) {
    throw Error(ErrorCode::kUnsupported, std::string(origin) + ": ISA '" + isa_name(isa) +
                                             "' is not supported by this CPU (or this build)");
  }
  if (!usable(isa)) {
    throw Error(ErrorCode::kUnsupported, std::string(origin) + ": ISA '" + isa_name(isa) +
                                             "' is above EDGELLM_ISA=" + isa_name(pin().isa));
  }
}

std::atomic<const KernelTable*> g_active{nullptr};
std::atomic<int> g_active_isa{-1};

// ISA coverage for the test run (Makefile test-unit, tests/kernels/isa_coverage.cpp): with
// EDGELLM_ISA_LOG=<file> set, every ISA whose kernel table was made active in this process (first
// use or set_active_isa) is appended to <file> at exit, one line per process
// ("isa-log: kernels_test_matmul scalar avx2 avx512"). One short O_APPEND write per process, so
// parallel test processes may share the file. Unset (apps): only the bit below is kept.
std::atomic<unsigned> g_activated{0};

// The program's base name from /proc/self/cmdline (no libc extension needed), or "?".
std::string program_name() {
  std::string name;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    for (int c; (c = std::fgetc(f)) != EOF && c != '\0';) name += static_cast<char>(c);
    std::fclose(f);
  }
  const size_t slash = name.rfind('/');
  if (slash != std::string::npos) name.erase(0, slash + 1);
  return name.empty() ? "?" : name;
}

void write_isa_log() {
  const char* path = std::getenv("EDGELLM_ISA_LOG");
  const unsigned bits = g_activated.load(std::memory_order_relaxed);
  if (path == nullptr || *path == '\0' || bits == 0) return;
  std::string line = "isa-log: " + program_name();
  for (int i = 0; i < kIsaCount; ++i) {
    if (bits & (1u << i)) line += std::string(" ") + isa_name(static_cast<Isa>(i));
  }
  line += "\n";
  if (FILE* f = std::fopen(path, "a")) {
    std::fwrite(line.data(), 1, line.size(), f);
    std::fclose(f);
  }
}

void note_activated(int isa) {
  static const bool registered = [] { return std::atexit(write_isa_log) == 0; }();
  (void)registered;
  g_activated.fetch_or(1u << isa, std::memory_order_relaxed);
}

const KernelTable* select_initial() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  if (const KernelTable* t = g_active.load(std::memory_order_acquire)) return t;
  Isa chosen = Isa::kScalar;
  for (Isa isa : supported_isas()) chosen = isa;  // lowest first: keep the last = best (or the pin)
  g_active_isa.store(idx(chosen), std::memory_order_relaxed);
  note_activated(idx(chosen));
  const KernelTable* t = &tables().table[idx(chosen)];
  g_active.store(t, std::memory_order_release);
  return t;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kNeon: return "neon";
    case Isa::kDotprod: return "dotprod";
    case Isa::kI8mm: return "i8mm";
    case Isa::kAmx: return "amx";
  }
  return "unknown";
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  const Tables& t = tables();
  for (int i = 0; i < kIsaCount; ++i) {
    if (t.supported[i] && usable(static_cast<Isa>(i))) out.push_back(static_cast<Isa>(i));
  }
  return out;
}

Isa active_isa() {
  active_table();
  return static_cast<Isa>(g_active_isa.load(std::memory_order_relaxed));
}

void set_active_isa(Isa isa) {
  require_usable(isa, "set_active_isa");
  active_table();  // make sure a later first use does not overwrite the pin
  g_active_isa.store(idx(isa), std::memory_order_relaxed);
  note_activated(idx(isa));
  g_active.store(&tables().table[idx(isa)], std::memory_order_release);
}

const KernelTable& active_table() {
  const KernelTable* t = g_active.load(std::memory_order_acquire);
  if (t == nullptr) t = select_initial();
  return *t;
}

}  // namespace edgellm::kernels
