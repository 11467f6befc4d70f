// `edgellm perplexity -m MODEL -f TEXT [-c CTX] [-b BATCH] [--threads N] [--kv-type f16|f32|q8_0|q4_0] [-ctk TYPE] [-ctv TYPE]
// [--chunks N] [--kl-divergence-base FILE [--kl-divergence]] [--json]`
//
// Three modes (method in src/tools/eval/perplexity.h, statistics in src/tools/eval/kl_divergence.h):
//   - perplexity of MODEL over TEXT;
//   - with --kl-divergence-base FILE: the same, and the scored log-probs are saved to FILE;
//   - with --kl-divergence --kl-divergence-base FILE: MODEL (e.g. a quantized one) is evaluated on
//     the tokens stored in FILE (no -f needed) and compared with the stored log-probs.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "generation_options.h"
#include "interrupt.h"
#include "progress.h"
#include "core/error.h"
#include "core/json.h"
#include "tools/eval/kl_divergence.h"
#include "tools/eval/perplexity.h"
#include "kernels/tensor_type.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace edgellm::cli {
namespace {

Json percentiles_json(const eval::Percentiles& p) {
  Json j = Json::object();
  j.set("max", p.max);
  j.set("p99.9", p.p99_9);
  j.set("p99", p.p99);
  j.set("p95", p.p95);
  j.set("p90", p.p90);
  j.set("median", p.median);
  j.set("p10", p.p10);
  j.set("p5", p.p5);
  j.set("p1", p.p1);
  j.set("min", p.min);
  return j;
}

void print_percentiles(const char* what, const eval::Percentiles& p, double scale, const char* unit) {
  const struct {
    const char* label;
    double v;
  } rows[] = {{"Maximum", p.max}, {"99.9%", p.p99_9}, {"99.0%", p.p99}, {"95.0%", p.p95}, {"90.0%", p.p90},
              {"Median", p.median}, {"10.0%", p.p10}, {"5.0%", p.p5}, {"1.0%", p.p1}, {"Minimum", p.min}};
  for (const auto& r : rows) std::printf("%-8s %-4s: %10.6f%s\n", r.label, what, r.v * scale, unit);
}

int perplexity_command(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  std::string text_path, base_path, repack = "auto";
  KvTypeOptions kv;
  int32_t n_ctx = 512, n_batch = 0, threads = 0, chunks = -1;
  bool kl = false, json = false;
  ArgParser ap("perplexity", "-m MODEL (-f TEXT | --kl-divergence --kl-divergence-base FILE) [options]");
  add_model_options(ap, &model_opt);
  ap.add_string("-f,--file", &text_path, "FILE", "text to evaluate");
  ap.add_int(shared_option("ctx-size"), &n_ctx, 4, 1 << 20, "tokens per chunk, the second half scored; default 512");
  ap.add_int(shared_option("batch-size"), &n_batch, 0, 1 << 20, "0 = the context size (default)");
  ap.add_int(shared_option("threads"), &threads, 0, 1024, "default 0");
  add_kv_type_options(ap, &kv);
  ap.add_string(shared_option("repack"), &repack, "default auto");
  ap.add_int("--chunks", &chunks, "N", "evaluate at most N chunks (-1 = all)", -1, 1 << 30);
  ap.add_string("--kl-divergence-base", &base_path, "FILE",
                "save the scored log-probs here (or, with --kl-divergence, read them)");
  ap.add_flag("--kl-divergence", &kl, "compare MODEL with the log-probs in --kl-divergence-base");
  ap.add_flag(shared_option("json"), &json, "one object");
  if (!ap.parse(args)) return 0;
  require(!model_opt.model.empty(), ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  require(!kl || !base_path.empty(), ErrorCode::kInvalidArgument, "--kl-divergence needs --kl-divergence-base FILE");
  require(kl || !text_path.empty(), ErrorCode::kInvalidArgument, "-f TEXT is required");

  eval::EvalParams params;
  params.n_ctx = n_ctx;
  params.n_batch = n_batch > 0 ? n_batch : n_ctx;
  params.n_threads = threads;
  ContextParams kv_cp;
  apply_kv_types(kv, &kv_cp);
  params.kv_type = kv_cp.kv_type;
  params.kv_type_v = kv_cp.kv_type_v;
  params.max_chunks = chunks;
  params.cancel = interrupt_flag();

  ModelLoadParams load_params;
  load_params.repack = parse_repack_mode(repack);
  const std::string model_path = resolve_model_path(model_opt);
  auto model = Model::load(model_path, load_params);
  const SigintScope sigint;  // restores the previous SIGINT disposition however this returns

  Json out = Json::object();
  out.set("model", model_path);
  out.set("kv_type", tensor_type_name(params.kv_type));  // K
  out.set("kv_type_v", tensor_type_name(kv_cp.kv_v()));

  if (kl) {
    if (!ap.seen("-c")) params.n_ctx = 0;  // the file's context
    if (n_batch == 0) params.n_batch = 1 << 20;  // clamped to n_ctx by the evaluator
    if (!json) std::fprintf(stderr, "perplexity: comparing with '%s'\n", base_path.c_str());
    const eval::KlResult r = eval::compute_kl_divergence(
        *model, base_path, params, [&](int32_t c, const eval::KlAccumulator&) {
          if (!json) std::fprintf(stderr, "[%d]", c + 1);
        });
    const eval::KlStats& s = r.stats;
    if (json) {
      out.set("base", base_path);
      out.set("n_ctx", r.n_ctx);
      out.set("n_chunk", r.n_chunk);
      out.set("n_scored", s.n);
      out.set("ppl", s.ppl);
      out.set("ppl_error", s.ppl_error);
      out.set("ppl_base", s.ppl_base);
      out.set("ppl_base_error", s.ppl_base_error);
      out.set("ln_ppl_ratio", s.ln_ratio_mean);
      out.set("ln_ppl_ratio_error", s.ln_ratio_error);
      out.set("ppl_ratio", s.ppl_ratio);
      out.set("ppl_ratio_error", s.ppl_ratio_error);
      out.set("kld_mean", s.kld_mean);
      out.set("kld_error", s.kld_error);
      out.set("kld", percentiles_json(s.kld));
      out.set("delta_p_mean", s.dp_mean);
      out.set("delta_p_error", s.dp_error);
      out.set("delta_p_rms", s.dp_rms);
      out.set("delta_p", percentiles_json(s.dp));
      out.set("same_top", s.same_top);
      out.set("same_top_error", s.same_top_error);
      out.set("seconds", r.seconds);
      std::printf("%s\n", out.dump().c_str());
      return 0;
    }
    std::fprintf(stderr, "\n");
    std::printf("chunks %d, context %d, %lld scored positions, %.2f s\n", r.n_chunk, r.n_ctx,
                static_cast<long long>(s.n), r.seconds);
    std::printf("====== Perplexity statistics ======\n");
    std::printf("Mean PPL(Q)                   : %10.6f +/- %10.6f\n", s.ppl, s.ppl_error);
    std::printf("Mean PPL(base)                : %10.6f +/- %10.6f\n", s.ppl_base, s.ppl_base_error);
    std::printf("Mean ln(PPL(Q)/PPL(base))     : %10.6f +/- %10.6f\n", s.ln_ratio_mean, s.ln_ratio_error);
    std::printf("Mean PPL(Q)/PPL(base)         : %10.6f +/- %10.6f\n", s.ppl_ratio, s.ppl_ratio_error);
    std::printf("\n====== KL divergence statistics ======\n");
    std::printf("Mean    KLD: %10.6f +/- %10.6f\n", s.kld_mean, s.kld_error);
    print_percentiles("KLD", s.kld, 1.0, "");
    std::printf("\n====== Token probability statistics ======\n");
    std::printf("Mean    Δp: %8.3f +/- %.3f %%\n", 100 * s.dp_mean, 100 * s.dp_error);
    print_percentiles("Δp", s.dp, 100.0, " %");
    std::printf("RMS Δp    : %8.3f %%\n", 100 * s.dp_rms);
    std::printf("Same top p: %8.3f +/- %.3f %%\n", 100 * s.same_top, 100 * s.same_top_error);
    return 0;
  }

  const auto tokenizer = Tokenizer::from_gguf(model->gguf());
  const std::string text = read_text_file(text_path, "text file");
  const std::vector<int32_t> tokens = eval::tokenize_for_perplexity(*tokenizer, text);
  // Chunks evaluated: whole chunks of the text, at most --chunks.
  int64_t n_chunks = static_cast<int64_t>(tokens.size()) / std::max(1, params.n_ctx);
  if (params.max_chunks >= 0) n_chunks = std::min<int64_t>(n_chunks, params.max_chunks);
  ProgressDisplay bar("perplexity");
  const auto on_chunk = [&](int32_t c, double ppl) {
    if (!json) {
      char what[64];
      std::snprintf(what, sizeof what, "chunk %d/%lld, PPL so far %.4f", c + 1, static_cast<long long>(n_chunks), ppl);
      bar.update(n_chunks > 0 ? static_cast<double>(c + 1) / static_cast<double>(n_chunks) : 1.0, what);
    }
  };
  if (!json) {
    std::fprintf(stderr, "perplexity: %zu tokens, context %d, scoring the second half of each chunk\n", tokens.size(),
                 params.n_ctx);
  }
  const eval::PerplexityResult r =
      base_path.empty()
          ? eval::compute_perplexity(*model, tokens, params, tokenizer->add_bos(), tokenizer->bos(), {}, on_chunk)
          : eval::compute_perplexity_and_save_base(*model, tokens, params, tokenizer->add_bos(), tokenizer->bos(),
                                                   base_path, on_chunk);
  if (!json) bar.finish();
  if (json) {
    out.set("text", text_path);
    out.set("n_tokens", r.n_tokens);
    out.set("n_ctx", r.n_ctx);
    out.set("n_chunk", r.n_chunk);
    out.set("n_scored", r.n_scored);
    out.set("ppl", r.ppl);
    out.set("ppl_error", r.ppl_error);
    out.set("seconds", r.seconds);
    out.set("tokens_per_second", r.seconds > 0 ? static_cast<double>(r.n_chunk) * r.n_ctx / r.seconds : 0.0);
    if (!base_path.empty()) out.set("kl_divergence_base", base_path);
    std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  std::printf("chunks %d x %d tokens, %lld scored, %.2f s (%.1f tokens/s)\n", r.n_chunk, r.n_ctx,
              static_cast<long long>(r.n_scored), r.seconds,
              r.seconds > 0 ? static_cast<double>(r.n_chunk) * r.n_ctx / r.seconds : 0.0);
  if (!base_path.empty()) std::printf("saved log-probs to '%s'\n", base_path.c_str());
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", r.ppl, r.ppl_error);
  return 0;
}

const CommandRegistration kPerplexityRegistration("perplexity", "perplexity of a model on a text, and KL divergence vs a base",
                                        perplexity_command);

}  // namespace
}  // namespace edgellm::cli
