// Speculative decoding (generate() with a drafter): the output is plain decoding's, token for
// token. Checked against the shared greedy references (an independent engine's ids) on
// stories260K and tiny-zh-poems for k = 1..8 with n-gram drafting, with a drafter that replays
// the reference (every draft accepted) and one that is always wrong (every draft rejected), and
// against plain decoding for sampling at a fixed seed, stop strings, max_tokens and a full
// context. Below that: a verify forward's logits equal one-token decodes bit for bit (what
// greedy exactness rests on), and the n-gram drafter against a naive backwards search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "engine/batch.h"
#include "engine/context.h"
#include "engine/sampler.h"
#include "generation/draft_model_drafter.h"
#include "generation/draft_schedule.h"
#include "generation/drafter.h"
#include "generation/generate.h"
#include "generation/ngram_drafter.h"
#include "gguf/gguf_reader.h"
#include "gguf/gguf_writer.h"
#include "model/model.h"
#include "support/greedy_reference.h"
#include "support/sanitizer.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/quant/quantize_model.h"

namespace edgellm {
namespace {

// Draft lengths the reference tests run: all of 1..8 normally (the plain build); under a sanitizer
// (10-15x slower forwards) the ends and the middle, which exercise the same code.
const std::vector<int32_t> kDraftLengths =
    test::kSanitized ? std::vector<int32_t>{1, 4, 8} : std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8};

using Reference = test::GreedyReference;

// Replays a known continuation as the draft: `shift` 0 drafts exactly what greedy decoding
// produces (always accepted); shift 1 drafts each of those ids + 1 (never what the model picks).
class ReplayDrafter final : public Drafter {
 public:
  ReplayDrafter(size_t prompt_len, std::vector<int32_t> output, int32_t eos, int32_t shift, int32_t n_vocab)
      : prompt_len_(prompt_len), output_(std::move(output)), eos_(eos), shift_(shift), n_vocab_(n_vocab) {}
  void append(std::span<const int32_t> tokens) override { appended_ += tokens.size(); }
  int32_t draft(int32_t max, int32_t* out) override {
    const size_t done = appended_ - prompt_len_;  // output tokens so far
    calls_++;
    for (int32_t i = 0; i < max; ++i) {
      const size_t at = done + static_cast<size_t>(i);
      // The oracle knows the output, not what follows it (the EOS is sampled after the last draft).
      if (at >= output_.size() && shift_ == 0) return i;
      const int32_t want = at < output_.size() ? output_[at] : eos_;
      out[i] = (want + shift_) % n_vocab_;
    }
    return max;
  }
  int calls() const { return calls_; }

 private:
  size_t prompt_len_;
  std::vector<int32_t> output_;
  int32_t eos_, shift_, n_vocab_;
  size_t appended_ = 0;
  int calls_ = 0;
};

struct ModelFixture {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<Reference> refs;
  int32_t eos = -1;
  size_t max_new = 0;
};

ModelFixture load(const std::string& model_file, const std::string& ref_file, size_t max_new) {
  ModelFixture f;
  f.model = Model::load(test::shared_model(model_file));
  f.tokenizer = Tokenizer::from_gguf(f.model->gguf());
  f.refs = test::load_greedy_references(ref_file);
  f.eos = static_cast<int32_t>(f.model->gguf().get_int("tokenizer.ggml.eos_token_id").value_or(-1));
  f.max_new = max_new;
  return f;
}

// F32 KV: the reference engine ran in F32 (test_reference_greedy.cpp).
std::unique_ptr<Context> make_context(const Model& m, int32_t n_ctx = 512, int32_t n_batch = 512) {
  ContextParams cp;
  cp.n_ctx = n_ctx;
  cp.n_batch = n_batch;
  cp.n_threads = 1;
  cp.kv_type = TensorType::F32;
  return std::make_unique<Context>(m, cp);
}

Sampler greedy(const Model& m) {
  SamplerParams p;
  p.temperature = 0.0f;
  return Sampler(p, m.hparams().n_vocab);
}

// Greedy generation of reference `r` (to its length, or to EOS where it ended early).
GenerationResult run(const ModelFixture& f, const Reference& r, const SpeculationParams& sp, Drafter* drafter = nullptr,
                     int32_t* seq_length = nullptr) {
  auto ctx = make_context(*f.model);
  Sampler s = greedy(*f.model);
  GenerationParams gp;
  gp.max_tokens = static_cast<int32_t>(f.max_new);
  gp.speculation = sp;
  GenerationCallbacks cb;
  cb.drafter = drafter;
  GenerationResult res = generate(*ctx, s, f.tokenizer.get(), r.prompt, gp, cb);
  if (seq_length) *seq_length = ctx->seq_length(0);
  return res;
}

void expect_reference(const ModelFixture& f, const Reference& r, const GenerationResult& got,
                      const std::string& label) {
  EXPECT_EQ(got.tokens, r.output) << label;
  // The reference engine prints a BOS inside the output as "<s>"; the streamed text has none.
  if (r.text.find("<s>") == std::string::npos) {
    EXPECT_EQ(got.text, r.text) << label;
  }
  if (r.output.size() < f.max_new) {
    EXPECT_EQ(got.finish_reason, FinishReason::kStop) << label;
    EXPECT_EQ(got.eog_token, f.eos) << label;
  } else {
    EXPECT_EQ(got.finish_reason, FinishReason::kLength) << label;
  }
}

class Speculative : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    stories_ = new ModelFixture(load("stories260K.gguf", "stories260K-greedy.jsonl", 200));
    poems_ = new ModelFixture(load("tiny-zh-poems.gguf", "tiny-zh-poems-greedy.jsonl", 100));
  }
  static void TearDownTestSuite() {
    delete stories_;
    delete poems_;
  }
  // The models the reference tests run: both normally; under a sanitizer stories260K only (the
  // poems model adds a vocabulary and its references, not a path; the plain build runs both,
  // CMakeLists.txt EDGELLM_UNSANITIZED_TESTS: 39 s -> ~24 s under ASan).
  static std::vector<const ModelFixture*> reference_models() {
    if (test::kSanitized) return {stories_};
    return {stories_, poems_};
  }
  static ModelFixture* stories_;
  static ModelFixture* poems_;
};
ModelFixture* Speculative::stories_ = nullptr;
ModelFixture* Speculative::poems_ = nullptr;

