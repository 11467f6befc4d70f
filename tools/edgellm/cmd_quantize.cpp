// `edgellm quantize IN.gguf OUT.gguf TYPE [--rule 'REGEX=type' ...] [--rules-file F] [--threads N]
// [--allow-requantize] [--pure] [--imatrix FILE]`: converts a model's weight matrices to TYPE (a
// llama.cpp file type such as Q4_K_M, or a plain tensor type such as q8_0), optionally overriding
// single tensors with rules, with importance-weighted block searches given an imatrix. Prints one
// line per tensor and a total; the output appears only when complete.
// With --target-size SIZE|TYPE or --target-bpw X (the mixed recipe): measures every matrix's
// sensitivity per type on --eval-text (src/tools/quant/tensor_sensitivity.h; or reads a saved
// table), chooses per-tensor types under the budget (src/tools/quant/recipe_search.h), reports the
// choices and the abnormal layers, then writes the file with those types (TYPE names it).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "interrupt.h"
#include "core/atomic_file.h"
#include "progress.h"
#include "core/error.h"
#include "core/json.h"
#include "gguf/gguf_reader.h"
#include "kernels/tensor_type.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"
#include "tools/eval/perplexity.h"
#include "tools/quant/mixed_recipe.h"
#include "tools/quant/tensor_sensitivity.h"
#include "tools/quant/imatrix.h"
#include "tools/quant/quant_rules.h"
#include "tools/quant/quantize_model.h"

namespace edgellm::cli {
namespace {

std::string read_rules_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, "cannot open rules file '" + path + "': " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string human_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  } else if (b >= 1024.0 * 1024) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  }
  return buf;
}

