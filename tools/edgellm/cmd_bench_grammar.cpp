// `edgellm bench-grammar`: what a grammar / JSON Schema constraint costs on a model's vocabulary
// (docs/benchmarks.md "Structured output"). One process, one model load:
//   1. the vocabulary view (bytes of every token, trie) and the compile: automata, then every
//      state's mask (the precomputation a lazy grammar spreads over its first requests);
//   2. mask time per token along random walks through the grammar (the full mask, built when the
//      sampled token is refused) and the time of the one-token check (allows());
//   3. decode with the constraint vs without, paired in one run: each pair generates the same
//      number of tokens both ways (the constrained run decides how many), alternating which goes
//      first; the ratio of decode times is reported per pair and as the median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "core/json.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "generation_options.h"
#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

struct Summary {
  double mean = 0, p50 = 0, p95 = 0, max = 0;
  size_t n = 0;
};

Summary summarize(std::vector<double> v) {
  Summary s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  s.p50 = v[v.size() / 2];
  s.p95 = v[std::min(v.size() - 1, v.size() * 95 / 100)];
  s.max = v.back();
  return s;
}

Json summary_json(const Summary& s) {
  Json j = Json::object();
  j.set("n", static_cast<uint64_t>(s.n));
  j.set("mean_ms", s.mean);
  j.set("p50_ms", s.p50);
  j.set("p95_ms", s.p95);
  j.set("max_ms", s.max);
  return j;
}

