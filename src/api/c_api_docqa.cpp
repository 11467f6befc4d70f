// The C ABI's document Q&A: an edgellm_docqa handle is one DocQa (docqa/doc_qa.h: its index,
// in memory and in its file) over the embedding, reranking and generation runtimes of other
// handles, plus a mutex so that any thread may call it (DocQa itself has one user at a time).
// Results are library-owned: one allocation holds the result, its hits and every string, freed
// by edgellm_docqa_result_free. While a call runs it is counted on each runtime it uses, as
// edgellm_embed is (edgellm_runtime_destroy waits for it to leave), and it never calls back.
#include <atomic>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "core/utf8.h"
#include "docqa/doc_qa.h"
#include "service/embedding_service.h"
#include "service/request_limits.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

struct edgellm_docqa {
  edgellm_runtime* embedder = nullptr;
  edgellm_runtime* reranker = nullptr;   // may be null
  edgellm_runtime* generator = nullptr;  // may be null
  std::mutex mutex;                      // one call at a time on `qa`
  std::unique_ptr<DocQa> qa;
};

namespace {

constexpr int32_t kMaxDocqaTopK = 4096;

edgellm_docqa_params docqa_defaults() {
  const DocQaOptions d;
  edgellm_docqa_params p{};
  p.struct_size = sizeof(edgellm_docqa_params);
  p.chunk_tokens = d.chunk.max_tokens;
  p.overlap_tokens = d.chunk.overlap_tokens;
  p.top_k = d.top_k;
  p.candidates = d.candidates;
  p.max_answer_tokens = d.max_answer_tokens;
  p.vectors = EDGELLM_DOCQA_INT8;
  p.truncation = EDGELLM_TRUNCATE_END;
  p.query_prefix = nullptr;
  p.rebuild = false;
  return p;
}

bool bool_byte(const bool& b) {  // any non-zero byte is true (loading another value as bool is UB)
  unsigned char v = 0;
  std::memcpy(&v, &b, 1);
  return v != 0;
}

DocQaOptions to_options(const edgellm_docqa_params& p) {
  DocQaOptions o;
  const auto in = [](int64_t v, int64_t lo, int64_t hi, const char* name) {
    if (v < lo || v > hi) {
      throw Error(ErrorCode::kInvalidArgument, std::string("params.") + name + " must be in [" + std::to_string(lo) +
                                                   ", " + std::to_string(hi) + "], got " + std::to_string(v));
    }
  };
  in(p.chunk_tokens, 0, 1 << 16, "chunk_tokens");
  in(p.overlap_tokens, 0, 1 << 15, "overlap_tokens");
  in(p.top_k, 1, kMaxDocqaTopK, "top_k");
  in(p.candidates, 1, kMaxDocqaTopK, "candidates");
  in(p.max_answer_tokens, 1, 1 << 16, "max_answer_tokens");
  o.chunk = {p.chunk_tokens, p.overlap_tokens};
  if (p.chunk_tokens != 0) {
    in(p.chunk_tokens, 8, 1 << 16, "chunk_tokens");
    in(p.overlap_tokens, 0, p.chunk_tokens / 2, "overlap_tokens");
  }
  o.top_k = p.top_k;
  o.candidates = p.candidates;
  if (o.candidates < o.top_k) throw Error(ErrorCode::kInvalidArgument, "params.candidates must be >= params.top_k");
  o.max_answer_tokens = p.max_answer_tokens;
  const int vectors = capi::enum_value(p.vectors);
  if (vectors != EDGELLM_DOCQA_INT8 && vectors != EDGELLM_DOCQA_F16) {
    throw Error(ErrorCode::kInvalidArgument, "params.vectors " + std::to_string(vectors) + " is unknown");
  }
  o.vector_type = vectors == EDGELLM_DOCQA_F16 ? VectorType::kF16 : VectorType::kInt8;
  const int truncation = capi::enum_value(p.truncation);
  if (truncation != EDGELLM_TRUNCATE_REFUSE && truncation != EDGELLM_TRUNCATE_END) {
    throw Error(ErrorCode::kInvalidArgument, "params.truncation " + std::to_string(truncation) + " is unknown");
  }
  o.truncation = truncation == EDGELLM_TRUNCATE_END ? Truncation::kEnd : Truncation::kRefuse;
  if (p.query_prefix != nullptr) {
    o.query_prefix = p.query_prefix;
    if (!utf8::is_valid(o.query_prefix))
      throw Error(ErrorCode::kInvalidArgument, "params.query_prefix is not valid UTF-8");
  }
  o.rebuild = bool_byte(p.rebuild);
  return o;
}

// A call counted on every runtime it may use: edgellm_runtime_destroy waits for 0, so a runtime
// destroyed against the header's rule while a call runs is not freed under it (its shutdown
// ends the call's request; the call then fails with SHUT_DOWN).
class Using {
 public:
  explicit Using(edgellm_docqa& h) {
    for (edgellm_runtime* r : {h.embedder, h.reranker, h.generator}) {
      if (r != nullptr) {
        r->embed_submitting.fetch_add(1, std::memory_order_acq_rel);
        held_.push_back(r);
      }
    }
  }
  ~Using() {
    for (edgellm_runtime* r : held_) r->embed_submitting.fetch_sub(1, std::memory_order_acq_rel);
  }
  Using(const Using&) = delete;
  Using& operator=(const Using&) = delete;

