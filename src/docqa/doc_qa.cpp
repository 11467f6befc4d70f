#include "docqa/doc_qa.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>

#include "chat/chat_template.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "docqa/index_file.h"
#include "model/model_fingerprint.h"
#include "runtime/runtime.h"
#include "tokenizer/sanitize.h"
#include "tokenizer/tokenizer.h"

namespace edgellm {

namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// What is left until `deadline` in whole milliseconds, rounded up (0: passed; -1: no deadline,
// Clock::time_point::max()). Rounded up so a request is never given less than is left.
int64_t ms_left(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  const auto left = deadline - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return std::chrono::ceil<std::chrono::milliseconds>(left).count();
}

// Waits for one request on a runtime, within `deadline`: nullopt when it passed (before the
// request or during it); an error result throws its Error.
std::optional<EmbeddingResult> run(Runtime& rt, EmbeddingRequest r,
                                   Clock::time_point deadline = Clock::time_point::max()) {
  const int64_t left = ms_left(deadline);
  if (left == 0) return std::nullopt;
  auto done = std::make_shared<std::promise<EmbeddingResult>>();
  r.deadline_ms = left > 0 ? left : 0;
  r.on_finish = [done](EmbeddingResult& res) { done->set_value(std::move(res)); };
  rt.embed(std::move(r));
  EmbeddingResult res = done->get_future().get();
  if (res.finish_reason == FinishReason::kError) throw Error(res.error_code, res.error);
  if (res.finish_reason == FinishReason::kTimeout) return std::nullopt;
  require(res.finish_reason == FinishReason::kStop, ErrorCode::kCancelled, "an embedding request was cancelled");
  return res;
}

bool has_extension(const fs::path& p, const std::vector<std::string>& extensions) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::find(extensions.begin(), extensions.end(), ext) != extensions.end();
}

std::string read_file_bytes(const fs::path& p, uint64_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  require(static_cast<bool>(in), ErrorCode::kIo, "cannot open '" + p.string() + "'");
  std::string data;
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.append(buf, static_cast<size_t>(in.gcount()));
    require(data.size() <= max_bytes, ErrorCode::kInvalidArgument, "larger than the document limit");
  }
  return data;
}

}  // namespace

std::string DocQa::model_id_of(Runtime& embedder) {
  const std::shared_ptr<EmbeddingService> svc = embedder.embedding_service();
  require(svc != nullptr, ErrorCode::kInvalidArgument,
          "document Q&A needs an embedding runtime (role embed) to index and search");
  char fp[32];
  std::snprintf(fp, sizeof fp, "%016llx", static_cast<unsigned long long>(model_fingerprint(svc->model().gguf())));
  return std::string("fingerprint ") + fp + ", " + svc->model().hparams().arch + ", dims " +
         std::to_string(svc->dims()) + ", pooling " + pooling_type_name(svc->default_pooling());
}

DocQa::DocQa(Runtime& embedder, std::string index_path, DocQaOptions options)
    : embedder_(embedder), path_(std::move(index_path)), options_(std::move(options)) {
  const std::string model_id = model_id_of(embedder_);
  require(options_.top_k >= 1 && options_.candidates >= options_.top_k && options_.embed_batch >= 1 &&
              options_.max_answer_tokens >= 1,
          ErrorCode::kInvalidArgument,
          "docqa: need 1 <= top_k <= candidates, embed_batch >= 1 and max_answer_tokens >= 1");
  const int32_t n_ctx = embedder_.embedding_service()->n_ctx();
  if (options_.chunk.max_tokens == 0) {
    options_.chunk.max_tokens = std::min(256, n_ctx - 2);
    options_.chunk.overlap_tokens = std::min(options_.chunk.overlap_tokens, options_.chunk.max_tokens / 2);
  }
  require(options_.chunk.max_tokens + 2 <= n_ctx, ErrorCode::kInvalidArgument,
          "chunks of " + std::to_string(options_.chunk.max_tokens) + " tokens do not fit the embedder's context of " +
              std::to_string(n_ctx) + " (2 of them for its special tokens): use a smaller chunk size or a larger -c");
  if (path_exists(path_) && !options_.rebuild) {
    IndexFile f = load_index_file(path_);
    require(f.index->model_id() == model_id, ErrorCode::kInvalidArgument,
            "the index '" + path_ + "' was built with another embedding model (" + f.index->model_id() +
                "), not this one (" + model_id + "): vectors of two models do not compare; rebuild the index");
    index_ = std::move(f.index);
    loaded_from_file_ = true;
  } else {
    index_ = std::make_unique<VectorIndex>(embedder_.embedding_service()->dims(), options_.vector_type, model_id);
  }
}

DocQa::~DocQa() = default;

