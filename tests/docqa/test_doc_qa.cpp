// Document Q&A end to end (docqa/doc_qa.h) on a synthetic BERT-shaped embedder (the one the
// runtime's embedding tests use, test::small_bert_spec: synth's generated WordPiece vocabulary,
// word "t<id>" is token <id>): a folder is
// indexed, a question equal to a planted paragraph finds that paragraph's chunk first with the
// right file and byte range; re-indexing after an edit, a deletion and a new file embeds only
// what changed and leaves every chunk equal to its file's current bytes (no stale hit); a
// corrupt index is refused with a clear error and the documents stay as they were; an index of
// another model is refused; ask() renders through the generator's chat template, fits its
// context and cites only chunks it was given; the reranker's order is its scores' order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "core/error.h"
#include "core/sha256.h"
#include "docqa/doc_qa.h"
#include "docqa/index_file.h"
#include "runtime/runtime.h"
#include "support/synthetic_model.h"
#include "support/test_env.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

std::string bert_file(int32_t n_cls_out = 0, uint64_t seed = 1) {
  test::SyntheticModelSpec s = test::small_bert_spec(n_cls_out);
  s.seed = seed;
  const std::string p = test::temp_dir() + "/bert-" + std::to_string(n_cls_out) + "-" + std::to_string(seed) + ".gguf";
  if (!test::file_exists(p)) test::write_synthetic_model(s, p);
  return p;
}

std::unique_ptr<Runtime> embedder(const std::string& path) {
  RuntimeParams p;
  p.model_path = path;
  p.role = RuntimeRole::kEmbed;
  p.embedding.max_queued = 8;
  return std::make_unique<Runtime>(p);
}

// A sentence of `n` distinct words t<first>.. (each word one token).
std::string sentence(int first, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " t" : "t") + std::to_string(first + i);
  return s + ".";
}

// Documents: paragraphs of three sentences; word ids never repeat across the folder.
struct Folder {
  std::string dir;
  std::map<std::string, std::string> files;  // relative path -> content
  int next_word = 10;

  std::string paragraph(std::mt19937& rng) {
    std::string p;
    for (int s = 0; s < 3; ++s) {
      const int n = 3 + static_cast<int>(rng() % 4);
      p += (s ? " " : "") + sentence(next_word, n);
      next_word += n;
    }
    return p;
  }
  void write(const std::string& rel, const std::string& content) {
    files[rel] = content;
    fs::create_directories(fs::path(dir + "/" + rel).parent_path());
    std::ofstream(dir + "/" + rel, std::ios::binary | std::ios::trunc) << content;
  }
  void remove(const std::string& rel) {
    files.erase(rel);
    fs::remove(dir + "/" + rel);
  }
  std::string digest() const {
    std::string all;
    for (const auto& entry : fs::recursive_directory_iterator(dir)) {
      if (entry.is_regular_file())
        all += entry.path().string() + Sha256::hex_of(test::read_file(entry.path().string()));
    }
    return all;
  }
};

Folder make_folder(const std::string& name, std::mt19937& rng) {
  Folder f;
  f.dir = test::temp_dir() + "/" + name;
  fs::remove_all(f.dir);
  fs::create_directories(f.dir);
  for (int d = 0; d < 8; ++d) {
    std::string content;
    for (int p = 0; p < 3; ++p) content += (p ? "\n\n" : "") + f.paragraph(rng);
    f.write((d % 2 ? "sub/" : "") + std::string("doc") + std::to_string(d) + (d % 3 ? ".txt" : ".md"), content + "\n");
  }
  f.write("ignored.bin", "t1 t2 t3");  // not a document extension
  return f;
}

DocQaOptions options() {
  DocQaOptions o;
  o.chunk = {24, 8};
  o.top_k = 3;
  o.candidates = 8;
  return o;
}

// Every chunk of the index is its file's bytes [begin, end), and every file is indexed.
void expect_index_matches_folder(const VectorIndex& ix, const Folder& f) {
  size_t docs = 0;
  for (const auto& [rel, content] : f.files) {
    if (rel == "ignored.bin") continue;
    ++docs;
    const IndexedDocument* d = ix.find_document(rel);
    ASSERT_NE(d, nullptr) << rel;
    EXPECT_EQ(d->sha256, Sha256::hex_of(content)) << rel;
    for (const uint32_t id : d->chunks) {
      const IndexedChunk* c = ix.chunk(id);
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(c->text, content.substr(c->begin, c->end - c->begin)) << rel << " chunk " << id;
    }
  }
  EXPECT_EQ(ix.document_count(), docs);
}