std::vector<TensorType> parse_type_list(const std::string& text, const std::string& what) {
  std::vector<TensorType> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    const auto t = tensor_type_from_name(item);
    require(t.has_value() && tensor_type_traits(*t).is_weight_type && tensor_type_traits(*t).in_files,
            ErrorCode::kInvalidArgument, what + ": '" + item + "' is not a tensor type (q4_0, q4_K, q6_K, ...)");
    out.push_back(*t);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// What the mixed recipe needs from the command line.
struct RecipeOptions {
  std::string target_size, target_bpw;
  std::string eval_text, candidates, measure, save_sensitivity, load_sensitivity, report, objective = "kld";
  int32_t eval_ctx = 512, eval_chunks = -1;
  bool active() const { return !target_size.empty() || !target_bpw.empty(); }
};

// The sensitivity table: read from --load-sensitivity, or measured on the float model IN.
quant::SensitivityTable sensitivity(const std::string& in_path, const RecipeOptions& o, const quant::Imatrix* imatrix,
                                    int32_t threads) {
  if (!o.load_sensitivity.empty()) {
    std::printf("sensitivity: read from '%s'\n", o.load_sensitivity.c_str());
    return quant::sensitivity_from_json(Json::parse(read_text_file(o.load_sensitivity, "sensitivity file")));
  }
  require(!o.eval_text.empty(), ErrorCode::kInvalidArgument,
          "--target-size / --target-bpw measure on a text: give --eval-text FILE (or --load-sensitivity FILE)");
  ModelLoadParams lp;
  lp.repack = RepackMode::kOff;  // the float views are swapped one matrix at a time
  lp.pack_file = PackFileMode::kOff;
  auto model = Model::load(in_path, lp);
  const auto tokenizer = Tokenizer::from_gguf(model->gguf());
  const std::vector<int32_t> tokens = eval::tokenize_for_perplexity(*tokenizer, read_text_file(o.eval_text, "eval text"));
  quant::SensitivityParams sp;
  if (!o.candidates.empty()) sp.types = parse_type_list(o.candidates, "--candidates");
  if (!o.measure.empty()) sp.measure = parse_type_list(o.measure, "--measure-types");
  sp.eval.n_ctx = o.eval_ctx;
  sp.eval.n_batch = o.eval_ctx;
  sp.eval.n_threads = threads;
  sp.eval.max_chunks = o.eval_chunks;
  sp.eval.cancel = interrupt_flag();
  sp.imatrix = imatrix;
  ProgressDisplay progress("sensitivity");
  sp.progress = progress.callback();
  std::printf("sensitivity: %zu tokens of '%s', chunks of %d; every matrix alone in each candidate type\n",
              tokens.size(), o.eval_text.c_str(), o.eval_ctx);
  std::fflush(stdout);
  quant::SensitivityTable t = quant::measure_sensitivity(*model, tokens, tokenizer->add_bos(), tokenizer->bos(), sp);
  std::printf("sensitivity: %lld passes over %d chunks (%lld scored positions), %.1f s; base PPL %.4f\n",
              static_cast<long long>(t.n_passes), t.n_chunk, static_cast<long long>(t.n_scored), t.seconds, t.base_ppl);
  if (!o.save_sensitivity.empty()) {
    write_file_atomic(o.save_sensitivity, quant::sensitivity_to_json(t).dump(1) + "\n");
    std::printf("sensitivity: saved to '%s'\n", o.save_sensitivity.c_str());
  }
  return t;
}

// The table, the choices and the abnormal tensors / layers, on stdout (and as JSON to `report`).
void print_recipe(const quant::SensitivityTable& t, const quant::MixedRecipePlan& plan, const std::string& report) {
  std::vector<TensorType> types;
  for (const auto& ts : t.tensors) {
    for (const auto& c : ts.costs) {
      if (std::find(types.begin(), types.end(), c.type) == types.end()) types.push_back(c.type);
    }
  }
  std::printf("\nKLD with one matrix quantized (x 1e-6; '~' estimated from the weight error), and the choice:\n%-28s",
              "tensor");
  for (TensorType q : types) std::printf(" %9s", tensor_type_name(q));
  std::printf("  choice\n");
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const auto& ts = t.tensors[i];
    std::printf("%-28s", ts.name.c_str());
    for (TensorType q : types) {
      const quant::TypeCost* c = ts.find(q);
      if (c == nullptr) {
        std::printf(" %9s", "-");
      } else {
        std::printf(" %8.1f%s", c->kld * 1e6, c->measured ? " " : "~");
      }
    }
    std::printf("  %s\n", tensor_type_name(plan.recipe.choices[i].type));
  }
  std::printf("predicted (sums over matrices): KLD %.6f, PPL %.4f; file %llu bytes", plan.recipe.predicted_kld,
              t.base_ppl * std::exp(plan.recipe.predicted_nll_delta), static_cast<unsigned long long>(plan.file_bytes));
  if (plan.target_file_bytes > 0) std::printf(" (target %llu)", static_cast<unsigned long long>(plan.target_file_bytes));
  std::printf(", %.3f bits per weight\n", plan.bits_per_weight());
  const quant::AbnormalReport& a = plan.abnormal;
  std::printf("abnormal layers (KLD at %s > %.0fx the median):", tensor_type_name(a.reference), quant::kAbnormalRatio);
  if (a.tensors.empty() && a.layers.empty()) std::printf(" none");
  std::printf("\n");
  for (const auto& l : a.layers) {
    std::printf("  layer %d: KLD %.3g summed over its matrices = %.1fx the median layer (%.3g)\n", l.layer, l.kld,
                l.kld / l.median, l.median);
  }
  for (const auto& x : a.tensors) {
    std::printf("  %s: KLD %.3g = %.1fx the median %s (%.3g)\n", x.name.c_str(), x.kld, x.kld / x.median, x.kind.c_str(),
                x.median);
  }
  std::printf("per-layer KLD at %s:", tensor_type_name(a.reference));
  for (size_t l = 0; l < a.layer_kld.size(); ++l) std::printf(" %zu:%.3g", l, a.layer_kld[l]);
  std::printf("\n");
  if (report.empty()) return;
  Json j = Json::object();
  j.set("predicted_kld", plan.recipe.predicted_kld);
  j.set("predicted_ppl", t.base_ppl * std::exp(plan.recipe.predicted_nll_delta));
  j.set("file_bytes", static_cast<uint64_t>(plan.file_bytes));
  j.set("target_file_bytes", static_cast<uint64_t>(plan.target_file_bytes));
  j.set("bits_per_weight", plan.bits_per_weight());
  Json choices = Json::array();
  for (const auto& c : plan.recipe.choices) {
    Json o = Json::object();
    o.set("tensor", c.name);
    o.set("type", tensor_type_name(c.type));
    o.set("kld", c.kld);
    choices.push_back(o);
  }
  j.set("choices", choices);
  Json ab = Json::object();
  ab.set("reference_type", tensor_type_name(a.reference));
  ab.set("ratio", quant::kAbnormalRatio);
  Json layers = Json::array(), tensors = Json::array(), per_layer = Json::array();
  for (const auto& l : a.layers) {
    Json o = Json::object();
    o.set("layer", l.layer);
    o.set("kld", l.kld);
    o.set("median", l.median);
    layers.push_back(o);
  }
  for (const auto& x : a.tensors) {
    Json o = Json::object();
    o.set("tensor", x.name);
    o.set("kld", x.kld);
    o.set("median", x.median);
    tensors.push_back(o);
  }
  for (double v : a.layer_kld) per_layer.push_back(v);
  ab.set("layers", layers);
  ab.set("tensors", tensors);
  ab.set("layer_kld", per_layer);
  j.set("abnormal", ab);
  j.set("sensitivity", quant::sensitivity_to_json(t));
  write_file_atomic(report, j.dump(1) + "\n");
  std::printf("report: '%s'\n", report.c_str());
}

