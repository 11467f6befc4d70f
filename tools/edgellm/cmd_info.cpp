// `edgellm info MODEL`: what a GGUF file holds and what running it will cost in memory.
//   metadata (long arrays summarised), hyper-parameters, the tensor table, totals per type,
//   and the memory plan of engine/memory_plan.h (the formula the Context and the planner use). --json prints the same as one JSON object.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "engine/forward.h"
#include "engine/memory_plan.h"
#include "gguf/gguf_reader.h"
#include "kv/kv_cache.h"
#include "model/model.h"
#include "platform/cpu_topology.h"

namespace edgellm::cli {
namespace {

// Arrays up to this many elements are printed in full; longer ones as "[type x N]".
constexpr uint64_t kMaxInlineArray = 8;

bool is_unsigned(gguf::ValueType t) {
  return t == gguf::ValueType::kUint8 || t == gguf::ValueType::kUint16 || t == gguf::ValueType::kUint32 ||
         t == gguf::ValueType::kUint64;
}

Json scalar_json(const gguf::Value& v) {
  using gguf::ValueType;
  if (v.type == ValueType::kString) return Json(std::string(v.str));
  if (v.type == ValueType::kBool) return Json(v.u != 0);
  if (v.is_float()) return Json(v.f);
  if (is_unsigned(v.type)) return Json(v.u);
  return Json(v.i);
}

// Every element of an array as a JSON array.
Json array_json(const gguf::Value& v) {
  using gguf::ValueType;
  Json a = Json::array();
  if (v.array_type == ValueType::kString) {
    for (std::string_view s : v.string_elements()) a.push_back(Json(std::string(s)));
    return a;
  }
  for (uint64_t i = 0; i < v.array_size; ++i) {
    if (v.array_type == ValueType::kFloat32 || v.array_type == ValueType::kFloat64) {
      a.push_back(Json(v.array_float(i)));
    } else if (v.array_type == ValueType::kBool) {
      a.push_back(Json(v.array_int(i) != 0));
    } else {
      a.push_back(Json(v.array_int(i)));
    }
  }
  return a;
}

std::string summary(const gguf::Value& v) {
  if (v.type != gguf::ValueType::kArray) {
    if (v.type == gguf::ValueType::kString) {
      std::string s(v.str.substr(0, 120));
      for (auto& c : s) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
      }
      return "\"" + s + (v.str.size() > 120 ? "...\" (" + std::to_string(v.str.size()) + " bytes)" : "\"");
    }
    return scalar_json(v).dump();
  }
  if (v.array_size > kMaxInlineArray) {
    return std::string("[") + gguf::value_type_name(v.array_type) + " x " + std::to_string(v.array_size) + "]";
  }
  return array_json(v).dump();
}

std::string human(double bytes) {
  char buf[64];
  if (bytes >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  } else if (bytes >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / (1024.0 * 1024));
  } else if (bytes >= 1024.0) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

// The default thread count and the cores it counts (platform/cpu_topology.h).
Json threads_json() {
  const CpuTopology t = detect_cpu_topology();
  Json cores = Json::array();
  for (const int c : t.fast_cores) cores.push_back(c);
  Json j = Json::object();
  j.set("default", default_thread_count());
  j.set("online", static_cast<int>(t.online.size()));
  j.set("cores", std::move(cores));
  j.set("rule", std::to_string(t.n_fast()) + " of " + std::to_string(t.online.size()) +
                    " online cores: every core not in the slowest cluster");
  return j;
}

int run_info(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  int32_t n_ctx = 0;
  int32_t n_batch = ContextParams{}.n_batch;
  int32_t n_parallel = 1;
  KvTypeOptions kv_types;
  std::string repack_name = "auto";
  bool json = false;
  ModelOptions model_opt;
  ArgParser ap("info", "(MODEL | -m MODEL) [-c N] [-b N] [-np N] [--kv-type f16|f32|q8_0|q4_0] [-ctk T] [-ctv T] "
                       "[--repack MODE] [--json]");
  ap.allow_positionals(&positionals, "MODEL");
  add_model_options(ap, &model_opt, "or as the argument");
  ap.add_int(shared_option("ctx-size"), &n_ctx, 0, 1 << 24, "of the memory plan; default 0, capped at 4096");
  ap.add_int(shared_option("batch-size"), &n_batch, 1, 1 << 16, "of the scratch estimate; default 512");
  ap.add_int(shared_option("parallel"), &n_parallel, 1, 1024, "KV for each; default 1");
  ap.add_string(shared_option("repack"), &repack_name, "whether the plan assumes repacked weights; default auto");
  add_kv_type_options(ap, &kv_types);
  ap.add_flag(shared_option("json"), &json, "one object");
  if (!ap.parse(args)) return 0;
  require(positionals.size() + (model_opt.model.empty() ? 0 : 1) == 1, ErrorCode::kInvalidArgument,
          "info needs exactly one MODEL (as the argument or -m MODEL)\n" + ap.usage());
  if (model_opt.model.empty()) model_opt.model = positionals[0];
  ContextParams kv_cp;
  apply_kv_types(kv_types, &kv_cp);  // validated before the model is read
  (void)parse_repack_mode(repack_name);
  const std::string model_path = resolve_model_path(model_opt);

  auto file = gguf::GgufFile::open(model_path);
  // Everything read from `f` is extracted before `file` moves into Model::from_gguf below (on
  // failure the file is gone), so `f` is not used after that call.
  const gguf::GgufFile& f = *file;
  Json out = Json::object();
  out.set("path", model_path);
  out.set("file_bytes", static_cast<uint64_t>(f.file_size()));
  out.set("gguf_version", static_cast<int64_t>(f.version()));
  out.set("alignment", static_cast<int64_t>(f.alignment()));

  Json meta = Json::object();       // text summaries for the table
  Json meta_json = Json::object();  // typed values for --json; long arrays as {type, length}
  for (const auto& kv : f.metadata()) {
    meta.set(std::string(kv.key), Json(summary(kv.value)));
    const gguf::Value& v = kv.value;
    if (v.type != gguf::ValueType::kArray) {
      meta_json.set(std::string(kv.key), scalar_json(v));
    } else if (v.array_size > kMaxInlineArray) {
      Json a = Json::object();
      a.set("array_type", gguf::value_type_name(v.array_type));
      a.set("length", static_cast<uint64_t>(v.array_size));
      meta_json.set(std::string(kv.key), a);
    } else {
      meta_json.set(std::string(kv.key), array_json(v));
    }
  }

  Json tensors = Json::array();
  std::map<std::string, std::pair<int64_t, uint64_t>> per_type;  // name -> (count, bytes)
  for (const auto& t : f.tensors()) {
    Json row = Json::object();
    row.set("name", std::string(t.name));
    row.set("type", tensor_type_name(t.type));
    Json shape = Json::array();
    for (int d = 0; d < t.n_dims; ++d) shape.push_back(Json(t.ne[d]));
    row.set("shape", shape);
    row.set("bytes", static_cast<uint64_t>(t.n_bytes));
    tensors.push_back(row);
    auto& agg = per_type[tensor_type_name(t.type)];
    ++agg.first;
    agg.second += t.n_bytes;
  }

  // The model part: may fail for files that are not a supported model (vocab-only files, other
  // architectures); the rest of the report is still useful then.
  std::string model_error;
  std::unique_ptr<Model> model;
  try {
    model = Model::from_gguf(std::move(file));
  } catch (const Error& e) {
    model_error = e.what();
  }

  Json plan = Json::object();
  std::string hparams_text;
  MemoryPlan mp;
  if (model) {
    hparams_text = describe(model->hparams());
    // The one memory formula (engine/memory_plan.h), as the Context and the planner use it:
    // this file under --ctx / --batch / --parallel / --kv-type, repacked as --repack says.
    ContextParams cp;
    cp.n_ctx = n_ctx;
    cp.n_batch = n_batch;
    cp.n_seq_max = n_parallel;
    cp.kv_type = kv_cp.kv_type;
    cp.kv_type_v = kv_cp.kv_type_v;
    mp = plan_memory(*model, cp, parse_repack_mode(repack_name));
    n_ctx = mp.n_ctx;
    plan = mp.to_json();
    const size_t per_token = KvCache::bytes_per_token(kv_cache_params(model->hparams(), cp));
    plan.set("kv_bytes_per_token", static_cast<uint64_t>(per_token));
  }

  if (json) {
    out.set("metadata", meta_json);
    if (model) out.set("hparams", hparams_text);
    if (!model_error.empty()) out.set("model_error", model_error);
    out.set("tensors", tensors);
    Json totals = Json::object();
    for (const auto& [name, agg] : per_type) {
      Json t = Json::object();
      t.set("count", agg.first);
      t.set("bytes", static_cast<uint64_t>(agg.second));
      totals.set(name, t);
    }
    out.set("totals_per_type", totals);
    if (model) out.set("memory", plan);
    out.set("threads", threads_json());
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }

  std::printf("file: %s (%s, GGUF v%u, alignment %u)\n\nmetadata (%zu keys):\n", model_path.c_str(),
              human(static_cast<double>(out.at("file_bytes").as_number())).c_str(),
              static_cast<unsigned>(out.at("gguf_version").as_int()), static_cast<unsigned>(out.at("alignment").as_int()),
              meta.size());
  for (const auto& [k, v] : meta.as_object()) std::printf("  %s: %s\n", k.c_str(), v.as_string().c_str());
  if (model) {
    std::printf("\nmodel: %s\n", hparams_text.c_str());
  } else {
    std::printf("\nmodel: not loadable: %s\n", model_error.c_str());
  }
  std::printf("\ntensors (%zu):\n  %-36s %-6s %-22s %12s\n", tensors.size(), "name", "type", "shape", "bytes");
  for (const auto& t : tensors.as_array()) {
    std::printf("  %-36s %-6s %-22s %12" PRIu64 "\n", t.at("name").as_string().c_str(), t.at("type").as_string().c_str(),
                t.at("shape").dump().c_str(), static_cast<uint64_t>(t.at("bytes").as_number()));
  }
  std::printf("\ntotals per type:\n");
  for (const auto& [name, agg] : per_type) {
    std::printf("  %-6s %5" PRId64 " tensors  %s\n", name.c_str(), agg.first, human(static_cast<double>(agg.second)).c_str());
  }
  if (model) {
    auto mib = [](size_t b) { return human(static_cast<double>(b)); };
    std::printf("\nmemory plan (n_ctx %d x %d sequences, kv %s/%s (K/V), batch %d, %d threads):\n", mp.n_ctx,
                mp.n_seq_max, tensor_type_name(mp.kv_type), tensor_type_name(mp.kv_type_v), mp.n_batch, mp.n_threads);
    std::printf("  weights read by the forward pass %12s  (%s repacked into anonymous memory; file maps %s)\n",
                mib(mp.weights_touched).c_str(), mib(mp.weights_repacked).c_str(), mib(mp.weights_mapped_file).c_str());
    std::printf("  KV cache (%d blocks)           %12s  (%s per token)\n", mp.kv_blocks, mib(mp.kv).c_str(),
                human(plan.at("kv_bytes_per_token").as_number()).c_str());
    std::printf("  scratch                        %12s\n", mib(mp.scratch).c_str());
    std::printf("  logits rows                    %12s\n", mib(mp.logits).c_str());
    std::printf("  tokenizer                      %12s\n", mib(mp.tokenizer).c_str());
    std::printf("  runtime                        %12s\n", mib(mp.runtime).c_str());
    std::printf("  total                          %12s\n", mib(mp.total()).c_str());
  }
  const Json threads = threads_json();
  std::printf("\nthreads: %d by default, decode and prefill (%s)\n", static_cast<int>(threads.at("default").as_int()),
              threads.at("rule").as_string().c_str());
  return 0;
}

const CommandRegistration kInfoRegistration("info", "show a GGUF model's metadata, tensors and memory plan", run_info);

}  // namespace
}  // namespace edgellm::cli
