#include "options.h"

#include <cstdint>
#include <limits>

#include "js.h"

namespace edgellm_napi {

namespace {

constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

// The power modes trade speed for heat: the C ABI's edgellm_power_mode (docs/device-fitness.md,
// "Power modes": threads, cores and worker priority per phase for this device's clusters).
// Absent: EDGELLM_POWER_NONE. Explicit `threads` / `batchThreads` override the mode's counts.
const char* const kPowerModes[] = {"performance", "balanced", "efficiency", nullptr};  // edgellm_power_mode - 1
const char* const kKvTypes[] = {"f16", "f32", "q8_0", "q4_0", nullptr};  // edgellm_kv_type order
const char* const kRepack[] = {"auto", "on", "off", nullptr};    // edgellm_repack order
const char* const kPriorities[] = {"interactive", "background", nullptr};
const char* const kRoles[] = {"system", "user", "assistant", "tool", nullptr};

bool read_messages(napi_env env, napi_value input, RequestConfig* out, std::string* error) {
  uint32_t n = 0;
  if (napi_get_array_length(env, input, &n) != napi_ok) {
    *error = "input must be a string or an array of messages";
    return false;
  }
  out->roles.reserve(n);
  out->contents.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value message = nullptr;
    std::string where = "input[" + std::to_string(i) + "]";
    if (napi_get_element(env, input, i, &message) != napi_ok || type_of(env, message) != napi_object) {
      *error = where + " must be an object { role, content }";
      return false;
    }
    OptionReader reader(env, message, where.c_str());
    int role = -1;
    reader.choice("role", kRoles, &role);
    std::string content;
    napi_value content_value = reader.field("content");
    if (!reader.ok()) {
      *error = reader.error();
      return false;
    }
    if (role < 0) {
      *error = where + ".role must be one of 'system', 'user', 'assistant', 'tool'";
      return false;
    }
    if (!read_string(env, content_value, &content)) {
      *error = where + ".content must be a string";
      return false;
    }
    out->roles.emplace_back(kRoles[role]);
    out->contents.push_back(std::move(content));
  }
  // Pointers only once the vectors no longer grow.
  for (size_t i = 0; i < out->roles.size(); ++i) {
    out->messages.push_back(edgellm_message{out->roles[i].c_str(), out->contents[i].c_str()});
  }
  out->params.messages = out->messages.data();
  out->params.n_messages = out->messages.size();
  return true;
}

bool read_stops(napi_env env, napi_value stop, RequestConfig* out, std::string* error) {
  std::string single;
  if (read_string(env, stop, &single)) {
    out->stops.push_back(std::move(single));
  } else {
    bool is_array = false;
    uint32_t n = 0;
    if (napi_is_array(env, stop, &is_array) != napi_ok || !is_array ||
        napi_get_array_length(env, stop, &n) != napi_ok) {
      *error = "options.stop must be a string or an array of strings";
      return false;
    }
    for (uint32_t i = 0; i < n; ++i) {
      napi_value element = nullptr;
      std::string s;
      if (napi_get_element(env, stop, i, &element) != napi_ok || !read_string(env, element, &s)) {
        *error = "options.stop[" + std::to_string(i) + "] must be a string";
        return false;
      }
      out->stops.push_back(std::move(s));
    }
  }
  for (const std::string& s : out->stops) out->stop_ptrs.push_back(s.c_str());
  out->params.stop = out->stop_ptrs.data();
  out->params.n_stop = out->stop_ptrs.size();
  return true;
}

}  // namespace

bool read_load_config(napi_env env, napi_value path, napi_value options, LoadConfig* out, std::string* error) {
  if (!read_string(env, path, &out->model_path)) {
    *error = "modelPath must be a string";
    return false;
  }
  edgellm_service_params& p = out->params;
  p = edgellm_service_default_params();
  OptionReader r(env, options, "options");
  int power = -1;
  r.choice("powerMode", kPowerModes, &power);
  if (power >= 0) p.power_mode = static_cast<edgellm_power_mode>(EDGELLM_POWER_PERFORMANCE + power);
  r.integer("contextSize", kI32Min, kI32Max, &p.n_ctx);
  r.integer("threads", kI32Min, kI32Max, &p.n_threads);
  r.integer("batchThreads", kI32Min, kI32Max, &p.n_threads_batch);
  r.integer("maxQueued", kI32Min, kI32Max, &p.max_queued);
  r.integer("parallel", kI32Min, kI32Max, &p.n_parallel);
  r.integer("stepTokens", kI32Min, kI32Max, &p.step_tokens);
  r.uint64("kvBudgetBytes", &p.kv_budget_bytes);
  r.boolean("pinThreads", &p.pin_threads);
  int kv = p.kv_type;
  r.choice("kvType", kKvTypes, &kv);
  p.kv_type = static_cast<edgellm_kv_type>(kv);
  int kv_v = EDGELLM_KV_SAME;  // absent: V as K
  r.choice("kvTypeV", kKvTypes, &kv_v);
  p.kv_type_v = static_cast<edgellm_kv_type>(kv_v);
  int repack = p.repack;
  r.choice("repack", kRepack, &repack);
  p.repack = static_cast<edgellm_repack>(repack);
  if (napi_value t = r.field("chatTemplate")) {
    if (!read_string(env, t, &out->chat_template)) r.fail("options.chatTemplate must be a string");
    p.chat_template = out->chat_template.c_str();
  }
  if (napi_value d = r.field("packDir")) {
    if (!read_string(env, d, &out->pack_dir)) r.fail("options.packDir must be a string");
    p.pack_dir = out->pack_dir.c_str();
  }
  if (!r.ok()) {
    *error = r.error();
    return false;
  }
  return true;
}

bool read_request_config(napi_env env, napi_value input, napi_value options, RequestConfig* out, std::string* error) {
  edgellm_request_params& p = out->params;
  p = edgellm_request_default_params();
  bool is_array = false;
  if (read_string(env, input, &out->prompt)) {
    p.prompt = out->prompt.c_str();
  } else if (napi_is_array(env, input, &is_array) == napi_ok && is_array) {
    if (!read_messages(env, input, out, error)) return false;
  } else {
    *error = "input must be a string or an array of messages";
    return false;
  }

  OptionReader r(env, options, "options");
  r.integer("maxTokens", kI32Min, kI32Max, &p.max_tokens);
  r.number("temperature", &p.sampling.temperature);
  r.integer("topK", kI32Min, kI32Max, &p.sampling.top_k);
  r.number("topP", &p.sampling.top_p);
  r.number("minP", &p.sampling.min_p);
  r.number("repeatPenalty", &p.sampling.repeat_penalty);
  r.number("frequencyPenalty", &p.sampling.frequency_penalty);
  r.number("presencePenalty", &p.sampling.presence_penalty);
  r.integer("penaltyLastN", kI32Min, kI32Max, &p.sampling.penalty_last_n);
  r.uint64("seed", &p.sampling.seed);
  r.int64("deadlineMs", std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2,
          &p.deadline_ms);
  int priority = p.priority;
  r.choice("priority", kPriorities, &priority);
  p.priority = static_cast<edgellm_priority>(priority);
  r.boolean("ignoreEos", &p.ignore_eos);
  r.boolean("addSpecial", &p.add_special);
  r.boolean("parseSpecial", &p.parse_special);
  napi_value stop = r.field("stop");
  if (!r.ok()) {
    *error = r.error();
    return false;
  }
  return !stop || read_stops(env, stop, out, error);
}

}  // namespace edgellm_napi