std::string DocQa::settings_json() const {
  Json j = Json::object();
  j.set("chunk_tokens", options_.chunk.max_tokens);
  j.set("overlap_tokens", options_.chunk.overlap_tokens);
  j.set("vector_type", vector_type_name(index_->type()));
  j.set("query_prefix", options_.query_prefix);
  return j.dump();
}

void DocQa::save() {
  save_index_file(path_, *index_, settings_json(), loaded_from_file_);
  loaded_from_file_ = true;  // what is there now was just written whole
}

std::vector<float> DocQa::embed_texts(const std::vector<std::string>& texts, int64_t* tokens) {
  std::vector<float> out;
  for (size_t i = 0; i < texts.size(); i += static_cast<size_t>(options_.embed_batch)) {
    EmbeddingRequest r;
    r.texts.assign(texts.begin() + static_cast<std::ptrdiff_t>(i),
                   texts.begin() + static_cast<std::ptrdiff_t>(std::min(texts.size(), i + options_.embed_batch)));
    r.truncation = options_.truncation;
    r.priority = Priority::kBackground;
    const EmbeddingResult res = *run(embedder_, std::move(r));  // no deadline: never nullopt
    if (tokens) *tokens += res.prompt_tokens;
    out.insert(out.end(), res.vectors.begin(), res.vectors.end());
  }
  return out;
}

IndexReport DocQa::add_or_update(const std::string& key, std::string_view raw, int64_t mtime) {
  const auto t0 = Clock::now();
  IndexReport rep;
  size_t changed = 0;
  const std::string text = sanitize_user_text(raw, &changed);
  if (changed > 0)
    rep.notes.push_back(key + ": " + std::to_string(changed) + " invalid or control characters replaced");
  const std::string sha = Sha256::hex_of(text);
  const IndexedDocument* old = index_->find_document(key);
  if (old != nullptr && old->sha256 == sha) {
    ++rep.unchanged;
    return rep;
  }
  const std::shared_ptr<EmbeddingService> svc = embedder_.embedding_service();
  const std::vector<TextChunk> chunks = chunk_text(text, svc->tokenizer(), options_.chunk);
  std::vector<std::string> texts;
  std::vector<ChunkSource> sources;
  for (const TextChunk& c : chunks) {
    texts.push_back(c.text);
    sources.push_back({static_cast<uint32_t>(c.begin), static_cast<uint32_t>(c.end), c.text});
  }
  const std::vector<float> vectors = embed_texts(texts, &rep.tokens_embedded);
  if (old != nullptr) {
    rep.chunks_removed += static_cast<int64_t>(old->chunks.size());
    index_->update_document(key, sha, mtime, text.size(), std::move(sources), vectors.data());
    ++rep.updated;
  } else {
    index_->add_document(key, sha, mtime, text.size(), std::move(sources), vectors.data());
    ++rep.added;
  }
  rep.chunks_added += static_cast<int64_t>(chunks.size());
  rep.seconds = ms_since(t0) / 1e3;
  return rep;
}

bool DocQa::remove(const std::string& key) {
  return index_->remove_document(key);
}

IndexReport DocQa::index_directory(const std::string& dir) {
  const auto t0 = Clock::now();
  require(fs::is_directory(dir), ErrorCode::kInvalidArgument, "'" + dir + "' is not a folder");
  IndexReport total;
  std::set<std::string> seen;
  std::vector<fs::path> files;
  try {
    for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied);
         it != fs::recursive_directory_iterator(); ++it) {
      if (it->is_regular_file() && has_extension(it->path(), options_.extensions)) files.push_back(it->path());
    }
  } catch (const fs::filesystem_error& e) {
    // A folder that changes or fails while it is walked: nothing is changed or saved.
    throw Error(ErrorCode::kIo, "cannot list the folder '" + dir + "': " + e.what());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& p : files) {
    const std::string key = fs::relative(p, dir).generic_string();
    if (!utf8::is_valid(key)) {
      // The index stores keys as UTF-8; such a name cannot be one (it is left out, not mangled).
      ++total.skipped;
      total.notes.push_back(sanitize_user_text(key) + ": skipped (the file name is not valid UTF-8)");
      continue;
    }
    seen.insert(key);
    std::string text;
    try {
      text = read_file_bytes(p, options_.max_document_bytes);
    } catch (const Error& e) {
      ++total.skipped;
      total.notes.push_back(key + ": skipped (" + e.what() + ")");
      if (index_->find_document(key) != nullptr) seen.erase(key);  // unreadable now: drop its old chunks
      continue;
    }
    std::error_code ec;  // a file gone since it was read keeps mtime 0 (informative only)
    const fs::file_time_type when = fs::last_write_time(p, ec);
    const int64_t mtime = ec ? 0 : std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count();
    const IndexReport r = add_or_update(key, text, mtime);
    total.added += r.added;
    total.updated += r.updated;
    total.unchanged += r.unchanged;
    total.chunks_added += r.chunks_added;
    total.chunks_removed += r.chunks_removed;
    total.tokens_embedded += r.tokens_embedded;
    total.notes.insert(total.notes.end(), r.notes.begin(), r.notes.end());
  }
  for (const IndexedDocument* d : index_->documents()) {
    if (seen.count(d->path) != 0) continue;
    total.chunks_removed += static_cast<int64_t>(d->chunks.size());
    ++total.removed;
    const std::string path = d->path;  // d dies with the removal
    index_->remove_document(path);
  }
  save();
  total.seconds = ms_since(t0) / 1e3;
  return total;
}

