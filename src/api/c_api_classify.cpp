// The C ABI's classify: edgellm_classify is a blocking call over Runtime::classify (its checks,
// the service's queue and prefix cache, its shutdown rule), with the probabilities copied into the caller's array
// and the choice into the caller's result struct. While in Runtime::classify the call is counted
// on the handle, so edgellm_runtime_destroy waits for it to leave (the forward stops at the next
// layer once shutdown started).
#include <atomic>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "service/request_limits.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

namespace {

edgellm_classify_params classify_defaults() {
  edgellm_classify_params p{};
  const ClassifyRequest d;
  p.struct_size = sizeof(edgellm_classify_params);
  p.instruction = nullptr;
  p.raw = d.raw;
  p.length_normalize = d.length_normalize;
  p.deadline_ms = d.deadline_ms;
  return p;
}

// A C bool read from the caller's bytes: any non-zero byte is true (loading another value as
// bool would be undefined behaviour).
bool bool_value(const bool& b) {
  unsigned char v = 0;
  std::memcpy(&v, &b, 1);
  return v != 0;
}

}  // namespace

extern "C" {

edgellm_classify_params edgellm_classify_default_params(void) {
  return classify_defaults();
}

edgellm_classify_result edgellm_classify_result_init(void) {
  edgellm_classify_result r{};
  r.struct_size = sizeof(edgellm_classify_result);
  r.index = -1;
  return r;
}

edgellm_status edgellm_classify(edgellm_runtime* runtime, const char* text, const char* const* labels, size_t n_labels,
                                const edgellm_classify_params* params, double* probabilities,
                                edgellm_classify_result* result) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (result == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "result is NULL");
    if (probabilities == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "probabilities is NULL");
    edgellm_classify_result out = capi::read_struct(result, edgellm_classify_result_init(), "result");
    if (rt.on_callback_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD,
                  "edgellm_classify called from the runtime's own callback (it would wait for itself)");
    }
    ClassifyRequest r;
    r.text = capi::required(text, "text");
    if (labels == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "labels is NULL");
    check_label_count(n_labels);  // before anything is copied: a wild count must not allocate
    r.labels.reserve(n_labels);
    for (size_t i = 0; i < n_labels; ++i) {
      if (labels[i] == nullptr) {
        return fail(EDGELLM_ERR_INVALID_ARGUMENT, "labels[" + std::to_string(i) + "] is NULL");
      }
      r.labels.emplace_back(labels[i]);
    }
    const edgellm_classify_params p = capi::read_struct(params, classify_defaults(), "params");
    if (p.instruction != nullptr) r.instruction = p.instruction;
    r.raw = bool_value(p.raw);
    r.length_normalize = bool_value(p.length_normalize);
    r.deadline_ms = p.deadline_ms;

    ClassifyResult res;
    {
      struct Counted {
        std::atomic<int>& n;
        explicit Counted(std::atomic<int>& c) : n(c) { n.fetch_add(1, std::memory_order_acq_rel); }
        ~Counted() { n.fetch_sub(1, std::memory_order_acq_rel); }
      } counted(runtime->embed_submitting);
      res = rt.classify(std::move(r));
    }
    switch (res.finish_reason) {
      case FinishReason::kStop: break;
      case FinishReason::kTimeout: return fail(EDGELLM_ERR_TIMEOUT, "the deadline passed before the result was there");
      case FinishReason::kCancelled: return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shutting down");
      default: return fail(EDGELLM_ERR_INTERNAL, "classify: unexpected finish");
    }
    if (res.probabilities.size() != n_labels) return fail(EDGELLM_ERR_INTERNAL, "classify: a probability is missing");
    std::copy(res.probabilities.begin(), res.probabilities.end(), probabilities);
    out.index = res.index;
    out.prompt_tokens = res.prompt_tokens;
    out.total_ms = res.total_ms;
    out.cached_tokens = res.cached_tokens;
    for (size_t i = 0; i < n_labels; ++i) {
      if (out.logprobs != nullptr) out.logprobs[i] = res.logprobs[i];
      if (out.label_tokens != nullptr) out.label_tokens[i] = res.label_tokens[i];
    }
    uint32_t size = 0;
    std::memcpy(&size, result, sizeof size);
    std::memcpy(static_cast<void*>(result), &out, std::min<size_t>(size, sizeof out));  // the caller's prefix
    return EDGELLM_OK;
  });
}

}  // extern "C"
