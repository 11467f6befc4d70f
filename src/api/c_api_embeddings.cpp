// The C ABI's embeddings and rerank: edgellm_embed / edgellm_rerank are blocking calls over
// Runtime::embed (the EmbeddingService's queue, deadlines, pause, input policy and metrics), with
// the result copied into the caller's buffer. The wait is on the request's own on_finish, which
// the service runs exactly once (also at shutdown), so a call never hangs past its deadline or
// the runtime's destruction.
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "service/request_limits.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

namespace {

// One blocking call's result, shared with the on_finish that fills it (the scheduler thread).
struct Waiter {
  std::mutex mutex;
  std::condition_variable cv;
  bool done = false;
  EmbeddingResult result;
};

EmbeddingService& embedder_of(Runtime& rt, const char* what) {
  const std::shared_ptr<EmbeddingService> svc = rt.embedding_service();
  if (!svc) {
    throw Error(ErrorCode::kUnsupported, std::string(what) +
                                             ": this runtime generates text; embeddings and rerank scores need a "
                                             "runtime with role EMBED (an embedding or reranking model)");
  }
  return *svc;  // valid for the runtime's life (runtime.h)
}

edgellm_embed_params embed_defaults() {
  edgellm_embed_params p{};
  const EmbeddingRequest d;
  p.struct_size = sizeof(edgellm_embed_params);
  p.pooling = EDGELLM_POOLING_MODEL;
  p.normalize = d.normalize;
  p.truncation = EDGELLM_TRUNCATE_REFUSE;
  p.deadline_ms = d.deadline_ms;
  p.priority = EDGELLM_PRIORITY_INTERACTIVE;
  return p;
}

// The caller's options into the request (the values the service checks, it checks: normalize).
void apply_params(const edgellm_embed_params* params, bool rerank, EmbeddingRequest& r) {
  const edgellm_embed_params p = capi::read_struct(params, embed_defaults(), "params");
  const int pooling = capi::enum_value(p.pooling);
  if (!rerank) {
    switch (pooling) {
      case EDGELLM_POOLING_MODEL: r.pooling = PoolingType::kUnspecified; break;
      case EDGELLM_POOLING_NONE: r.pooling = PoolingType::kNone; break;
      case EDGELLM_POOLING_MEAN: r.pooling = PoolingType::kMean; break;
      case EDGELLM_POOLING_CLS: r.pooling = PoolingType::kCls; break;
      case EDGELLM_POOLING_LAST: r.pooling = PoolingType::kLast; break;
      default: throw Error(ErrorCode::kInvalidArgument, "pooling " + std::to_string(pooling) + " is unknown");
    }
    r.normalize = p.normalize;
  }
  const int truncation = capi::enum_value(p.truncation);
  if (truncation != EDGELLM_TRUNCATE_REFUSE && truncation != EDGELLM_TRUNCATE_END) {
    throw Error(ErrorCode::kInvalidArgument, "truncation " + std::to_string(truncation) + " is unknown");
  }
  r.truncation = truncation == EDGELLM_TRUNCATE_END ? Truncation::kEnd : Truncation::kRefuse;
  r.deadline_ms = p.deadline_ms;
  // Passed on as it is (c_api_requests.cpp checks the enums agree): the Runtime refuses one out
  // of range in the words every face shares (request_limits.h).
  r.priority = static_cast<Priority>(capi::enum_value(p.priority));
}

std::vector<std::string> strings_of(const char* const* items, size_t n, const char* what) {
  if (items == nullptr && n > 0) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is NULL");
  check_embedding_input_count(what, n);  // before anything is copied: a wild count must not allocate
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (items[i] == nullptr) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + "[" + std::to_string(i) + "] is NULL");
    }
    out.emplace_back(items[i]);
  }
  return out;
}

