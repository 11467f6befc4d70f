// `edgellm bench` on a tiny synthetic model: the records have llama-bench's fields and sane
// numbers, statistics agree with the samples, and bytes per token follow the model's shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "tools/bench/bench_report.h"
#include "tools/bench/bench_runner.h"
#include "tools/bench/prefill_ops.h"
#include "platform/memory_stats.h"
#include "core/error.h"
#include "core/json.h"
#include "model/model.h"
#include "support/test_env.h"
#include "tools/synth/synth_model.h"

namespace edgellm::bench {
namespace {

std::string tiny_model(const std::string& shape, const std::string& type) {
  synth::SynthOptions o;
  o.shape = shape;
  o.type = type;
  const std::string path = test::temp_dir() + "/bench-" + shape + "-" + type + ".gguf";
  synth::write_synth_model(o, path);
  return path;
}

BenchMachine no_bandwidth_machine() {
  BenchParams p;
  p.measure_int8_peak = false;  // probed only where a test checks it (it takes time)
  p.measure_bandwidth = false;
  return describe_machine(p);
}

TEST(BenchRunner, RecordsHaveLlamaBenchFieldsAndSaneNumbers) {
  BenchParams p;
  p.measure_int8_peak = false;  // probed only where a test checks it (it takes time)
  p.models = {tiny_model("tiny-qwen2", "q8_0")};
  p.n_prompt = {16};
  p.n_gen = {4};
  p.n_depth = {0, 8};
  p.n_threads = {1};
  p.repetitions = 2;
  p.measure_bandwidth = true;
  p.bandwidth_bytes = size_t{4} << 20;
  p.measure_int8_peak = true;
  p.int8_peak_seconds = 0.002;
  const BenchMachine m = describe_machine(p);
  ASSERT_TRUE(m.bandwidth_measured);
  EXPECT_GT(m.bandwidth_1.gbps, 0.0);

  const auto records = run_bench(p, m);
  ASSERT_EQ(records.size(), 4u);  // {pp16, tg4} x {d0, d8}
  int n_tg = 0;
  for (const auto& r : records) {
    EXPECT_EQ(r.samples_ns.size(), 2u);
    ASSERT_EQ(r.samples_ts.size(), 2u);
    const int n_tokens = r.is_generation ? r.n_gen : r.n_prompt;
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_GT(r.samples_ns[i], 0.0);
      EXPECT_NEAR(r.samples_ts[i], n_tokens / (r.samples_ns[i] * 1e-9), r.samples_ts[i] * 1e-9);
    }
    EXPECT_NEAR(r.avg_ts, (r.samples_ts[0] + r.samples_ts[1]) / 2, r.avg_ts * 1e-12);
    EXPECT_NEAR(r.stddev_ts, std::abs(r.samples_ts[0] - r.samples_ts[1]) / std::sqrt(2.0), r.avg_ts * 1e-9);
    EXPECT_GT(r.peak_rss_bytes, 0u);
    EXPECT_EQ(r.samples_cpu_ns.size(), 2u);
    EXPECT_GT(r.cpu_ts, 0.0);
    EXPECT_EQ(r.type_k, "f16");
    if (r.is_generation) {
      ++n_tg;
      EXPECT_GT(r.bytes_per_token, static_cast<double>(r.model_size) * 0.5);
      EXPECT_NEAR(r.effective_gbps, r.bytes_per_token * r.avg_ts / 1e9, r.effective_gbps * 1e-9);
      // The best probe so far includes the machine's first probe and the two around this test.
      EXPECT_GE(r.bandwidth_gbps, m.bandwidth_1.gbps);
      EXPECT_GT(r.bandwidth_now_gbps, 0.0);
      EXPECT_GE(r.bandwidth_gbps, r.bandwidth_now_gbps);
      EXPECT_NEAR(r.bandwidth_fraction, r.effective_gbps / r.bandwidth_gbps, 1e-12);
      EXPECT_NEAR(r.bandwidth_now_fraction, r.effective_gbps / r.bandwidth_now_gbps, 1e-12);
    }
  }
  EXPECT_EQ(n_tg, 2);
  // pp tests: ops from the model's shapes, the rate from the timing, the peak of the active
  // ISA's probe kernel at 1 thread from the machine's probes.
  const auto model = Model::load(p.models[0]);
  const std::string kernel = int8_peak_kernel_for_active_isa();
  for (const auto& r : records) {
    if (r.is_generation) {
      EXPECT_EQ(r.int8_ops_per_second, 0.0);
      continue;
    }
    const PrefillOps ops = count_prefill_ops(prefill_shape(*model), r.n_prompt, 1, r.n_depth);
    EXPECT_DOUBLE_EQ(r.matmul_ops_per_token, ops.matmul_ops / r.n_prompt);
    EXPECT_DOUBLE_EQ(r.attention_ops, ops.attention_ops);
    EXPECT_TRUE(r.int8_weights);
    EXPECT_NEAR(r.int8_ops_per_second, r.matmul_ops_per_token * r.avg_ts, r.int8_ops_per_second * 1e-12);
    EXPECT_EQ(r.int8_peak_kernel, kernel);
    if (!kernel.empty()) {
      const Int8PeakResult* pk = find_int8_peak(m, kernel, 1);
      ASSERT_NE(pk, nullptr);
      EXPECT_DOUBLE_EQ(r.int8_peak_ops_per_second, 2.0 * pk->macs_per_second);
      EXPECT_NEAR(r.int8_peak_fraction, r.int8_ops_per_second / r.int8_peak_ops_per_second, 1e-12);
      EXPECT_NEAR(r.int8_ops_per_cpu_second, r.matmul_ops_per_token * r.n_prompt / (r.avg_cpu_ns * 1e-9),
                  r.int8_ops_per_cpu_second * 1e-9);
      EXPECT_NEAR(r.int8_peak_cpu_fraction, r.int8_ops_per_cpu_second / (2.0 * pk->macs_per_cpu_second), 1e-12);
      // The vector probe: the same kernel except on AMX, where it is the AVX-512 VNNI loop.
      const std::string vector_kernel = kernel == "amx_int8" ? "avx512_vnni" : kernel;
      EXPECT_EQ(r.int8_vector_peak_kernel, vector_kernel);
      const Int8PeakResult* pv = find_int8_peak(m, vector_kernel, 1);
      ASSERT_NE(pv, nullptr);
      EXPECT_NEAR(r.int8_vector_peak_fraction, r.int8_ops_per_second / (2.0 * pv->macs_per_second), 1e-12);
    }
  }
  EXPECT_EQ(records[0].test_name(), "pp16");
  EXPECT_EQ(records[1].test_name(), "tg4");
  EXPECT_EQ(records[3].test_name(), "tg4 @ d8");

