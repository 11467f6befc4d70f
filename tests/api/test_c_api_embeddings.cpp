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

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
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
  expect(edgellm_embed(r.rt, ok, 3000, nullptr, v, 384, &n, nullptr), EDGELLM_ERR_INVALID_ARGUMENT, "2048",
         "too many texts");
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

}  // namespace
