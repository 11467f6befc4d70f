#include "options.h"

#include <algorithm>
#include <cmath>
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
const char* const kRoutes[] = {"off", "auto", "local", "cloud", nullptr};      // edgellm_route order
const char* const kSpecModes[] = {"off", "ngram", "draft", nullptr};           // edgellm_spec_mode order
const char* const kInputPolicies[] = {"refuse", "strip", nullptr};             // edgellm_input_policy order
const char* const kRuntimeRoles[] = {"generate", "embed", nullptr};            // edgellm_runtime_role order
const char* const kToolChoices[] = {"auto", "none", "required", nullptr};      // edgellm_tool_choice order

// An assistant turn's toolCalls: [{ id, name, arguments }] as result.toolCalls gives them
// (arguments the JSON text, or an object JSON.stringify writes). Their values are the runtime's
// to check (check_tool_turns: ids, names, arguments a JSON object), in every face's words.
bool read_tool_calls(napi_env env, napi_value calls, const std::string& where, RequestConfig::Turn* turn,
                     std::string* error) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, calls, &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, calls, &n) != napi_ok) {
    *error = where + " must be an array of { id, name, arguments }";
    return false;
  }
  for (uint32_t j = 0; j < n; ++j) {
    const std::string at = where + "[" + std::to_string(j) + "]";
    napi_value call = nullptr;
    if (napi_get_element(env, calls, j, &call) != napi_ok || type_of(env, call) != napi_object) {
      *error = at + " must be an object { id, name, arguments }";
      return false;
    }
    OptionReader reader(env, call, at.c_str());
    napi_value id = reader.field("id");
    napi_value name = reader.field("name");
    napi_value arguments = reader.field("arguments");
    std::string id_text, name_text, arguments_text;
    if (!reader.ok()) {
      *error = reader.error();
      return false;
    }
    if (!read_string(env, id, &id_text)) {
      *error = at + ".id must be a string (the call's id from result.toolCalls)";
      return false;
    }
    if (!read_string(env, name, &name_text)) {
      *error = at + ".name must be a string";
      return false;
    }
    if (!read_string(env, arguments, &arguments_text) &&
        (type_of(env, arguments) != napi_object || !stringify_json(env, arguments, &arguments_text))) {
      *error = at + ".arguments must be the arguments object's JSON text (or the object)";
      return false;
    }
    turn->call_ids.push_back(std::move(id_text));
    turn->call_names.push_back(std::move(name_text));
    turn->call_arguments.push_back(std::move(arguments_text));
  }
  return true;
}