  // JSON: parses back, one object per record, llama-bench's names plus ours.
  const Json parsed = Json::parse(format_report(ReportFormat::kJson, records, m));
  ASSERT_TRUE(parsed.is_array());
  ASSERT_EQ(parsed.size(), records.size());
  for (const char* key : {"model_filename", "model_type", "model_size", "model_n_params", "n_batch", "n_threads",
                          "type_k", "n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts",
                          "stddev_ts", "samples_ts", "bytes_per_token", "effective_gbps", "bandwidth_gbps",
                          "bandwidth_fraction", "bandwidth_now_gbps", "bandwidth_now_fraction", "peak_rss_bytes",
                          "avg_cpu_ns", "cpu_ts", "matmul_ops_per_token", "attention_ops", "int8_ops_per_second",
                          "int8_peak_kernel", "int8_peak_ops_per_second", "int8_peak_fraction", "int8_ops_per_cpu_second",
                          "int8_peak_cpu_fraction", "int8_vector_peak_kernel", "int8_vector_peak_fraction"}) {
    for (size_t i = 0; i < parsed.size(); ++i) EXPECT_NE(parsed.at(i).find(key), nullptr) << key;
  }
  const Json& tg = parsed.at(size_t{3});
  EXPECT_EQ(tg.at("n_gen").as_int(), 4);
  EXPECT_EQ(tg.at("n_depth").as_int(), 8);
  EXPECT_EQ(tg.at("model_type").as_string(), "qwen2 2M Q8_0");
  EXPECT_GT(tg.at("avg_ts").as_number(), 0.0);
  EXPECT_EQ(tg.at("samples_ts").size(), 2u);
  EXPECT_TRUE(parsed.at(size_t{0}).at("bytes_per_token").is_null());  // pp test
  EXPECT_EQ(tg.at("test_time").as_string().size(), 20u);             // 2026-01-01T00:00:00Z

