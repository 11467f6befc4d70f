// Command-line options shared by the sub-commands that load a model (run, chat, serve, info,
// perplexity, ...): the model and registry, the context shape (threads, context size, batch size,
// KV cache type) and the sampler settings. Each command registers them on its own ArgParser
// from the shared catalogue (cli_args.h), so names, ranges and help texts stay identical.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cli_args.h"
#include "core/json.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "model/model.h"
#include "grammar/compiled_grammar.h"
#include "kernels/tensor_type.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {

// KV cache types as given: --kv-type sets K and V, --kv-type-k / --kv-type-v (llama.cpp's
// -ctk/--cache-type-k, -ctv/--cache-type-v) override one of them (empty: not given).
struct KvTypeOptions {
  std::string both = "f16";
  std::string k, v;
};

struct ContextOptions {
  int32_t threads = 0;
  int32_t threads_batch = 0;
  int32_t ctx_size = 0;
  int32_t batch_size = 512;
  KvTypeOptions kv;
  std::string repack = "auto";
  std::string power;  // "" (none), performance, balanced, efficiency
};

// -t/--threads (decode), -tb/--threads-batch (prompt) as llama.cpp names them, --power,
// -c/--ctx-size (unless with_ctx_size is false: a command that sizes the context itself),
// -b/--batch-size, --repack.
void add_context_options(ArgParser& ap, ContextOptions* o, bool with_ctx_size = true);

// -m/--model and --registry.
struct ModelOptions {
  std::string model;     // a file, or with `registry` NAME / NAME@VERSION
  std::string registry;  // empty: -m is a file
};
void add_model_options(ArgParser& ap, ModelOptions* m, const std::string& note = "required");
// The file to load: -m as given, or the installed version -m names in --registry (verified by
// SHA-256 unless unchanged since its last check). Error(kInvalidArgument) without -m or for a
// name not installed; Error(kIo) when the registry folder does not exist (it is not created).
std::string resolve_model_path(const ModelOptions& m);
// Whether `dir` holds a model registry (its manifests/ folder); require_registry throws
// Error(kIo) naming the folder otherwise. Commands that only read a registry check this first,
// because ModelRegistry's constructor creates the folders.
bool registry_exists(const std::string& dir);
void require_registry(const std::string& dir);
// A warning on stderr when n_ctx exceeds the context the model was trained on.
void warn_past_training_context(const char* command, const Model& model, int32_t n_ctx);
// --kv-type, --kv-type-k (-ctk, --cache-type-k), --kv-type-v (-ctv, --cache-type-v); registered
// separately: the commands list them at different places in their help.
void add_kv_type_options(ArgParser& ap, KvTypeOptions* kv);
// "f16" / "f32" / "q8_0" / "q4_0" (either case); Error(kInvalidArgument) naming `option` otherwise.
TensorType parse_kv_type(const std::string& name, const std::string& option = "--kv-type");
// Parses the KV types (throws as parse_kv_type) into cp->kv_type (K) and cp->kv_type_v.
void apply_kv_types(const KvTypeOptions& kv, ContextParams* cp);
// Validates the KV types (throws as parse_kv_type) and the power mode, and fills the Context
// parameters (the power mode's thread plan for this device where -t / -tb are 0).
ContextParams context_params(const ContextOptions& o);
// The model loading parameters (--repack); throws Error(kInvalidArgument) for a bad value.
ModelLoadParams model_load_params(const ContextOptions& o);

// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, --frequency-penalty,
// --presence-penalty and --seed (into *seed: -1 = random, see resolve_seed).
void add_sampling_options(ArgParser& ap, SamplerParams* s, int64_t* seed);
// --sampler-order LIST (comma-separated stage names).
void add_sampler_order_option(ArgParser& ap, SamplerParams* s);
// Replaces a negative *seed with a random one and copies it into the sampler parameters.
void resolve_seed(int64_t* seed, SamplerParams* s);

// Constrained output (docs/structured-output.md): --grammar TEXT / --grammar-file FILE (GBNF),
// --json-schema JSON / --json-schema-file FILE, --json (any JSON object) is not offered: use
// --json-schema '{"type": "object"}'. At most one of them.
struct GrammarOptions {
  std::string grammar, grammar_file, json_schema, json_schema_file;
  bool any() const { return !grammar.empty() || !grammar_file.empty() || !json_schema.empty() || !json_schema_file.empty(); }
};
void add_grammar_options(ArgParser& ap, GrammarOptions* g);
// The compiled grammar for the tokenizer's vocabulary (null without grammar options). Throws
// Error(kInvalidArgument) with the grammar's or the schema's error. *compile_ms (optional)
// receives the compile time.
std::shared_ptr<const grammar::CompiledGrammar> compile_grammar_options(const GrammarOptions& g, const Tokenizer& tok,
                                                                        double* compile_ms = nullptr);

// Speculative decoding (docs/speculative-decoding.md) with llama.cpp's names: --spec
// off|ngram|draft, -md/--model-draft FILE (a draft model sharing the model's vocabulary; giving
// it alone means --spec draft), --draft-max N (k, 1..8).
struct SpeculationOptions {
  std::string mode;   // as given ("" = off, or draft when -md is given)
  std::string model_draft;
  int32_t draft_max = SpeculationParams{}.draft_max;
};
void add_speculation_options(ArgParser& ap, SpeculationOptions* o);
// -md/--model-draft FILE alone: for a command that counts a draft model without running it (plan).
void add_model_draft_option(ArgParser& ap, std::string* path, const std::string& help);
// The parameters the options name (draft_model still null). Throws Error(kInvalidArgument) for
// an unknown mode, --spec draft without -md and -md with another mode: call it before loading.
SpeculationParams speculation_params(const SpeculationOptions& o);
// The draft model of --spec draft (null otherwise), loaded with `load` and checked against
// `target`'s vocabulary: Error(kInvalidArgument) naming the file and the first difference; the
// load's errors for a file that does not load.
std::unique_ptr<Model> load_draft_model(const SpeculationOptions& o, const Model& target, const ModelLoadParams& load);
// One line of stats for stderr ("speculation: ..."), empty when speculation was off.
std::string speculation_stats_line(const SpeculationParams& sp, const SpeculationStats& st);
// The same as a JSON object {mode, draft_max, drafted, accepted, acceptance_rate, forwards,
// tokens_per_forward} (what `run --json` and `chat --json` put under "speculation").
Json speculation_stats_json(const SpeculationParams& sp, const SpeculationStats& st);

}  // namespace edgellm::cli