std::vector<RetrievedChunk> DocQa::retrieve(const std::string& question, Runtime* reranker, RetrieveTiming* timing,
                                            int32_t top_k) {
  return *retrieve_by(question, reranker, timing, top_k, Clock::time_point::max());  // no deadline: never nullopt
}

std::optional<std::vector<RetrievedChunk>> DocQa::retrieve_by(const std::string& question, Runtime* reranker,
                                                              RetrieveTiming* timing, int32_t top_k,
                                                              Clock::time_point deadline) {
  const int32_t keep = top_k > 0 ? top_k : options_.top_k;
  RetrieveTiming t;
  auto t0 = Clock::now();
  const std::string clean = sanitize_user_text(question);
  require(clean.find_first_not_of(" \t\r\n") != std::string::npos, ErrorCode::kInvalidArgument,
          "the question is empty");
  require(index_->chunk_count() > 0, ErrorCode::kInvalidArgument,
          "the index '" + path_ + "' holds no documents: index a folder first");
  EmbeddingRequest q;
  q.texts = {options_.query_prefix + clean};
  q.truncation = options_.truncation;
  const std::optional<EmbeddingResult> e = run(embedder_, std::move(q), deadline);
  if (!e) return std::nullopt;
  t.embed_ms = ms_since(t0);
  t0 = Clock::now();
  const size_t k = static_cast<size_t>(reranker ? std::max(options_.candidates, keep) : keep);
  const std::vector<VectorIndex::Hit> hits = index_->search(e->vectors.data(), k);
  t.search_ms = ms_since(t0);
  t0 = Clock::now();
  std::vector<RetrievedChunk> out;
  for (const VectorIndex::Hit& h : hits) {
    const IndexedChunk* c = index_->chunk(h.chunk);
    const IndexedDocument* d = index_->document(c->doc);
    out.push_back({c->id, d ? d->path : std::string(), c->begin, c->end, c->text, h.score, std::nullopt});
  }
  if (reranker != nullptr && !out.empty()) {
    EmbeddingRequest r;
    r.task = EmbeddingTask::kRerank;
    r.query = clean;
    for (const RetrievedChunk& c : out) r.documents.push_back(c.text);
    r.truncation = options_.truncation;
    const std::optional<EmbeddingResult> s = run(*reranker, std::move(r), deadline);
    if (!s) return std::nullopt;
    require(s->scores.size() == out.size(), ErrorCode::kInternal,
            "the reranker returned a score count that does not match");
    for (size_t i = 0; i < out.size(); ++i) out[i].rerank_score = s->scores[i];
    std::stable_sort(out.begin(), out.end(), [](const RetrievedChunk& a, const RetrievedChunk& b) {
      return *a.rerank_score > *b.rerank_score;
    });
    if (out.size() > static_cast<size_t>(keep)) out.resize(static_cast<size_t>(keep));
    t.rerank_ms = ms_since(t0);
  }
  if (timing != nullptr) *timing = t;
  return out;
}

Json DocQa::answer_messages(const std::string& question, const std::vector<RetrievedChunk>& context) {
  Json messages = Json::array();
  Json system = Json::object();
  system.set("role", "system");
  system.set("content",
             "You answer questions about the user's documents using only the numbered passages given. Cite every "
             "passage you use by its number in square brackets, like [12]. If the passages do not contain the answer, "
             "say that you do not know.");
  messages.push_back(std::move(system));
  std::string passages;
  for (const RetrievedChunk& c : context) {
    passages += "[" + std::to_string(c.chunk) + "] (" + c.path + ") " + c.text + "\n\n";
  }
  Json user = Json::object();
  user.set("role", "user");
  user.set("content", "Passages:\n\n" + passages + "Question: " + question);
  messages.push_back(std::move(user));
  return messages;
}

void DocQa::check_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "key must be 1 to " + std::to_string(kMaxKeyBytes) + " bytes, got " + std::to_string(key.size()));
  }
  const size_t bad = utf8::first_invalid(key);
  if (bad != key.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "key is not valid UTF-8 (ill-formed sequence at byte " + std::to_string(bad) + ")");
  }
  for (const unsigned char c : key) {
    if (c < 0x20 || c == 0x7F) throw Error(ErrorCode::kInvalidArgument, "key holds a control character");
  }
}