TEST(DocQa, PlantedParagraphIsFoundFirst) {
  std::mt19937 rng(1);
  Folder f = make_folder("planted", rng);
  const std::string planted = sentence(900, 6) + " " + sentence(906, 5);
  f.write("notes/plan.md", f.paragraph(rng) + "\n\n" + planted + "\n\n" + f.paragraph(rng) + "\n");
  const auto emb = embedder(bert_file());
  DocQa qa(*emb, f.dir + "/../planted.index", options());
  const IndexReport r = qa.index_directory(f.dir);
  EXPECT_EQ(r.added, 9);
  EXPECT_EQ(r.skipped, 0);
  expect_index_matches_folder(qa.index(), f);

  const std::vector<RetrievedChunk> hits = qa.retrieve(planted);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].path, "notes/plan.md");
  EXPECT_EQ(hits[0].text, planted);
  EXPECT_EQ(f.files["notes/plan.md"].substr(hits[0].begin, hits[0].end - hits[0].begin), planted);
  EXPECT_GT(hits[0].score, 0.99f);  // measured 0.99908 (int8 storage of both); the next best 0.960
  EXPECT_GE(hits[0].score, hits[1].score);
  // Every chunk's own text finds it first (ids are unique texts here).
  size_t checked = 0;
  for (const IndexedChunk& c : qa.index().chunks_in_order()) {
    if (checked++ % 5 != 0) continue;
    const std::vector<RetrievedChunk> h = qa.retrieve(c.text);
    EXPECT_EQ(h[0].chunk, c.id) << c.text;
  }
}

TEST(DocQa, ReindexingEmbedsOnlyChangesAndLeavesNoStaleChunks) {
  std::mt19937 rng(2);
  Folder f = make_folder("incremental", rng);
  const std::string index = f.dir + "/../incremental.index";
  const auto emb = embedder(bert_file());
  {
    DocQa qa(*emb, index, options());
    EXPECT_EQ(qa.index_directory(f.dir).added, 8);
  }
  const std::string old_text = f.files["doc0.md"];
  f.write("doc0.md", f.paragraph(rng) + "\n");  // changed
  f.remove("sub/doc1.txt");                     // gone
  f.write("sub/new.txt", f.paragraph(rng));     // new
  DocQa qa(*emb, index, options());             // from the file
  const IndexReport r = qa.index_directory(f.dir);
  EXPECT_EQ(r.added, 1);
  EXPECT_EQ(r.updated, 1);
  EXPECT_EQ(r.removed, 1);
  EXPECT_EQ(r.unchanged, 6);
  EXPECT_GT(r.chunks_removed, 0);
  expect_index_matches_folder(qa.index(), f);
  // The old content's paragraphs find nothing of theirs.
  for (const std::string& hit_text : {old_text.substr(0, old_text.find("\n\n"))}) {
    for (const RetrievedChunk& h : qa.retrieve(hit_text)) {
      EXPECT_EQ(f.files.at(h.path).substr(h.begin, h.end - h.begin), h.text) << "stale chunk " << h.chunk;
    }
  }
  // Nothing changed: nothing embedded, and a fresh DocQa reads the same index.
  EXPECT_EQ(qa.index_directory(f.dir).tokens_embedded, 0);
  DocQa again(*emb, index, options());
  expect_index_matches_folder(again.index(), f);
  EXPECT_EQ(again.index().chunk_count(), qa.index().chunk_count());
  // add_or_update / remove by key, without a folder.
  EXPECT_EQ(again.add_or_update("app/note-1", sentence(990, 4)).added, 1);
  EXPECT_TRUE(again.remove("app/note-1"));
  EXPECT_FALSE(again.remove("app/note-1"));
}