// What exactness rests on: a verify forward over k + 1 positions (Batch::set_stepwise) gives
// each position the logits of decoding the tokens one forward at a time, bit for bit.
TEST_F(Speculative, VerifyForwardLogitsEqualOneTokenDecodes) {
  const Model& m = *stories_->model;
  const Reference& r = stories_->refs[0];
  const int32_t n_vocab = m.hparams().n_vocab;
  const int32_t P = static_cast<int32_t>(r.prompt.size());
  for (int32_t k : {1, 4, 8}) {
    auto one = make_context(m);
    auto verify = make_context(m);
    Batch b;
    b.add_sequence(0, r.prompt, 0);
    one->decode(b);
    verify->decode(b);
    std::vector<std::vector<float>> want;
    for (int32_t i = 0; i <= k; ++i) {
      b.clear();
      b.add(0, r.output[static_cast<size_t>(i)], P + i, true);
      one->decode(b);
      want.emplace_back(one->logits(0), one->logits(0) + n_vocab);
    }
    b.clear();
    for (int32_t i = 0; i <= k; ++i) b.add(0, r.output[static_cast<size_t>(i)], P + i, true);
    b.set_stepwise(true);
    verify->decode(b);
    ASSERT_EQ(verify->n_outputs(), k + 1);
    for (int32_t i = 0; i <= k; ++i) {
      EXPECT_EQ(std::vector<float>(verify->logits(i), verify->logits(i) + n_vocab), want[static_cast<size_t>(i)])
          << "k " << k << " row " << i;
    }
  }
}

TEST_F(Speculative, NgramDraftingReproducesTheReferencesForEveryK) {
  for (const ModelFixture* f : reference_models()) {
    for (int32_t k : kDraftLengths) {
      SpeculationParams sp;
      sp.mode = SpeculationMode::kNgram;
      sp.draft_max = k;
      for (size_t i = 0; i < f->refs.size(); ++i) {
        const std::string label = "vocab " + std::to_string(f->model->hparams().n_vocab) + " k " + std::to_string(k) +
                                  " line " + std::to_string(i + 1);
        const GenerationResult got = run(*f, f->refs[i], sp);
        expect_reference(*f, f->refs[i], got, label);
        const SpeculationStats& st = got.speculation;
        EXPECT_LE(st.accepted, st.drafted) << label;
        EXPECT_LE(st.drafted, k * st.verify_forwards) << label;
        // Every decode forward gives one token plus its accepted drafts (the last forward's
        // sample may be the EOS, which is no output token but was sampled).
        EXPECT_EQ(st.forward_tokens, st.forwards + st.accepted) << label;
      }
    }
  }
}

