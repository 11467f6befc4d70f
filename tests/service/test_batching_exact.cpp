// Continuous batching must not change a single token: N concurrent greedy requests through the
// service (N = 1, 2, 4, 8; F32 KV; prompts of different lengths arriving while others decode;
// chunked prefill next to decode steps) each yield exactly the tokens of the same request run
// alone with generate() on a fresh Context — an independent driver of the same engine.
// Speculative decoding in the service (BatchingExact.Speculation*) must not change one either:
// n-gram drafts at k = 1..8, alone and in a batch of 4 with plain requests, give the shared
// greedy references' ids (an independent engine), and the per-request stats add up; nor must a
// draft model in the service (BatchingExact.DraftModel*: one drafter per sequence slot).
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/context.h"
#include "engine/memory_plan.h"
#include "engine/sampler.h"
#include "generation/generate.h"
#include "model/model.h"
#include "service/inference_service.h"
#include "support/greedy_reference.h"
#include "support/sanitizer.h"
#include "support/service_fixture.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"
#include "tools/quant/quantize_model.h"

namespace edgellm {
namespace {

constexpr int32_t kMaxTokens = 40;

struct Case {
  const char* model;
  std::vector<std::string> prompts;  // different lengths
};

const Case kStories{"stories260K.gguf",
                    {"Once upon a time", "The little dog ran to the park and saw a big red ball. He",
                     "Lily", "One day, a girl named Sue went to the store with her mom to buy",
                     "Tom and his friend played in the garden", "The sun was hot. The cat",
                     "There was a boy who liked to read books about trains and boats and planes and",
                     "A bird"}};
const Case kPoems{"tiny-zh-poems.gguf",
                  {"床前明月光", "春眠不觉晓，处处闻啼鸟。夜来风雨声，", "白日依山尽", "山", "千山鸟飞绝，万径人踪灭。",
                   "红豆生南国", "锄禾日当午，汗滴禾下土。谁知盘中餐，", "江"}};

void run_case(const Case& c, int n, int32_t step_tokens) {
  SCOPED_TRACE(std::string(c.model) + " N=" + std::to_string(n) + " step_tokens=" + std::to_string(step_tokens));
  std::shared_ptr<const Model> model = test::shared_service_model(c.model);
  const std::unique_ptr<Tokenizer> tok = Tokenizer::from_gguf(model->gguf());
  constexpr int32_t kCtx = 192;

  ServiceParams params = test::service_params(kCtx, n, 8, TensorType::F32);
  params.step_tokens = step_tokens;
  InferenceService service(model, params);

  std::vector<test::Outcome> got(static_cast<size_t>(n));
  test::Finishes finished;
  std::vector<char> chained(static_cast<size_t>(n), 0);  // scheduler thread only
  // Request i + 1 arrives from request i's third token: prompts join while others decode.
  std::function<void(int)> submit = [&](int i) {
    ServiceRequest r = test::greedy_request(c.prompts[static_cast<size_t>(i)], kMaxTokens, /*stop_at_eog=*/true);
    auto chain = [&, i] {
      if (chained[static_cast<size_t>(i)] || i + 1 >= n) return;
      chained[static_cast<size_t>(i)] = 1;
      submit(i + 1);
    };
    got[static_cast<size_t>(i)].attach(r, [chain](int index) {
      if (index == 2) chain();
      return true;
    });
    auto record = std::move(r.on_finish);
    r.on_finish = [&finished, chain, record](RequestResult& res) {
      chain();  // a request that ended before its third token
      record(res);
      finished.add();
    };
    service.submit(std::move(r));
  };
  submit(0);
  ASSERT_TRUE(finished.wait(n)) << finished.count() << " of " << n << " finished";
  const ServiceMetrics m = service.metrics();
  std::vector<size_t> lengths, prompt_lengths;
  for (int i = 0; i < n; ++i) {
    const std::vector<int32_t> prompt = tok->encode(c.prompts[static_cast<size_t>(i)], true, false);
    prompt_lengths.push_back(prompt.size());
    test::SoloParams sp;
    sp.n_ctx = kCtx;
    sp.generation.max_tokens = kMaxTokens;
    const std::vector<int32_t> want = test::solo_greedy(*model, tok.get(), prompt, sp).tokens;
    const test::Outcome& o = got[static_cast<size_t>(i)];
    EXPECT_NE(o.result.finish_reason, FinishReason::kError) << "request " << i;
    EXPECT_EQ(o.tokens, want) << "request " << i << " differs from its solo run";
    lengths.push_back(want.size());
  }
  // Batching happened: several sequences were decoded in one forward. Request 1 is queued from
  // request 0's third token and admitted in the next step, which prefills up to step_tokens - 1
  // of its prompt beside request 0's decode token; after p such steps it has its first token and
  // decodes in the next one, beside request 0 if request 0 is still running then, i.e. if it
  // samples more than 3 + p tokens (its solo run says how many).
  EXPECT_LE(m.max_decode_batch, n);
  if (n == 1) {
    EXPECT_EQ(m.max_decode_batch, 1);
  } else {
    const size_t p = (prompt_lengths[1] + static_cast<size_t>(step_tokens) - 2) / static_cast<size_t>(step_tokens - 1);
    ASSERT_GT(lengths[0], 3 + p) << "this case cannot show batching: request 0 ends before request 1 decodes";
    EXPECT_GE(m.max_decode_batch, 2) << "requests that overlapped were never decoded in one step";
  }
  std::printf("  %s N=%d step_tokens %d: at most %d sequences decoded in one step, %llu steps\n", c.model, n,
              step_tokens, m.max_decode_batch, static_cast<unsigned long long>(m.steps));
}

TEST(BatchingExact, StoriesEveryWidth) {
  for (int n : {1, 2, 4, 8}) run_case(kStories, n, 256);
}

TEST(BatchingExact, PoemsEveryWidth) {
  for (int n : {1, 2, 4, 8}) run_case(kPoems, n, 256);
}

// A step budget smaller than the prompts: each prompt is prefilled over several steps, in the
// same batches as the other sequences' decode tokens.
TEST(BatchingExact, ChunkedPrefillBesideDecode) {
  run_case(kStories, 4, 9);
  run_case(kPoems, 8, 12);
}

// ---- speculative decoding in the service

// The property every speculating request's stats must have: drafts counted once each, every
// decode forward yields 1 + the drafts it kept (forward_tokens = forwards + accepted), and the
// tokens after the first (sampled from the prefill's logits) all come from decode forwards.
void expect_stats_add_up(const RequestResult& res, const std::string& label) {
  const SpeculationStats& s = res.stats.speculation;
  EXPECT_LE(s.accepted, s.drafted) << label;
  EXPECT_LE(s.verify_forwards, s.forwards) << label;
  EXPECT_EQ(s.forward_tokens, s.forwards + s.accepted) << label;
  // Every token but the first came from a decode forward; an end-of-generation token that
  // stopped the request was sampled from one too but is not a completion token.
  const int32_t from_forwards = res.stats.completion_tokens - 1 + (res.finish_reason == FinishReason::kStop ? 1 : 0);
  EXPECT_EQ(s.forward_tokens, from_forwards) << label;
  if (s.forwards > 0) {
    EXPECT_DOUBLE_EQ(s.tokens_per_forward(), static_cast<double>(from_forwards) / s.forwards) << label;
  }
}

ServiceRequest spec_request(const test::GreedyReference& ref, int32_t max_tokens, int32_t k,
                            SpeculationMode mode = SpeculationMode::kNgram) {
  ServiceRequest r = test::greedy_request(ref.prompt, max_tokens);
  if (k > 0) {
    r.generation.speculation.mode = mode;
    r.generation.speculation.draft_max = k;
  }
  return r;
}

struct SpecCase {
  const char* model;
  const char* refs;
  std::vector<int32_t> ks;
  SpeculationMode mode = SpeculationMode::kNgram;
  const char* draft = nullptr;  // mode kDraft: the service's draft model (ServiceParams::draft_model_path)
};

// Greedy with speculation == the shared references (plain greedy decoding of an independent
// engine): each k alone, then a batch of 4 (requests 0 and 2 speculate in the case's mode, 1 does
// not, 3 does not with n-gram and drafts n-gram beside the draft-model ones with a draft model)
// submitted while paused so all four prefill in one step and then decode together, with room
// for every sequence's drafts in the step. A draft model that is the model itself (same file,
// the F32 KV of an F32 target) drafts exactly the greedy tokens: every draft is accepted.
void run_spec_case(const SpecCase& c, int32_t max_tokens) {
  std::shared_ptr<const Model> model = test::shared_service_model(c.model);
  const std::vector<test::GreedyReference> refs = test::load_greedy_references(c.refs);
  ASSERT_GE(refs.size(), 4u);
  ServiceParams params = test::service_params(256, 4, 8, TensorType::F32);
  params.spec_max_batch_tokens = 4 + 2 * SpeculationParams::kMaxDraft;  // every sequence may draft k
  const bool with_draft = c.mode == SpeculationMode::kDraft;
  if (with_draft) params.draft_model_path = test::shared_model(c.draft);
  InferenceService service(model, params);
  const bool self_draft = with_draft && std::string(c.draft) == c.model;
  int64_t draft_drafted = 0, draft_accepted = 0;  // the draft-model requests' alone
  const auto want = [&](size_t i) {
    const std::vector<int32_t>& out = refs[i].output;
    return std::vector<int32_t>(out.begin(), out.begin() + std::min<size_t>(out.size(), static_cast<size_t>(max_tokens)));
  };
  int64_t drafted = 0, accepted = 0;
  for (int32_t k : c.ks) {
    const size_t i = static_cast<size_t>(k) % refs.size();
    const std::string label = std::string(c.model) + " solo k=" + std::to_string(k) + " ref " + std::to_string(i);
    test::Outcome o;
    ServiceRequest r = spec_request(refs[i], max_tokens, k, c.mode);
    r.generation.ignore_eog = false;
    service.submit(std::move(o.attach(r)));
    ASSERT_TRUE(o.wait_final()) << label;
    EXPECT_EQ(o.tokens, want(i)) << label;
    EXPECT_EQ(o.result.stats.speculation_off_reason, "") << label;
    expect_stats_add_up(o.result, label);
    drafted += o.result.stats.speculation.drafted;
    accepted += o.result.stats.speculation.accepted;
    if (with_draft) {
      draft_drafted += o.result.stats.speculation.drafted;
      draft_accepted += o.result.stats.speculation.accepted;
    }
    std::printf("  %s: %d drafted, %d accepted, %.2f tokens per forward\n", label.c_str(),
                o.result.stats.speculation.drafted, o.result.stats.speculation.accepted,
                o.result.stats.speculation.tokens_per_forward());

    const std::string blabel = std::string(c.model) + " batch of 4, k=" + std::to_string(k);
    std::vector<test::Outcome> got(4);
    test::Finishes finished;
    service.pause();
    for (size_t j = 0; j < 4; ++j) {
      const bool ngram_beside = with_draft && j == 3;
      ServiceRequest b = spec_request(refs[j], max_tokens, j % 2 == 0 || ngram_beside ? k : 0,
                                      ngram_beside ? SpeculationMode::kNgram : c.mode);
      b.generation.ignore_eog = false;  // tiny-zh-poems' references end at EOS
      service.submit(std::move(got[j].attach(b, {}, &finished)));
    }
    service.resume();
    ASSERT_TRUE(finished.wait(4)) << blabel;
    for (size_t j = 0; j < 4; ++j) {
      const RequestResult& res = got[j].result;
      const std::string l = blabel + " request " + std::to_string(j);
      EXPECT_EQ(got[j].tokens, want(j)) << l;
      expect_stats_add_up(res, l);
      if (j == 1 || (j == 3 && !with_draft)) {
        EXPECT_EQ(res.stats.speculation.drafted, 0) << l;
      }
      drafted += res.stats.speculation.drafted;
      accepted += res.stats.speculation.accepted;
      if (with_draft && j % 2 == 0) {
        draft_drafted += res.stats.speculation.drafted;
        draft_accepted += res.stats.speculation.accepted;
      }
    }
  }
  // The drafts did run (and some were right): the equalities above compared verify forwards.
  EXPECT_GT(drafted, 0);
  EXPECT_GT(accepted, 0);
  if (self_draft) {
    // Drafting for itself, the draft model is always right: every draft is accepted, except
    // those after an end-of-generation token (the request stops there), at most k per request
    // that ends at EOG.
    EXPECT_GT(draft_drafted, 0);
    EXPECT_LE(draft_drafted - draft_accepted, c.model == std::string("stories260K.gguf") ? 0 : 8 * 3 * static_cast<int64_t>(c.ks.size()))
        << draft_accepted << " of " << draft_drafted << " accepted";
    std::printf("  %s drafting for itself: %lld of %lld drafts accepted\n", c.model,
                static_cast<long long>(draft_accepted), static_cast<long long>(draft_drafted));
  } else {
    EXPECT_LT(accepted, drafted);  // and some were wrong: rollback ran
  }
  std::printf("  %s: %lld drafted, %lld accepted over every run\n", c.model, static_cast<long long>(drafted),
              static_cast<long long>(accepted));
}

TEST(BatchingExact, SpeculationGreedyEqualsReferencesEveryK) {
  run_spec_case({"stories260K.gguf", "stories260K-greedy.jsonl", {1, 2, 3, 4, 5, 6, 7, 8}}, 64);
}

TEST(BatchingExact, SpeculationPoemsReferences) {
  // tiny-zh-poems' references end at EOS (stop at EOG); a vocabulary of 4096, not a new path:
  // under a sanitizer k = 4 only (k = 1, 4, 8: 5.3 s under ASan at load 14, k = 4 a third).
  const std::vector<int32_t> ks = test::kSanitized ? std::vector<int32_t>{4} : std::vector<int32_t>{1, 4, 8};
  run_spec_case({"tiny-zh-poems.gguf", "tiny-zh-poems-greedy.jsonl", ks}, 100);
}

// A draft model in the service (ServiceParams::draft_model_path; one drafter per sequence slot):
// stories260K drafting for itself, k = 1..8 alone and in a batch of 4 beside an n-gram and a
// plain request; the tokens are the references' (plain greedy decoding), every draft accepted.
TEST(BatchingExact, DraftModelGreedyEqualsReferencesEveryK) {
  // Under a sanitizer k = 1, 4, 8: the paths (a draft of one, a middle one, the longest) once each.
  const std::vector<int32_t> ks =
      test::kSanitized ? std::vector<int32_t>{1, 4, 8} : std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8};
  run_spec_case({"stories260K.gguf", "stories260K-greedy.jsonl", ks, SpeculationMode::kDraft, "stories260K.gguf"}, 64);
}

TEST(BatchingExact, DraftModelPoemsReferences) {
  const std::vector<int32_t> ks = test::kSanitized ? std::vector<int32_t>{4} : std::vector<int32_t>{1, 4, 8};
  run_spec_case({"tiny-zh-poems.gguf", "tiny-zh-poems-greedy.jsonl", ks, SpeculationMode::kDraft, "tiny-zh-poems.gguf"},
                100);
}

// A lower-bit copy of the same weights as the draft (tiny-zh-poems quantized to Q8_0 here, 0.1 s):
// four requests drafting with it at once give the references' ids; its drafts are mostly right.
TEST(BatchingExact, DraftModelLowerBitCopyInABatchOfFour) {
  const std::string q8 = test::temp_dir() + "/tiny-zh-poems-q8_0-draft.gguf";
  quant::QuantizeParams qp;
  qp.ftype = quant::FileType::kMostlyQ8_0;
  qp.n_threads = 1;
  (void)quant::quantize_model(test::shared_model("tiny-zh-poems.gguf"), q8, qp);
  std::shared_ptr<const Model> model = test::shared_service_model("tiny-zh-poems.gguf");
  const std::vector<test::GreedyReference> refs = test::load_greedy_references("tiny-zh-poems-greedy.jsonl");
  ASSERT_GE(refs.size(), 4u);
  ServiceParams params = test::service_params(256, 4, 8, TensorType::F32);
  params.spec_max_batch_tokens = 4 + 4 * 4;
  params.draft_model_path = q8;
  InferenceService service(model, params);
  std::vector<test::Outcome> got(4);
  test::Finishes finished;
  service.pause();
  for (size_t j = 0; j < 4; ++j) {
    ServiceRequest b = spec_request(refs[j], 100, 4, SpeculationMode::kDraft);
    b.generation.ignore_eog = false;
    service.submit(std::move(got[j].attach(b, {}, &finished)));
  }
  service.resume();
  ASSERT_TRUE(finished.wait(4));
  int64_t drafted = 0, accepted = 0;
  for (size_t j = 0; j < 4; ++j) {
    const std::vector<int32_t>& out = refs[j].output;
    EXPECT_EQ(got[j].tokens, std::vector<int32_t>(out.begin(), out.begin() + std::min<size_t>(out.size(), 100)))
        << "request " << j;
    expect_stats_add_up(got[j].result, "Q8_0 draft, request " + std::to_string(j));
    drafted += got[j].result.stats.speculation.drafted;
    accepted += got[j].result.stats.speculation.accepted;
  }
  EXPECT_GT(accepted, drafted / 2) << accepted << " of " << drafted;
  std::printf("  tiny-zh-poems with its Q8_0 copy drafting, 4 at once: %lld of %lld drafts accepted\n",
              static_cast<long long>(accepted), static_cast<long long>(drafted));
}

// A draft model with another vocabulary fails the service's construction naming the file; the
// drafters' contexts are what the planner counts for n_seq_max of them (plan_draft_memory:
// KV, scratch and logits per slot, the weights once), and the service reports their bytes.
TEST(BatchingExact, DraftModelVocabularyCheckedAndMemoryPlanned) {
  std::shared_ptr<const Model> poems = test::shared_service_model("tiny-zh-poems.gguf");
  ServiceParams bad = test::service_params(128, 2, 4, TensorType::F32);
  bad.draft_model_path = test::shared_model("stories260K.gguf");
  try {
    InferenceService service(poems, bad);
    ADD_FAILURE() << "a draft model with another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("stories260K.gguf"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
  }
  bad.draft_model_path = test::temp_dir() + "/no-such-draft.gguf";
  try {
    InferenceService service(poems, bad);
    ADD_FAILURE() << "a missing draft model was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-draft.gguf"), std::string::npos) << e.what();
  }

  std::shared_ptr<const Model> stories = test::shared_service_model("stories260K.gguf");
  ServiceParams params = test::service_params(128, 3, 4, TensorType::F16);
  InferenceService plain(stories, params);
  EXPECT_EQ(plain.metrics().draft_context_bytes, 0u);
  EXPECT_EQ(plain.draft_model(), nullptr);
  params.draft_model_path = test::shared_model("stories260K.gguf");
  InferenceService service(stories, params);
  ASSERT_NE(service.draft_model(), nullptr);
  const MemoryPlan one = plan_draft_memory(*service.draft_model(), service.context_params(), RepackMode::kAuto);
  const MemoryPlan three = plan_draft_memory(*service.draft_model(), service.context_params(), RepackMode::kAuto, 3);
  EXPECT_EQ(service.metrics().draft_context_bytes, three.kv + three.scratch + three.logits);
  EXPECT_EQ(three.kv + three.scratch + three.logits, 3 * (one.kv + one.scratch + one.logits));
  EXPECT_EQ(three.weights_touched, one.weights_touched);
  EXPECT_EQ(plan_memory(service.model(), service.context_params(), RepackMode::kAuto, service.draft_model().get()).draft,
            three.total());
  EXPECT_NE(service.metrics().to_json().dump().find("\"draft_context_bytes\""), std::string::npos);
  // Drafting still works on this service (F16 KV; the draft context's too), and a plain request
  // beside it is unchanged: both give the tokens of the service without a draft model.
  const std::vector<test::GreedyReference> refs = test::load_greedy_references("stories260K-greedy.jsonl");
  test::Outcome want, got;
  ServiceRequest w = spec_request(refs[0], 32, 0);
  plain.submit(std::move(want.attach(w)));
  ServiceRequest g = spec_request(refs[0], 32, 4, SpeculationMode::kDraft);
  service.submit(std::move(got.attach(g)));
  ASSERT_TRUE(want.wait_final());
  ASSERT_TRUE(got.wait_final());
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_GT(got.result.stats.speculation.drafted, 0);
  expect_stats_add_up(got.result, "F16 KV, draft model");
}