bool read_messages(napi_env env, napi_value input, RequestConfig* out, std::string* error) {
  uint32_t n = 0;
  if (napi_get_array_length(env, input, &n) != napi_ok) {
    *error = "input must be a string or an array of messages";
    return false;
  }
  out->turns.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value message = nullptr;
    std::string where = "input[" + std::to_string(i) + "]";
    if (napi_get_element(env, input, i, &message) != napi_ok || type_of(env, message) != napi_object) {
      *error = where + " must be an object { role, content }";
      return false;
    }
    OptionReader reader(env, message, where.c_str());
    // The role's value is the runtime's to check ("messages[0]: unknown role ..."), in the words
    // every face uses (service/request_limits.h); here only that it is a string.
    RequestConfig::Turn turn;
    napi_value role_value = reader.field("role");
    napi_value content_value = reader.field("content");
    napi_value calls_value = reader.field("toolCalls");
    napi_value call_id_value = reader.field("toolCallId");
    if (!reader.ok()) {
      *error = reader.error();
      return false;
    }
    if (!read_string(env, role_value, &turn.role)) {
      *error = where + ".role must be a string ('system', 'user', 'assistant' or 'tool')";
      return false;
    }
    const napi_valuetype calls_type = type_of(env, calls_value);
    const bool has_calls = calls_type != napi_undefined && calls_type != napi_null;
    const napi_valuetype content_type = type_of(env, content_value);
    // An assistant turn that only called tools may leave content out (or null, as OpenAI does).
    const bool no_content = has_calls && (content_type == napi_undefined || content_type == napi_null);
    if (!no_content && !read_string(env, content_value, &turn.content)) {
      *error = where + ".content must be a string";
      return false;
    }
    if (has_calls && !read_tool_calls(env, calls_value, where + ".toolCalls", &turn, error)) return false;
    const napi_valuetype id_type = type_of(env, call_id_value);
    if (id_type != napi_undefined && id_type != napi_null) {
      if (!read_string(env, call_id_value, &turn.tool_call_id)) {
        *error = where + ".toolCallId must be a string (the id of the call whose result this is)";
        return false;
      }
      turn.has_tool_call_id = true;
    }
    out->turns.push_back(std::move(turn));
  }
  // Pointers only once the vectors no longer grow.
  out->turn_calls.resize(out->turns.size());
  for (size_t i = 0; i < out->turns.size(); ++i) {
    const RequestConfig::Turn& t = out->turns[i];
    edgellm_message m{};
    m.struct_size = sizeof m;
    m.role = t.role.c_str();
    m.content = t.content.c_str();
    if (!t.call_ids.empty()) {
      std::vector<edgellm_tool_call>& calls = out->turn_calls[i];
      for (size_t j = 0; j < t.call_ids.size(); ++j) {
        edgellm_tool_call c{};
        c.struct_size = sizeof c;
        c.id = t.call_ids[j].c_str();
        c.name = t.call_names[j].c_str();
        c.arguments = t.call_arguments[j].c_str();
        calls.push_back(c);
      }
      m.tool_calls = calls.data();
      m.n_tool_calls = calls.size();
    }
    if (t.has_tool_call_id) m.tool_call_id = t.tool_call_id.c_str();
    out->messages.push_back(m);
  }
  // An empty array is messages given with none in them (the runtime's "messages: expected a
  // non-empty array ..."), not messages left out: never a null pointer.
  static const edgellm_message kNoMessage{};
  out->params.messages = out->messages.empty() ? &kNoMessage : out->messages.data();
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

// logitBias: [{token, bias}, ...]; bias a number or -Infinity (bans the token). The ranges are
// the library's (request_limits.h): only the JS types are checked here.
bool read_logit_bias(napi_env env, napi_value list, RequestConfig* out, std::string* error) {
  bool is_array = false;
  uint32_t n = 0;
  if (napi_is_array(env, list, &is_array) != napi_ok || !is_array || napi_get_array_length(env, list, &n) != napi_ok) {
    *error = "options.logitBias must be an array of { token, bias }";
    return false;
  }
  out->logit_bias.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string where = "options.logitBias[" + std::to_string(i) + "]";
    napi_value entry = nullptr, bias = nullptr;
    if (napi_get_element(env, list, i, &entry) != napi_ok || type_of(env, entry) != napi_object) {
      *error = where + " must be an object { token, bias }";
      return false;
    }
    OptionReader r(env, entry, where.c_str());
    int32_t token = -1;
    r.integer("token", kI32Min, kI32Max, &token);
    bias = r.field("bias");
    double b = 0;
    if (r.ok() && (!bias || type_of(env, bias) != napi_number || napi_get_value_double(env, bias, &b) != napi_ok ||
                   std::isnan(b))) {
      r.fail(where + ".bias must be a number (-Infinity bans the token)");
    }
    if (r.ok() && !r.field("token")) r.fail(where + ".token must be a token id");
    if (!r.ok()) {
      *error = r.error();
      return false;
    }
    // Out of float's range is out of the library's range too: keep it out (not inf) unless -inf.
    const float f = std::isinf(b) ? static_cast<float>(b) : static_cast<float>(std::clamp(b, -1e30, 1e30));
    out->logit_bias.push_back(edgellm_logit_bias{token, f});
  }
  out->sampling.logit_bias = out->logit_bias.data();
  out->sampling.n_logit_bias = out->logit_bias.size();
  return true;
}

