// Embeddings and rerank through the C ABI exactly as an app sees it (libedgellm.so +
// include/edgellm/edgellm.h): edgellm_embed / edgellm_rerank against an independent driver, the
// CLI's `edgellm embed` / `edgellm rerank` run as a separate process on the same model file (one
// request per process, nothing batched), while the C calls come from several threads at once and
// share forwards. Then the size query, the deadline, destroy with a call blocked, WRONG_THREAD,
// and bad input of every kind — each a documented status with a message, never a crash.
//
// Models: synthetic all-MiniLM-L6 (mean pooling) and ms-marco cross-encoder shapes cut to 2
// layers, Q8_0, with the real bge WordPiece vocabulary (what scripts/embed-vs-llamacpp.sh checks
// against llama.cpp), written by `edgellm synth` in 0.4 s each. Without the CLI (the TSan build
// has none) there is no model and no reference: the cases skip and say so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "edgellm/edgellm.h"
#include "edgellm/edgellm.hpp"
#include "support/test_env.h"

namespace {

using namespace std::chrono_literals;

// $EDGELLM_CLI, else `edgellm` beside this test executable (the build directory's root).
std::string cli() {
  if (const char* e = std::getenv("EDGELLM_CLI")) return e;
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "edgellm";
  std::string p(self, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/')) + "/edgellm";
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs the CLI; its stdout (empty and *ok false when it failed).
std::string run_cli(const std::string& args, bool* ok) {
  const std::string cmd = quote(cli()) + " " + args + " 2>/dev/null";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  if (f == nullptr) {
    *ok = false;
    return out;
  }
  char buf[65536];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, got);
  *ok = pclose(f) == 0;
  return out;
}

std::string vocab() {
  return edgellm::test::shared_testdata("vocab/ggml-vocab-bert-bge.gguf");
}

// `edgellm synth SHAPE` cut to 2 layers, once per process; "" without a CLI.
std::string synth(const std::string& shape) {
  if (!edgellm::test::file_exists(cli())) return "";
  const std::string out = edgellm::test::temp_dir() + "/" + shape + ".gguf";
  if (edgellm::test::file_exists(out)) return out;
  bool ok = false;
  run_cli(
      "synth --shape " + shape + " --layers 2 --type q8_0 --tokenizer " + quote(vocab()) + " -o " + quote(out) + " -q",
      &ok);
  return ok ? out : "";
}

#define REQUIRE_MODEL(path)                                  \
  if ((path).empty())                                        \
  GTEST_SKIP() << "no edgellm CLI at " << cli()              \
               << " (this build has none: the TSan one) to " \
                  "write the synthetic encoder and the reference vectors"

// The texts: ASCII, accents (stripped by the uncased vocab), CJK (split per character), one of
// several sentences, one word.
const std::vector<std::string> kTexts = {
    "The quick brown fox jumps over the lazy dog.",
    "Caf\xc3\xa9 cr\xc3\xa8me br\xc3\xbbl\xc3\xa9"
    "e, s'il vous pla\xc3\xaet!",
    "\xe6\x88\x91\xe7\x9a\x84\xe7\xac\x94\xe8\xae\xb0\xe5\x9c\xa8\xe6\x89\x8b\xe6\x9c\xba\xe4\xb8\x8a",
    "Embeddings map text to vectors. Similar texts get similar vectors. The index searches them.",
    "hello",
};

// `edgellm embed -f FILE --embd-output-format raw` (one row per line, %.9g: a float round-trips).
std::vector<std::vector<float>> cli_vectors(const std::string& model, const std::vector<std::string>& texts,
                                            const std::string& extra) {
  const std::string file = edgellm::test::temp_dir() + "/texts.txt";
  {
    std::ofstream f(file, std::ios::binary);
    for (size_t i = 0; i < texts.size(); ++i) f << (i ? "\n" : "") << texts[i];
  }
  bool ok = false;
  const std::string out =
      run_cli("embed -m " + quote(model) + " -f " + quote(file) + " --embd-output-format raw " + extra, &ok);
  EXPECT_TRUE(ok) << "edgellm embed failed";
  std::vector<std::vector<float>> rows;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream vals(line);
    std::vector<float> row;
    std::string v;
    while (vals >> v) row.push_back(std::strtof(v.c_str(), nullptr));
    if (!row.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<const char*> ptrs(const std::vector<std::string>& v) {
  std::vector<const char*> p;
  for (const auto& s : v) p.push_back(s.c_str());
  return p;
}

struct Rt {
  edgellm_runtime* rt = nullptr;
  explicit Rt(const std::string& model, edgellm_runtime_params p = edgellm_runtime_default_params()) {
    p.n_threads = 2;
    EXPECT_EQ(edgellm_runtime_create(model.c_str(), &p, &rt), EDGELLM_OK) << edgellm_last_error();
  }
  ~Rt() { EXPECT_EQ(edgellm_runtime_destroy(rt), EDGELLM_OK); }
};

std::string metrics_json(edgellm_runtime* rt) {
  char buf[16384];
  size_t len = 0;
  EXPECT_EQ(edgellm_metrics_json(rt, buf, sizeof buf, &len), EDGELLM_OK) << edgellm_last_error();
  return std::string(buf, len);
}

TEST(CApiEmbeddings, VectorsEqualTheCliWhileThreadsShareForwards) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  edgellm_runtime_params rp = edgellm_runtime_default_params();
  rp.max_queued = 16;  // five callers at once: none is BUSY
  Rt r(model, rp);
  ASSERT_NE(r.rt, nullptr);
  edgellm_runtime_role role = EDGELLM_ROLE_GENERATE;
  int32_t dims = 0;
  bool can_rerank = true;
  ASSERT_EQ(edgellm_runtime_role_get(r.rt, &role, &dims, &can_rerank), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(role, EDGELLM_ROLE_EMBED);  // an encoder file: an embedding runtime by itself
  EXPECT_EQ(dims, 384);
  EXPECT_FALSE(can_rerank);

  // Reference: the CLI, one process per pooling, mean (the model's), cls, and no normalisation.
  struct Mode {
    edgellm_pooling pooling;
    int normalize;
    std::string flags;
  };
  const std::vector<Mode> modes = {{EDGELLM_POOLING_MODEL, 2, ""},
                                   {EDGELLM_POOLING_CLS, 2, "--pooling cls"},
                                   {EDGELLM_POOLING_MEAN, -1, "--pooling mean --embd-normalize -1"}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.flags);
    const auto want = cli_vectors(model, kTexts, m.flags);
    ASSERT_EQ(want.size(), kTexts.size());
    edgellm_embed_params p = edgellm_embed_default_params();
    p.pooling = m.pooling;
    p.normalize = m.normalize;

    // One text per thread, all at once (their inputs share forwards in the service), then all
    // texts in one call: every vector equals the CLI's bit for bit (measured: max |diff| 0 on an
    // AMD EPYC host; %.9g prints a float exactly, so the comparison is exact).
    std::vector<std::vector<float>> got(kTexts.size(), std::vector<float>(static_cast<size_t>(dims)));
    std::vector<edgellm_status> st(kTexts.size(), EDGELLM_ERR_INTERNAL);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < kTexts.size(); ++i) {
      threads.emplace_back([&, i] {
        const char* t = kTexts[i].c_str();
        size_t n = 0;
        st[i] = edgellm_embed(r.rt, &t, 1, &p, got[i].data(), got[i].size(), &n, nullptr);
      });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < kTexts.size(); ++i) {
      ASSERT_EQ(st[i], EDGELLM_OK) << i;
      ASSERT_EQ(want[i].size(), got[i].size());
      for (size_t k = 0; k < got[i].size(); ++k) ASSERT_EQ(got[i][k], want[i][k]) << "text " << i << " dim " << k;
    }
    const auto texts = ptrs(kTexts);
    std::vector<float> all(kTexts.size() * static_cast<size_t>(dims));
    size_t n = 0;
    std::vector<int32_t> tokens(kTexts.size(), -1);
    edgellm_embed_info info = edgellm_embed_info_init();
    info.input_tokens = tokens.data();
    ASSERT_EQ(edgellm_embed(r.rt, texts.data(), texts.size(), &p, all.data(), all.size(), &n, &info), EDGELLM_OK)
        << edgellm_last_error();
    EXPECT_EQ(n, all.size());
    EXPECT_EQ(info.n_rows, static_cast<int32_t>(kTexts.size()));
    EXPECT_EQ(info.dims, dims);
    EXPECT_EQ(info.pooling, m.pooling == EDGELLM_POOLING_MODEL ? EDGELLM_POOLING_MEAN : m.pooling);
    int64_t sum = 0;
    for (int32_t t : tokens) {
      EXPECT_GE(t, 3);  // [CLS] a word [SEP] at least
      sum += t;
    }
    EXPECT_EQ(info.prompt_tokens, sum);
    EXPECT_EQ(tokens[4], 3);  // [CLS] hello [SEP]
    for (size_t i = 0; i < kTexts.size(); ++i) {
      for (size_t k = 0; k < static_cast<size_t>(dims); ++k) {
        ASSERT_EQ(all[i * static_cast<size_t>(dims) + k], want[i][k]) << "text " << i << " dim " << k;
      }
    }
  }
}

TEST(CApiEmbeddings, PoolingNoneGivesTheCliTokenRowsAndTheSizeAfterTheRun) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  Rt r(model);
  const std::vector<std::string> texts = {kTexts[0], kTexts[4]};
  const auto want = cli_vectors(model, texts, "--pooling none");
  edgellm_embed_params p = edgellm_embed_default_params();
  p.pooling = EDGELLM_POOLING_NONE;
  const auto t = ptrs(texts);
  size_t n = 0;
  // The size is known only after the forward: BUFFER_TOO_SMALL then tells it, nothing written.
  ASSERT_EQ(edgellm_embed(r.rt, t.data(), t.size(), &p, nullptr, 0, &n, nullptr), EDGELLM_ERR_BUFFER_TOO_SMALL);
  ASSERT_EQ(n, want.size() * 384);
  std::vector<float> got(n);
  std::vector<int32_t> tokens(2);
  edgellm_embed_info info = edgellm_embed_info_init();
  info.input_tokens = tokens.data();
  ASSERT_EQ(edgellm_embed(r.rt, t.data(), t.size(), &p, got.data(), got.size(), &n, &info), EDGELLM_OK)
      << edgellm_last_error();
  EXPECT_EQ(static_cast<size_t>(info.n_rows), want.size());
  EXPECT_EQ(static_cast<size_t>(tokens[0] + tokens[1]), want.size());
  EXPECT_EQ(tokens[1], 3);
  for (size_t row = 0; row < want.size(); ++row) {
    ASSERT_EQ(want[row].size(), 384u);
    for (size_t k = 0; k < 384; ++k) ASSERT_EQ(got[row * 384 + k], want[row][k]) << "row " << row << " dim " << k;
  }
}

TEST(CApiEmbeddings, RerankEqualsTheCli) {
  const std::string model = synth("ms-marco-minilm-l6");
  REQUIRE_MODEL(model);
  Rt r(model);
  bool can_rerank = false;
  ASSERT_EQ(edgellm_runtime_role_get(r.rt, nullptr, nullptr, &can_rerank), EDGELLM_OK);
  EXPECT_TRUE(can_rerank);
  const std::string query = "what do pandas eat";
  const std::vector<std::string> docs = {"Giant pandas eat bamboo almost exclusively.", "The stock market fell.",
                                         kTexts[2], "Pandas are bears native to China."};
  std::string args = "rerank -m " + quote(model) + " -q " + quote(query) + " --json";
  for (const auto& d : docs) args += " -d " + quote(d);
  bool ok = false;
  const std::string out = run_cli(args, &ok);
  ASSERT_TRUE(ok);
  // llama-server's JSON, best first: {"index": i, "relevance_score": s, ...} per document.
  std::vector<double> want(docs.size(), NAN);
  const std::regex entry("\"index\": (\\d+),\\s*\"relevance_score\": ([-0-9.eE+]+)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), entry); it != std::sregex_iterator(); ++it) {
    want.at(std::stoul((*it)[1])) = std::stod((*it)[2]);
  }
  const auto d = ptrs(docs);
  size_t n = 0;
  ASSERT_EQ(edgellm_rerank(r.rt, query.c_str(), d.data(), d.size(), nullptr, nullptr, 0, &n, nullptr),
            EDGELLM_ERR_BUFFER_TOO_SMALL);  // the size query: nothing run
  ASSERT_EQ(n, docs.size());
  std::vector<float> scores(n);
  edgellm_embed_info info = edgellm_embed_info_init();
  ASSERT_EQ(edgellm_rerank(r.rt, query.c_str(), d.data(), d.size(), nullptr, scores.data(), n, &n, &info), EDGELLM_OK)
      << edgellm_last_error();
  EXPECT_EQ(info.n_rows, 4);
  EXPECT_EQ(info.dims, 0);
  // The CLI prints the float score as a double in shortest form: equal exactly (measured 0).
  for (size_t i = 0; i < docs.size(); ++i) EXPECT_EQ(static_cast<double>(scores[i]), want[i]) << i;
}

TEST(CApiEmbeddings, DeadlineWhilePausedIsTimeoutAndDestroyEndsABlockedCall) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  auto* r = new Rt(model);
  ASSERT_EQ(edgellm_pause(r->rt), EDGELLM_OK);
  edgellm_embed_params p = edgellm_embed_default_params();
  p.deadline_ms = 50;  // deadlines still end requests while paused
  const char* t = "hello";
  std::vector<float> v(384);
  size_t n = 0;
  EXPECT_EQ(edgellm_embed(r->rt, &t, 1, &p, v.data(), v.size(), &n, nullptr), EDGELLM_ERR_TIMEOUT);
  EXPECT_NE(std::string(edgellm_last_error()).find("deadline"), std::string::npos) << edgellm_last_error();