  const std::string csv = format_report(ReportFormat::kCsv, records, m);
  EXPECT_EQ(csv.rfind("model_filename,model_type,model_size,model_n_params,n_batch,n_threads,type_k", 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  const std::string md = format_report(ReportFormat::kMarkdown, records, m);
  EXPECT_NE(md.find(" tg4 @ d8 |"), std::string::npos) << md;
}

TEST(BenchRunner, BytesPerTokenFollowsTheShape) {
  // tiny-qwen2 F32, tied: every tensor is read per token (the embedding is the head); KV per
  // position = 2 layers x (K + V) x n_head_kv 2 x head_dim 64 x 2 bytes (F16).
  const auto model = Model::load(tiny_model("tiny-qwen2", "f32"));
  double tensor_bytes = 0;
  const double n_embd = 256, n_ff = 512, n_vocab = 1024, n_q = 256, n_kv = 128;
  const double per_layer = n_embd * (n_q + 2 * n_kv) + n_q * n_embd + 3 * n_embd * n_ff  // matrices
                           + 2 * n_embd + n_q + 2 * n_kv;                                 // norms + biases
  tensor_bytes = 4 * (n_vocab * n_embd + 2 * per_layer + n_embd);
  const double kv_per_pos = 2 * 2 * 128 * 2;
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(*model, TensorType::F16, TensorType::F16, 0), tensor_bytes);
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(*model, TensorType::F16, TensorType::F16, 100), tensor_bytes + 100 * kv_per_pos);
  // Q8_0 KV: 34 bytes per 32 values.
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(*model, TensorType::Q8_0, TensorType::Q8_0, 100),
                   tensor_bytes + 100 * 2 * 2 * 128 * 34.0 / 32);
  // Q8_0 K (34 bytes per 32 values) with Q4_0 V (18 bytes per 32).
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(*model, TensorType::Q8_0, TensorType::Q4_0, 100),
                   tensor_bytes + 100 * 2 * 128 * (34.0 + 18.0) / 32);

  // tiny-llama is untied: only one row of token_embd (256 F32 = 1 KiB) is read per token.
  const auto untied = Model::load(tiny_model("tiny-llama", "f32"));
  double all = 0;
  for (const auto& t : untied->gguf().tensors()) all += static_cast<double>(t.n_bytes);
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(*untied, TensorType::F16, TensorType::F16, 0), all - 4 * n_vocab * n_embd + 4 * n_embd);
}

// A repacked Q4_K matrix is read from its packed copy: 148 bytes per row and super-block against
// the file's 144 (kernels/repack.h); a Q5_K one (AVX-512) 180 against 176. Bytes per token count
// what is read.
TEST(BenchRunner, BytesPerTokenCountRepackedCopies) {
  const std::string path = tiny_model("tiny-llama", "q4_K");
  ModelLoadParams off, on;
  off.repack = RepackMode::kOff;
  on.repack = RepackMode::kOn;
  const auto mapped = Model::load(path, off);
  const auto packed = Model::load(path, on);
  ASSERT_GT(packed->repacked_tensors(), 0);
  double extra = 0;
  const auto add = [&](const WeightView& w) {
    if (w.type == TensorType::Q4_K_X16 || w.type == TensorType::Q5_K_X16) extra += 4.0 * static_cast<double>(w.n_out) * static_cast<double>(w.n_in / 256);
  };
  for (const WeightView* w : packed->matrices()) add(*w);
  ASSERT_GT(extra, 0.0);
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(*packed, TensorType::F16, TensorType::F16, 10),
                   decode_bytes_per_token(*mapped, TensorType::F16, TensorType::F16, 10) + extra);
}

// The probes around a tg test read a buffer of their own; it must not count in the model's peak.
TEST(BenchRunner, PeakRssLeavesOutTheBandwidthProbe) {
  BenchParams p;
  p.measure_int8_peak = false;  // probed only where a test checks it (it takes time)
  p.models = {tiny_model("tiny-llama", "q4_0")};
  p.n_prompt = {0};
  p.n_gen = {2};
  p.repetitions = 1;
  p.n_threads = {1};
  p.measure_bandwidth = true;
  constexpr size_t kProbeBytes = size_t{96} << 20;
  p.bandwidth_bytes = kProbeBytes;
  const BenchMachine m = describe_machine(p);
  const auto records = run_bench(p, m);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_GT(records[0].bandwidth_now_gbps, 0.0);
  // The tiny model, its context and the test binary are a few MiB; a 96 MiB probe would show.
  EXPECT_LT(records[0].peak_rss_bytes, read_process_memory().rss_bytes + kProbeBytes / 2);
}