// An optional string option whose value the params point to: set only when present.
// toolChoice: 'auto' | 'none' | 'required' | {type: 'function', function: {name}} (OpenAI's
// tool_choice); the C ABI checks the name against the tools.
bool read_tool_choice(napi_env env, napi_value value, RequestConfig* out, std::string* error) {
  edgellm_request_params& p = out->params;
  const char* const shape = "options.toolChoice must be 'auto', 'none', 'required' or {type: 'function', function: {name}}";
  std::string s;
  if (type_of(env, value) == napi_string) {
    read_string(env, value, &s);
    for (int i = 0; kToolChoices[i] != nullptr; ++i) {
      if (s == kToolChoices[i]) {
        p.tool_choice = static_cast<edgellm_tool_choice>(i);
        return true;
      }
    }
    *error = shape;
    return false;
  }
  napi_value type = nullptr, fn = nullptr, name = nullptr;
  if (type_of(env, value) != napi_object || napi_get_named_property(env, value, "type", &type) != napi_ok ||
      !read_string(env, type, &s) || s != "function" || napi_get_named_property(env, value, "function", &fn) != napi_ok ||
      type_of(env, fn) != napi_object || napi_get_named_property(env, fn, "name", &name) != napi_ok ||
      !read_string(env, name, &out->tool_choice_name)) {
    *error = shape;
    return false;
  }
  p.tool_choice = EDGELLM_TOOL_CHOICE_FUNCTION;
  p.tool_choice_name = out->tool_choice_name.c_str();
  return true;
}

void optional_string(OptionReader& r, const char* name, std::string* storage, const char** field) {
  std::string value;
  if (!r.field(name)) return;
  r.string(name, &value);
  if (!r.ok()) return;
  *storage = std::move(value);
  *field = storage->c_str();
}

}  // namespace