// A drafter that is always right and one that is always wrong give the same text; the first
// runs one forward per k + 1 tokens, the second keeps no draft, and both leave the sequence
// holding exactly the positions plain decoding leaves (the rejected drafts' KV is gone).
TEST_F(Speculative, OracleAndAlwaysWrongDraftersGiveTheReference) {
  for (const ModelFixture* f : reference_models()) {
    const int32_t n_vocab = f->model->hparams().n_vocab;
    for (size_t i = 0; i < f->refs.size(); ++i) {
      const Reference& r = f->refs[i];
      int32_t plain_len = 0;
      const GenerationResult plain = run(*f, r, SpeculationParams{}, nullptr, &plain_len);
      expect_reference(*f, r, plain, "plain");
      EXPECT_EQ(plain.speculation.drafted, 0);
      EXPECT_EQ(plain.speculation.tokens_per_forward(), 1.0);
      for (int32_t k : kDraftLengths) {
        SpeculationParams sp;
        sp.draft_max = k;
        const std::string label =
            "vocab " + std::to_string(n_vocab) + " k " + std::to_string(k) + " line " + std::to_string(i + 1);
        ReplayDrafter oracle(r.prompt.size(), r.output, f->eos, 0, n_vocab);
        int32_t len = 0;
        const GenerationResult right = run(*f, r, sp, &oracle, &len);
        expect_reference(*f, r, right, "oracle " + label);
        EXPECT_EQ(len, plain_len) << "oracle " << label;
        EXPECT_EQ(right.speculation.accepted, right.speculation.drafted) << "oracle " << label;
        // n sampled tokens (EOS included) take ceil((n - 1) / (k + 1)) decode forwards.
        const int32_t sampled = static_cast<int32_t>(r.output.size()) + (r.output.size() < f->max_new ? 1 : 0);
        EXPECT_EQ(right.speculation.forwards, (sampled - 1 + k) / (k + 1)) << "oracle " << label;

        EXPECT_EQ(right.text, plain.text) << "oracle " << label;

        // Rejections cost a full verify forward per token: three k keep the test short.
        if (k != 1 && k != 5 && k != 8) continue;
        ReplayDrafter wrong(r.prompt.size(), r.output, f->eos, 1, n_vocab);
        sp.adaptive = false;  // k rejected drafts at every step (the back-off would stop drafting)
        const GenerationResult bad = run(*f, r, sp, &wrong, &len);
        EXPECT_EQ(bad.text, plain.text) << "always wrong " << label;
        expect_reference(*f, r, bad, "always wrong " + label);
        EXPECT_EQ(len, plain_len) << "always wrong " << label;
        EXPECT_EQ(bad.speculation.accepted, 0) << "always wrong " << label;
        EXPECT_GT(bad.speculation.drafted, 0) << "always wrong " << label;
        EXPECT_EQ(bad.speculation.forwards, plain.speculation.forwards) << "always wrong " << label;
        EXPECT_EQ(bad.speculation.tokens_per_forward(), 1.0) << "always wrong " << label;
        // Each forward drafted k, except near max_tokens / the context's end.
        EXPECT_GE(bad.speculation.drafted, k * (bad.speculation.forwards - k)) << "always wrong " << label;
      }
    }
  }
}

// Sampling draws from the same logits in the same order with the same RNG: at a fixed seed the
// sampled text is plain decoding's too (with a deterministic drafter this is the standard
// speculative-sampling rule: a draft d is kept with probability p(d), a rejection resamples from
// p without d). Also stop strings and max_tokens landing inside a verified run of drafts, and a
// context that fills up mid-draft.
TEST_F(Speculative, SamplingStopStringsAndLimitsMatchPlainDecoding) {
  const ModelFixture& f = *stories_;
  struct Case {
    float temperature;
    int32_t max_tokens;
    std::vector<std::string> stop;
    int32_t n_ctx;
    int32_t kv_blocks = 0;  // > 0: a KV pool of this many 16-token blocks (runs out before n_ctx)
    int32_t n_batch = 512;  // < k + 1: the drafts are cut to one chunk (n_batch - 1)
    bool context_shift = false;
  };
  const std::vector<Case> cases = {
      {0.8f, 150, {}, 512},      {1.2f, 150, {}, 512},       {0.0f, 37, {}, 512},
      {0.0f, -1, {"Lily"}, 512}, {0.5f, 121, {". "}, 512},   {0.0f, -1, {}, 60},
      {0.0f, -1, {}, 512, 7},    {0.8f, 200, {}, 512, 0, 3}, {0.7f, 160, {}, 48, 0, 512, true},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    int32_t drafted = 0;  // a short run may end before any n-gram recurs; each case drafts somewhere
    for (size_t i = 0; i < f.refs.size(); ++i) {
      auto one = [&](const SpeculationParams& sp, int32_t* len) {
        std::unique_ptr<Context> ctx;
        if (cases[c].kv_blocks > 0) {
          ContextParams cp;
          cp.n_ctx = cases[c].n_ctx;
          cp.n_threads = 1;
          cp.kv_type = TensorType::F32;
          const HParams& hp = f.model->hparams();
          // Bytes of one block: every layer's K and V rows of 16 positions (F32).
          cp.kv_budget_bytes = static_cast<size_t>(cases[c].kv_blocks) * hp.n_layer * 2 * hp.n_head_kv * 16 *
                               hp.head_dim * sizeof(float);
          ctx = std::make_unique<Context>(*f.model, cp);
          EXPECT_EQ(ctx->kv_blocks_total(), cases[c].kv_blocks);
        } else {
          ctx = make_context(*f.model, cases[c].n_ctx, cases[c].n_batch);
        }
        SamplerParams spar;
        spar.temperature = cases[c].temperature;
        spar.seed = 1234 + i;
        spar.repeat_penalty = 1.1f;
        Sampler s(spar, f.model->hparams().n_vocab);
        GenerationParams gp;
        gp.max_tokens = cases[c].max_tokens;
        gp.stop = cases[c].stop;
        gp.speculation = sp;
        gp.context_shift = cases[c].context_shift;
        GenerationResult r = generate(*ctx, s, f.tokenizer.get(), f.refs[i].prompt, gp);
        *len = ctx->seq_length(0);
        return r;
      };
      int32_t plain_len = 0, spec_len = 0;
      const GenerationResult plain = one(SpeculationParams{}, &plain_len);
      if (cases[c].context_shift) {
        EXPECT_GT(plain.context_shifts, 0);
      }
      if (cases[c].kv_blocks > 0) {  // plain decoding ran out of blocks: "length" with the pool full
        EXPECT_EQ(plain.finish_reason, FinishReason::kLength);
        EXPECT_EQ(plain_len, 16 * cases[c].kv_blocks);
      }
      for (int32_t k : {3, 8}) {
        SpeculationParams sp;
        sp.mode = SpeculationMode::kNgram;
        sp.draft_max = k;
        sp.ngram_min = 1;
        const GenerationResult spec = one(sp, &spec_len);
        const std::string label =
            "case " + std::to_string(c) + " line " + std::to_string(i + 1) + " k " + std::to_string(k);
        EXPECT_EQ(spec.tokens, plain.tokens) << label;
        EXPECT_EQ(spec.text, plain.text) << label;
        EXPECT_EQ(spec.finish_reason, plain.finish_reason) << label;
        EXPECT_EQ(spec.stop_string, plain.stop_string) << label;
        EXPECT_EQ(spec_len, plain_len) << label;
        EXPECT_EQ(spec.context_shifts, plain.context_shifts) << label;
        drafted += spec.speculation.drafted;
        EXPECT_LE(spec.speculation.drafted, (cases[c].n_batch - 1) * spec.speculation.verify_forwards) << label;
      }
    }
    EXPECT_GT(drafted, 0) << "case " << c;
  }
}

