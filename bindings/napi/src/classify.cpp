// The Model's classify (edgellm.h, "classify"): text, labels and options are copied on the JS
// thread, edgellm_classify blocks on a libuv worker (run_async), the result is built on the JS
// thread. Types are checked here; counts, ranges and wording are the library's.
#include "classify.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "async_call.h"
#include "js.h"

namespace edgellm_napi {

namespace {

// What the worker produced, handed to the JS thread.
struct ClassifyOutput {
  std::string text;
  std::vector<std::string> labels;
  std::string instruction;
  bool has_instruction = false;
  edgellm_classify_params params{};
  std::vector<double> probabilities, logprobs;
  std::vector<int32_t> label_tokens;
  edgellm_classify_result result{};
};

// A JS string without NUL (the C ABI takes NUL-terminated text); false with *error set.
bool read_c_string(napi_env env, napi_value value, const std::string& what, std::string* out, std::string* error) {
  if (!read_string(env, value, out)) {
    *error = what + " must be a string";
    return false;
  }
  if (out->find('\0') != std::string::npos) {
    *error = what + " contains a NUL character";
    return false;
  }
  return true;
}

bool read_labels(napi_env env, napi_value value, std::vector<std::string>* out, std::string* error) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, value, &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, value, &n) != napi_ok) {
    *error = "labels must be an array of strings";
    return false;
  }
  if (n > 64) {  // the library's bound (edgellm_classify), before anything is copied
    *error = "labels: at most 64, got " + std::to_string(n);
    return false;
  }
  for (uint32_t i = 0; i < n; ++i) {
    napi_value element = nullptr;
    std::string s;
    if (napi_get_element(env, value, i, &element) != napi_ok ||
        !read_c_string(env, element, "labels[" + std::to_string(i) + "]", &s, error)) {
      if (error->empty()) *error = "labels[" + std::to_string(i) + "] must be a string";
      return false;
    }
    out->push_back(std::move(s));
  }
  return true;
}

// ClassifyOptions: { instruction, raw, lengthNormalize, deadlineMs }.
bool read_classify_options(napi_env env, napi_value options, ClassifyOutput* o, std::string* error) {
  o->params = edgellm_classify_default_params();
  OptionReader r(env, options, "options");
  napi_value instruction = r.field("instruction");
  if (instruction != nullptr && type_of(env, instruction) != napi_undefined) {
    if (!read_c_string(env, instruction, "options.instruction", &o->instruction, error)) return false;
    o->has_instruction = true;
  }
  r.boolean("raw", &o->params.raw);
  r.boolean("lengthNormalize", &o->params.length_normalize);
  r.int64("deadlineMs", std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2,
          &o->params.deadline_ms);
  if (!r.ok()) {
    *error = r.error();
    return false;
  }
  return true;
}

napi_value classify_result(napi_env env, const ClassifyOutput& o) {
  const int32_t index = o.result.index;
  if (index < 0 || static_cast<size_t>(index) >= o.labels.size()) {
    throw_error(env, "INTERNAL", "classify: the library chose no label");
    return nullptr;
  }
  napi_value obj = js_object(env);
  if (!obj || !set_property(env, obj, "label", js_string(env, o.labels[static_cast<size_t>(index)])) ||
      !set_property(env, obj, "index", js_number(env, index)) ||
      !set_property(env, obj, "probabilities", js_number_array(env, o.probabilities)) ||
      !set_property(env, obj, "logprobs", js_number_array(env, o.logprobs)) ||
      !set_property(env, obj, "labelTokens", js_number_array(env, o.label_tokens)) ||
      !set_property(env, obj, "promptTokens", js_number(env, o.result.prompt_tokens)) ||
      !set_property(env, obj, "cachedTokens", js_number(env, o.result.cached_tokens)) ||
      !set_property(env, obj, "totalMs", js_number(env, o.result.total_ms))) {
    return nullptr;
  }
  return obj;
}

}  // namespace

napi_value classify(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value text, napi_value labels,
                    napi_value options) {
  auto out = std::make_shared<ClassifyOutput>();
  std::string error;
  if (!read_c_string(env, text, "text", &out->text, &error) || !read_labels(env, labels, &out->labels, &error) ||
      !read_classify_options(env, options, out.get(), &error)) {
    return rejected_promise(env, "INVALID_ARGUMENT", error);
  }
  return run_async(
      env, "edgellm.classify", core,
      [out](edgellm_runtime* rt, std::string* error) {
        std::vector<const char*> p;
        for (const std::string& l : out->labels) p.push_back(l.c_str());
        const size_t n = p.size();
        out->probabilities.assign(n, 0);
        out->logprobs.assign(n, 0);
        out->label_tokens.assign(n, 0);
        out->result = edgellm_classify_result_init();
        out->result.logprobs = n > 0 ? out->logprobs.data() : nullptr;
        out->result.label_tokens = n > 0 ? out->label_tokens.data() : nullptr;
        edgellm_classify_params params = out->params;
        params.instruction = out->has_instruction ? out->instruction.c_str() : nullptr;
        // No label: the library refuses the count ("give at least one"), so its arrays must not be NULL.
        static const char* const kNoLabel[1] = {""};
        double none = 0;
        const edgellm_status st = edgellm_classify(rt, out->text.c_str(), n > 0 ? p.data() : kNoLabel, n, &params,
                                                   n > 0 ? out->probabilities.data() : &none, &out->result);
        if (st != EDGELLM_OK) *error = last_error_message(st);
        return st;
      },
      [out](napi_env env) { return classify_result(env, *out); });
}

}  // namespace edgellm_napi