TEST(BenchRunner, ThreadsAndKvTypesMultiplyTests) {
  BenchParams p;
  p.measure_int8_peak = false;  // probed only where a test checks it (it takes time)
  p.models = {tiny_model("tiny-llama", "q4_0")};
  p.n_prompt = {8};
  p.n_gen = {2};
  p.n_threads = {1, 2};
  p.kv_types = {TensorType::F16, TensorType::Q8_0};
  p.repetitions = 1;
  p.measure_bandwidth = false;
  const auto records = run_bench(p, no_bandwidth_machine());
  ASSERT_EQ(records.size(), 8u);
  for (const auto& r : records) {
    EXPECT_GT(r.avg_ts, 0.0);
    EXPECT_EQ(r.stddev_ts, 0.0);  // one sample
    if (r.is_generation) {
      EXPECT_EQ(r.bandwidth_gbps, 0.0);
      EXPECT_EQ(r.bandwidth_now_gbps, 0.0);
    }
  }
  EXPECT_EQ(records.back().type_k, "q8_0");
  EXPECT_EQ(records.back().n_threads, 2);
}

// --interleave-depths: pp tests as usual per depth, then each tg test once per depth with the
// repetitions in turns; every tg record past the first carries the median / min / max of its
// samples over the first depth's, repetition by repetition (recomputed here from the samples).
TEST(BenchRunner, InterleavedDepthsPairTheRepetitions) {
  BenchParams p;
  p.measure_int8_peak = false;
  p.measure_bandwidth = false;
  p.models = {tiny_model("tiny-llama", "q4_0")};
  p.n_prompt = {8};
  p.n_gen = {3};
  p.n_depth = {0, 16, 40};
  p.n_threads = {1};
  p.repetitions = 5;
  p.interleave_depths = true;
  const auto records = run_bench(p, no_bandwidth_machine());
  ASSERT_EQ(records.size(), 6u);  // pp8 at 3 depths, then tg3 at 3 depths
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FALSE(records[i].is_generation);
    EXPECT_EQ(records[i].n_depth, p.n_depth[i]);
    EXPECT_EQ(records[i].paired_ratio_depth, -1);
  }
  const BenchRecord& first = records[3];
  for (size_t i = 3; i < 6; ++i) {
    const BenchRecord& r = records[i];
    ASSERT_TRUE(r.is_generation);
    EXPECT_EQ(r.n_depth, p.n_depth[i - 3]);
    ASSERT_EQ(r.samples_ts.size(), 5u);
    EXPECT_EQ(r.paired_ratio_depth, 0);
    std::vector<double> q;
    for (size_t k = 0; k < 5; ++k) q.push_back(r.samples_ts[k] / first.samples_ts[k]);
    std::sort(q.begin(), q.end());
    EXPECT_DOUBLE_EQ(r.paired_ratio_median, q[2]);
    EXPECT_DOUBLE_EQ(r.paired_ratio_min, q[0]);
    EXPECT_DOUBLE_EQ(r.paired_ratio_max, q[4]);
  }
  EXPECT_DOUBLE_EQ(first.paired_ratio_median, 1.0);
  // Deeper tests read more KV per token.
  EXPECT_LT(records[3].bytes_per_token, records[4].bytes_per_token);
  EXPECT_LT(records[4].bytes_per_token, records[5].bytes_per_token);
  const std::string lines = format_paired_ratios(records);
  EXPECT_NE(lines.find("tg3 @ d16 / tg3, paired over 5 repetitions: median"), std::string::npos) << lines;
  EXPECT_NE(lines.find("tg3 @ d40 / tg3"), std::string::npos) << lines;
  EXPECT_EQ(lines.find("pp8"), std::string::npos) << lines;
  // One depth: nothing to pair, the usual order.
  p.n_depth = {16};
  const auto one = run_bench(p, no_bandwidth_machine());
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1].paired_ratio_depth, -1);
  EXPECT_TRUE(format_paired_ratios(one).empty());
}

// The median, min and max of num[i] / den[i], computed here apart from the runner's helper.
std::vector<double> sorted_ratios(const std::vector<double>& num, const std::vector<double>& den) {
  std::vector<double> q;
  for (size_t k = 0; k < num.size() && k < den.size(); ++k) q.push_back(num[k] / den[k]);
  std::sort(q.begin(), q.end());
  return q;
}