// The back-off: drafts that are always wrong stop costing (the length falls to 1, then drafting
// pauses); the output stays the reference.
TEST_F(Speculative, BackOffStopsDraftingWhenDraftsAreWrong) {
  const ModelFixture& f = *stories_;
  const Reference& r = f.refs[0];
  ASSERT_EQ(r.output.size(), 200u);
  SpeculationParams sp;
  sp.draft_max = 8;
  ReplayDrafter wrong(r.prompt.size(), r.output, f.eos, 1, f.model->hparams().n_vocab);
  const GenerationResult got = run(f, r, sp, &wrong);
  expect_reference(f, r, got, "adaptive, always wrong");
  // Forwards 1..4 draft 8, 4, 2, 1 (15 drafts: nothing kept halves the length); then a 1-token
  // probe after pauses of 2, 4, 8, 16, 32, 32, ... steps: at forwards 7, 12, 21, 38, 71, 104, 137,
  // 170 of the 199 (the next would be 203): 8 probes.
  EXPECT_EQ(got.speculation.drafted, 15 + 8);
  EXPECT_EQ(got.speculation.verify_forwards, 4 + 8);
  EXPECT_EQ(got.speculation.forwards, 199);
}

// A caller's drafter guessing ids outside the vocabulary: the draft ends before them, the
// output is the reference.
class HostileDrafter final : public Drafter {
 public:
  void append(std::span<const int32_t>) override {}
  int32_t draft(int32_t max, int32_t* out) override {
    for (int32_t i = 0; i < max; ++i) out[i] = (i % 2) ? -5 : 1 << 30;
    return max + 100;  // more than asked, too
  }
};

TEST_F(Speculative, HostileDraftsAreCutNotDecoded) {
  const ModelFixture& f = *stories_;
  HostileDrafter hostile;
  SpeculationParams sp;
  sp.adaptive = false;
  const GenerationResult got = run(f, f.refs[1], sp, &hostile);
  expect_reference(f, f.refs[1], got, "hostile drafter");
  EXPECT_EQ(got.speculation.drafted, 0);
}

TEST(DraftSchedule, FollowsAcceptanceDownToPauses) {
  DraftSchedule s(4);
  EXPECT_EQ(s.next(), 4);
  s.verified(4, 4);  // all kept: stays at the maximum
  EXPECT_EQ(s.next(), 4);
  s.verified(4, 1);
  EXPECT_EQ(s.next(), 3);
  s.verified(2, 2);  // all of a shorter draft kept: +2, capped
  EXPECT_EQ(s.next(), 4);
  s.verified(4, 1);  // some kept: -1
  EXPECT_EQ(s.length(), 3);
  s.verified(3, 0);  // none kept: halved (3 -> 1)
  EXPECT_EQ(s.length(), 1);
  s.verified(2, 2);  // 1 -> 3 -> 4 (capped)
  s.verified(3, 3);
  EXPECT_EQ(s.length(), 4);
  for (int i = 0; i < 2; ++i) s.verified(4, 0);  // 4 -> 2 -> 1
  EXPECT_EQ(s.length(), 1);
  s.verified(1, 0);  // nothing kept at length 1: pause 2 steps, then probe
  EXPECT_EQ(s.next(), 0);
  EXPECT_EQ(s.next(), 0);
  EXPECT_EQ(s.next(), 1);
  s.verified(1, 0);  // pause 4
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s.next(), 0);
  EXPECT_EQ(s.next(), 1);
  s.verified(1, 1);  // a kept draft: +2, the pauses start again from 2
  EXPECT_EQ(s.next(), 3);
  s.verified(3, 0);  // 3 -> 1
  EXPECT_EQ(s.length(), 1);
  s.verified(1, 0);
  EXPECT_EQ(s.next(), 0);
  EXPECT_EQ(s.next(), 0);
  EXPECT_EQ(s.next(), 1);
  for (int round = 0; round < 10; ++round) {  // the pause doubles up to kMaxPause
    s.verified(1, 0);
    int32_t zeros = 0;
    while (s.next() == 0) ++zeros;
    EXPECT_EQ(zeros, std::min(DraftSchedule::kMaxPause, 4 << round)) << round;
  }
}