TEST(DocQa, CorruptIndexIsRefusedAndDocumentsAreKept) {
  std::mt19937 rng(3);
  Folder f = make_folder("corrupt", rng);
  const std::string index = f.dir + "/../corrupt.index";
  const auto emb = embedder(bert_file());
  {
    DocQa qa(*emb, index, options());
    qa.index_directory(f.dir);
    qa.index_directory(f.dir);  // a second save: the first file becomes the backup
  }
  const std::string before = f.digest();
  std::string bytes = test::read_file(index);
  bytes.resize(bytes.size() - 7);
  std::ofstream(index, std::ios::binary | std::ios::trunc) << bytes;
  try {
    DocQa qa(*emb, index, options());
    ADD_FAILURE() << "a truncated index opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidFile);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("is corrupt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rebuild"), std::string::npos) << msg;
  }
  EXPECT_EQ(f.digest(), before) << "the documents changed";
  EXPECT_EQ(test::read_file(index), bytes) << "the corrupt file was replaced behind the user's back";
  // The backup loads; a rebuild replaces the corrupt file.
  EXPECT_EQ(load_index_file(index_backup_path(index)).index->document_count(), 8u);
  DocQaOptions o = options();
  o.rebuild = true;
  DocQa rebuilt(*emb, index, o);
  EXPECT_EQ(rebuilt.index_directory(f.dir).added, 8);
  expect_index_matches_folder(rebuilt.index(), f);
  EXPECT_EQ(load_index_file(index).index->document_count(), 8u);
}

TEST(DocQa, AnIndexOfAnotherModelIsRefused) {
  std::mt19937 rng(4);
  Folder f = make_folder("other-model", rng);
  const std::string index = f.dir + "/../other-model.index";
  {
    const auto emb = embedder(bert_file());
    DocQa qa(*emb, index, options());
    qa.index_directory(f.dir);
  }
  const auto other = embedder(bert_file(0, /*seed=*/2));
  try {
    DocQa qa(*other, index, options());
    ADD_FAILURE() << "opened with another model";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("another embedding model"), std::string::npos) << e.what();
  }
  DocQaOptions o = options();
  o.chunk = {127, 8};  // + [CLS] [SEP] > 128
  try {
    DocQa qa(*other, index + "2", o);
    ADD_FAILURE() << "chunks beyond the embedder's context accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("do not fit the embedder's context of 128"), std::string::npos) << e.what();
  }
}

TEST(DocQa, CitedIdsAndPromptMessages) {
  EXPECT_EQ(DocQa::cited_ids("Paris [12]. Also [3, 7][12] and [x] [99999999999] [4"),
            (std::vector<uint32_t>{12, 3, 7}));
  EXPECT_TRUE(DocQa::cited_ids("no citations [] here").empty());
  std::vector<RetrievedChunk> ctx(2);
  ctx[0].chunk = 17;
  ctx[0].path = "a.md";
  ctx[0].text = "first passage";
  ctx[1].chunk = 4;
  ctx[1].path = "b.txt";
  ctx[1].text = "second passage";
  const Json m = DocQa::answer_messages("why?", ctx);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at(size_t{0}).at("role").as_string(), "system");
  const std::string user = m.at(size_t{1}).at("content").as_string();
  EXPECT_NE(user.find("[17] (a.md) first passage"), std::string::npos) << user;
  EXPECT_NE(user.find("[4] (b.txt) second passage"), std::string::npos) << user;
  EXPECT_LT(user.find("[17]"), user.find("[4]"));
  EXPECT_NE(user.find("Question: why?"), std::string::npos) << user;
  // cite(): the given chunks an answer names, in its order; an id not given is no citation.
  const std::vector<Citation> cites = DocQa::cite("see [4] and [17][99], again [4]", ctx);
  ASSERT_EQ(cites.size(), 2u);
  EXPECT_EQ(cites[0].chunk, 4u);
  EXPECT_EQ(cites[0].path, "b.txt");
  EXPECT_EQ(cites[1].chunk, 17u);
  EXPECT_EQ(cites[1].path, "a.md");
}