// --spec: every tg test gets a speculative record right after it, paired repetition by repetition
// with plain greedy decoding of the same prompt. The model drafts for itself (-md = the model),
// so nearly every draft is accepted (measured: 100 % at d0 and d8) and a forward yields more than
// one token; the two arms produced the same tokens; the ratio fields are the samples' ratios; the
// report shows the columns in every format (CSV rows as wide as the header).
TEST(BenchRunner, SpeculativeRecordsPairWithPlainDecoding) {
  BenchParams p;
  p.measure_int8_peak = false;
  p.measure_bandwidth = false;
  p.models = {tiny_model("tiny-llama", "q8_0")};
  p.n_prompt = {0};
  p.n_gen = {12};
  p.n_depth = {0, 8};
  p.n_threads = {1};
  p.repetitions = 3;
  p.speculation.mode = SpeculationMode::kDraft;
  p.speculation.draft_max = 4;
  p.draft_model_path = p.models[0];
  const auto records = run_bench(p, no_bandwidth_machine());
  ASSERT_EQ(records.size(), 4u);  // tg12, its spec record, at d0 and d8
  for (size_t i = 0; i < 4; i += 2) {
    const BenchRecord& plain = records[i];
    const BenchRecord& r = records[i + 1];
    EXPECT_FALSE(plain.is_speculative());
    ASSERT_TRUE(r.is_speculative());
    EXPECT_EQ(r.n_depth, plain.n_depth);
    EXPECT_EQ(r.test_name(), plain.test_name().substr(0, 4) + " spec draft k4" + plain.test_name().substr(4));
    EXPECT_TRUE(r.spec_tokens_match);
    ASSERT_EQ(r.samples_ts.size(), 3u);
    ASSERT_EQ(r.spec_plain_samples_ts.size(), 3u);
    const std::vector<double> q = sorted_ratios(r.samples_ts, r.spec_plain_samples_ts);
    EXPECT_DOUBLE_EQ(r.spec_ratio_median, q[1]);
    EXPECT_DOUBLE_EQ(r.spec_ratio_min, q[0]);
    EXPECT_DOUBLE_EQ(r.spec_ratio_max, q[2]);
    EXPECT_GT(r.spec_drafted, 0);
    EXPECT_GE(r.spec_accepted, r.spec_drafted * 9 / 10) << "the self-draft should nearly always be right";
    EXPECT_DOUBLE_EQ(r.spec_acceptance_rate, static_cast<double>(r.spec_accepted) / r.spec_drafted);
    EXPECT_GT(r.spec_tokens_per_forward, 1.5);
    EXPECT_LE(r.spec_tokens_per_forward, 5.0);
    EXPECT_EQ(r.bytes_per_token, 0.0);  // no bandwidth claim for speculative tokens
  }
  const BenchMachine m = no_bandwidth_machine();
  const std::string md = format_report(ReportFormat::kMarkdown, records, m);
  EXPECT_NE(md.find("| accept |"), std::string::npos) << md;
  EXPECT_NE(md.find("tg12 spec draft k4 / tg12 greedy"), std::string::npos) << md;
  const Json json = Json::parse(format_report(ReportFormat::kJson, records, m));
  EXPECT_EQ(json.at(1).at("spec_mode").as_string(), "draft");
  EXPECT_DOUBLE_EQ(json.at(1).at("spec_ratio_median").as_number(), records[1].spec_ratio_median);
  EXPECT_EQ(json.at(0).find("spec_mode"), nullptr);
  const std::string csv = format_report(ReportFormat::kCsv, records, m);
  size_t header_commas = std::string::npos;
  size_t start = 0;
  for (size_t end = csv.find('\n'); end != std::string::npos; start = end + 1, end = csv.find('\n', start)) {
    const auto commas = static_cast<size_t>(std::count(csv.begin() + start, csv.begin() + end, ','));
    if (header_commas == std::string::npos) header_commas = commas;
    EXPECT_EQ(commas, header_commas) << csv.substr(start, end - start);
  }
  EXPECT_NE(csv.find(",draft,4,"), std::string::npos) << csv;

  // n-gram drafting on random-token prompts: whatever it accepts, the tokens are plain decoding's.
  p.speculation.mode = SpeculationMode::kNgram;
  p.draft_model_path.clear();
  p.n_depth = {0};
  const auto ngram = run_bench(p, m);
  ASSERT_EQ(ngram.size(), 2u);
  EXPECT_EQ(ngram[1].spec_mode, "ngram");
  EXPECT_TRUE(ngram[1].spec_tokens_match);
  EXPECT_LE(ngram[1].spec_accepted, ngram[1].spec_drafted);
}

TEST(BenchRunner, ErrorsNameTheProblem) {
  BenchParams p;
  p.measure_int8_peak = false;  // probed only where a test checks it (it takes time)
  EXPECT_THROW(run_bench(p, no_bandwidth_machine()), Error);  // no model
  p.models = {test::temp_dir() + "/missing.gguf"};
  try {
    run_bench(p, no_bandwidth_machine());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.gguf"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_report_format("xml"), Error);
}

}  // namespace
}  // namespace edgellm::bench