TEST_F(Speculative, BadSpeculationSizesAreRejected) {
  const ModelFixture& f = *stories_;
  for (auto bad : {std::pair<int32_t, int32_t>{0, 2}, {9, 2}, {4, 0}}) {
    auto ctx = make_context(*f.model);
    Sampler s = greedy(*f.model);
    GenerationParams gp;
    gp.speculation.mode = SpeculationMode::kNgram;
    gp.speculation.draft_max = bad.first;
    gp.speculation.ngram_min = bad.second;
    EXPECT_THROW(generate(*ctx, s, nullptr, f.refs[0].prompt, gp), Error) << bad.first << " " << bad.second;
  }
  EXPECT_EQ(speculation_mode_from_name("ngram"), SpeculationMode::kNgram);
  EXPECT_EQ(speculation_mode_from_name("off"), SpeculationMode::kOff);
  EXPECT_EQ(speculation_mode_from_name("draft"), SpeculationMode::kDraft);
  EXPECT_THROW(speculation_mode_from_name("lookahead"), Error);
}

// ---- Draft model (generation/draft_model_drafter.h)

// A copy of stories260K with every matrix in Q4_0 (the draft a phone would ship: the same weights
// at lower bits), made with the project's quantizer.
const Model& stories_q4() {
  static const std::unique_ptr<Model> m = [] {
    const std::string path = test::temp_dir() + "/spec-stories-q4_0.gguf";
    quant::QuantizeParams qp;
    qp.ftype = quant::FileType::kMostlyQ4_0;
    quant::quantize_model(test::shared_model("stories260K.gguf"), path, qp);
    return Model::load(path);
  }();
  return *m;
}

SpeculationParams draft_params(const Model& draft, int32_t k) {
  SpeculationParams sp;
  sp.mode = SpeculationMode::kDraft;
  sp.draft_max = k;
  sp.draft_model = &draft;
  return sp;
}

// Greedy decoding with a draft model gives the references for every k: with the target's own
// weights as the draft every draft is kept (its one-token forwards give the verify forward's
// logits bit for bit), so the forwards are exactly the oracle's; with the Q4_0 copy some are
// rejected and rolled back, and the tokens and the sequence left are still plain decoding's.
TEST_F(Speculative, DraftModelReproducesTheReferencesForEveryK) {
  for (const ModelFixture* f : reference_models()) {
    struct Draft {
      const Model* model;
      const char* name;
    };
    std::vector<Draft> drafts = {{f->model.get(), "same model"}};
    if (f == stories_) drafts.push_back({&stories_q4(), "Q4_0 copy"});
    const int32_t n_vocab = f->model->hparams().n_vocab;
    // Under a sanitizer one reference line and three runs (the same code; ~1 s each under ASan).
    const size_t n_refs = test::kSanitized ? 1 : f->refs.size();
    for (size_t i = 0; i < n_refs; ++i) {
      const Reference& r = f->refs[i];
      int32_t plain_len = 0;
      (void)run(*f, r, SpeculationParams{}, nullptr, &plain_len);
      const int32_t sampled = static_cast<int32_t>(r.output.size()) + (r.output.size() < f->max_new ? 1 : 0);
      for (const Draft& d : drafts) {
        const bool same = d.model == f->model.get();
        std::vector<int32_t> ks = test::kSanitized ? std::vector<int32_t>{same ? 4 : 1, 8} : kDraftLengths;
        if (!same && !test::kSanitized) ks = {1, 3, 5, 8};
        if (same && test::kSanitized) ks = {4};
        for (int32_t k : ks) {
          const std::string label = std::string(d.name) + " vocab " + std::to_string(n_vocab) + " k " +
                                    std::to_string(k) + " line " + std::to_string(i + 1);
          int32_t len = 0;
          const GenerationResult got = run(*f, r, draft_params(*d.model, k), nullptr, &len);
          expect_reference(*f, r, got, label);
          EXPECT_EQ(len, plain_len) << label;
          const SpeculationStats& st = got.speculation;
          EXPECT_EQ(st.forward_tokens, st.forwards + st.accepted) << label;
          EXPECT_GT(st.accepted, 0) << label;
          if (same) {
            // Only an EOS draft and the drafts after it (at most k) are not kept.
            EXPECT_LE(st.drafted - st.accepted, r.output.size() < f->max_new ? k : 0) << label;
            EXPECT_EQ(st.forwards, (sampled - 1 + k) / (k + 1)) << label;
          }
        }
      }
    }
  }
}