 private:
  std::vector<edgellm_runtime*> held_;
};

bool on_callback_of(const std::initializer_list<edgellm_runtime*> runtimes) {
  for (edgellm_runtime* r : runtimes) {
    if (r != nullptr && r->rt && r->rt->on_callback_thread()) return true;
  }
  return false;
}

edgellm_status wrong_thread(const char* fn) {
  return fail(EDGELLM_ERR_WRONG_THREAD,
              std::string(fn) + " called from a callback of one of its runtimes (it would wait for itself)");
}

edgellm_docqa& handle_of(edgellm_docqa* h) {
  if (h == nullptr) throw Error(ErrorCode::kInvalidArgument, "docqa is NULL");
  return *h;
}

// A document key: what the index file stores as a checked UTF-8 string, shown in citations.
std::string key_of(const char* key) {
  std::string k = capi::required(key, "key");
  DocQa::check_key(k);
  return k;
}

// User text under the embedder's input policy: REFUSE names the first bad byte; STRIP lets
// DocQa replace it (sanitize_user_text).
std::string text_of(edgellm_docqa& h, const char* text, const char* what) {
  std::string t = capi::required(text, what);
  if (t.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is empty");
  }
  const std::shared_ptr<EmbeddingService> svc = h.embedder->rt->embedding_service();
  if (svc && svc->params().input_policy == InputPolicy::kRefuse) {
    const size_t bad = utf8::first_invalid(t);
    if (bad != t.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string(what) + " is not valid UTF-8 (ill-formed sequence at byte " + std::to_string(bad) + ")");
    }
  }
  return t;
}

void fill_report(const IndexReport& r, const VectorIndex& ix, edgellm_docqa_report* report) {
  if (report == nullptr) return;
  edgellm_docqa_report o = capi::read_struct(report, edgellm_docqa_report_init(), "report");
  o.added = r.added;
  o.updated = r.updated;
  o.removed = r.removed;
  o.unchanged = r.unchanged;
  o.skipped = r.skipped;
  o.chunks_added = r.chunks_added;
  o.chunks_removed = r.chunks_removed;
  o.tokens_embedded = r.tokens_embedded;
  o.documents = static_cast<int64_t>(ix.document_count());
  o.chunks = static_cast<int64_t>(ix.chunk_count());
  o.memory_bytes = ix.memory_bytes();
  o.seconds = r.seconds;
  uint32_t size = 0;
  std::memcpy(&size, report, sizeof size);
  std::memcpy(static_cast<void*>(report), &o, std::min<size_t>(size, sizeof o));  // the caller's prefix
}