edgellm_pooling pooling_out(PoolingType t) {
  switch (t) {
    case PoolingType::kNone: return EDGELLM_POOLING_NONE;
    case PoolingType::kMean: return EDGELLM_POOLING_MEAN;
    case PoolingType::kCls: return EDGELLM_POOLING_CLS;
    case PoolingType::kLast: return EDGELLM_POOLING_LAST;
    default: return EDGELLM_POOLING_NONE;  // rank: a score, no vector
  }
}

// Submits, waits for on_finish, and turns a request that did not finish into its status. While
// in Runtime::embed the call is counted on the handle (edgellm_runtime_destroy waits for it).
edgellm_status run(edgellm_runtime* handle, EmbeddingRequest request, EmbeddingResult& out) {
  Runtime& rt = *handle->rt;
  auto waiter = std::make_shared<Waiter>();
  request.on_finish = [waiter](EmbeddingResult& res) {
    std::lock_guard<std::mutex> lock(waiter->mutex);
    waiter->result = std::move(res);
    waiter->done = true;
    waiter->cv.notify_all();
  };
  {
    struct Counted {
      std::atomic<int>& n;
      explicit Counted(std::atomic<int>& c) : n(c) { n.fetch_add(1, std::memory_order_acq_rel); }
      ~Counted() { n.fetch_sub(1, std::memory_order_acq_rel); }
    } counted(handle->embed_submitting);
    rt.embed(std::move(request));  // throws: nothing queued, no callback
  }
  {
    std::unique_lock<std::mutex> lock(waiter->mutex);
    waiter->cv.wait(lock, [&] { return waiter->done; });  // exactly once, deadline or shutdown included
    out = std::move(waiter->result);
  }
  switch (out.finish_reason) {
    case FinishReason::kStop: return EDGELLM_OK;
    case FinishReason::kTimeout: return fail(EDGELLM_ERR_TIMEOUT, "the deadline passed before the result was there");
    case FinishReason::kCancelled: return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shutting down");
    default: return fail(capi::status_of(out.error_code), out.error.empty() ? "the request failed" : out.error);
  }
}

void fill_info(const EmbeddingResult& r, int32_t rows, edgellm_embed_info* info, size_t n_inputs) {
  if (info == nullptr) return;
  edgellm_embed_info o = capi::read_struct(info, edgellm_embed_info_init(), "info");
  o.n_rows = rows;
  o.dims = r.dims;
  o.pooling = pooling_out(r.pooling);
  int32_t truncated = 0;
  for (uint8_t t : r.truncated) truncated += t != 0;
  o.truncated = truncated;
  o.prompt_tokens = r.prompt_tokens;
  o.queue_ms = r.queue_ms;
  o.total_ms = r.total_ms;
  if (o.input_tokens != nullptr) {
    for (size_t i = 0; i < n_inputs && i < r.input_tokens.size(); ++i) o.input_tokens[i] = r.input_tokens[i];
  }
  uint32_t size = 0;
  std::memcpy(&size, info, sizeof size);
  std::memcpy(static_cast<void*>(info), &o, std::min<size_t>(size, sizeof o));  // the caller's prefix
}

void check_info(const edgellm_embed_info* info) {
  if (info != nullptr) (void)capi::read_struct(info, edgellm_embed_info_init(), "info");  // struct_size
}

std::string too_small(size_t capacity, size_t needed) {
  return "the buffer holds " + std::to_string(capacity) + " floats; " + std::to_string(needed) + " are needed";
}

}  // namespace