// The drafter against plain greedy decoding of the draft model written here: after any history
// of kept and rejected drafts (the target keeps r of k drafts and samples something else), and
// across restart(), its k drafts are the draft model's greedy continuation of the sequence from
// a fresh context. This is what catches a draft context that keeps rejected drafts' KV (the
// target's output would not show it: wrong drafts only cost forwards).
TEST_F(Speculative, DraftModelDrafterDraftsTheDraftModelsGreedyContinuation) {
  const ModelFixture& f = *stories_;
  const Model& dm = stories_q4();
  const int32_t n_vocab = dm.hparams().n_vocab;
  auto target_ctx = make_context(*f.model, 256);
  DraftModelDrafter drafter(dm, *target_ctx);
  auto naive = [&](const std::vector<int32_t>& seq, int32_t k) {
    auto ctx = make_context(dm, 256);
    Sampler s = greedy(dm);
    GenerationParams gp;
    gp.max_tokens = k;
    gp.ignore_eog = true;
    return generate(*ctx, s, nullptr, seq, gp).tokens;
  };
  std::mt19937 rng(11);
  std::vector<int32_t> seq = f.refs[0].prompt;
  drafter.append(seq);
  const int steps = test::kSanitized ? 12 : 40;
  for (int step = 0; step < steps; ++step) {
    const int32_t k = 1 + static_cast<int32_t>(rng() % 8);
    std::vector<int32_t> out(static_cast<size_t>(k), -1);
    ASSERT_EQ(drafter.draft(k, out.data()), k) << "step " << step;
    ASSERT_EQ(out, naive(seq, k)) << "step " << step;
    if (step % 13 == 12) {  // a new generation sharing part of the sequence
      seq.resize(seq.size() - rng() % 6);
      drafter.restart();
      drafter.append(seq);
      continue;
    }
    // The target keeps r drafts, then samples a token of its own (another than draft r).
    const int32_t r = static_cast<int32_t>(rng() % static_cast<uint32_t>(k + 1));
    std::vector<int32_t> kept(out.begin(), out.begin() + r);
    kept.push_back(r < k ? (out[static_cast<size_t>(r)] + 1 + static_cast<int32_t>(rng() % 50)) % n_vocab
                         : static_cast<int32_t>(rng() % static_cast<uint32_t>(n_vocab)));
    seq.insert(seq.end(), kept.begin(), kept.end());
    drafter.append(kept);
  }
  EXPECT_GT(drafter.forwards(), 0);
}

// Sampling with a draft model at a fixed seed gives plain sampling's tokens (the draft is a
// point mass: speculative sampling's rule is "keep d iff the sampler picks d"), across
// temperatures, penalties and a context that shifts.
TEST_F(Speculative, DraftModelSamplingMatchesPlainSamplingAtTheSameSeed) {
  const ModelFixture& f = *stories_;
  struct Case {
    float temperature;
    int32_t n_ctx;
    bool context_shift;
  };
  const size_t n_refs = test::kSanitized ? 1 : f.refs.size();
  for (const Case& c : {Case{0.8f, 512, false}, Case{1.3f, 512, false}, Case{0.6f, 48, true}}) {
    for (size_t i = 0; i < n_refs; ++i) {
      auto one = [&](const SpeculationParams& sp) {
        auto ctx = make_context(*f.model, c.n_ctx);
        SamplerParams spar;
        spar.temperature = c.temperature;
        spar.seed = 99 + i;
        spar.repeat_penalty = 1.1f;
        Sampler s(spar, f.model->hparams().n_vocab);
        GenerationParams gp;
        gp.max_tokens = 120;
        gp.speculation = sp;
        gp.context_shift = c.context_shift;
        return generate(*ctx, s, f.tokenizer.get(), f.refs[i].prompt, gp);
      };
      const GenerationResult plain = one(SpeculationParams{});
      for (const Model* d : {static_cast<const Model*>(f.model.get()), &stories_q4()}) {
        const GenerationResult spec = one(draft_params(*d, 4));
        const std::string label = "t " + std::to_string(c.temperature) + " line " + std::to_string(i + 1) +
                                  (d == f.model.get() ? " same" : " q4");
        EXPECT_EQ(spec.tokens, plain.tokens) << label;
        EXPECT_EQ(spec.text, plain.text) << label;
        EXPECT_EQ(spec.context_shifts, plain.context_shifts) << label;
        EXPECT_GT(spec.speculation.drafted, 0) << label;
      }
    }
  }
}

// A copy of stories260K's file with its metadata edited (key `drop` left out), the tensors
// borrowed from the original.
std::unique_ptr<Model> stories_edited(const std::string& name, const std::string& drop,
                                      const std::function<void(gguf::GgufWriter&, const gguf::GgufFile&)>& edit) {
  const auto g = gguf::GgufFile::open(test::shared_model("stories260K.gguf"));
  gguf::GgufWriter w;
  w.set_alignment(g->alignment());
  w.copy_metadata_from(*g, [&](std::string_view k) { return k == "general.alignment" || k == drop; });
  edit(w, *g);
  for (const gguf::TensorInfo& t : g->tensors()) {
    w.add_tensor(t.name, t.type, std::vector<int64_t>(t.ne, t.ne + t.n_dims), t.data, t.n_bytes,
                 gguf::GgufWriter::Ownership::kBorrow);
  }
  const std::string path = test::temp_dir() + "/" + name;
  w.write(path);
  return Model::load(path);
}

