// `edgellm imatrix -m MODEL -f TEXT [-o imatrix.gguf] [-c CTX] [--chunks N] [--process-output]`:
// the importance matrix of MODEL over TEXT (src/tools/quant/imatrix_collector.h), written in
// llama-imatrix's GGUF layout (src/tools/quant/imatrix.h), for `edgellm quantize --imatrix` or
// llama.cpp's `llama-quantize --imatrix`.
// `edgellm imatrix --info FILE [--compare OTHER] [--json]`: what a file (ours, llama.cpp's GGUF
// or legacy .dat) holds, per entry; with --compare, how far another file's importances are.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "core/json.h"
#include "interrupt.h"
#include "model/model.h"
#include "progress.h"
#include "tokenizer/tokenizer.h"
#include "tools/eval/perplexity.h"
#include "tools/quant/imatrix.h"
#include "tools/quant/imatrix_collector.h"

namespace edgellm::cli {
namespace {

// Per entry: mean importance, and with `other` the largest relative difference of the two
// importance vectors (|a - b| / max(|a|, |b|), elementwise).
int info(const std::string& path, const std::string& other_path, bool json) {
  const quant::Imatrix m = quant::read_imatrix(path);
  quant::Imatrix other;
  if (!other_path.empty()) other = quant::read_imatrix(other_path);
  Json out = Json::object();
  out.set("file", path);
  out.set("format", m.legacy ? "dat" : "gguf");
  out.set("chunk_count", m.chunk_count);
  out.set("chunk_size", m.chunk_size);
  Json datasets = Json::array();
  for (const auto& d : m.datasets) datasets.push_back(d);
  out.set("datasets", datasets);
  Json entries = Json::array();
  double worst = 0;
  std::string worst_name;
  size_t missing = 0;
  if (!json) {
    std::printf("%s: %s, %zu entries, %d chunks of %d tokens\n", path.c_str(), m.legacy ? "legacy .dat" : "GGUF",
                m.entries.size(), m.chunk_count, m.chunk_size);
    std::printf("%-34s %6s %10s %12s%s\n", "entry", "n_in", "count", "mean imp.",
                other_path.empty() ? "" : "  max rel. diff");
  }
  for (const auto& [name, e] : m.entries) {
    const std::vector<float> imp = *m.importance(name);
    double mean = 0;
    for (float v : imp) mean += v;
    mean /= static_cast<double>(std::max<size_t>(1, imp.size()));
    Json j = Json::object();
    j.set("name", name);
    j.set("n_in", e.n_in());
    j.set("n_mat", e.n_mat());
    j.set("count", e.counts.empty() ? 0 : e.counts[0]);
    j.set("mean_importance", mean);
    double diff = -1;
    if (!other_path.empty()) {
      const auto o = other.importance(name);
      if (!o || o->size() != imp.size()) {
        ++missing;
      } else {
        diff = 0;
        for (size_t i = 0; i < imp.size(); ++i) {
          const double a = imp[i], b = (*o)[i], s = std::max(std::fabs(a), std::fabs(b));
          if (s > 0) diff = std::max(diff, std::fabs(a - b) / s);
        }
        j.set("max_rel_diff", diff);
        if (diff > worst) worst = diff, worst_name = name;
      }
    }
    entries.push_back(j);
    if (!json) {
      std::printf("%-34s %6lld %10lld %12.6g", name.c_str(), static_cast<long long>(e.n_in()),
                  static_cast<long long>(e.counts.empty() ? 0 : e.counts[0]), mean);
      if (!other_path.empty()) diff < 0 ? std::printf("  (missing in other)") : std::printf("  %.3g", diff);
      std::printf("\n");
    }
  }
  out.set("entries", entries);
  if (!other_path.empty()) {
    out.set("compared_with", other_path);
    out.set("entries_missing_in_other", static_cast<int64_t>(missing));
    out.set("other_entries", static_cast<int64_t>(other.entries.size()));
    out.set("max_rel_diff", worst);
    out.set("max_rel_diff_entry", worst_name);
    if (!json) {
      std::printf("compared with %s (%zu entries): largest relative difference %.3g (%s), %zu entries missing there\n",
                  other_path.c_str(), other.entries.size(), worst, worst_name.c_str(), missing);
    }
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return 0;
}

int imatrix_command(const std::vector<std::string>& args) {
  std::string model_path, text_path, out_path = "imatrix.gguf", info_path, compare_path;
  int32_t n_ctx = 512, n_batch = 0, threads = 0, chunks = -1;
  bool process_output = false, no_ppl = false, json = false;
  ArgParser ap("imatrix", "-m MODEL -f TEXT [-o OUT.gguf] [options]  |  --info FILE [--compare OTHER] [--json]");
  ap.add_string(shared_option("model"), &model_path, "the model to run");
  ap.add_string("-f,--file", &text_path, "FILE", "calibration text");
  ap.add_string("-o,--output", &out_path, "FILE", "where to write the imatrix (GGUF; default imatrix.gguf)");
  ap.add_int(shared_option("ctx-size"), &n_ctx, 4, 1 << 20, "tokens per chunk; default 512, as llama-imatrix");
  ap.add_int(shared_option("batch-size"), &n_batch, 0, 1 << 20, "default 0: the context size");
  ap.add_int("--chunks", &chunks, "N", "use at most N chunks (-1 = all)", -1, 1 << 30);
  ap.add_int(shared_option("threads"), &threads, 0, 1024, "default 0");
  ap.add_flag("--process-output", &process_output, "collect the output head too (off by default, as llama-imatrix)");
  ap.add_flag("--no-ppl", &no_ppl, "do not compute the perplexity of the chunks");
  ap.add_string("--info", &info_path, "FILE", "print what an imatrix file (GGUF or legacy .dat) holds");
  ap.add_string("--compare", &compare_path, "FILE",
                "with --info: largest relative difference to this file's importances");
  ap.add_flag(shared_option("json"), &json, "with --info: one object");
  if (!ap.parse(args)) return 0;
  if (!info_path.empty()) return info(info_path, compare_path, json);
  require(compare_path.empty(), ErrorCode::kInvalidArgument, "--compare needs --info FILE");
  require(!model_path.empty(), ErrorCode::kInvalidArgument, "-m MODEL is required");
  require(!text_path.empty(), ErrorCode::kInvalidArgument, "-f TEXT is required");

  auto model = Model::load(model_path);
  const auto tokenizer = Tokenizer::from_gguf(model->gguf());
  const std::vector<int32_t> tokens = eval::tokenize_for_perplexity(*tokenizer, read_text_file(text_path, "text file"));
  quant::ImatrixParams params;
  params.n_ctx = n_ctx;
  params.n_batch = n_batch > 0 ? n_batch : n_ctx;
  params.n_threads = threads;
  params.max_chunks = chunks;
  params.process_output = process_output;
  params.compute_ppl = !no_ppl;
  params.dataset = text_path;
  params.cancel = interrupt_flag();
  ProgressDisplay progress("imatrix");
  params.progress = progress.callback();
  std::fprintf(stderr, "imatrix: %zu tokens, chunks of %d\n", tokens.size(), n_ctx);
  const SigintScope sigint;
  quant::ImatrixRun run;
  try {
    run = quant::compute_imatrix(*model, tokens, tokenizer->add_bos(), tokenizer->bos(), params);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kCancelled) throw;
    std::fprintf(stderr, "\nedgellm imatrix: interrupted; '%s' was not written\n", out_path.c_str());
    return 130;
  }
  quant::write_imatrix(run.imatrix, out_path);
  std::printf("%zu entries over %d chunks of %d tokens, %.2f s; written to %s\n", run.imatrix.entries.size(),
              run.n_chunk, n_ctx, run.seconds, out_path.c_str());
  if (params.compute_ppl) std::printf("Final estimate: PPL = %.4f +/- %.5f\n", run.ppl, run.ppl_error);
  return 0;
}

const CommandRegistration kImatrixRegistration("imatrix", "importance matrix of a model over a text (llama.cpp's layout)",
                                        imatrix_command);

}  // namespace
}  // namespace edgellm::cli