bool read_load_config(napi_env env, napi_value path, napi_value options, LoadConfig* out, std::string* error) {
  if (!read_string(env, path, &out->model_path)) {
    *error = "modelPath must be a string";
    return false;
  }
  edgellm_runtime_params& p = out->params;
  p = edgellm_runtime_default_params();
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
  r.number("kvBudgetFraction", &p.kv_budget_fraction);
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
  int policy = p.input_policy;
  r.choice("inputPolicy", kInputPolicies, &policy);
  p.input_policy = static_cast<edgellm_input_policy>(policy);
  optional_string(r, "chatTemplate", &out->chat_template, &p.chat_template);
  optional_string(r, "packDir", &out->pack_dir, &p.pack_dir);
  optional_string(r, "modelVersion", &out->model_version, &p.model_version);
  optional_string(r, "registryDir", &out->registry_dir, &p.registry_dir);
  r.integer("maxSessions", kI32Min, kI32Max, &p.max_sessions);
  r.uint64("maxSessionBytes", &p.max_session_bytes);
  r.boolean("linuxPressure", &p.linux_pressure);
  r.integer("recoverMs", kI32Min, kI32Max, &p.recover_ms);
  int role = p.role;
  r.choice("role", kRuntimeRoles, &role);
  p.role = static_cast<edgellm_runtime_role>(role);
  r.integer("embedBatch", kI32Min, kI32Max, &p.embed_n_batch);
  optional_string(r, "draftModel", &out->draft_model, &p.draft_model);
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
  const napi_valuetype input_type = type_of(env, input);
  if (input_type == napi_undefined || input_type == napi_null) {
    // No input: the runtime refuses it ("no input: give a prompt, messages or tokens"), as every face.
  } else if (read_string(env, input, &out->prompt)) {
    p.prompt = out->prompt.c_str();
  } else if (napi_is_array(env, input, &is_array) == napi_ok && is_array) {
    if (!read_messages(env, input, out, error)) return false;
  } else {
    *error = "input must be a string or an array of messages";
    return false;
  }

  OptionReader r(env, options, "options");
  edgellm_sampling& sp = out->sampling;
  sp = edgellm_sampling_default();
  p.sampling = &sp;
  r.integer("maxTokens", kI32Min, kI32Max, &p.max_tokens);
  r.number("temperature", &sp.temperature);
  r.integer("topK", kI32Min, kI32Max, &sp.top_k);
  r.number("topP", &sp.top_p);
  r.number("minP", &sp.min_p);
  r.number("repeatPenalty", &sp.repeat_penalty);
  r.number("frequencyPenalty", &sp.frequency_penalty);
  r.number("presencePenalty", &sp.presence_penalty);
  r.integer("penaltyLastN", kI32Min, kI32Max, &sp.penalty_last_n);
  r.uint64("seed", &sp.seed);
  r.int64("deadlineMs", std::numeric_limits<int64_t>::min() / 2, std::numeric_limits<int64_t>::max() / 2,
          &p.deadline_ms);
  int priority = p.priority;
  r.choice_or_integer("priority", kPriorities, &priority);  // or 0 / 1, as over HTTP
  p.priority = static_cast<edgellm_priority>(priority);
  r.boolean("ignoreEos", &p.ignore_eos);
  r.boolean("addSpecial", &p.add_special);
  r.boolean("parseSpecial", &p.parse_special);
  r.boolean("contextShift", &p.context_shift);
  r.integer("nKeep", kI32Min, kI32Max, &p.n_keep);
  optional_string(r, "sessionId", &out->session_id, &p.session_id);
  optional_string(r, "sessionLoadPath", &out->session_load_path, &p.session_load_path);
  optional_string(r, "sessionSavePath", &out->session_save_path, &p.session_save_path);
  int route = p.route;
  r.choice("route", kRoutes, &route);
  p.route = static_cast<edgellm_route>(route);
  optional_string(r, "grammar", &out->grammar, &p.grammar);
  r.boolean("jsonObject", &p.json_object);
  napi_value stop = r.field("stop");
  napi_value logit_bias = r.field("logitBias");
  napi_value schema = r.field("jsonSchema");
  napi_value tools = r.field("tools");
  napi_value tool_choice = r.field("toolChoice");
  r.boolean("parallelToolCalls", &p.parallel_tool_calls);
  // Speculative decoding: the library checks draftMax against the mode (INVALID_ARGUMENT).
  out->speculation = edgellm_spec_default_params();
  int spec_mode = out->speculation.mode;
  r.choice("speculation", kSpecModes, &spec_mode);
  out->speculation.mode = static_cast<edgellm_spec_mode>(spec_mode);
  r.integer("draftMax", kI32Min, kI32Max, &out->speculation.draft_max);
  p.speculation = &out->speculation;
  if (!r.ok()) {
    *error = r.error();
    return false;
  }
  if (schema) {  // an object (as JSON.stringify writes it) or its JSON text
    napi_valuetype type = napi_undefined;
    napi_typeof(env, schema, &type);
    if (type == napi_string) {
      read_string(env, schema, &out->json_schema);
    } else if (type != napi_object || !stringify_json(env, schema, &out->json_schema)) {
      *error = "options.jsonSchema must be a JSON Schema: an object or its JSON text";
      return false;
    }
    p.json_schema = out->json_schema.c_str();
  }
  if (tools) {  // an array of OpenAI function tools (as JSON.stringify writes it) or its JSON text
    if (type_of(env, tools) == napi_string) {
      read_string(env, tools, &out->tools);
    } else if (type_of(env, tools) != napi_object || !stringify_json(env, tools, &out->tools)) {
      *error = "options.tools must be an array of function tools or its JSON text";
      return false;
    }
    p.tools = out->tools.c_str();
  }
  if (tool_choice && !read_tool_choice(env, tool_choice, out, error)) return false;
  if (logit_bias && !read_logit_bias(env, logit_bias, out, error)) return false;
  return !stop || read_stops(env, stop, out, error);
}

}  // namespace edgellm_napi
