// Decode speed with and without speculative decoding, paired in one run (a measurement, not a
// test; docs/benchmarks.md "Speculative decoding"). For one prompt, each round runs, in a
// rotating order so drift on a shared machine hits every arm alike:
//   plain     greedy decoding
//   oracle    speculation with a drafter that replays plain decoding's output (every draft
//             accepted: the upper bound of the speed-up at this k)
//   ngram     speculation with prompt-lookup drafting (what real text gets), with the back-off
//   ngram-k   the same at a fixed k (SpeculationParams::adaptive false)
//   wrong     a drafter that is always wrong (plain output + 1), with the back-off: its cost
// and checks that the speculative arms produced plain decoding's tokens. Reported: the median
// decode tokens/s of each arm (decode_tokens / decode_seconds, wall time), the median of the
// per-round ratios to plain, the acceptance rate and tokens per forward.
// Usage: edgellm_spec_bench MODEL PROMPT_FILE [k=4] [threads=2] [rounds=15] [max_tokens=256]
//
// The cost curve (--curve): the time of one decode-phase forward (Batch::set_stepwise, as the
// service's verify steps) over W entries against one entry, W = 1..max_width, at `depth` cached
// positions; each round times every width once in a rotating order, the median is reported.
// "seqs": W sequences one token each (a continuous batch); "drafts": one sequence's token and
// W - 1 drafts (a verify forward). This is where the service's batch-size back-off
// (ServiceParams::spec_max_batch_tokens) comes from.
// Usage: edgellm_spec_bench --curve MODEL [threads=2] [rounds=9] [max_width=32] [depth=64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/batch.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/drafter.h"
#include "generation/generate.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

using namespace edgellm;

namespace {

class ReplayDrafter final : public Drafter {
 public:
  ReplayDrafter(size_t prompt_len, const std::vector<int32_t>& output, int32_t shift, int32_t n_vocab)
      : prompt_len_(prompt_len), output_(output), shift_(shift), n_vocab_(n_vocab) {}
  void append(std::span<const int32_t> tokens) override { appended_ += tokens.size(); }
  int32_t draft(int32_t max, int32_t* out) override {
    const size_t done = appended_ - prompt_len_;
    int32_t n = 0;
    while (n < max && done + static_cast<size_t>(n) < output_.size()) {
      out[n] = (output_[done + static_cast<size_t>(n)] + shift_) % n_vocab_;
      ++n;
    }
    return n;
  }

 private:
  size_t prompt_len_;
  const std::vector<int32_t>& output_;
  int32_t shift_, n_vocab_;
  size_t appended_ = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : (v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]));
}

}  // namespace

