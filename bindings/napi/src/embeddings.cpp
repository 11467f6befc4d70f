// The Model's embed / rerank (edgellm.h, "embeddings, rerank"): the inputs are copied on the JS
// thread, edgellm_embed / edgellm_rerank block on a libuv worker (run_async), and the result is
// built on the JS thread. Vectors come back as Float32Arrays over one ArrayBuffer (row i at byte
// offset i * dims * 4), so a thousand vectors are one allocation, not a thousand arrays of
// numbers. Option types are checked here; ranges and wording are the library's.
#include "embeddings.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "async_call.h"
#include "js.h"

namespace edgellm_napi {

namespace {

const char* const kPoolings[] = {"model", "none", "mean", "cls", "last", nullptr};  // edgellm_pooling + 1
const char* const kTruncations[] = {"refuse", "end", nullptr};                      // edgellm_truncation order
const char* const kPriorities[] = {"interactive", "background", nullptr};
const char* const kPoolingNames[] = {"none", "mean", "cls", "last"};  // edgellm_pooling 0..3

// EmbedOptions: { pooling, normalize, truncate, deadlineMs, priority } (+ topN for rerank).
bool read_embed_options(napi_env env, napi_value options, edgellm_embed_params* p, int32_t* top_n, std::string* error) {
  *p = edgellm_embed_default_params();
  OptionReader r(env, options, "options");
  int pooling = -1;
  r.choice("pooling", kPoolings, &pooling);
  if (pooling >= 0) p->pooling = static_cast<edgellm_pooling>(pooling - 1);
  r.integer("normalize", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), &p->normalize);
  int truncation = p->truncation;
  r.choice("truncate", kTruncations, &truncation);
  p->truncation = static_cast<edgellm_truncation>(truncation);
  r.int64("deadlineMs", std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2,
          &p->deadline_ms);
  int priority = p->priority;
  r.choice_or_integer("priority", kPriorities, &priority);  // or 0 / 1, as over HTTP
  p->priority = static_cast<edgellm_priority>(priority);
  if (top_n != nullptr) r.integer("topN", 0, std::numeric_limits<int32_t>::max(), top_n);
  if (!r.ok()) {
    *error = r.error();
    return false;
  }
  return true;
}

// A string, or an array of strings, into *out; false with *error naming what is wrong.
bool read_strings(napi_env env, napi_value value, const char* what, bool single_ok, std::vector<std::string>* out,
                  std::string* error) {
  std::string one;
  if (single_ok && read_string(env, value, &one)) {
    if (one.find('\0') != std::string::npos) {
      *error = std::string(what) + " contains a NUL character";
      return false;
    }
    out->push_back(std::move(one));
    return true;
  }
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, value, &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, value, &n) != napi_ok) {
    *error =
        std::string(what) + (single_ok ? " must be a string or an array of strings" : " must be an array of strings");
    return false;
  }
  out->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value element = nullptr;
    std::string s;
    if (napi_get_element(env, value, i, &element) != napi_ok || !read_string(env, element, &s)) {
      *error = std::string(what) + "[" + std::to_string(i) + "] must be a string";
      return false;
    }
    if (s.find('\0') != std::string::npos) {  // the C ABI takes NUL-terminated text
      *error = std::string(what) + "[" + std::to_string(i) + "] contains a NUL character";
      return false;
    }
    out->push_back(std::move(s));
  }
  return true;
}

// What the worker produced, handed to the JS thread.
struct Output {
  std::vector<std::string> inputs;
  std::string query;
  edgellm_embed_params params{};
  int32_t top_n = 0;
  std::vector<float> data;
  std::vector<int32_t> tokens;
  edgellm_embed_info info{};
};

std::vector<const char*> pointers(const std::vector<std::string>& v) {
  std::vector<const char*> p;
  p.reserve(v.size());
  for (const auto& s : v) p.push_back(s.c_str());
  return p;
}

// The fields both results share.
bool set_common(napi_env env, napi_value obj, const Output& o) {
  return set_property(env, obj, "tokens", js_number_array(env, o.tokens)) &&
         set_property(env, obj, "truncated", js_number(env, o.info.truncated)) &&
         set_property(env, obj, "promptTokens", js_number(env, static_cast<double>(o.info.prompt_tokens))) &&
         set_property(env, obj, "totalMs", js_number(env, o.info.total_ms));
}