int quantize_command(const std::vector<std::string>& args) {
  std::vector<std::string> positionals;
  std::vector<std::string> rule_texts;
  std::string rules_file;
  int32_t threads = 0;
  bool allow_requantize = false;
  bool pure = false;
  std::string imatrix_path;
  RecipeOptions ro;
  ArgParser ap("quantize", "IN.gguf OUT.gguf TYPE [options]\n\nTYPE: " + quant::file_type_names());
  ap.allow_positionals(&positionals, "IN OUT TYPE");
  ap.add_strings("--rule", &rule_texts, "REGEX=type",
                 "give tensors whose name matches REGEX this type (first matching rule wins; repeatable)");
  ap.add_string("--rules-file", &rules_file, "FILE", "rules, one REGEX=type per line, # comments (after --rule ones)");
  ap.add_int(shared_option("threads"), &threads, 0, 1024, "quantization threads; 0 = all cores (default)");
  ap.add_flag("--allow-requantize", &allow_requantize, "accept already-quantized inputs other than q8_0");
  ap.add_flag("--pure", &pure, "no mix adjustments: output/attn_v/ffn_down get TYPE too");
  ap.add_string("--imatrix", &imatrix_path, "FILE",
                "importance matrix (edgellm imatrix / llama-imatrix, GGUF or .dat): weighted block searches");
  ap.add_string("--target-size", &ro.target_size, "SIZE|TYPE",
                "mixed recipe: per-tensor types for a file of at most SIZE bytes (K/M/G suffixes) or TYPE's size (Q4_K_M)");
  ap.add_string("--target-bpw", &ro.target_bpw, "X", "mixed recipe: tensor data of at most X bits per weight");
  ap.add_string("--eval-text", &ro.eval_text, "FILE", "mixed recipe: text the sensitivity is measured on");
  ap.add_int("--eval-ctx", &ro.eval_ctx, "N", "mixed recipe: tokens per evaluation chunk (default 512)", 4, 1 << 20);
  ap.add_int("--eval-chunks", &ro.eval_chunks, "N", "mixed recipe: evaluate at most N chunks (-1 = all)", -1, 1 << 30);
  ap.add_string("--candidates", &ro.candidates, "T1,T2,...",
                "mixed recipe: types to choose from (default q4_0,q4_1,q5_0,q5_1,q8_0,q4_K,q5_K,q6_K)");
  ap.add_string("--measure-types", &ro.measure, "T1,...",
                "mixed recipe: measure only these types' KLD; the others are estimated from the weight error");
  ap.add_string("--save-sensitivity", &ro.save_sensitivity, "FILE", "mixed recipe: save the measured table (JSON)");
  ap.add_string("--load-sensitivity", &ro.load_sensitivity, "FILE", "mixed recipe: use a saved table instead of measuring");
  ap.add_string("--objective", &ro.objective, "kld|kld+nll",
                "mixed recipe: minimise the summed KLD (default), or KLD + the change of the text's log-likelihood");
  ap.add_string("--report", &ro.report, "FILE", "mixed recipe: write choices, abnormal layers and the table (JSON)");
  if (!ap.parse(args)) return 0;
  require(ro.target_size.empty() || ro.target_bpw.empty(), ErrorCode::kInvalidArgument,
          "give --target-size or --target-bpw, not both");
  require(!ro.active() || (rule_texts.empty() && rules_file.empty()), ErrorCode::kInvalidArgument,
          "--rule / --rules-file and --target-size / --target-bpw cannot be combined: the recipe chooses every matrix");
  require(positionals.size() == 3, ErrorCode::kInvalidArgument,
          "expected IN.gguf OUT.gguf TYPE, got " + std::to_string(positionals.size()) + " positional argument(s)");

  quant::QuantizeParams params;
  params.ftype = quant::file_type_from_name(positionals[2]);
  for (const auto& r : rule_texts) params.rules.push_back(quant::parse_type_rule(r));
  if (!rules_file.empty()) {
    auto more = quant::parse_type_rules(read_rules_file(rules_file), rules_file);
    for (auto& r : more) params.rules.push_back(std::move(r));
  }
  params.n_threads = threads;
  params.allow_requantize = allow_requantize;
  params.pure = pure;
  quant::Imatrix imatrix;
  if (!imatrix_path.empty()) {
    imatrix = quant::read_imatrix(imatrix_path);
    params.imatrix = &imatrix;
    params.imatrix_path = imatrix_path;
    std::printf("imatrix: %zu entries from '%s' (%d chunks)\n", imatrix.entries.size(), imatrix_path.c_str(),
                imatrix.chunk_count);
  }
  params.cancel = interrupt_flag();
  // First Ctrl-C: stop after the current chunk (or pass) and remove the temporary file.
  const SigintScope sigint;
  if (ro.active()) {
    const quant::SizeTarget target =
        ro.target_size.empty() ? quant::parse_target_bpw(ro.target_bpw) : quant::parse_target_size(ro.target_size);
    quant::SensitivityTable table;
    try {
      table = sensitivity(positionals[0], ro, params.imatrix, threads);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kCancelled) throw;
      std::fprintf(stderr, "\nedgellm quantize: interrupted; '%s' was not written\n", positionals[1].c_str());
      return 130;
    }
    const auto in = gguf::GgufFile::open(positionals[0]);
    const quant::MixedRecipePlan plan =
        quant::plan_mixed_recipe(*in, table, params, target, quant::parse_recipe_objective(ro.objective));
    print_recipe(table, plan, ro.report);
    params.tensor_types = plan.tensor_types;
  }
  params.on_warning = [](const std::string& w) { std::fprintf(stderr, "edgellm quantize: warning: %s\n", w.c_str()); };
  ProgressDisplay bar("quantize");
  params.on_tensor = [&bar](const quant::TensorReport& r) {
    bar.clear();  // the tensor's line on stdout, then the bar again on stderr
    std::printf("[%4zu/%4zu] %-32s %-16s %6s -> %-6s %10s -> %10s", r.index + 1, r.n_tensors, r.name.c_str(),
                r.shape.c_str(), tensor_type_name(r.from), tensor_type_name(r.to),
                human_bytes(static_cast<double>(r.bytes_in)).c_str(), human_bytes(static_cast<double>(r.bytes_out)).c_str());
    if (r.weighted) std::printf("   imatrix");
    if (r.fallback) {
      std::printf("   note: %s", r.reason.c_str());
    } else if (!r.reason.empty() && r.from != r.to) {
      std::printf("   (%s)", r.reason.c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
    bar.update(static_cast<double>(r.index + 1) / static_cast<double>(r.n_tensors), r.name);
  };

  std::printf("edgellm quantize: %s -> %s as %s (general.file_type %u)\n", positionals[0].c_str(),
              positionals[1].c_str(), quant::file_type_name(params.ftype), static_cast<unsigned>(params.ftype));
  quant::QuantizeSummary s;
  try {
    s = quant::quantize_model(positionals[0], positionals[1], params);
    bar.finish();
  } catch (const Error& e) {
    bar.clear();
    if (e.code() == ErrorCode::kCancelled) {
      std::fprintf(stderr, "edgellm quantize: interrupted; '%s' was not written\n", positionals[1].c_str());
      return 130;  // 128 + SIGINT
    }
    if (std::string(e.what()).find(std::strerror(ENOSPC)) != std::string::npos) {
      std::fprintf(stderr, "edgellm quantize: error: no space left on device while writing '%s'; it was not written\n",
                   positionals[1].c_str());
      return 1;
    }
    throw;
  }
  std::printf("tensor data: %s -> %s, %.3f bits per weight (%lld weights); file %s\n",
              human_bytes(static_cast<double>(s.bytes_in)).c_str(), human_bytes(static_cast<double>(s.bytes_out)).c_str(),
              s.bits_per_weight(), static_cast<long long>(s.n_weight_elements),
              human_bytes(static_cast<double>(s.file_bytes)).c_str());
  std::printf("%zu of %zu tensors converted, %zu fell back to another type, %.2f s\n", s.n_quantized, s.n_tensors,
              s.n_fallback, s.seconds);
  return 0;
}

const CommandRegistration kQuantizeRegistration("quantize", "convert a GGUF model to another weight type (q4_0 ... Q4_K_M)",
                                        quantize_command);

}  // namespace
}  // namespace edgellm::cli