// The service's batch-size back-off: 4 sequences decoding at once with spec_max_batch_tokens 4
// leave no room for a draft, so none is drafted while all four decode (they finish together);
// the same requests alone draft.
TEST(BatchingExact, SpeculationBacksOffInAFullBatch) {
  std::shared_ptr<const Model> model = test::shared_service_model("stories260K.gguf");
  const std::vector<test::GreedyReference> refs = test::load_greedy_references("stories260K-greedy.jsonl");
  ServiceParams params = test::service_params(256, 4, 8, TensorType::F32);
  params.spec_max_batch_tokens = 4;
  InferenceService service(model, params);
  std::vector<test::Outcome> got(4);
  test::Finishes finished;
  service.pause();
  for (size_t j = 0; j < 4; ++j) {
    ServiceRequest b = spec_request(refs[j], 48, 4);
    service.submit(std::move(got[j].attach(b, {}, &finished)));
  }
  service.resume();
  ASSERT_TRUE(finished.wait(4));
  for (size_t j = 0; j < 4; ++j) {
    EXPECT_EQ(got[j].result.stats.speculation.drafted, 0) << "request " << j;
    EXPECT_EQ(got[j].result.stats.speculation.forwards, 47) << "request " << j;
    EXPECT_EQ(got[j].tokens, std::vector<int32_t>(refs[j].output.begin(), refs[j].output.begin() + 48)) << j;
  }
  test::Outcome alone;
  ServiceRequest r = spec_request(refs[0], 48, 4);
  service.submit(std::move(alone.attach(r)));
  ASSERT_TRUE(alone.wait_final());
  EXPECT_GT(alone.result.stats.speculation.drafted, 0);
  expect_stats_add_up(alone.result, "alone");
}