void check_report(const edgellm_docqa_report* report) {
  if (report != nullptr) (void)capi::read_struct(report, edgellm_docqa_report_init(), "report");
}

// One allocation: [result][hits][citations][strings]. Every pointer points inside it, so the
// result outlives the handle and one free() releases it.
edgellm_docqa_result* make_result(const std::vector<RetrievedChunk>& hits, const std::string& answer,
                                  const std::string& error, const std::vector<Citation>& citations) {
  size_t strings = answer.size() + 1 + error.size() + 1;
  for (const RetrievedChunk& c : hits) strings += c.path.size() + 1 + c.text.size() + 1;
  const size_t hits_at = (sizeof(edgellm_docqa_result) + alignof(edgellm_docqa_hit) - 1) / alignof(edgellm_docqa_hit) *
                         alignof(edgellm_docqa_hit);
  const size_t cites_at = hits_at + hits.size() * sizeof(edgellm_docqa_hit);
  const size_t strings_at = cites_at + citations.size() * sizeof(uint32_t);
  char* block = static_cast<char*>(std::malloc(strings_at + strings));
  if (block == nullptr) throw std::bad_alloc();
  auto* r = new (block) edgellm_docqa_result{};
  auto* h = reinterpret_cast<edgellm_docqa_hit*>(block + hits_at);
  auto* cites = reinterpret_cast<uint32_t*>(block + cites_at);
  char* s = block + strings_at;
  const auto put = [&s](const std::string& v) {
    char* at = s;
    std::memcpy(s, v.data(), v.size());
    s[v.size()] = '\0';
    s += v.size() + 1;
    return at;
  };
  r->struct_size = sizeof(edgellm_docqa_result);
  r->answer = put(answer);
  r->error = put(error);
  r->finish_reason = EDGELLM_FINISH_STOP;
  r->n_hits = hits.size();
  r->hits = hits.empty() ? nullptr : h;
  r->hit_size = sizeof(edgellm_docqa_hit);
  for (size_t i = 0; i < hits.size(); ++i) {
    edgellm_docqa_hit* e = new (h + i) edgellm_docqa_hit{};
    e->struct_size = sizeof(edgellm_docqa_hit);
    e->chunk = hits[i].chunk;
    e->key = put(hits[i].path);
    e->begin = hits[i].begin;
    e->end = hits[i].end;
    e->text = put(hits[i].text);
    e->score = hits[i].score;
    e->has_rerank_score = hits[i].rerank_score.has_value();
    e->rerank_score = hits[i].rerank_score.value_or(0.0f);
  }
  r->n_citations = citations.size();
  r->citations = citations.empty() ? nullptr : cites;
  for (size_t i = 0; i < citations.size(); ++i) cites[i] = citations[i].chunk;
  return r;
}

}  // namespace

