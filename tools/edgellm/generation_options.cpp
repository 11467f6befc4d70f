#include "generation_options.h"

#include <chrono>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/json.h"
#include "device/power_mode.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocabulary.h"

namespace edgellm::cli {

void add_context_options(ArgParser& ap, ContextOptions* o) {
  ap.add_int("-t,--threads", &o->threads, "N", "threads for decoding; 0 = the power mode's, else big cores (default 0)", 0, 256);
  ap.add_int("-tb,--threads-batch", &o->threads_batch, "N",
             "threads for prompt processing; 0 = the power mode's, else --threads (default 0)", 0, 256);
  ap.add_string("--power", &o->power, "MODE",
                "performance, balanced or efficiency: threads, cores and worker priority per phase for this "
                "device (docs/device-fitness.md); default: none (threads as -t / -tb say)");
  ap.add_int("-c,--ctx-size", &o->ctx_size, "N", "context size in tokens; 0 = the model's, at most 4096 (default 0)", 0);
  ap.add_int("-b,--batch-size", &o->batch_size, "N", "prompt tokens per forward pass (default 512)", 1);
  ap.add_string("--repack", &o->repack, "MODE",
                "repack Q4_0/Q8_0/Q4_K weights into 16-row interleaved groups at load: auto (when the CPU has a kernel "
                "for them), on, off (default auto)");
}

void add_kv_type_options(ArgParser& ap, KvTypeOptions* kv) {
  ap.add_string("--kv-type", &kv->both, "TYPE", "KV cache element type of K and V: f16, f32, q8_0 or q4_0 (default f16)");
  ap.add_string("--kv-type-k,-ctk,--cache-type-k", &kv->k, "TYPE", "K cache type (overrides --kv-type for K)");
  ap.add_string("--kv-type-v,-ctv,--cache-type-v", &kv->v, "TYPE", "V cache type (overrides --kv-type for V)");
}

TensorType parse_kv_type(const std::string& name, const std::string& option) {
  if (name == "f16" || name == "F16") return TensorType::F16;
  if (name == "f32" || name == "F32") return TensorType::F32;
  if (name == "q8_0" || name == "Q8_0") return TensorType::Q8_0;
  if (name == "q4_0" || name == "Q4_0") return TensorType::Q4_0;
  throw Error(ErrorCode::kInvalidArgument, option + ": '" + name + "' is not one of f16, f32, q8_0, q4_0");
}

void apply_kv_types(const KvTypeOptions& kv, ContextParams* cp) {
  const TensorType both = parse_kv_type(kv.both, "--kv-type");
  cp->kv_type = kv.k.empty() ? both : parse_kv_type(kv.k, "--kv-type-k");
  const TensorType v = kv.v.empty() ? both : parse_kv_type(kv.v, "--kv-type-v");
  if (v != cp->kv_type) cp->kv_type_v = v;
}

ContextParams context_params(const ContextOptions& o) {
  ContextParams cp;
  cp.n_ctx = o.ctx_size;
  cp.n_batch = o.batch_size;
  cp.n_threads = o.threads;
  cp.n_threads_batch = o.threads_batch;
  apply_kv_types(o.kv, &cp);
  if (!o.power.empty()) apply_thread_plan(plan_threads(detect_this_device(), parse_power_mode(o.power)), cp);
  return cp;
}

ModelLoadParams model_load_params(const ContextOptions& o) {
  ModelLoadParams p;
  p.repack = parse_repack_mode(o.repack);
  return p;
}

void add_sampling_options(ArgParser& ap, SamplerParams* s, int64_t* seed) {
  ap.add_float("--temp", &s->temperature, "T", "temperature; 0 = greedy (default 0.8)", 0.0);
  ap.add_int("--top-k", &s->top_k, "K", "keep the K most likely tokens; 0 = off (default 40)", 0);
  ap.add_float("--top-p", &s->top_p, "P", "nucleus: smallest set with probability >= P; 1 = off (default 0.95)", 0.0, 1.0);
  ap.add_float("--min-p", &s->min_p, "P", "drop tokens below P x the top probability; 0 = off (default 0.05)", 0.0, 1.0);
  ap.add_float("--repeat-penalty", &s->repeat_penalty, "X", "penalise repeated tokens; 1 = off (default 1.0)", 1e-6);
  ap.add_int("--repeat-last-n", &s->penalty_last_n, "N", "penalty window in tokens; 0 = off, -1 = whole context (default 64)", -1);
  ap.add_float("--frequency-penalty", &s->frequency_penalty, "X", "subtract X per earlier occurrence (default 0)");
  ap.add_float("--presence-penalty", &s->presence_penalty, "X", "subtract X once if the token occurred (default 0)");
  ap.add_int64("--seed", seed, "N", "sampling seed; -1 = random (default -1)", -1, static_cast<int64_t>(UINT32_MAX));
}

void add_sampler_order_option(ArgParser& ap, SamplerParams* s) {
  ap.add_custom("--sampler-order", "LIST", "comma-separated stage order (default penalties,top_k,top_p,min_p,temperature)",
                [s](const std::string& v) {
                  s->order.clear();
                  std::stringstream ss(v);
                  for (std::string item; std::getline(ss, item, ',');) s->order.push_back(sampler_stage_from_name(item));
                });
}

void resolve_seed(int64_t* seed, SamplerParams* s) {
  if (*seed < 0) *seed = static_cast<int64_t>(std::random_device{}());
  s->seed = static_cast<uint64_t>(*seed);
}

void add_grammar_options(ArgParser& ap, GrammarOptions* g) {
  ap.add_string("--grammar", &g->grammar, "GBNF", "constrain the output to a GBNF grammar (llama.cpp syntax)");
  ap.add_string("--grammar-file", &g->grammar_file, "FILE", "constrain the output to the GBNF grammar in FILE");
  ap.add_string("--json-schema", &g->json_schema, "JSON", "constrain the output to JSON valid against this JSON Schema");
  ap.add_string("--json-schema-file", &g->json_schema_file, "FILE", "as --json-schema, the schema read from FILE");
}

std::shared_ptr<const grammar::CompiledGrammar> compile_grammar_options(const GrammarOptions& g, const Tokenizer& tok,
                                                                        double* compile_ms) {
  const int given = (!g.grammar.empty()) + (!g.grammar_file.empty()) + (!g.json_schema.empty()) + (!g.json_schema_file.empty());
  if (given == 0) return nullptr;
  require(given == 1, ErrorCode::kInvalidArgument,
          "give only one of --grammar, --grammar-file, --json-schema, --json-schema-file");
  std::string gbnf;
  if (!g.grammar.empty()) gbnf = g.grammar;
  if (!g.grammar_file.empty()) gbnf = read_text_file(g.grammar_file, "grammar file");
  if (!g.json_schema.empty() || !g.json_schema_file.empty()) {
    const std::string text = !g.json_schema.empty() ? g.json_schema : read_text_file(g.json_schema_file, "JSON Schema file");
    gbnf = grammar::json_schema_to_gbnf(Json::parse(text));
  }
  const auto vocab = grammar::TokenVocabulary::from_tokenizer(tok);
  const auto t0 = std::chrono::steady_clock::now();
  const grammar::TokenVocabulary* v = vocab.get();
  auto compiled = grammar::CompiledGrammar::compile(
      grammar::parse_gbnf(gbnf, [v](std::string_view t) { return v->find_token(t); }), vocab);
  if (compile_ms != nullptr) {
    *compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  return compiled;
}

}  // namespace edgellm::cli
