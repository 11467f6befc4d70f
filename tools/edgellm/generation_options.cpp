#include "generation_options.h"

#include <sys/stat.h>

#include <cstdio>
#include <chrono>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/json.h"
#include "device/power_mode.h"
#include "generation/draft_model_drafter.h"
#include "registry/model_registry.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema.h"
#include "grammar/token_vocabulary.h"

namespace edgellm::cli {

void add_context_options(ArgParser& ap, ContextOptions* o, bool with_ctx_size) {
  ap.add_int(shared_option("threads"), &o->threads, 0, 256, "for decoding; default 0: the power mode's, else big cores");
  ap.add_int(shared_option("threads-batch"), &o->threads_batch, 0, 256, "default 0");
  ap.add_string(shared_option("power"), &o->power, "docs/device-fitness.md; default: none (threads as -t / -tb say)");
  if (with_ctx_size) ap.add_int(shared_option("ctx-size"), &o->ctx_size, 0, 1 << 24, "default 0");
  ap.add_int(shared_option("batch-size"), &o->batch_size, 1, 1 << 20, "default 512");
  ap.add_string(shared_option("repack"), &o->repack, "default auto");
}

void add_kv_type_options(ArgParser& ap, KvTypeOptions* kv) {
  ap.add_string(shared_option("kv-type"), &kv->both, "default f16");
  ap.add_string(shared_option("kv-type-k"), &kv->k);
  ap.add_string(shared_option("kv-type-v"), &kv->v);
}

void add_model_options(ArgParser& ap, ModelOptions* m, const std::string& note) {
  ap.add_string(shared_option("model"), &m->model, note);
  ap.add_string(shared_option("registry"), &m->registry);
}

bool registry_exists(const std::string& dir) {
  struct stat st {};
  return ::stat((dir + "/manifests").c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

void require_registry(const std::string& dir) {
  require(registry_exists(dir), ErrorCode::kIo,
          "--registry: no model registry at '" + dir + "' (edgellm registry add / install creates one)");
}

std::string resolve_model_path(const ModelOptions& m) {
  require(!m.model.empty(), ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  if (m.registry.empty()) return m.model;
  // A registry is read, never created, by the commands that load a model from it.
  require_registry(m.registry);
  ModelRegistry registry(m.registry);
  require(registry.resolve(m.model).has_value(), ErrorCode::kInvalidArgument,
          "--registry: '" + m.model + "' is not installed in " + m.registry + " (see edgellm registry list --registry " +
              m.registry + ")");
  // The current (or named) version, re-hashed unless unchanged since its last verification.
  return registry.path_for_load(m.model);
}

void warn_past_training_context(const char* command, const Model& model, int32_t n_ctx) {
  const int32_t trained = model.hparams().n_ctx_train;
  if (trained > 0 && n_ctx > trained) {
    std::fprintf(stderr,
                 "edgellm %s: warning: the context (%d tokens) is longer than the model was trained on (%d); "
                 "text past position %d is likely to degrade\n",
                 command, n_ctx, trained, trained);
  }
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
  ap.add_custom(shared_option("seed"), [seed](const std::string& v) {
    *seed = parse_int(v, "--seed", -1, static_cast<int64_t>(UINT32_MAX));
  }, "of the sampler; -1 = random (default -1)");
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

void add_speculation_options(ArgParser& ap, SpeculationOptions* o) {
  ap.add_string("--spec", &o->mode, "MODE",
                "speculative decoding: off (default), ngram (drafts looked up in the prompt and output), "
                "draft (drafts from -md); the output is the same, only faster or slower");
  add_model_draft_option(ap, &o->model_draft,
                         "draft model for --spec draft (implies it): a smaller or lower-bit model with the same vocabulary");
  ap.add_int("--draft-max", &o->draft_max, "N",
             "tokens drafted per verify forward, 1.." + std::to_string(SpeculationParams::kMaxDraft) + " (default " +
                 std::to_string(SpeculationParams{}.draft_max) + "; fewer while drafts are rejected)",
             1, SpeculationParams::kMaxDraft);
}

void add_model_draft_option(ArgParser& ap, std::string* path, const std::string& help) {
  ap.add_string("-md,--model-draft", path, "FILE", help);
}

SpeculationParams speculation_params(const SpeculationOptions& o) {
  SpeculationParams sp;
  sp.draft_max = o.draft_max;
  const std::string mode = o.mode.empty() ? (o.model_draft.empty() ? "off" : "draft") : o.mode;
  try {
    sp.mode = speculation_mode_from_name(mode);
  } catch (const Error&) {
    throw Error(ErrorCode::kInvalidArgument, "--spec: unknown mode '" + mode + "' (expected off, ngram or draft)");
  }
  if (sp.mode == SpeculationMode::kDraft) {
    require(!o.model_draft.empty(), ErrorCode::kInvalidArgument, "--spec draft needs a draft model (-md FILE)");
  } else {
    require(o.model_draft.empty(), ErrorCode::kInvalidArgument,
            "-md/--model-draft applies to --spec draft (not --spec " + mode + ")");
  }
  return sp;
}

std::unique_ptr<Model> load_draft_model(const SpeculationOptions& o, const Model& target, const ModelLoadParams& load) {
  if (speculation_params(o).mode != SpeculationMode::kDraft) return nullptr;
  std::unique_ptr<Model> draft = Model::load(o.model_draft, load);
  try {
    check_same_vocabulary(*draft, target);
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, "-md '" + o.model_draft + "': " + e.what());
  }
  return draft;
}

std::string speculation_stats_line(const SpeculationParams& sp, const SpeculationStats& st) {
  if (sp.mode == SpeculationMode::kOff) return {};
  char line[256];
  std::snprintf(line, sizeof line,
                "speculation:   %s, k <= %d: %d drafted, %d accepted (%.1f %%), %.2f tokens per forward (%d forwards, "
                "%d verifying)\n",
                speculation_mode_name(sp.mode), sp.draft_max, st.drafted, st.accepted, 100.0 * st.acceptance_rate(),
                st.tokens_per_forward(), st.forwards, st.verify_forwards);
  return line;
}

Json speculation_stats_json(const SpeculationParams& sp, const SpeculationStats& st) {
  Json sj = Json::object();
  sj.set("mode", speculation_mode_name(sp.mode));
  sj.set("draft_max", static_cast<int>(sp.draft_max));
  sj.set("drafted", static_cast<int>(st.drafted));
  sj.set("accepted", static_cast<int>(st.accepted));
  sj.set("acceptance_rate", st.acceptance_rate());
  sj.set("forwards", static_cast<int>(st.forwards));
  sj.set("tokens_per_forward", st.tokens_per_forward());
  return sj;
}

}  // namespace edgellm::cli