TEST(DocQa, AskFitsTheGeneratorAndCitesOnlyGivenChunks) {
  std::mt19937 rng(5);
  Folder f = make_folder("ask", rng);
  const auto emb = embedder(bert_file());
  DocQaOptions o = options();
  o.top_k = 4;
  o.max_answer_tokens = 8;
  DocQa qa(*emb, f.dir + "/../ask.index", o);
  qa.index_directory(f.dir);
  const std::string question = qa.index().chunks_in_order()[3].text;
  const std::vector<RetrievedChunk> top = qa.retrieve(question);
  ASSERT_EQ(top.size(), 4u);
  // Tokens of the prompt with the first n passages, rendered and counted here with the
  // generator's template and tokenizer (a first runtime of the same model).
  const std::string model = test::shared_model("stories260K.gguf");
  const auto prompt_tokens = [&](Runtime& rt, size_t n) {
    const auto svc = rt.service();
    const std::vector<RetrievedChunk> ctx(top.begin(), top.begin() + static_cast<std::ptrdiff_t>(n));
    return static_cast<int32_t>(
        svc->tokenizer()
            .encode(svc->chat_template().render(DocQa::answer_messages(question, ctx), true), true, true)
            .size());
  };
  RuntimeParams gp;
  gp.model_path = model;
  gp.service.context.n_ctx = 2048;
  gp.service.context.n_seq_max = 1;
  int32_t need3 = 0, need4 = 0;
  {
    Runtime probe(gp);
    need3 = prompt_tokens(probe, 3) + 8;
    need4 = prompt_tokens(probe, 4) + 8;
  }
  ASSERT_LT(need3, need4);
  // One position short of four passages: exactly three are given.
  gp.service.context.n_ctx = need4 - 1;
  Runtime gen(gp);
  const DocAnswer a = qa.ask(question, gen);
  EXPECT_NE(a.finish_reason, FinishReason::kError) << a.error;
  ASSERT_EQ(a.context.size(), 3u) << "need " << need3 << " / " << need4 << " positions for 3 / 4 passages";
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(a.context[i].chunk, top[i].chunk) << "the lowest-ranked goes first";
  EXPECT_EQ(a.context[0].chunk, qa.index().chunks_in_order()[3].id);
  for (const Citation& c : a.citations) {
    bool given = false;
    for (const RetrievedChunk& r : a.context) given = given || r.chunk == c.chunk;
    EXPECT_TRUE(given) << c.chunk;
  }
  // The halves the server streams with: the same passages and the request ask() submits.
  const DocQa::PreparedAnswer p = qa.prepare_answer(question, gen, nullptr, 60000);
  ASSERT_FALSE(p.timed_out);
  ASSERT_EQ(p.context.size(), a.context.size());
  for (size_t i = 0; i < p.context.size(); ++i) EXPECT_EQ(p.context[i].chunk, a.context[i].chunk);
  EXPECT_EQ(p.request.messages.dump(), DocQa::answer_messages(question, a.context).dump());
  EXPECT_EQ(p.request.generation.max_tokens, 8);
  EXPECT_GT(p.request.deadline_ms, 0);
  EXPECT_LE(p.request.deadline_ms, 60000);
  // A deadline bounds the whole ask: 1 ms ends kTimeout with at most the text so far (a prefix
  // of the unbounded greedy answer), never an error.
  const DocAnswer t = qa.ask(question, gen, nullptr, 1);
  EXPECT_EQ(t.finish_reason, FinishReason::kTimeout) << t.error;
  EXPECT_EQ(a.answer.compare(0, t.answer.size(), t.answer), 0) << t.answer;
  // Retrieval refusals.
  try {
    qa.retrieve(" \n");
    ADD_FAILURE() << "an empty question was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(DocQa, RerankerOrdersTheCandidates) {
  std::mt19937 rng(6);
  Folder f = make_folder("rerank", rng);
  const auto emb = embedder(bert_file());
  const auto rr = embedder(bert_file(1));
  DocQa qa(*emb, f.dir + "/../rerank.index", options());
  qa.index_directory(f.dir);
  const std::string question = qa.index().chunks_in_order()[5].text;
  const std::vector<RetrievedChunk> plain = [&] {
    DocQaOptions o = options();
    o.top_k = o.candidates;
    DocQa wide(*emb, f.dir + "/../rerank.index", o);
    return wide.retrieve(question);
  }();
  const std::vector<RetrievedChunk> hits = qa.retrieve(question, rr.get());
  ASSERT_EQ(hits.size(), 3u);
  // The reranker's own scores for every candidate, requested here directly.
  auto done = std::make_shared<std::promise<EmbeddingResult>>();
  EmbeddingRequest r;
  r.task = EmbeddingTask::kRerank;
  r.query = question;
  for (const RetrievedChunk& c : plain) r.documents.push_back(c.text);
  r.on_finish = [done](EmbeddingResult& res) { done->set_value(res); };
  rr->embed(std::move(r));
  const EmbeddingResult s = done->get_future().get();
  ASSERT_EQ(s.scores.size(), plain.size());
  std::vector<std::pair<float, uint32_t>> want;
  for (size_t i = 0; i < plain.size(); ++i) want.push_back({s.scores[i], plain[i].chunk});
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(hits[i].chunk, want[i].second) << i;
    ASSERT_TRUE(hits[i].rerank_score.has_value());
    EXPECT_NEAR(*hits[i].rerank_score, want[i].first, 1e-5f);
  }
}

}  // namespace
}  // namespace edgellm
