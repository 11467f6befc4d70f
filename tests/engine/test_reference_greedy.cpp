// End-to-end correctness: greedy decoding of the two real models in shared/models must reproduce,
// token for token, the continuations an established engine produced (shared/testdata/reference).
// The same ids must come out whatever the chunking (n_batch), the number of sequences decoded
// together and the thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/json.h"
#include "engine/context.h"
#include "model/model.h"
#include "support/test_env.h"

namespace edgellm {
namespace {

struct Case {
  std::vector<int32_t> prompt;
  std::vector<int32_t> expected;
};

std::vector<Case> load_cases(const std::string& file) {
  std::vector<Case> cases;
  const std::string text = test::read_file(test::shared_testdata("reference/" + file));
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) {
      const Json j = Json::parse(std::string_view(text).substr(start, end - start));
      Case c;
      for (const auto& v : j.at("prompt_ids").as_array()) c.prompt.push_back(static_cast<int32_t>(v.as_int()));
      for (const auto& v : j.at("output_ids").as_array()) c.expected.push_back(static_cast<int32_t>(v.as_int()));
      cases.push_back(std::move(c));
    }
    start = end + 1;
  }
  return cases;
}

// First index of the maximum, like llama.cpp's greedy sampler.
int32_t argmax(const float* x, int32_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

// Gap between the best and second-best logit: how close a step was to a different choice.
float top2_gap(const float* x, int32_t n) {
  float a = -INFINITY, b = -INFINITY;
  for (int32_t i = 0; i < n; ++i) {
    if (x[i] > a) {
      b = a;
      a = x[i];
    } else if (x[i] > b) {
      b = x[i];
    }
  }
  return a - b;
}

struct GreedyRun {
  std::vector<std::vector<int32_t>> ids;  // generated ids per case
  std::vector<int32_t> first_mismatch;    // per case, -1 if all match
  std::vector<float> gap_at_mismatch;     // top-2 logit gap at the first mismatch (engine's view)
};

class ReferenceGreedy : public ::testing::Test {
 protected:
  struct ModelData {
    std::unique_ptr<Model> model;
    std::vector<Case> cases;
    int32_t eos = -1;
    size_t max_new = 0;
  };

  static ModelData load(const std::string& model_file, const std::string& ref_file, size_t max_new) {
    ModelData d;
    d.model = Model::load(test::shared_model(model_file));
    d.cases = load_cases(ref_file);
    d.eos = static_cast<int32_t>(d.model->gguf().get_int("tokenizer.ggml.eos_token_id").value_or(-1));
    d.max_new = max_new;
    return d;
  }

  // Decodes every case; when `together`, all cases share one Context and each decode() call
  // carries one step of every unfinished sequence.
  static GreedyRun run(const ModelData& d, TensorType kv_type, int32_t n_batch, bool together, int threads) {
    const int32_t n_vocab = d.model->hparams().n_vocab;
    const size_t n_cases = d.cases.size();
    GreedyRun r;
    r.ids.resize(n_cases);
    r.first_mismatch.assign(n_cases, -1);
    r.gap_at_mismatch.assign(n_cases, 0.0f);
    ContextParams cp;
    cp.n_ctx = 512;
    cp.n_batch = n_batch;
    cp.n_seq_max = together ? static_cast<int32_t>(n_cases) : 1;
    cp.kv_type = kv_type;
    cp.n_threads = threads;
    auto step_check = [&](size_t c, const float* logits) {
      const int32_t tok = argmax(logits, n_vocab);
      const size_t k = r.ids[c].size();
      if (k < d.cases[c].expected.size() && tok != d.cases[c].expected[k] && r.first_mismatch[c] < 0) {
        r.first_mismatch[c] = static_cast<int32_t>(k);
        r.gap_at_mismatch[c] = top2_gap(logits, n_vocab);
      }
      r.ids[c].push_back(tok);
      return tok;
    };
    auto steps_for = [&](size_t c) {
      // Reference generations stop at EOS (not included) or at max_new: decode one step further
      // when it stopped early so the EOS itself is checked.
      const size_t n = d.cases[c].expected.size();
      return n < d.max_new ? n + 1 : n;
    };

    if (together) {
      Context ctx(*d.model, cp);
      Batch b;
      for (size_t c = 0; c < n_cases; ++c) b.add_sequence(static_cast<int32_t>(c), d.cases[c].prompt, 0);
      ctx.decode(b);
      std::vector<int32_t> active;
      for (size_t c = 0; c < n_cases; ++c) {
        step_check(c, ctx.logits(static_cast<int32_t>(c)));
        active.push_back(static_cast<int32_t>(c));
      }
      for (;;) {
        b.clear();
        std::vector<int32_t> stepping;
        for (int32_t c : active) {
          if (r.ids[c].size() >= steps_for(c)) continue;
          b.add(c, r.ids[c].back(), ctx.seq_length(c), true);
          stepping.push_back(c);
        }
        if (stepping.empty()) break;
        ctx.decode(b);
        for (size_t i = 0; i < stepping.size(); ++i) step_check(stepping[i], ctx.logits(static_cast<int32_t>(i)));
      }
    } else {
      for (size_t c = 0; c < n_cases; ++c) {
        Context ctx(*d.model, cp);
        Batch b;
        b.add_sequence(0, d.cases[c].prompt, 0);
        ctx.decode(b);
        step_check(c, ctx.logits(0));
        while (r.ids[c].size() < steps_for(c)) {
          b.clear();
          b.add(0, r.ids[c].back(), ctx.seq_length(0), true);
          ctx.decode(b);
          step_check(c, ctx.logits(0));
        }
      }
    }
    return r;
  }

  static void expect_exact(const ModelData& d, const GreedyRun& r, const std::string& label) {
    for (size_t c = 0; c < d.cases.size(); ++c) {
      const auto& exp = d.cases[c].expected;
      std::vector<int32_t> got(r.ids[c].begin(), r.ids[c].begin() + static_cast<long>(std::min(exp.size(), r.ids[c].size())));
      EXPECT_EQ(got, exp) << label << ": line " << c + 1 << " first differs at step " << r.first_mismatch[c]
                          << " (top-2 logit gap there " << r.gap_at_mismatch[c] << ")";
      if (exp.size() < d.max_new) {
        ASSERT_GT(r.ids[c].size(), exp.size());
        EXPECT_EQ(r.ids[c][exp.size()], d.eos) << label << ": line " << c + 1 << " should end with EOS";
      }
    }
  }
};

// Under instruction-set emulation (qemu, EDGELLM_SLOW_EMULATION=1) one chunked, multi-sequence
// configuration per model proves the ARM kernels; the other configurations test engine logic
// that does not depend on the ISA and already ran natively.
bool slow_emulation() {
  const char* env = std::getenv("EDGELLM_SLOW_EMULATION");
  return env && std::string(env) == "1";
}

TEST_F(ReferenceGreedy, Stories260KAllConfigurations) {
  const ModelData d = load("stories260K.gguf", "stories260K-greedy.jsonl", 200);
  ASSERT_EQ(d.cases.size(), 4u);
  if (slow_emulation()) {
    expect_exact(d, run(d, TensorType::F32, 4, true, 2), "f32 kv, together, n_batch 4");
    return;
  }
  expect_exact(d, run(d, TensorType::F32, 512, false, 1), "f32 kv, n_batch 512, 1 thread");
  expect_exact(d, run(d, TensorType::F32, 4, false, 2), "f32 kv, n_batch 4, 2 threads");
  expect_exact(d, run(d, TensorType::F32, 512, true, 2), "f32 kv, all sequences together");
  expect_exact(d, run(d, TensorType::F32, 3, true, 1), "f32 kv, together, n_batch 3");
}

TEST_F(ReferenceGreedy, TinyZhPoemsAllConfigurations) {
  const ModelData d = load("tiny-zh-poems.gguf", "tiny-zh-poems-greedy.jsonl", 100);
  ASSERT_EQ(d.cases.size(), 4u);
  ASSERT_EQ(d.eos, 2);
  if (slow_emulation()) {
    expect_exact(d, run(d, TensorType::F32, 4, true, 2), "f32 kv, together, n_batch 4");
    return;
  }
  expect_exact(d, run(d, TensorType::F32, 512, false, 2), "f32 kv, n_batch 512");
  expect_exact(d, run(d, TensorType::F32, 4, false, 1), "f32 kv, n_batch 4");
  expect_exact(d, run(d, TensorType::F32, 512, true, 2), "f32 kv, all sequences together");
}

// F16 KV rounds every cached key/value to 11 significant bits; with these small models the
// greedy choice has enough margin that the ids still match. A failure here reports the step and
// the logit gap so the divergence can be judged.
TEST_F(ReferenceGreedy, F16KvCache) {
  if (slow_emulation()) GTEST_SKIP() << "F16 KV is ISA-independent engine logic; tested natively";
  const ModelData s = load("stories260K.gguf", "stories260K-greedy.jsonl", 200);
  expect_exact(s, run(s, TensorType::F16, 512, false, 2), "stories260K f16 kv");
  expect_exact(s, run(s, TensorType::F16, 4, true, 2), "stories260K f16 kv, together, n_batch 4");
  const ModelData z = load("tiny-zh-poems.gguf", "tiny-zh-poems-greedy.jsonl", 100);
  expect_exact(z, run(z, TensorType::F16, 512, false, 2), "tiny-zh-poems f16 kv");
  expect_exact(z, run(z, TensorType::F16, 512, true, 2), "tiny-zh-poems f16 kv, together");
}

}  // namespace
}  // namespace edgellm