void expect_refused(const ModelFixture& f, const Model* draft, const std::string& fragment) {
  auto ctx = make_context(*f.model);
  Sampler s = greedy(*f.model);
  GenerationParams gp;
  gp.speculation.mode = SpeculationMode::kDraft;
  gp.speculation.draft_model = draft;
  try {
    (void)generate(*ctx, s, f.tokenizer.get(), f.refs[0].prompt, gp);
    ADD_FAILURE() << "accepted: " << fragment;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
  EXPECT_EQ(ctx->seq_length(0), 0);  // refused before anything ran
}

// A draft model must share the target's vocabulary token for token: another model, a copy with
// one token renamed, a file without a token list and no draft model at all are refused before
// the prompt runs, with the difference named.
TEST_F(Speculative, DraftModelWithAnotherVocabularyIsRefused) {
  ASSERT_NE(poems_->model->hparams().n_vocab, stories_->model->hparams().n_vocab);
  expect_refused(*stories_, poems_->model.get(), "the draft model must use the same tokenizer");
  const auto renamed = stories_edited("spec-renamed.gguf", "", [](gguf::GgufWriter& w, const gguf::GgufFile& g) {
    const auto tokens = g.get_string_array("tokenizer.ggml.tokens");
    std::vector<std::string> t(tokens->begin(), tokens->end());
    t[300] += "x";
    w.set_array_string("tokenizer.ggml.tokens", t);
  });
  expect_refused(*stories_, renamed.get(), "token 300 is '" + stories_->tokenizer->token_text(300) + "x'");
  const auto no_tokens =
      stories_edited("spec-no-tokens.gguf", "tokenizer.ggml.tokens", [](gguf::GgufWriter&, const gguf::GgufFile&) {});
  expect_refused(*stories_, no_tokens.get(), "the draft model has no token list");
  expect_refused(*stories_, nullptr, "needs a draft model");
}

// Speculative sampling keeps the distribution: the (2nd, 3rd) sampled tokens after a fixed prompt,
// over many seeds, with a draft model (the Q4_0 copy: its greedy draft is kept about as often as
// the target samples it, the other draws take the rejection path) against plain sampling over
// other seeds. The 2nd token is row 0 of the verify forward (a kept draft or the residual draw),
// the 3rd row 1 (valid only after a kept draft) or a plain decode. A two-sample chi-square
// homogeneity test over the pairs (pairs seen fewer than 10 times in both runs together pooled
// into one category) at p = 0.001; the seeds are fixed, so the test is deterministic. 20,000
// pairs a side: 40,000 generations, the plain build only (CMakeLists.txt
// EDGELLM_ASAN_FILTER_generation_test_speculative; the draft-model path runs under ASan in the
// tests above).
TEST_F(Speculative, SampledTokenPairsFollowPlainSamplingsDistribution) {
  const ModelFixture& f = *stories_;
  const int32_t n = 20000;
  const std::vector<int32_t>& prompt = f.refs[0].prompt;
  const std::vector<int32_t> head(prompt.begin(), prompt.end() - 1);
  const std::vector<int32_t> last = {prompt.back()};
  // Counts of (2nd, 3rd) token pairs over seeds seed0 .. seed0 + n - 1. The prompt but its last
  // token is decoded once; each generation truncates back to it (so only its last token and the
  // samples are decoded: the same logits as a full prefill, ContextTest's chunking invariance).
  auto pairs = [&](uint64_t seed0, DraftModelDrafter* drafter, SpeculationStats* total) {
    std::map<std::pair<int32_t, int32_t>, int32_t> counts;
    auto ctx = make_context(*f.model, 64, 64);
    Batch b;
    b.add_sequence(0, head, 0, false);
    ctx->decode(b);
    SamplerParams spar;  // a wide distribution (the default chain keeps ~2 pairs, the draft nearly always)
    spar.temperature = 1.5f;
    spar.top_k = 0;
    spar.top_p = 1.0f;
    spar.min_p = 0.0f;
    Sampler s(spar, f.model->hparams().n_vocab);
    GenerationParams gp;
    gp.max_tokens = 3;
    gp.ignore_eog = true;
    gp.speculation.draft_max = 2;  // max_tokens 3 leaves room for one draft after the first token
    GenerationCallbacks cb;
    cb.drafter = drafter;
    for (int32_t j = 0; j < n; ++j) {
      ctx->seq_truncate(0, static_cast<int32_t>(head.size()));
      spar.seed = seed0 + static_cast<uint64_t>(j);
      s = Sampler(spar, f.model->hparams().n_vocab);
      if (drafter != nullptr) {
        drafter->restart();
        drafter->append(head);
      }
      const GenerationResult r = generate(*ctx, s, nullptr, last, gp, cb);
      EXPECT_EQ(r.tokens.size(), 3u);
      if (r.tokens.size() != 3) return counts;
      counts[{r.tokens[1], r.tokens[2]}]++;
      total->drafted += r.speculation.drafted;
      total->accepted += r.speculation.accepted;
    }
    return counts;
  };
  auto ref_ctx = make_context(*f.model, 64, 64);
  DraftModelDrafter drafter(stories_q4(), *ref_ctx);
  SpeculationStats plain_stats, spec_stats;
  const auto plain = pairs(1, nullptr, &plain_stats);
  const auto spec = pairs(1000001, &drafter, &spec_stats);
  EXPECT_EQ(plain_stats.drafted, 0);
  // Both paths ran often: every generation drafted once, and some drafts were kept, some not.
  EXPECT_EQ(spec_stats.drafted, n);
  EXPECT_GT(spec_stats.accepted, n / 10);
  EXPECT_LT(spec_stats.accepted, n - n / 10);

  std::map<std::pair<int32_t, int32_t>, std::pair<int32_t, int32_t>> both;
  for (const auto& [k, c] : plain) both[k].first = c;
  for (const auto& [k, c] : spec) both[k].second = c;
  double chi2 = 0;
  int32_t categories = 0;
  int64_t pooled_a = 0, pooled_b = 0;
  for (const auto& [k, ab] : both) {
    const auto [a, b] = ab;
    if (a + b < 10) {
      pooled_a += a;
      pooled_b += b;
      continue;
    }
    chi2 += static_cast<double>(a - b) * (a - b) / (a + b);  // equal sample sizes
    categories++;
  }
  if (pooled_a + pooled_b > 0) {
    chi2 += static_cast<double>(pooled_a - pooled_b) * static_cast<double>(pooled_a - pooled_b) /
            static_cast<double>(pooled_a + pooled_b);
    categories++;
  }
  ASSERT_GE(categories, 10);
  // Critical value at p = 0.001 for df = categories - 1 (Wilson-Hilferty; z = 3.0902).
  const double df = categories - 1;
  const double h = 2.0 / (9.0 * df);
  const double critical = df * std::pow(1.0 - h + 3.0902 * std::sqrt(h), 3.0);
  std::printf("chi-square %.1f, df %.0f, critical (p = 0.001) %.1f; drafts kept %d of %d\n", chi2, df, critical,
              spec_stats.accepted, spec_stats.drafted);
  EXPECT_LT(chi2, critical);
}

// The n-gram drafter against a naive search written here: for n from ngram_max down, the most
// recent earlier occurrence of the last n tokens in the history it keeps, and what followed.
std::vector<int32_t> naive_draft(const std::vector<int32_t>& h, const NgramDrafterParams& p, int32_t max) {
  const int32_t len = static_cast<int32_t>(h.size());
  for (int32_t n = std::min(p.ngram_max, len - 1); n >= p.ngram_min; --n) {
    for (int32_t end = len - 1; end >= n; --end) {  // occurrence h[end - n, end), followed by h[end]
      if (std::equal(h.begin() + end - n, h.begin() + end, h.end() - n)) {
        return std::vector<int32_t>(h.begin() + end, h.begin() + std::min(len, end + max));
      }
    }
  }
  return {};
}

TEST(NgramDrafter, MatchesANaiveSearchWithinItsBoundedHistory) {
  std::mt19937 rng(7);
  struct Config {
    NgramDrafterParams p;
    int32_t min_drafts;  // of the 3000 steps that draft (measured at seed 7: 2989, 2963, 91)
  };
  for (const Config& cfg : {Config{{1, 3, 64}, 2900}, Config{{2, 4, 4096}, 2900}, Config{{3, 3, 10}, 80}}) {
    const NgramDrafterParams& p = cfg.p;
    NgramDrafter d(p);
    std::vector<int32_t> all;
    int32_t drafts = 0;
    for (int step = 0; step < 3000; ++step) {
      // Small alphabets repeat n-grams often; copied spans (as a summary quotes) now and then.
      int32_t t = static_cast<int32_t>(rng() % 6);
      if (all.size() > 20 && rng() % 3 == 0) t = all[all.size() - 1 - rng() % 20];
      all.push_back(t);
      d.append({&t, 1});
      const std::vector<int32_t>& h = d.history();
      ASSERT_LE(h.size(), static_cast<size_t>(p.max_history));
      ASSERT_TRUE(std::equal(h.begin(), h.end(), all.end() - static_cast<std::ptrdiff_t>(h.size())));
      ASSERT_LE(d.index_entries(), static_cast<size_t>(p.ngram_max - p.ngram_min + 1) * p.max_history);
      const int32_t max = 1 + static_cast<int32_t>(rng() % 8);
      std::vector<int32_t> out(static_cast<size_t>(max), -1);
      out.resize(static_cast<size_t>(d.draft(max, out.data())));
      ASSERT_EQ(out, naive_draft(h, p, max)) << "step " << step;
      drafts += !out.empty();
    }
    EXPECT_GE(drafts, cfg.min_drafts) << p.ngram_min << ".." << p.ngram_max << " history " << p.max_history;
  }
  // The most recent occurrence and the longest n win.
  NgramDrafter d({1, 3, 64});
  const std::vector<int32_t> h = {5, 1, 2, 7, 9, 1, 2, 8, 3, 2, 1, 2};
  d.append(h);
  int32_t out[4];
  ASSERT_EQ(d.draft(4, out), 4);  // "1 2" last seen at 5..6 -> 8 3 2 1
  EXPECT_EQ(std::vector<int32_t>(out, out + 4), (std::vector<int32_t>{8, 3, 2, 1}));
  EXPECT_THROW(NgramDrafter({0, 2, 64}), Error);
  EXPECT_THROW(NgramDrafter({3, 2, 64}), Error);
  EXPECT_THROW(NgramDrafter({1, 17, 1000}), Error);
  EXPECT_THROW(NgramDrafter({2, 4, 9}), Error);
}

}  // namespace
}  // namespace edgellm