  // No deadline, paused: the call blocks until the runtime is destroyed, then SHUT_DOWN.
  p.deadline_ms = 0;
  std::atomic<int> status{-1};
  std::thread blocked([&] {
    size_t m = 0;
    status = edgellm_embed(r->rt, &t, 1, &p, v.data(), v.size(), &m, nullptr);
  });
  const auto until = std::chrono::steady_clock::now() + 30s;
  bool queued = false;
  while (!(queued = metrics_json(r->rt).find("\"waiting\": 1") != std::string::npos) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  EXPECT_TRUE(queued) << metrics_json(r->rt);
  delete r;  // edgellm_runtime_destroy: the blocked call gets its request's end
  blocked.join();
  EXPECT_EQ(status.load(), EDGELLM_ERR_SHUT_DOWN);
}

struct TrimCall {
  edgellm_runtime* rt;
  std::atomic<int> status{-1};
};

TEST(CApiEmbeddings, FromItsOwnCallbackIsWrongThread) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  Rt r(model);
  TrimCall call{r.rt};
  ASSERT_EQ(edgellm_trim(
                r.rt,
                [](uint64_t, void* user) {
                  auto* c = static_cast<TrimCall*>(user);
                  const char* t = "hello";
                  float v[384];
                  size_t n = 0;
                  c->status = edgellm_embed(c->rt, &t, 1, nullptr, v, 384, &n, nullptr);
                },
                &call),
            EDGELLM_OK);
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (call.status.load() < 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_EQ(call.status.load(), EDGELLM_ERR_WRONG_THREAD);
}

TEST(CApiEmbeddings, BadInputGetsAClearStatusAndMessage) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  edgellm_runtime_params rp = edgellm_runtime_default_params();
  rp.n_ctx = 16;  // a short context, so a long input is easy to write
  Rt r(model, rp);
  float v[384 * 2];
  size_t n = 0;
  const char* ok[] = {"hello"};
  auto expect = [&](edgellm_status got, edgellm_status want, const char* words, const char* what) {
    EXPECT_EQ(got, want) << what << ": " << edgellm_last_error();
    EXPECT_NE(std::string(edgellm_last_error()).find(words), std::string::npos)
        << what << ": '" << edgellm_last_error() << "' lacks '" << words << "'";
  };
  expect(edgellm_embed(nullptr, ok, 1, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "runtime is NULL",
         "null runtime");
  expect(edgellm_embed(r.rt, nullptr, 1, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "texts is NULL",
         "null texts");
  const char* with_null[] = {"a", nullptr};
  expect(edgellm_embed(r.rt, with_null, 2, nullptr, v, 768, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "texts[1] is NULL", "null element");
  expect(edgellm_embed(r.rt, ok, 1, nullptr, v, 384, nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "n_floats is NULL", "null n_floats");
  expect(edgellm_embed(r.rt, ok, 1, nullptr, nullptr, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "vectors is NULL", "null vectors");
  expect(edgellm_embed(r.rt, ok, 0, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "input", "empty list");
  const char* empty[] = {""};
  expect(edgellm_embed(r.rt, empty, 1, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "empty",
         "empty text");
  const char* bad_utf8[] = {"ok", "caf\xc3 au lait"};
  expect(edgellm_embed(r.rt, bad_utf8, 2, nullptr, v, 768, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "UTF-8",
         "invalid UTF-8");
  // The Runtime's words (request_limits.h), checked before the C array is read.
  expect(edgellm_embed(r.rt, ok, 3000, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "texts: at most 2048, got 3000", "too many texts");
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "word ";
  const char* too_long[] = {long_text.c_str()};
  expect(edgellm_embed(r.rt, too_long, 1, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "16",
         "too long under REFUSE");
  edgellm_embed_params p = edgellm_embed_default_params();
  p.truncation = EDGELLM_TRUNCATE_END;
  edgellm_embed_info info = edgellm_embed_info_init();
  int32_t tokens = 0;
  info.input_tokens = &tokens;
  EXPECT_EQ(edgellm_embed(r.rt, too_long, 1, &p, v, 384, &n, &info), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(info.truncated, 1);
  EXPECT_EQ(tokens, 16);
  p = edgellm_embed_default_params();
  p.pooling = static_cast<edgellm_pooling>(4);  // rank is rerank's, not a pooling of embed
  expect(edgellm_embed(r.rt, ok, 1, &p, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "pooling",
         "unknown pooling");
  p = edgellm_embed_default_params();
  p.struct_size = 0;
  expect(edgellm_embed(r.rt, ok, 1, &p, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "struct_size",
         "struct_size 0");
  n = 7;
  expect(edgellm_embed(r.rt, ok, 1, nullptr, v, 383, &n, nullptr), EDGELLM_ERR_BUFFER_TOO_SMALL, "384",
         "one float short");
  EXPECT_EQ(n, 384u);
  expect(edgellm_rerank(r.rt, "q", ok, 1, nullptr, v, 1, &n, nullptr), EDGELLM_ERR_UNSUPPORTED, "classification head",
         "rerank on an embedding model");
  expect(edgellm_rerank(r.rt, nullptr, ok, 1, nullptr, v, 1, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "query is NULL", "null query");
  expect(edgellm_rerank(r.rt, "q", nullptr, 1, nullptr, v, 1, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "documents is NULL", "null documents");
  expect(edgellm_rerank(r.rt, "q", ok, 1, nullptr, v, 1, nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "n_scores is NULL", "null n_scores");
  // Generation is refused on an embedding runtime, and embedding on a generation runtime.
  edgellm_request_params req = edgellm_request_default_params();
  req.prompt = "hi";
  edgellm_request_id id = 0;
  expect(edgellm_submit(r.rt, &req, &id), EDGELLM_ERR_UNSUPPORTED, "embed", "submit on an embedding runtime");
  // What an app sizes buffers with.
  char buf[4096];
  size_t len = 0;
  ASSERT_EQ(edgellm_model_info_json(r.rt, buf, sizeof buf, &len), EDGELLM_OK) << edgellm_last_error();
  const std::string info_json(buf, len);
  EXPECT_NE(info_json.find("\"role\": \"embed\""), std::string::npos) << info_json;
  EXPECT_NE(info_json.find("\"dims\": 384"), std::string::npos) << info_json;
  int32_t ids[8];
  size_t n_ids = 0;
  ASSERT_EQ(edgellm_tokenize(r.rt, "hello", true, false, ids, 8, &n_ids), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(n_ids, 3u);  // [CLS] hello [SEP]: the embedder's WordPiece tokenizer

  edgellm_runtime* gen = nullptr;
  ASSERT_EQ(edgellm_runtime_create(edgellm::test::shared_model("stories260K.gguf").c_str(), nullptr, &gen), EDGELLM_OK)
      << edgellm_last_error();
  edgellm_runtime_role role = EDGELLM_ROLE_EMBED;
  int32_t dims = -1;
  ASSERT_EQ(edgellm_runtime_role_get(gen, &role, &dims, nullptr), EDGELLM_OK);
  EXPECT_EQ(role, EDGELLM_ROLE_GENERATE);
  EXPECT_EQ(dims, 0);
  expect(edgellm_embed(gen, ok, 1, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_UNSUPPORTED, "role EMBED",
         "embed on a generation runtime");
  EXPECT_EQ(edgellm_runtime_destroy(gen), EDGELLM_OK);
  EXPECT_EQ(edgellm_runtime_role_get(nullptr, &role, nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT);
  rp.role = static_cast<edgellm_runtime_role>(7);
  edgellm_runtime* none = nullptr;
  expect(edgellm_runtime_create(model.c_str(), &rp, &none), EDGELLM_ERR_INVALID_ARGUMENT, "role", "unknown role");
  EXPECT_EQ(none, nullptr);
}

// The C++ wrapper: the same vectors as the CLI (exact), the tokens per text, scores for rerank,
// and a failed call thrown as Error with its status.
TEST(CApiEmbeddings, CppWrapperEmbedsAndReranks) {
  const std::string model = synth("all-minilm-l6");
  const std::string reranker = synth("ms-marco-minilm-l6");
  REQUIRE_MODEL(model);
  REQUIRE_MODEL(reranker);
  auto rt = edgellm::cpp::Runtime::open(model);
  EXPECT_EQ(rt.role().role, EDGELLM_ROLE_EMBED);
  EXPECT_EQ(rt.role().dims, 384);
  const auto want = cli_vectors(model, kTexts, "");
  const auto e = rt.embed(kTexts);
  ASSERT_EQ(e.rows, static_cast<int32_t>(kTexts.size()));
  ASSERT_EQ(e.dims, 384);
  EXPECT_EQ(e.pooling, EDGELLM_POOLING_MEAN);
  EXPECT_EQ(e.tokens.at(4), 3);
  for (size_t i = 0; i < kTexts.size(); ++i) {
    EXPECT_EQ(std::vector<float>(e.row(i), e.row(i) + 384), want[i]) << i;
  }
  try {
    rt.embed({"ok", "bad \xff"});
    ADD_FAILURE() << "invalid UTF-8 was embedded";
  } catch (const edgellm::cpp::Error& err) {
    EXPECT_EQ(err.status(), EDGELLM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err.what()).find("UTF-8"), std::string::npos) << err.what();
  }
  auto rr = edgellm::cpp::Runtime::open(reranker);
  const auto s = rr.rerank("pandas", {"pandas eat bamboo", "tax law"});
  ASSERT_EQ(s.data.size(), 2u);
  const auto one = rr.rerank("pandas", {"tax law"});
  EXPECT_EQ(one.data[0], s.data[1]);  // a document's score does not depend on its neighbours
  EXPECT_GT(s.tokens[0], 3);
}

// ---- document Q&A (edgellm_docqa_*): the same index file read by the CLI's `edgellm docqa`
// (a separate process) must give the same hits and the same answer; the hits must be the
// brute-force cosine top-k over vectors edgellm_embed gives for every chunk text (float, not the
// index's int8); add / update / remove leave no stale hit; bad input and a corrupt file get a
// clear status and lose no document.

// Documents of sentences drawn from a word list (each document its own words mostly, so a
// question has a best document).
const std::vector<std::string> kDocqaWords = {
    "river",  "engine", "garden",  "violin", "harbor",  "pepper", "marble", "planet", "candle", "forest",
    "silver", "rocket", "meadow",  "copper", "lantern", "island", "winter", "signal", "orange", "bridge",
    "castle", "pencil", "thunder", "valley", "mirror",  "cotton", "desert", "anchor", "melody", "tunnel"};

std::string docqa_document(std::mt19937& rng, size_t first_word) {
  std::string d;
  for (int p = 0; p < 3; ++p) {
    for (int s = 0; s < 3; ++s) {
      std::string sent;
      const int n = 4 + static_cast<int>(rng() % 5);
      for (int w = 0; w < n; ++w) {
        const size_t i = (first_word + rng() % 8) % kDocqaWords.size();
        sent += (w ? " " : "") + kDocqaWords[i];
      }
      sent[0] = static_cast<char>(sent[0] - 'a' + 'A');
      d += (s ? " " : "") + sent + ".";
    }
    d += "\n\n";
  }
  return d;
}

struct DocqaHandle {
  edgellm_docqa* qa = nullptr;
  ~DocqaHandle() { EXPECT_EQ(edgellm_docqa_destroy(qa), EDGELLM_OK); }
};

struct DocqaResult {
  edgellm_docqa_result* r = nullptr;
  ~DocqaResult() { edgellm_docqa_result_free(r); }
  std::vector<uint32_t> ids() const {
    std::vector<uint32_t> v;
    for (size_t i = 0; i < r->n_hits; ++i) v.push_back(edgellm_docqa_result_hit(r, i)->chunk);
    return v;
  }
};

edgellm_docqa_params docqa_test_params() {
  edgellm_docqa_params p = edgellm_docqa_default_params();
  p.chunk_tokens = 24;
  p.overlap_tokens = 8;
  p.top_k = 3;
  p.max_answer_tokens = 16;
  return p;
}
const char* const kDocqaCliOptions = " --chunk-tokens 24 --overlap 8 --top-k 3 -n 16 --json";

// "chunk": id and "score": s of the CLI's JSON hits / context, in order.
std::vector<std::pair<uint32_t, double>> cli_hits(const std::string& json) {
  std::vector<std::pair<uint32_t, double>> out;
  const std::regex entry("\"chunk\": (\\d+),[^}]*?\"score\": ([-0-9.eE+]+)");
  for (auto it = std::sregex_iterator(json.begin(), json.end(), entry); it != std::sregex_iterator(); ++it) {
    out.emplace_back(static_cast<uint32_t>(std::stoul((*it)[1])), std::stod((*it)[2]));
  }
  return out;
}

std::vector<float> embed_one(edgellm_runtime* rt, const std::string& text) {
  std::vector<float> v(384);
  size_t n = 0;
  const char* t = text.c_str();
  edgellm_embed_params p = edgellm_embed_default_params();
  p.truncation = EDGELLM_TRUNCATE_END;  // as docqa embeds
  EXPECT_EQ(edgellm_embed(rt, &t, 1, &p, v.data(), v.size(), &n, nullptr), EDGELLM_OK) << edgellm_last_error();
  return v;
}

TEST(CApiDocqa, HitsAndAnswerEqualTheCliAndBruteForceCosine) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  const std::string index = edgellm::test::temp_dir() + "/capi-docqa.index";
  std::remove(index.c_str());
  std::remove((index + ".bak").c_str());
  Rt emb(model);
  edgellm_runtime_params gp = edgellm_runtime_default_params();
  gp.n_parallel = 1;
  Rt gen(edgellm::test::shared_model("stories260K.gguf"), gp);
  const edgellm_docqa_params params = docqa_test_params();
  DocqaHandle h;
  ASSERT_EQ(edgellm_docqa_create(emb.rt, nullptr, gen.rt, index.c_str(), &params, &h.qa), EDGELLM_OK)
      << edgellm_last_error();

  std::mt19937 rng(7);
  std::vector<std::string> docs;
  for (size_t d = 0; d < 6; ++d) docs.push_back(docqa_document(rng, d * 5));
  for (size_t d = 0; d < docs.size(); ++d) {
    edgellm_docqa_report rep = edgellm_docqa_report_init();
    const std::string key = "note-" + std::to_string(d);
    ASSERT_EQ(edgellm_docqa_add(h.qa, key.c_str(), docs[d].c_str(), &rep), EDGELLM_OK) << edgellm_last_error();
    EXPECT_EQ(rep.added, 1);
    EXPECT_EQ(rep.documents, static_cast<int64_t>(d + 1));
    EXPECT_GE(rep.chunks_added, 3);  // three paragraphs: a chunk never spans two
  }
  // The same text again: unchanged. A new text for note-1: its old chunks go. note-4: removed.
  edgellm_docqa_report rep = edgellm_docqa_report_init();
  ASSERT_EQ(edgellm_docqa_add(h.qa, "note-0", docs[0].c_str(), &rep), EDGELLM_OK);
  EXPECT_EQ(rep.unchanged, 1);
  DocqaResult before;
  ASSERT_EQ(edgellm_docqa_search(h.qa, "x", 4096, &before.r), EDGELLM_OK) << edgellm_last_error();
  std::vector<uint32_t> stale;  // chunk ids of note-1's and note-4's old text
  for (size_t i = 0; i < before.r->n_hits; ++i) {
    const edgellm_docqa_hit* e = edgellm_docqa_result_hit(before.r, i);
    if (std::string(e->key) == "note-1" || std::string(e->key) == "note-4") stale.push_back(e->chunk);
  }
  ASSERT_FALSE(stale.empty());
  const std::string note1 = docqa_document(rng, 17);
  ASSERT_EQ(edgellm_docqa_add(h.qa, "note-1", note1.c_str(), &rep), EDGELLM_OK);
  EXPECT_EQ(rep.updated, 1);
  ASSERT_EQ(edgellm_docqa_remove(h.qa, "note-4", &rep), EDGELLM_OK) << edgellm_last_error();
  EXPECT_EQ(rep.removed, 1);
  EXPECT_EQ(rep.documents, 5);

  // Every chunk (a search for all of them): each a byte range of its document's text.
  DocqaResult all;
  ASSERT_EQ(edgellm_docqa_search(h.qa, "x", 4096, &all.r), EDGELLM_OK);
  ASSERT_EQ(static_cast<int64_t>(all.r->n_hits), rep.chunks);
  std::vector<std::pair<uint32_t, std::string>> chunks;
  for (size_t i = 0; i < all.r->n_hits; ++i) {
    const edgellm_docqa_hit* e = edgellm_docqa_result_hit(all.r, i);
    const std::string key = e->key;
    ASSERT_NE(key, "note-4");
    const std::string& text = key == "note-1" ? note1 : docs.at(std::stoul(key.substr(5)));
    EXPECT_EQ(text.substr(e->begin, e->end - e->begin), e->text) << key;
    EXPECT_EQ(std::find(stale.begin(), stale.end(), e->chunk), stale.end()) << "stale chunk " << e->chunk;
    chunks.emplace_back(e->chunk, e->text);
  }

  // The brute force's chunk vectors: each chunk text through edgellm_embed (float), once.
  std::vector<std::pair<uint32_t, std::vector<float>>> chunk_vectors;
  for (const auto& [id, text] : chunks) chunk_vectors.emplace_back(id, embed_one(emb.rt, text));

  // Questions: a chunk's own text, a sentence of words from several documents (two: each costs
  // a CLI process, ~1 s under ASan).
  const std::vector<std::string> questions = {chunks[chunks.size() / 2].second,
                                              "Which river has a harbor with silver rockets?"};
  for (const std::string& q : questions) {
    SCOPED_TRACE(q);
    DocqaResult got;
    ASSERT_EQ(edgellm_docqa_search(h.qa, q.c_str(), 0, &got.r), EDGELLM_OK) << edgellm_last_error();
    ASSERT_EQ(got.r->n_hits, 3u);  // params.top_k
    // The CLI on the same file, in its own process.
    bool ok = false;
    const std::string out = run_cli(
        "docqa search " + quote(q) + " -m " + quote(model) + " --index " + quote(index) + kDocqaCliOptions, &ok);
    ASSERT_TRUE(ok);
    const auto want = cli_hits(out);
    ASSERT_EQ(want.size(), 3u) << out;
    for (size_t i = 0; i < 3; ++i) {
      const edgellm_docqa_hit* e = edgellm_docqa_result_hit(got.r, i);
      EXPECT_EQ(e->chunk, want[i].first) << i;
      EXPECT_EQ(static_cast<double>(e->score), want[i].second) << i;  // a float printed shortest: exact
      EXPECT_FALSE(e->has_rerank_score);
    }
    // Brute force: the question's and every chunk's float vector from edgellm_embed, cosine
    // (dot product of unit vectors) in the test. The index stores int8 codes: its scores are
    // within kTol of the float cosines (measured max |diff| 0.00047 on an AMD EPYC host), and
    // the hit at rank i scores, by brute force, at least the brute-force i-th best minus kTol
    // (the synthetic model's chunks score within ~0.01 of each other, so ranks may swap within
    // the rounding, never by more).
    constexpr float kTol = 0.002f;
    const std::vector<float> qv = embed_one(emb.rt, q);
    std::vector<std::pair<float, uint32_t>> brute;
    for (const auto& [id, cv] : chunk_vectors) {
      double dot = 0;
      for (size_t k = 0; k < cv.size(); ++k) dot += static_cast<double>(qv[k]) * cv[k];
      brute.emplace_back(static_cast<float>(dot), id);
    }
    std::sort(brute.begin(), brute.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t i = 0; i < 3; ++i) {
      const edgellm_docqa_hit* e = edgellm_docqa_result_hit(got.r, i);
      const auto it = std::find_if(brute.begin(), brute.end(), [&](const auto& b) { return b.second == e->chunk; });
      ASSERT_NE(it, brute.end());
      EXPECT_NEAR(e->score, it->first, kTol) << "chunk " << e->chunk;
      EXPECT_GE(it->first, brute[i].first - kTol) << "rank " << i << ": chunk " << e->chunk << " is not among the best";
    }
  }

  // ask: the same answer, context and citations as `edgellm docqa ask` (greedy) on the same file.
  const std::string question = "What is by the river?";
  DocqaResult a;
  ASSERT_EQ(edgellm_docqa_ask(h.qa, question.c_str(), &a.r), EDGELLM_OK) << edgellm_last_error();
  bool ok = false;
  const std::string out =
      run_cli("docqa ask " + quote(question) + " -m " + quote(model) + " --index " + quote(index) + " --gen-model " +
                  quote(edgellm::test::shared_model("stories260K.gguf")) + kDocqaCliOptions,
              &ok);
  ASSERT_TRUE(ok);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("\"answer\": (\"(?:[^\"\\\\]|\\\\.)*\")")));
  std::string answer_json = "\"";
  for (const char c : std::string(a.r->answer)) {  // the C answer escaped as the CLI's JSON writer does
    switch (c) {
      case '"': answer_json += "\\\""; break;
      case '\\': answer_json += "\\\\"; break;
      case '\n': answer_json += "\\n"; break;
      default: answer_json += c;
    }
  }
  answer_json += "\"";
  EXPECT_EQ(answer_json, m[1].str());
  EXPECT_GT(std::string(a.r->answer).size(), 0u);
  const auto want = cli_hits(out.substr(out.find("\"context\"")));
  ASSERT_EQ(want.size(), a.r->n_hits);
  for (size_t i = 0; i < a.r->n_hits; ++i) EXPECT_EQ(edgellm_docqa_result_hit(a.r, i)->chunk, want[i].first) << i;
  // Citations: each names a chunk the generator was given.
  for (size_t i = 0; i < a.r->n_citations; ++i) {
    const auto ids = a.ids();
    EXPECT_NE(std::find(ids.begin(), ids.end(), a.r->citations[i]), ids.end());
  }
  EXPECT_TRUE(a.r->finish_reason == EDGELLM_FINISH_STOP || a.r->finish_reason == EDGELLM_FINISH_LENGTH);
}

TEST(CApiDocqa, BadInputAndACorruptIndexGetAClearStatusAndLoseNothing) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  const std::string index = edgellm::test::temp_dir() + "/capi-docqa-bad.index";
  std::remove(index.c_str());
  std::remove((index + ".bak").c_str());
  Rt emb(model);
  auto expect = [&](edgellm_status got, edgellm_status want, const char* words, const char* what) {
    EXPECT_EQ(got, want) << what << ": " << edgellm_last_error();
    EXPECT_NE(std::string(edgellm_last_error()).find(words), std::string::npos)
        << what << ": '" << edgellm_last_error() << "' lacks '" << words << "'";
  };
  edgellm_docqa* none = nullptr;
  expect(edgellm_docqa_create(nullptr, nullptr, nullptr, index.c_str(), nullptr, &none), EDGELLM_ERR_INVALID_ARGUMENT,
         "runtime is NULL", "null embedder");
  expect(edgellm_docqa_create(emb.rt, nullptr, nullptr, nullptr, nullptr, &none), EDGELLM_ERR_INVALID_ARGUMENT,
         "index_path is NULL", "null path");
  expect(edgellm_docqa_create(emb.rt, nullptr, nullptr, index.c_str(), nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
         "out is NULL", "null out");
  expect(edgellm_docqa_create(emb.rt, emb.rt, nullptr, index.c_str(), nullptr, &none), EDGELLM_ERR_INVALID_ARGUMENT,
         "reranker", "an embedder as the reranker");
  expect(edgellm_docqa_create(emb.rt, nullptr, emb.rt, index.c_str(), nullptr, &none), EDGELLM_ERR_INVALID_ARGUMENT,
         "generator", "an embedder as the generator");
  edgellm_docqa_params bad = docqa_test_params();
  bad.candidates = 1;
  expect(edgellm_docqa_create(emb.rt, nullptr, nullptr, index.c_str(), &bad, &none), EDGELLM_ERR_INVALID_ARGUMENT,
         "candidates", "candidates < top_k");
  EXPECT_EQ(none, nullptr);
  EXPECT_EQ(edgellm_docqa_destroy(nullptr), EDGELLM_OK);
  edgellm_docqa_result_free(nullptr);
  EXPECT_EQ(edgellm_docqa_result_hit(nullptr, 0), nullptr);

  const edgellm_docqa_params params = docqa_test_params();
  {
    DocqaHandle h;
    ASSERT_EQ(edgellm_docqa_create(emb.rt, nullptr, nullptr, index.c_str(), &params, &h.qa), EDGELLM_OK)
        << edgellm_last_error();
    DocqaResult r;
    expect(edgellm_docqa_search(h.qa, "anything", 0, &r.r), EDGELLM_ERR_INVALID_ARGUMENT, "holds no documents",
           "search of an empty index");
    EXPECT_FALSE(edgellm::test::file_exists(index));  // nothing written before a change
    ASSERT_EQ(edgellm_docqa_add(h.qa, "a", "Rivers run to the sea. Harbors hold ships.", nullptr), EDGELLM_OK)
        << edgellm_last_error();
    ASSERT_EQ(edgellm_docqa_add(h.qa, "b", "Violins and melodies fill the castle.", nullptr), EDGELLM_OK);
    const std::string saved = edgellm::test::read_file(index);
    expect(edgellm_docqa_add(h.qa, nullptr, "text", nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "key is NULL", "null key");
    expect(edgellm_docqa_add(h.qa, "c", nullptr, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "text is NULL", "null text");
    expect(edgellm_docqa_add(h.qa, "c", "  \n", nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "empty", "blank text");
    expect(edgellm_docqa_add(h.qa, "c", "bad \xff byte", nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "byte 4",
           "invalid UTF-8 text (input policy REFUSE)");
    expect(edgellm_docqa_add(h.qa, "k\xc3", "fine text", nullptr), EDGELLM_ERR_INVALID_ARGUMENT,
           "key is not valid UTF-8", "invalid UTF-8 key");
    expect(edgellm_docqa_add(h.qa, "k\x01", "fine text", nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "control",
           "control key");
    expect(edgellm_docqa_add(h.qa, "", "fine text", nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "key must be", "empty key");
    expect(edgellm_docqa_add(nullptr, "c", "fine text", nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "docqa is NULL",
           "null handle");
    expect(edgellm_docqa_remove(h.qa, "missing", nullptr), EDGELLM_ERR_NOT_FOUND, "no document", "remove unknown");
    expect(edgellm_docqa_search(h.qa, nullptr, 0, &r.r), EDGELLM_ERR_INVALID_ARGUMENT, "query is NULL", "null query");
    expect(edgellm_docqa_search(h.qa, "q \xe2\x82", 0, &r.r), EDGELLM_ERR_INVALID_ARGUMENT, "not valid UTF-8",
           "invalid query");
    expect(edgellm_docqa_search(h.qa, "q", 0, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL", "null out");
    expect(edgellm_docqa_ask(h.qa, "what?", &r.r), EDGELLM_ERR_UNSUPPORTED, "no generator", "ask without generator");
    EXPECT_EQ(r.r, nullptr);
    size_t len = 0;
    expect(edgellm_docqa_list_json(h.qa, nullptr, 0, &len), EDGELLM_ERR_BUFFER_TOO_SMALL, "", "list size query");
    std::string list(len + 1, '\0');
    ASSERT_EQ(edgellm_docqa_list_json(h.qa, list.data(), list.size(), &len), EDGELLM_OK);
    EXPECT_NE(list.find("\"key\": \"a\""), std::string::npos) << list;
    EXPECT_EQ(edgellm::test::read_file(index), saved);  // no refused call touched the file

    // From a callback of its embedder: it would wait for itself.
    struct Call {
      edgellm_docqa* qa;
      std::atomic<int> status{-1}, remove{-1}, list{-1};
    } call{h.qa};
    ASSERT_EQ(edgellm_trim(
                  emb.rt,
                  [](uint64_t, void* user) {
                    auto* c = static_cast<Call*>(user);
                    edgellm_docqa_result* res = nullptr;
                    size_t len = 0;
                    c->remove = edgellm_docqa_remove(c->qa, "a", nullptr);
                    c->list = edgellm_docqa_list_json(c->qa, nullptr, 0, &len);
                    c->status = edgellm_docqa_search(c->qa, "rivers", 0, &res);
                    edgellm_docqa_result_free(res);
                  },
                  &call),
              EDGELLM_OK);
    const auto until = std::chrono::steady_clock::now() + 30s;
    while (call.status.load() < 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    EXPECT_EQ(call.status.load(), EDGELLM_ERR_WRONG_THREAD);
    EXPECT_EQ(call.remove.load(), EDGELLM_ERR_WRONG_THREAD);
    EXPECT_EQ(call.list.load(), EDGELLM_ERR_WRONG_THREAD);
  }

  // A damaged file: refused whole with the reason, the file and its backup left as they were;
  // the backup (the generation before the last save) opens and holds document "a".
  std::string bytes = edgellm::test::read_file(index);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x20);
  { std::ofstream(index, std::ios::binary | std::ios::trunc) << bytes; }
  edgellm_docqa* broken = nullptr;
  expect(edgellm_docqa_create(emb.rt, nullptr, nullptr, index.c_str(), &params, &broken), EDGELLM_ERR_INVALID_FILE,
         "is corrupt: checksum mismatch", "corrupt index");
  EXPECT_EQ(broken, nullptr);
  EXPECT_EQ(edgellm::test::read_file(index), bytes);
  const std::string backup = index + ".bak";
  ASSERT_TRUE(edgellm::test::file_exists(backup));
  {
    DocqaHandle h;
    ASSERT_EQ(edgellm_docqa_create(emb.rt, nullptr, nullptr, backup.c_str(), &params, &h.qa), EDGELLM_OK)
        << edgellm_last_error();
    DocqaResult r;
    ASSERT_EQ(edgellm_docqa_search(h.qa, "Rivers run to the sea.", 1, &r.r), EDGELLM_OK) << edgellm_last_error();
    ASSERT_EQ(r.r->n_hits, 1u);
    EXPECT_STREQ(edgellm_docqa_result_hit(r.r, 0)->key, "a");
  }
  // rebuild: starts empty, the damaged file replaced at the first save.
  edgellm_docqa_params rebuild = params;
  rebuild.rebuild = true;
  DocqaHandle h;
  ASSERT_EQ(edgellm_docqa_create(emb.rt, nullptr, nullptr, index.c_str(), &rebuild, &h.qa), EDGELLM_OK)
      << edgellm_last_error();
  ASSERT_EQ(edgellm_docqa_add(h.qa, "b", "Violins and melodies fill the castle.", nullptr), EDGELLM_OK);
  edgellm_docqa* reopened = nullptr;
  ASSERT_EQ(edgellm_docqa_create(emb.rt, nullptr, nullptr, index.c_str(), &params, &reopened), EDGELLM_OK)
      << edgellm_last_error();
  EXPECT_EQ(edgellm_docqa_destroy(reopened), EDGELLM_OK);
}

// The C++ wrapper's DocQa: the same hits as the C calls on the same handle, a refused call thrown
// as Error with its status, NOT_FOUND for an unknown key.
TEST(CApiDocqa, CppWrapperAddsSearchesAndThrows) {
  const std::string model = synth("all-minilm-l6");
  REQUIRE_MODEL(model);
  const std::string index = edgellm::test::temp_dir() + "/capi-docqa-cpp.index";
  std::remove(index.c_str());
  auto rt = edgellm::cpp::Runtime::open(model);
  auto qa = edgellm::cpp::DocQa::open(rt, index, nullptr, nullptr, docqa_test_params());
  EXPECT_EQ(qa.add("a", "Rivers run to the sea. Harbors hold ships.").added, 1);
  EXPECT_EQ(qa.add("b", "Violins and melodies fill the castle.").documents, 2);
  const auto hits = qa.search("ships in the harbor", 2);
  DocqaResult c;
  ASSERT_EQ(edgellm_docqa_search(qa.handle(), "ships in the harbor", 2, &c.r), EDGELLM_OK);
  ASSERT_EQ(hits.size(), c.r->n_hits);
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(hits[i].chunk, edgellm_docqa_result_hit(c.r, i)->chunk);
    EXPECT_EQ(hits[i].text, edgellm_docqa_result_hit(c.r, i)->text);
    EXPECT_EQ(hits[i].score, edgellm_docqa_result_hit(c.r, i)->score);
  }
  try {
    qa.remove("missing");
    ADD_FAILURE() << "an unknown key was removed";
  } catch (const edgellm::cpp::Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_NOT_FOUND);
  }
  try {
    qa.ask("what?");
    ADD_FAILURE() << "asked without a generator";
  } catch (const edgellm::cpp::Error& e) {
    EXPECT_EQ(e.status(), EDGELLM_ERR_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("no generator"), std::string::npos) << e.what();
  }
}

}  // namespace