napi_value embed_result(napi_env env, const Output& o) {
  const size_t dims = static_cast<size_t>(std::max(o.info.dims, 0));
  const size_t rows = dims > 0 ? o.data.size() / dims : 0;
  void* bytes = nullptr;
  napi_value buffer = nullptr, vectors = nullptr;
  if (napi_create_arraybuffer(env, o.data.size() * sizeof(float), &bytes, &buffer) != napi_ok ||
      napi_create_array_with_length(env, rows, &vectors) != napi_ok) {
    throw_napi_failure(env, "embed result");
    return nullptr;
  }
  if (!o.data.empty()) std::memcpy(bytes, o.data.data(), o.data.size() * sizeof(float));
  for (size_t i = 0; i < rows; ++i) {
    napi_value row = nullptr;
    if (napi_create_typedarray(env, napi_float32_array, dims, buffer, i * dims * sizeof(float), &row) != napi_ok ||
        napi_set_element(env, vectors, static_cast<uint32_t>(i), row) != napi_ok) {
      throw_napi_failure(env, "embed result");
      return nullptr;
    }
  }
  const int pooling = static_cast<int>(o.info.pooling);
  napi_value obj = js_object(env);
  if (!obj || !set_property(env, obj, "vectors", vectors) ||
      !set_property(env, obj, "dims", js_number(env, static_cast<double>(dims))) ||
      !set_property(env, obj, "pooling",
                    js_string(env, pooling >= 0 && pooling <= 3 ? kPoolingNames[pooling] : "none")) ||
      !set_common(env, obj, o)) {
    return nullptr;
  }
  return obj;
}

napi_value rerank_result(napi_env env, const Output& o) {
  napi_value scores = nullptr, results = nullptr;
  std::vector<size_t> order(o.data.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return o.data[a] > o.data[b]; });
  if (o.top_n > 0 && static_cast<size_t>(o.top_n) < order.size()) order.resize(static_cast<size_t>(o.top_n));
  if (napi_create_array_with_length(env, o.data.size(), &scores) != napi_ok ||
      napi_create_array_with_length(env, order.size(), &results) != napi_ok) {
    throw_napi_failure(env, "rerank result");
    return nullptr;
  }
  for (size_t i = 0; i < o.data.size(); ++i) {
    if (napi_set_element(env, scores, static_cast<uint32_t>(i), js_number(env, o.data[i])) != napi_ok) return nullptr;
  }
  for (size_t k = 0; k < order.size(); ++k) {
    napi_value e = js_object(env);
    if (!e || !set_property(env, e, "index", js_number(env, static_cast<double>(order[k]))) ||
        !set_property(env, e, "relevanceScore", js_number(env, o.data[order[k]])) ||
        napi_set_element(env, results, static_cast<uint32_t>(k), e) != napi_ok) {
      return nullptr;
    }
  }
  napi_value obj = js_object(env);
  if (!obj || !set_property(env, obj, "scores", scores) || !set_property(env, obj, "results", results) ||
      !set_common(env, obj, o)) {
    return nullptr;
  }
  return obj;
}

}  // namespace

napi_value embed(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value texts, napi_value options) {
  auto out = std::make_shared<Output>();
  std::string error;
  if (!read_strings(env, texts, "texts", true, &out->inputs, &error) ||
      !read_embed_options(env, options, &out->params, nullptr, &error)) {
    return rejected_promise(env, "INVALID_ARGUMENT", error);
  }
  return run_async(
      env, "edgellm.embed", core,
      [out](edgellm_runtime* rt, std::string* error) {
        const std::vector<const char*> p = pointers(out->inputs);
        out->tokens.assign(p.size(), 0);
        out->info = edgellm_embed_info_init();
        out->info.input_tokens = out->tokens.empty() ? nullptr : out->tokens.data();
        size_t n = 0;
        // Pooled: the size query answers at once; pooling none: it runs, and the second call too.
        edgellm_status st = edgellm_embed(rt, p.data(), p.size(), &out->params, nullptr, 0, &n, nullptr);
        if (st == EDGELLM_ERR_BUFFER_TOO_SMALL) {
          out->data.resize(n);
          st = edgellm_embed(rt, p.data(), p.size(), &out->params, out->data.data(), out->data.size(), &n, &out->info);
        }
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [out](napi_env env) { return embed_result(env, *out); });
}

napi_value rerank(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value query, napi_value documents,
                  napi_value options) {
  auto out = std::make_shared<Output>();
  std::string error;
  if (!read_string(env, query, &out->query)) return rejected_promise(env, "INVALID_ARGUMENT", "query must be a string");
  if (out->query.find('\0') != std::string::npos) {
    return rejected_promise(env, "INVALID_ARGUMENT", "query contains a NUL character");
  }
  if (!read_strings(env, documents, "documents", false, &out->inputs, &error) ||
      !read_embed_options(env, options, &out->params, &out->top_n, &error)) {
    return rejected_promise(env, "INVALID_ARGUMENT", error);
  }
  return run_async(
      env, "edgellm.rerank", core,
      [out](edgellm_runtime* rt, std::string* error) {
        const std::vector<const char*> p = pointers(out->inputs);
        out->data.resize(p.size());
        out->tokens.assign(p.size(), 0);
        out->info = edgellm_embed_info_init();
        out->info.input_tokens = out->tokens.empty() ? nullptr : out->tokens.data();
        size_t n = 0;
        const edgellm_status st = edgellm_rerank(rt, out->query.c_str(), p.data(), p.size(), &out->params,
                                                 out->data.data(), out->data.size(), &n, &out->info);
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [out](napi_env env) { return rerank_result(env, *out); });
}

}  // namespace edgellm_napi