int bench_grammar_command(const std::vector<std::string>& args) {
  std::string prompt = "Reply with JSON:";
  ModelOptions model_opt;
  GrammarOptions gopt;
  ContextOptions copt;
  int32_t n_tokens = 128, pairs = 5, walks = 20, walk_steps = 64;
  float temperature = 1.0f;
  bool no_lazy_run = false;
  ArgParser ap("bench-grammar", "-m MODEL (--json-schema-file F | --grammar-file F | ...) [options]");
  add_model_options(ap, &model_opt, "its vocabulary and, for the decode pairs, its weights");
  add_grammar_options(ap, &gopt);
  add_context_options(ap, &copt);
  ap.add_string("-p,--prompt", &prompt, "TEXT", "prompt of the decode pairs");
  ap.add_int("-n,--max-tokens", &n_tokens, "N", "tokens per constrained generation (default 128)", 1);
  ap.add_int("--pairs", &pairs, "N", "decode pairs, 0 = none (default 5)", 0);
  ap.add_int("--walks", &walks, "N", "random walks for the mask timing (default 20)", 0);
  ap.add_int("--walk-steps", &walk_steps, "N", "tokens per random walk (default 64)", 1);
  ap.add_float("--temp", &temperature, "T", "temperature of the decode pairs (default 1.0; no top-k/p, min-p)", 0.0);
  ap.add_flag("--no-lazy-run", &no_lazy_run, "skip the constrained generation on the lazily masked grammar");
  if (!ap.parse(args)) return 0;
  require(gopt.any(), ErrorCode::kInvalidArgument, "give a grammar or a JSON Schema");
  const std::string model_path = resolve_model_path(model_opt);
  const ContextParams cp = context_params(copt);  // checks -c, -t, --power ... before any work

  Json out = Json::object();
  out.set("model", model_path);
  std::unique_ptr<Model> model = Model::load(model_path, model_load_params(copt));
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());

  // 1. Vocabulary and compile.
  auto t0 = Clock::now();
  const auto vocab = grammar::TokenVocabulary::from_tokenizer(*tok);
  Json vj = Json::object();
  vj.set("tokens", static_cast<int>(vocab->size()));
  vj.set("trie_nodes", static_cast<uint64_t>(vocab->trie_size()));
  vj.set("bytes", static_cast<uint64_t>(vocab->memory_bytes()));
  vj.set("build_ms", ms_since(t0));
  out.set("vocabulary", vj);
  std::string gbnf;
  if (!gopt.grammar.empty()) gbnf = gopt.grammar;
  if (!gopt.grammar_file.empty()) gbnf = read_text_file(gopt.grammar_file, "grammar file");
  t0 = Clock::now();
  if (!gopt.json_schema.empty() || !gopt.json_schema_file.empty()) {
    gbnf = grammar::json_schema_to_gbnf(
        Json::parse(!gopt.json_schema.empty() ? gopt.json_schema : read_text_file(gopt.json_schema_file, "schema")));
  }
  const double convert_ms = ms_since(t0);
  const grammar::TokenVocabulary* v = vocab.get();
  const auto parse = [&] { return grammar::parse_gbnf(gbnf, [v](std::string_view t) { return v->find_token(t); }); };
  t0 = Clock::now();
  const double c0 = thread_cpu_ms();
  const auto g = grammar::CompiledGrammar::compile(parse(), vocab);
  const double compile_ms = ms_since(t0), compile_cpu_ms = thread_cpu_ms() - c0;
  // A second grammar, precomputed on one thread, for the full-precompute numbers.
  grammar::CompileOptions pre;
  pre.precompute = true;
  t0 = Clock::now();
  const double p0 = thread_cpu_ms();
  const auto full = grammar::CompiledGrammar::compile(parse(), vocab, pre);
  const double precompute_ms = ms_since(t0), precompute_cpu_ms = thread_cpu_ms() - p0;
  const grammar::CompileStats st = full->stats();
  Json cj = Json::object();
  cj.set("schema_to_gbnf_ms", convert_ms);
  cj.set("automaton_ms", compile_ms);
  cj.set("automaton_cpu_ms", compile_cpu_ms);
  cj.set("rules", static_cast<int>(st.automaton.rules_kept));
  cj.set("states", static_cast<int>(st.automaton.dfa_states));
  cj.set("mask_states", static_cast<int>(st.mask_states));
  cj.set("all_masks_ms", precompute_ms);
  cj.set("all_masks_cpu_ms", precompute_cpu_ms);
  cj.set("mask_bytes", st.mask_bytes);
  cj.set("uncertain_tokens", st.uncertain_tokens);
  cj.set("max_uncertain", static_cast<int>(st.max_uncertain));
  out.set("compile", cj);

  // 2. Mask timing along random walks over the precomputed grammar (CPU time of this thread).
  std::vector<double> mask_ms, allows_us;
  std::mt19937 rng(1);
  grammar::GrammarMatcher m(full);
  TokenBitset mask;
  for (int w = 0; w < walks; ++w) {
    m.reset();
    for (int step = 0; step < walk_steps; ++step) {
      double a = thread_cpu_ms();
      m.fill_next_token_mask(mask);
      mask_ms.push_back(thread_cpu_ms() - a);
      std::vector<int32_t> ids;
      mask.for_each([&](int32_t id) {
        if (!vocab->is_eog(id)) ids.push_back(id);
      });
      const int32_t probe = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab->size()));
      a = thread_cpu_ms();
      (void)m.allows(probe);
      allows_us.push_back((thread_cpu_ms() - a) * 1e3);
      if (ids.empty()) break;
      if (!m.accept_token(ids[rng() % ids.size()])) throw Error(ErrorCode::kInternal, "bench-grammar: masked token refused");
    }
  }
  out.set("mask", summary_json(summarize(mask_ms)));
  Summary as = summarize(allows_us);
  Json aj = Json::object();
  aj.set("n", static_cast<uint64_t>(as.n));
  aj.set("mean_us", as.mean);
  aj.set("p95_us", as.p95);
  out.set("allows", aj);

  // 3. Paired decode (on the precomputed grammar); first, one constrained generation on the lazy
  // grammar `g`, whose masks are computed as the generation reaches their states: the cost of a
  // schema's first request.
  if (pairs > 0 && !no_lazy_run) {
    Context ctx(*model, cp);
    SamplerParams sp;
    sp.temperature = temperature;
    sp.top_k = 0;
    sp.top_p = 1.0f;
    sp.min_p = 0.0f;
    sp.seed = 999;
    Sampler s(sp, model->hparams().n_vocab);
    GenerationParams gp;
    gp.max_tokens = n_tokens;
    gp.grammar = g;
    const GenerationResult first = generate(ctx, s, tok.get(), tok->encode(prompt, true, true), gp);
    Json fj = Json::object();
    fj.set("tokens", static_cast<uint64_t>(first.tokens.size()));
    fj.set("grammar_ms_per_token", first.timings.grammar_seconds * 1e3 / std::max<size_t>(1, first.tokens.size()));
    fj.set("masks_computed", static_cast<int>(g->masks_ready()));
    fj.set("decode_ms_per_token", first.timings.decode_seconds * 1e3 / std::max(1, first.timings.decode_tokens));
    out.set("first_generation_lazy", fj);
  }
  Json pj = Json::array();
  std::vector<double> ratios;
  if (pairs > 0) {
    const std::vector<int32_t> prompt_ids = tok->encode(prompt, true, true);
    for (int i = 0; i < pairs; ++i) {
      SamplerParams sp;
      sp.temperature = temperature;
      sp.top_k = 0;
      sp.top_p = 1.0f;
      sp.min_p = 0.0f;
      sp.seed = static_cast<uint64_t>(1000 + i);
      const auto run = [&](bool constrained, int32_t max_tokens) {
        Context ctx(*model, cp);
        Sampler s(sp, model->hparams().n_vocab);
        GenerationParams gp;
        gp.max_tokens = max_tokens;
        if (constrained) {
          gp.grammar = full;
        } else {
          gp.ignore_eog = true;
        }
        return generate(ctx, s, tok.get(), prompt_ids, gp);
      };
      GenerationResult con, free;
      if (i % 2 == 0) {
        con = run(true, n_tokens);
        free = run(false, static_cast<int32_t>(con.tokens.size()));
      } else {
        // The unconstrained run goes first: it takes as many tokens as the previous pair.
        const int32_t k = pj.size() > 0 ? static_cast<int32_t>(pj.at(pj.size() - 1).at("tokens").as_int()) : n_tokens;
        free = run(false, k);
        con = run(true, k);
      }
      const double tc = con.timings.decode_seconds / std::max(1, con.timings.decode_tokens);
      const double tf = free.timings.decode_seconds / std::max(1, free.timings.decode_tokens);
      Json p = Json::object();
      p.set("tokens", static_cast<int>(con.tokens.size()));
      p.set("constrained_ms_per_token", tc * 1e3);
      p.set("free_ms_per_token", tf * 1e3);
      p.set("ratio", tc / tf);
      p.set("grammar_ms_per_token", con.timings.grammar_seconds * 1e3 / std::max<size_t>(1, con.tokens.size()));
      p.set("masks", static_cast<int>(con.timings.grammar_masks));
      p.set("finish", finish_reason_name(con.finish_reason));
      ratios.push_back(tc / tf);
      pj.push_back(p);
    }
  }
  out.set("pairs", pj);
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    out.set("median_ratio", ratios[ratios.size() / 2]);
  }
  const std::string line = out.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  return 0;
}

const CommandRegistration kBenchGrammarRegistration("bench-grammar",
                                        "cost of a grammar / JSON Schema: compile, mask per token, paired decode",
                                        bench_grammar_command);

}  // namespace
}  // namespace edgellm::cli