extern "C" {

edgellm_docqa_params edgellm_docqa_default_params(void) {
  return docqa_defaults();
}

edgellm_docqa_report edgellm_docqa_report_init(void) {
  edgellm_docqa_report r{};
  r.struct_size = sizeof(edgellm_docqa_report);
  return r;
}

edgellm_status edgellm_docqa_create(edgellm_runtime* embedder, edgellm_runtime* reranker, edgellm_runtime* generator,
                                    const char* index_path, const edgellm_docqa_params* params, edgellm_docqa** out) {
  return guard([&] {
    if (out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    Runtime& emb = capi::runtime_of(embedder);
    const std::string path = capi::required(index_path, "index_path");
    if (path.empty()) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "index_path is empty");
    if (!utf8::is_valid(path)) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "index_path is not valid UTF-8");
    const DocQaOptions options = to_options(capi::read_struct(params, docqa_defaults(), "params"));
    if (on_callback_of({embedder, reranker, generator})) return wrong_thread("edgellm_docqa_create");
    if (!emb.embedding_service()) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT,
                  "embedder: document Q&A needs an embedding runtime (role EMBED) to index and search");
    }
    if (reranker != nullptr) {
      const std::shared_ptr<EmbeddingService> r = capi::runtime_of(reranker).embedding_service();
      if (!r || !r->can_rerank()) {
        return fail(EDGELLM_ERR_INVALID_ARGUMENT,
                    "reranker: not a reranking runtime (role EMBED with a classification head: a cross-encoder)");
      }
    }
    if (generator != nullptr && capi::runtime_of(generator).role() != RuntimeRole::kGenerate) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT, "generator: not a generation runtime (role GENERATE)");
    }
    auto h = std::make_unique<edgellm_docqa>();
    h->embedder = embedder;
    h->reranker = reranker;
    h->generator = generator;
    h->qa = std::make_unique<DocQa>(emb, path, options);
    *out = h.release();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_docqa_destroy(edgellm_docqa* docqa) {
  if (docqa == nullptr) return EDGELLM_OK;
  return guard([&] {
    { std::lock_guard<std::mutex> wait_for_a_call(docqa->mutex); }
    delete docqa;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_docqa_add(edgellm_docqa* docqa, const char* key, const char* text,
                                 edgellm_docqa_report* report) {
  return guard([&] {
    edgellm_docqa& h = handle_of(docqa);
    const std::string k = key_of(key);
    const std::string t = text_of(h, text, "text");
    check_report(report);
    if (on_callback_of({h.embedder, h.reranker, h.generator})) return wrong_thread("edgellm_docqa_add");
    std::lock_guard<std::mutex> lock(h.mutex);
    Using using_runtimes(h);
    const IndexReport r = h.qa->add_or_update(k, t);
    if (r.added + r.updated > 0) h.qa->save();
    fill_report(r, h.qa->index(), report);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_docqa_remove(edgellm_docqa* docqa, const char* key, edgellm_docqa_report* report) {
  return guard([&] {
    edgellm_docqa& h = handle_of(docqa);
    const std::string k = key_of(key);
    check_report(report);
    // Every call that takes the handle's mutex: one holder may be waiting for these runtimes.
    if (on_callback_of({h.embedder, h.reranker, h.generator})) return wrong_thread("edgellm_docqa_remove");
    std::lock_guard<std::mutex> lock(h.mutex);
    const IndexedDocument* d = h.qa->index().find_document(k);
    if (d == nullptr) return fail(EDGELLM_ERR_NOT_FOUND, "no document has this key");
    IndexReport r;
    r.chunks_removed = static_cast<int64_t>(d->chunks.size());
    r.removed = h.qa->remove(k) ? 1 : 0;
    h.qa->save();
    fill_report(r, h.qa->index(), report);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_docqa_index_folder(edgellm_docqa* docqa, const char* dir, edgellm_docqa_report* report) {
  return guard([&] {
    edgellm_docqa& h = handle_of(docqa);
    const std::string d = capi::required(dir, "dir");
    check_report(report);
    if (on_callback_of({h.embedder, h.reranker, h.generator})) return wrong_thread("edgellm_docqa_index_folder");
    std::lock_guard<std::mutex> lock(h.mutex);
    Using using_runtimes(h);
    const IndexReport r = h.qa->index_directory(d);  // saves
    fill_report(r, h.qa->index(), report);
    return EDGELLM_OK;
  });
}

const edgellm_docqa_hit* edgellm_docqa_result_hit(const edgellm_docqa_result* result, size_t i) {
  if (result == nullptr || i >= result->n_hits || result->hits == nullptr) return nullptr;
  return reinterpret_cast<const edgellm_docqa_hit*>(reinterpret_cast<const char*>(result->hits) + i * result->hit_size);
}

void edgellm_docqa_result_free(edgellm_docqa_result* result) {
  std::free(result);  // one block (make_result); its parts are trivially destructible
}

edgellm_status edgellm_docqa_search(edgellm_docqa* docqa, const char* query, int32_t top_k,
                                    edgellm_docqa_result** out) {
  return guard([&] {
    if (out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    edgellm_docqa& h = handle_of(docqa);
    const std::string q = text_of(h, query, "query");
    if (top_k > kMaxDocqaTopK) {
      return fail(EDGELLM_ERR_INVALID_ARGUMENT,
                  "top_k must be at most " + std::to_string(kMaxDocqaTopK) + ", got " + std::to_string(top_k));
    }
    if (on_callback_of({h.embedder, h.reranker, h.generator})) return wrong_thread("edgellm_docqa_search");
    std::lock_guard<std::mutex> lock(h.mutex);
    Using using_runtimes(h);
    RetrieveTiming t;
    const std::vector<RetrievedChunk> hits =
        h.qa->retrieve(q, h.reranker ? h.reranker->rt.get() : nullptr, &t, top_k > 0 ? top_k : 0);
    edgellm_docqa_result* r = make_result(hits, "", "", {});
    r->embed_ms = t.embed_ms;
    r->search_ms = t.search_ms;
    r->rerank_ms = t.rerank_ms;
    *out = r;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_docqa_ask(edgellm_docqa* docqa, const char* question, edgellm_docqa_result** out) {
  return guard([&] {
    if (out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL");
    *out = nullptr;
    edgellm_docqa& h = handle_of(docqa);
    const std::string q = text_of(h, question, "question");
    if (h.generator == nullptr) {
      return fail(EDGELLM_ERR_UNSUPPORTED, "edgellm_docqa_ask: this handle has no generator (created for search only)");
    }
    if (on_callback_of({h.embedder, h.reranker, h.generator})) return wrong_thread("edgellm_docqa_ask");
    std::lock_guard<std::mutex> lock(h.mutex);
    Using using_runtimes(h);
    const DocAnswer a = h.qa->ask(q, *h.generator->rt, h.reranker ? h.reranker->rt.get() : nullptr);
    if (a.finish_reason == FinishReason::kCancelled) return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shutting down");
    edgellm_docqa_result* r = make_result(a.context, a.answer, a.error, a.citations);
    switch (a.finish_reason) {
      case FinishReason::kStop: r->finish_reason = EDGELLM_FINISH_STOP; break;
      case FinishReason::kLength: r->finish_reason = EDGELLM_FINISH_LENGTH; break;
      case FinishReason::kTimeout: r->finish_reason = EDGELLM_FINISH_TIMEOUT; break;
      default: r->finish_reason = EDGELLM_FINISH_ERROR; break;
    }
    r->embed_ms = a.retrieve_timing.embed_ms;
    r->search_ms = a.retrieve_timing.search_ms;
    r->rerank_ms = a.retrieve_timing.rerank_ms;
    r->generate_ms = a.generate_ms;
    *out = r;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_docqa_list_json(edgellm_docqa* docqa, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    edgellm_docqa& h = handle_of(docqa);
    if (length == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "length is NULL");
    if (buf == nullptr && capacity > 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "buf is NULL");
    if (on_callback_of({h.embedder, h.reranker, h.generator})) return wrong_thread("edgellm_docqa_list_json");
    std::string text;
    {
      std::lock_guard<std::mutex> lock(h.mutex);
      const VectorIndex& ix = h.qa->index();
      Json docs = Json::array();
      for (const IndexedDocument* d : ix.documents()) {
        Json e = Json::object();
        e.set("key", d->path);
        e.set("bytes", static_cast<int64_t>(d->bytes));
        e.set("chunks", static_cast<int64_t>(d->chunks.size()));
        docs.push_back(std::move(e));
      }
      Json o = Json::object();
      o.set("documents", std::move(docs));
      o.set("chunks", static_cast<int64_t>(ix.chunk_count()));
      o.set("dims", static_cast<int64_t>(ix.dims()));
      o.set("vectors", vector_type_name(ix.type()));
      o.set("model", ix.model_id());
      o.set("memory_bytes", static_cast<int64_t>(ix.memory_bytes()));
      text = o.dump();
    }
    return capi::copy_out(text, buf, capacity, length);
  });
}

}  // extern "C"