// --curve: see the header.
int cost_curve(int argc, char** argv) {
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 9;
  const int32_t max_width = std::clamp(argc > 5 ? std::atoi(argv[5]) : 32, 1, 64);
  const int32_t depth = std::max(1, argc > 6 ? std::atoi(argv[6]) : 64);
  const auto model = Model::load(argv[2]);
  ContextParams cp;
  cp.n_ctx = depth + max_width + 8;
  cp.n_seq_max = max_width;
  cp.n_batch = std::max(512, max_width);
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  Context ctx(*model, cp);
  const int32_t n_vocab = model->hparams().n_vocab;
  // Every sequence holds the same `depth` positions of arbitrary ids (what the times depend on is
  // the shapes).
  Batch b;
  for (int32_t s = 0; s < max_width; ++s) {
    b.clear();
    for (int32_t i = 0; i < depth; ++i) b.add(s, (i * 7 + 3) % n_vocab, i, i + 1 == depth);
    ctx.decode(b);
  }
  std::vector<std::vector<double>> seqs(static_cast<size_t>(max_width) + 1), drafts(seqs.size());
  const auto time_forward = [&](int32_t w, bool one_sequence) {
    b.clear();
    for (int32_t i = 0; i < w; ++i) {
      if (one_sequence) {
        b.add(0, (i * 13 + 5) % n_vocab, depth + i, true);
      } else {
        b.add(i, (i * 13 + 5) % n_vocab, depth, true);
      }
    }
    b.set_stepwise(true);
    const auto t0 = std::chrono::steady_clock::now();
    ctx.decode(b);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (int32_t s = 0; s < (one_sequence ? 1 : w); ++s) ctx.seq_truncate(s, depth);
    return ms;
  };
  for (int32_t w = 1; w <= max_width; ++w) (void)time_forward(w, false);  // warm-up
  for (int round = 0; round < rounds; ++round) {
    for (int32_t i = 0; i < max_width; ++i) {
      const int32_t w = 1 + (i + round) % max_width;
      seqs[static_cast<size_t>(w)].push_back(time_forward(w, false));
      drafts[static_cast<size_t>(w)].push_back(time_forward(w, true));
    }
  }
  const double one = median(seqs[1]);
  std::printf("%s, %d threads, depth %d, %d rounds: forward ms (x one-token forward)\n", argv[2], threads, depth, rounds);
  std::printf("| W | W sequences | one sequence + W-1 drafts |\n|--:|--:|--:|\n");
  for (int32_t w = 1; w <= max_width; ++w) {
    const double a = median(seqs[static_cast<size_t>(w)]), d = median(drafts[static_cast<size_t>(w)]);
    std::printf("| %d | %.3f (%.2f) | %.3f (%.2f) |\n", w, a, a / one, d, d / one);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--curve") {
    try {
      return cost_curve(argc, argv);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return 1;
    }
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL PROMPT_FILE [k=4] [threads=2] [rounds=15] [max_tokens=256]\n", argv[0]);
    return 2;
  }
  const int32_t k = argc > 3 ? std::atoi(argv[3]) : 4;
  const int threads = argc > 4 ? std::atoi(argv[4]) : 2;
  const int rounds = argc > 5 ? std::atoi(argv[5]) : 15;
  const int32_t max_tokens = argc > 6 ? std::atoi(argv[6]) : 256;
  try {
    const auto model = Model::load(argv[1]);
    const auto tok = Tokenizer::from_gguf(model->gguf());
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::vector<int32_t> prompt = tok->encode(ss.str(), true, false);
    ContextParams cp;
    cp.n_ctx = static_cast<int32_t>(prompt.size()) + max_tokens + 16;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    Context ctx(*model, cp);
    SamplerParams sp;
    sp.temperature = 0.0f;

    enum Arm { kPlain, kOracle, kNgram, kNgramFixed, kWrong, kArms };
    const char* names[kArms] = {"plain", "oracle", "ngram", "ngram-k", "wrong"};
    std::vector<double> tps[kArms], ratio[kArms];
    SpeculationStats stats[kArms];
    std::vector<int32_t> reference;
    auto run_arm = [&](int arm) {
      ctx.clear();
      Sampler s(sp, model->hparams().n_vocab);
      GenerationParams gp;
      gp.max_tokens = max_tokens;
      gp.ignore_eog = true;  // every arm decodes max_tokens tokens
      gp.speculation.draft_max = k;
      if (arm == kNgram || arm == kNgramFixed) gp.speculation.mode = SpeculationMode::kNgram;
      gp.speculation.adaptive = arm != kNgramFixed;
      const int32_t n_vocab = model->hparams().n_vocab;
      ReplayDrafter oracle(prompt.size(), reference, 0, n_vocab), wrong(prompt.size(), reference, 1, n_vocab);
      GenerationCallbacks cb;
      if (arm == kOracle) cb.drafter = &oracle;
      if (arm == kWrong) cb.drafter = &wrong;
      const GenerationResult r = generate(ctx, s, tok.get(), prompt, gp, cb);
      if (arm == kPlain && reference.empty()) reference = r.tokens;
      if (r.tokens != reference) {
        std::fprintf(stderr, "%s: tokens differ from plain decoding\n", names[arm]);
        std::exit(1);
      }
      stats[arm] = r.speculation;
      return r.timings.decode_tokens_per_second();
    };
    run_arm(kPlain);  // warm-up, and the oracle's script
    for (int round = 0; round < rounds; ++round) {
      double got[kArms];
      for (int i = 0; i < kArms; ++i) {
        const int arm = (round + i) % kArms;
        got[arm] = run_arm(arm);
      }
      for (int arm = 0; arm < kArms; ++arm) {
        tps[arm].push_back(got[arm]);
        ratio[arm].push_back(got[arm] / got[kPlain]);
      }
    }
    std::printf("prompt %zu tokens, %d decoded, k %d, %d threads, %d rounds\n", prompt.size(), max_tokens, k, threads,
                rounds);
    std::printf("%-7s %12s %12s %11s %11s\n", "arm", "decode tok/s", "x plain", "acceptance", "tok/forward");
    for (int arm = 0; arm < kArms; ++arm) {
      std::printf("%-7s %12.1f %12.2f %11.3f %11.2f\n", names[arm], median(tps[arm]), median(ratio[arm]),
                  stats[arm].acceptance_rate(), stats[arm].tokens_per_forward());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
