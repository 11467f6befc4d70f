// JS options -> C ABI parameter structs. A field that is absent keeps the C ABI default
// (edgellm_runtime_default_params / edgellm_request_default_params); a field of the wrong type or
// out of range makes the whole call fail with INVALID_ARGUMENT and a message naming the field.
// Values in range for their type but rejected by the library (e.g. a negative context size) fail
// there, with its message. JS thread only.
#ifndef EDGELLM_NAPI_OPTIONS_H
#define EDGELLM_NAPI_OPTIONS_H

#include <edgellm/edgellm.h>

#include <string>
#include <vector>

#include "compat.h"

namespace edgellm_napi {

// LoadOptions: { contextSize, threads, batchThreads, kvType / kvTypeV: 'f16'|'f32'|'q8_0'|'q4_0',
// maxQueued, parallel, stepTokens, kvBudgetBytes, kvBudgetFraction, repack: 'auto'|'on'|'off',
// chatTemplate, pinThreads, powerMode: 'performance'|'balanced'|'efficiency', packDir,
// inputPolicy: 'refuse'|'strip', modelVersion, registryDir, maxSessions, maxSessionBytes,
// linuxPressure, recoverMs, role: 'generate'|'embed', embedBatch, draftModel }.
struct LoadConfig {
  std::string model_path;     // a GGUF path, or with registryDir a registry name
  std::string chat_template;  // params.chat_template points here when set
  std::string pack_dir;       // params.pack_dir points here when set
  std::string model_version;  // params.model_version points here when set
  std::string registry_dir;   // params.registry_dir points here when set
  std::string draft_model;    // params.draft_model points here when set
  edgellm_runtime_params params{};
};
bool read_load_config(napi_env env, napi_value path, napi_value options, LoadConfig* out, std::string* error);

// The input (a string prompt or Message[]) and GenerateOptions: { maxTokens, temperature, topK,
// topP, minP, repeatPenalty, frequencyPenalty, presencePenalty, penaltyLastN, seed, logitBias:
// {token, bias}[], stop: string | string[], deadlineMs, priority: 'interactive'|'background',
// ignoreEos, addSpecial, parseSpecial, contextShift, nKeep, sessionId, sessionLoadPath,
// sessionSavePath, route: 'off'|'auto'|'local'|'cloud' }.
// Owns every string and array the params point to; params.on_token/on_finish/user_data are left
// for the caller. Not copyable: params points into the members.
struct RequestConfig {
  RequestConfig() = default;
  RequestConfig(const RequestConfig&) = delete;
  RequestConfig& operator=(const RequestConfig&) = delete;

  std::string prompt;
  // A chat's turns as text, and the C messages (and each message's C calls) pointing into them.
  struct Turn {
    std::string role, content;
    std::vector<std::string> call_ids, call_names, call_arguments;  // an assistant turn's toolCalls
    std::string tool_call_id;                                       // a tool turn's toolCallId
    bool has_tool_call_id = false;
  };
  std::vector<Turn> turns;
  std::vector<std::vector<edgellm_tool_call>> turn_calls;
  std::vector<edgellm_message> messages;
  std::vector<std::string> stops;
  std::vector<const char*> stop_ptrs;
  std::vector<edgellm_logit_bias> logit_bias;
  std::string session_id, session_load_path, session_save_path;
  std::string grammar, json_schema;  // constrained output: GBNF, a JSON Schema as JSON text
  std::string tools, tool_choice_name;  // tool calling: the tools as JSON text, a named function
  edgellm_sampling sampling{};
  edgellm_spec_params speculation{};  // params.speculation points here
  edgellm_request_params params{};
};
bool read_request_config(napi_env env, napi_value input, napi_value options, RequestConfig* out, std::string* error);

}  // namespace edgellm_napi

#endif  // EDGELLM_NAPI_OPTIONS_H