extern "C" {

edgellm_embed_params edgellm_embed_default_params(void) {
  return embed_defaults();
}

edgellm_embed_info edgellm_embed_info_init(void) {
  edgellm_embed_info i{};
  i.struct_size = sizeof(edgellm_embed_info);
  i.pooling = EDGELLM_POOLING_NONE;
  return i;
}

edgellm_status edgellm_runtime_role_get(edgellm_runtime* runtime, edgellm_runtime_role* role, int32_t* dims,
                                        bool* can_rerank) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    const std::shared_ptr<EmbeddingService> svc = rt.embedding_service();
    if (role != nullptr) *role = rt.role() == RuntimeRole::kEmbed ? EDGELLM_ROLE_EMBED : EDGELLM_ROLE_GENERATE;
    if (dims != nullptr) *dims = svc ? svc->dims() : 0;
    if (can_rerank != nullptr) *can_rerank = svc && svc->can_rerank();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_embed(edgellm_runtime* runtime, const char* const* texts, size_t n_texts,
                             const edgellm_embed_params* params, float* vectors, size_t capacity, size_t* n_floats,
                             edgellm_embed_info* info) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (n_floats == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "n_floats is NULL");
    if (vectors == nullptr && capacity > 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "vectors is NULL");
    check_info(info);
    EmbeddingService& svc = embedder_of(rt, "edgellm_embed");
    if (rt.on_callback_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD,
                  "edgellm_embed called from the runtime's own callback (it would wait for itself)");
    }
    EmbeddingRequest r;
    r.task = EmbeddingTask::kEmbed;
    r.texts = strings_of(texts, n_texts, "texts");
    apply_params(params, false, r);
    // The runtime's checks first (the same wording as at submit), so a size query of a bad
    // request already names what is wrong.
    (void)check_embedding_request(r, svc.model().hparams().n_vocab, svc.params().input_policy);
    const PoolingType pooling = r.pooling == PoolingType::kUnspecified ? svc.default_pooling() : r.pooling;
    if (pooling != PoolingType::kNone) {
      const size_t needed = r.texts.size() * static_cast<size_t>(svc.dims());
      *n_floats = needed;
      if (capacity < needed) return fail(EDGELLM_ERR_BUFFER_TOO_SMALL, too_small(capacity, needed));
    }
    EmbeddingResult res;
    const edgellm_status st = run(runtime, std::move(r), res);
    if (st != EDGELLM_OK) return st;
    *n_floats = res.vectors.size();
    if (capacity < res.vectors.size())
      return fail(EDGELLM_ERR_BUFFER_TOO_SMALL, too_small(capacity, res.vectors.size()));
    std::copy(res.vectors.begin(), res.vectors.end(), vectors);
    const int32_t rows = res.dims > 0 ? static_cast<int32_t>(res.vectors.size() / static_cast<size_t>(res.dims)) : 0;
    fill_info(res, rows, info, n_texts);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_rerank(edgellm_runtime* runtime, const char* query, const char* const* documents,
                              size_t n_documents, const edgellm_embed_params* params, float* scores, size_t capacity,
                              size_t* n_scores, edgellm_embed_info* info) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (n_scores == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "n_scores is NULL");
    if (scores == nullptr && capacity > 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "scores is NULL");
    check_info(info);
    EmbeddingService& svc = embedder_of(rt, "edgellm_rerank");
    if (rt.on_callback_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD,
                  "edgellm_rerank called from the runtime's own callback (it would wait for itself)");
    }
    EmbeddingRequest r;
    r.task = EmbeddingTask::kRerank;
    r.query = capi::required(query, "query");
    r.documents = strings_of(documents, n_documents, "documents");
    apply_params(params, true, r);
    (void)check_embedding_request(r, svc.model().hparams().n_vocab, svc.params().input_policy);
    if (!svc.can_rerank()) {
      return fail(EDGELLM_ERR_UNSUPPORTED,
                  "edgellm_rerank: the model has no classification head (an embedding model, not a reranker)");
    }
    *n_scores = r.documents.size();
    if (capacity < r.documents.size())
      return fail(EDGELLM_ERR_BUFFER_TOO_SMALL, too_small(capacity, r.documents.size()));
    EmbeddingResult res;
    const edgellm_status st = run(runtime, std::move(r), res);
    if (st != EDGELLM_OK) return st;
    if (res.scores.size() != n_documents) return fail(EDGELLM_ERR_INTERNAL, "rerank: a score per document is missing");
    std::copy(res.scores.begin(), res.scores.end(), scores);
    fill_info(res, static_cast<int32_t>(res.scores.size()), info, n_documents);
    return EDGELLM_OK;
  });
}

}  // extern "C"