// A grammar (here json_object) turns speculation off for that request, and its stats say why;
// a draft-model request, or k outside 1..8, is refused at submit naming the problem.
TEST(BatchingExact, SpeculationOffWithAGrammarAndRefusedDraftMode) {
  std::shared_ptr<const Model> model = test::shared_service_model("stories260K.gguf");
  InferenceService service(model, test::service_params(256, 2, 4, TensorType::F32));
  test::Outcome o;
  ServiceRequest r = test::greedy_request("Once upon a time", 24);
  r.json_object = true;
  r.generation.speculation.mode = SpeculationMode::kNgram;
  r.generation.speculation.draft_max = 4;
  service.submit(std::move(o.attach(r)));
  ASSERT_TRUE(o.wait_final());
  EXPECT_NE(o.result.stats.speculation_off_reason.find("grammar"), std::string::npos)
      << o.result.stats.speculation_off_reason;
  EXPECT_EQ(o.result.stats.speculation.drafted, 0);
  EXPECT_GT(o.result.stats.speculation.forwards, 0);
  EXPECT_DOUBLE_EQ(o.result.stats.speculation.tokens_per_forward(), 1.0);

  ServiceRequest d = test::greedy_request("Once upon a time", 8);
  d.generation.speculation.mode = SpeculationMode::kDraft;
  try {
    service.submit(std::move(d));
    ADD_FAILURE() << "draft mode accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("draft model"), std::string::npos) << e.what();
  }
  for (int32_t k : {0, 9}) {
    ServiceRequest b = test::greedy_request("Once upon a time", 8);
    b.generation.speculation.mode = SpeculationMode::kNgram;
    b.generation.speculation.draft_max = k;
    try {
      service.submit(std::move(b));
      ADD_FAILURE() << "draft_max " << k << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("draft_max"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace edgellm