std::vector<uint32_t> DocQa::cited_ids(std::string_view answer) {
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < answer.size(); ++i) {
    if (answer[i] != '[') continue;
    // "[12]" or "[12, 7]": digits separated by commas / spaces up to the closing bracket.
    size_t j = i + 1;
    std::vector<uint32_t> here;
    uint64_t v = 0;
    bool digits = false, ok = true;
    for (; j < answer.size() && answer[j] != ']'; ++j) {
      const char c = answer[j];
      if (c >= '0' && c <= '9') {
        v = v * 10 + static_cast<uint64_t>(c - '0');
        digits = true;
        if (v > UINT32_MAX) ok = false;
      } else if (c == ',' || c == ' ') {
        if (digits) here.push_back(static_cast<uint32_t>(v));
        v = 0;
        digits = false;
      } else {
        ok = false;
        break;
      }
    }
    if (!ok || j >= answer.size()) continue;
    if (digits) here.push_back(static_cast<uint32_t>(v));
    for (const uint32_t id : here) {
      if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    i = j;
  }
  return ids;
}

DocQa::PreparedAnswer DocQa::prepare_answer(const std::string& question, Runtime& generator, Runtime* reranker,
                                            int64_t deadline_ms) {
  PreparedAnswer p;
  const auto t0 = Clock::now();
  const Clock::time_point deadline =
      deadline_ms > 0 ? t0 + std::chrono::milliseconds(deadline_ms) : Clock::time_point::max();
  std::optional<std::vector<RetrievedChunk>> found = retrieve_by(question, reranker, &p.retrieve_timing, 0, deadline);
  p.retrieve_ms = ms_since(t0);
  if (!found) {
    p.timed_out = true;
    return p;
  }
  p.context = std::move(*found);
  const std::string clean = sanitize_user_text(question);
  {
    // The rendered prompt and the answer must fit the generator's context: the lowest-ranked
    // passages go first (the template is rendered exactly as the service will render it).
    const std::shared_ptr<InferenceService> svc = generator.service();
    const int64_t n_ctx = svc->context_params().n_ctx;
    for (;;) {
      const std::string prompt = svc->chat_template().render(answer_messages(clean, p.context), true);
      const int64_t need =
          static_cast<int64_t>(svc->tokenizer().encode(prompt, true, true).size()) + options_.max_answer_tokens;
      if (need <= n_ctx) break;
      require(p.context.size() > 1, ErrorCode::kInvalidArgument,
              "the question and one passage need " + std::to_string(need) + " tokens with the answer's " +
                  std::to_string(options_.max_answer_tokens) + ", more than the generator's context of " +
                  std::to_string(n_ctx) + ": use a larger context, a shorter answer or smaller chunks");
      p.context.pop_back();
    }
  }
  const int64_t left = ms_left(deadline);
  if (left == 0) {
    p.timed_out = true;
    p.context.clear();
    return p;
  }
  p.request.messages = answer_messages(clean, p.context);
  p.request.generation.max_tokens = options_.max_answer_tokens;
  p.request.sampling = options_.sampling;
  p.request.deadline_ms = left > 0 ? left : 0;
  return p;
}

std::vector<Citation> DocQa::cite(std::string_view answer, const std::vector<RetrievedChunk>& context) {
  std::vector<Citation> out;
  for (const uint32_t id : cited_ids(answer)) {
    for (const RetrievedChunk& c : context) {
      if (c.chunk == id) out.push_back({c.chunk, c.path, c.begin, c.end});
    }
  }
  return out;
}

DocAnswer DocQa::ask(const std::string& question, Runtime& generator, Runtime* reranker, int64_t deadline_ms) {
  PreparedAnswer p = prepare_answer(question, generator, reranker, deadline_ms);
  DocAnswer a;
  a.retrieve_ms = p.retrieve_ms;
  a.retrieve_timing = p.retrieve_timing;
  if (p.timed_out) {
    a.finish_reason = FinishReason::kTimeout;
    return a;
  }
  a.context = std::move(p.context);
  auto done = std::make_shared<std::promise<RequestResult>>();
  p.request.on_finish = [done](RequestResult& res) { done->set_value(std::move(res)); };
  const auto t1 = Clock::now();
  generator.submit(std::move(p.request));
  const RequestResult res = done->get_future().get();
  a.generate_ms = ms_since(t1);
  a.answer = res.text;
  a.finish_reason = res.finish_reason;
  a.error = res.error;
  a.citations = cite(a.answer, a.context);
  return a;
}

}  // namespace edgellm
