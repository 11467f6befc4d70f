// Model.generate: one request of the runtime, streamed to JS (routed requests too: their answer
// may arrive as one piece at the end, from the router thread).
//
//   JS thread                      scheduler / router thread (the library's) JS thread, later
//   generate(): parse, open the    on_token: copy the piece, post a        TokenMessage: onToken(piece)
//   channel, edgellm_submit  --->  TokenMessage (never waits)        --->  FinalMessage: settle result
//   return { id, result, cancel }  on_finish: fill the FinalMessage         (after every token: the
//                                  allocated up front, post it, close      channel is FIFO)
//
// The result therefore settles after the last onToken call, never before. An exception thrown by
// onToken cancels the request and the result rejects with that exception.
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "addon.h"
#include "async_op.h"
#include "js.h"
#include "options.h"

namespace edgellm_napi {

namespace {

class Generation;

// The end of a request, copied from edgellm_result on the scheduler thread.
class FinalMessage final : public Message {
 public:
  explicit FinalMessage(Generation* g) : g_(g) {}
  // Scheduler thread; never throws (a failed copy becomes an OUT_OF_MEMORY error).
  void fill(const edgellm_result& r) noexcept;
  void deliver(napi_env env) override;

 private:
  napi_value result_object(napi_env env) const;

  Generation* g_;
  edgellm_finish_reason reason_ = EDGELLM_FINISH_ERROR;
  edgellm_status status_ = EDGELLM_ERR_INTERNAL;
  std::string error_message_, text_, stop_string_, model_version_;
  // Tool calls (a request with tools): the reply's text outside the calls, and the calls.
  std::string content_;
  struct Call {
    std::string id, name, arguments;
  };
  std::vector<Call> tool_calls_;
  edgellm_request_stats stats_{};
  edgellm_spec_stats spec_{};  // zero from a library older than the field
  std::string spec_off_reason_;
  // The router's decision (route_.empty(): not routed).
  std::string route_, route_reason_, route_tier_;
  double score_ = -1, mean_p_ = -1, min_p_ = -1, route_latency_ms_ = 0;
  bool retry_in_cloud_ = false;
  bool session_stored_ = false;
  edgellm_status session_save_status_ = EDGELLM_OK;
};

// One streamed call piece (edgellm_tool_call_delta, copied).
struct CallDelta {
  int32_t index = 0;
  std::string id, name, arguments;
};

class TokenMessage final : public Message {
 public:
  TokenMessage(Generation* g, std::string piece) : g_(g), piece_(std::move(piece)) {}
  // A request with tools: onToken(piece, { content, toolCalls }) (the C event's split).
  TokenMessage(Generation* g, std::string piece, std::string content, std::vector<CallDelta> deltas)
      : g_(g), piece_(std::move(piece)), tools_(true), content_(std::move(content)), deltas_(std::move(deltas)) {}
  void deliver(napi_env env) override;

 private:
  Generation* g_;
  std::string piece_;
  bool tools_ = false;
  std::string content_;
  std::vector<CallDelta> deltas_;
};

class Generation final : public AsyncOp {
 public:
  Generation(std::shared_ptr<ModelCore> core, napi_deferred deferred)
      : AsyncOp(std::move(core)), deferred_(deferred), final_(std::make_unique<FinalMessage>(this)) {}

  // C callbacks (scheduler thread). They read only immutable members and post messages.
  static bool on_token(const edgellm_token_event* event, void* user_data) noexcept {
    auto* g = static_cast<Generation*>(user_data);
    if (!g->streams_) return true;
    try {
      if (g->tools_) {
        // The library's split of the text (content and call deltas; the last event, token -1,
        // may carry no text but the rest of them).
        std::vector<CallDelta> deltas;
        const auto* base = reinterpret_cast<const unsigned char*>(event->tool_call_deltas);
        for (size_t i = 0; i < event->n_tool_call_deltas; ++i) {
          const auto* d =
              reinterpret_cast<const edgellm_tool_call_delta*>(base + i * event->tool_call_deltas[0].struct_size);
          deltas.push_back({d->index, d->id, d->name, d->arguments});
        }
        if (event->text_len == 0 && event->content_len == 0 && deltas.empty()) return true;
        g->post(new TokenMessage(g, std::string(event->text, event->text_len),
                                 std::string(event->content, event->content_len), std::move(deltas)));
        return true;
      }
      if (event->text_len == 0) return true;
      g->post(new TokenMessage(g, std::string(event->text, event->text_len)));
    } catch (...) {
      return false;  // out of memory: cancel rather than lose a piece silently
    }
    return true;
  }
  static void on_finish(const edgellm_result* result, void* user_data) noexcept {
    auto* g = static_cast<Generation*>(user_data);
    FinalMessage* m = g->final_.release();
    m->fill(*result);
    g->post(m);
    g->close();
  }

  napi_deferred deferred_;
  std::unique_ptr<FinalMessage> final_;  // allocated up front: on_finish cannot fail to report
  napi_ref on_token_ = nullptr;          // the JS callback, or nullptr
  bool streams_ = false;                 // on_token_ set (immutable once submitted)
  bool tools_ = false;                   // the request has tools: events carry content and call deltas
  napi_ref thrown_ = nullptr;            // what onToken threw (JS thread)
  edgellm_request_id id_ = 0;            // JS thread (set after submit returns)
};

void FinalMessage::fill(const edgellm_result& r) noexcept {
  reason_ = r.finish_reason;
  status_ = r.status;
  stats_ = r.stats;
  score_ = r.route.score;
  mean_p_ = r.route.mean_p;
  min_p_ = r.route.min_p;
  route_latency_ms_ = r.route.latency_ms;
  retry_in_cloud_ = r.route.retry_in_cloud;
  session_stored_ = r.session_stored;
  session_save_status_ = r.session_save_status;
  try {
    error_message_ = r.error_message ? r.error_message : "";
    text_.assign(r.text ? r.text : "", r.text ? r.text_len : 0);
    stop_string_ = r.stop_string ? r.stop_string : "";
    model_version_ = r.model_version ? r.model_version : "";
    route_ = r.route.route ? r.route.route : "";
    route_reason_ = r.route.reason ? r.route.reason : "";
    route_tier_ = r.route.tier ? r.route.tier : "";
    if (offsetof(edgellm_result, speculation) < r.struct_size) {
      spec_ = r.speculation;
      spec_off_reason_ = r.speculation.off_reason ? r.speculation.off_reason : "";
      spec_.off_reason = nullptr;  // valid only during on_finish
    }
    // A library older than the tool fields passes a shorter result: no calls, content = text.
    content_ = text_;
    if (offsetof(edgellm_result, content_len) < r.struct_size && r.content != nullptr) {
      content_.assign(r.content, r.content_len);
      const auto* base = reinterpret_cast<const unsigned char*>(r.tool_calls);
      const uint32_t stride = r.n_tool_calls > 0 ? r.tool_calls[0].struct_size : 0;
      for (size_t i = 0; i < r.n_tool_calls; ++i) {
        const auto* c = reinterpret_cast<const edgellm_tool_call*>(base + i * stride);
        tool_calls_.push_back({c->id, c->name, c->arguments});
      }
    }
  } catch (...) {
    reason_ = EDGELLM_FINISH_ERROR;
    status_ = EDGELLM_ERR_OUT_OF_MEMORY;
    error_message_.clear();
    text_.clear();
    content_.clear();
    tool_calls_.clear();
  }
}

napi_value FinalMessage::result_object(napi_env env) const {
  napi_value timings = js_object(env);
  bool ok = set_property(env, timings, "queueMs", js_number(env, stats_.queue_ms)) &&
            set_property(env, timings, "ttftMs", js_number(env, stats_.ttft_ms)) &&
            set_property(env, timings, "prefillMs", js_number(env, stats_.prefill_ms)) &&
            set_property(env, timings, "decodeMs", js_number(env, stats_.decode_ms)) &&
            set_property(env, timings, "totalMs", js_number(env, stats_.total_ms)) &&
            set_property(env, timings, "prefillTokensPerSecond", js_number(env, stats_.prefill_tokens_per_second)) &&
            set_property(env, timings, "decodeTokensPerSecond", js_number(env, stats_.decode_tokens_per_second));
  napi_value route = nullptr;
  if (route_.empty()) {
    napi_get_null(env, &route);
  } else {
    route = js_object(env);
    ok = ok && set_property(env, route, "route", js_string(env, route_)) &&
         set_property(env, route, "reason", js_string(env, route_reason_)) &&
         set_property(env, route, "tier", js_string(env, route_tier_)) &&
         set_property(env, route, "score", js_number(env, score_)) &&
         set_property(env, route, "meanP", js_number(env, mean_p_)) &&
         set_property(env, route, "minP", js_number(env, min_p_)) &&
         set_property(env, route, "latencyMs", js_number(env, route_latency_ms_)) &&
         set_property(env, route, "retryInCloud", js_bool(env, retry_in_cloud_));
  }
  napi_value save_error = nullptr;
  if (session_save_status_ == EDGELLM_OK) {
    napi_get_null(env, &save_error);
  } else {
    save_error = js_string(env, status_code(session_save_status_));
  }
  // toolCalls: [{id, name, arguments}] (arguments: the JSON text, as OpenAI's function.arguments).
  napi_value calls = nullptr;
  ok = ok && napi_create_array_with_length(env, tool_calls_.size(), &calls) == napi_ok;
  for (size_t i = 0; ok && i < tool_calls_.size(); ++i) {
    napi_value c = js_object(env);
    ok = set_property(env, c, "id", js_string(env, tool_calls_[i].id)) &&
         set_property(env, c, "name", js_string(env, tool_calls_[i].name)) &&
         set_property(env, c, "arguments", js_string(env, tool_calls_[i].arguments)) &&
         napi_set_element(env, calls, static_cast<uint32_t>(i), c) == napi_ok;
  }
  napi_value spec = js_object(env);
  ok = ok && set_property(env, spec, "drafted", js_number(env, spec_.drafted)) &&
       set_property(env, spec, "accepted", js_number(env, spec_.accepted)) &&
       set_property(env, spec, "forwards", js_number(env, spec_.forwards)) &&
       set_property(env, spec, "verifyForwards", js_number(env, spec_.verify_forwards)) &&
       set_property(env, spec, "forwardTokens", js_number(env, spec_.forward_tokens)) &&
       set_property(env, spec, "acceptanceRate", js_number(env, spec_.acceptance_rate)) &&
       set_property(env, spec, "tokensPerForward", js_number(env, spec_.tokens_per_forward)) &&
       set_property(env, spec, "offReason", js_string(env, spec_off_reason_));
  napi_value result = js_object(env);
  ok = ok && set_property(env, result, "id", js_number(env, static_cast<double>(g_->id_))) &&
       set_property(env, result, "text", js_string(env, text_)) &&
       set_property(env, result, "finishReason", js_string(env, edgellm_finish_reason_name(reason_))) &&
       set_property(env, result, "stopString", js_string(env, stop_string_)) &&
       set_property(env, result, "promptTokens", js_number(env, stats_.prompt_tokens)) &&
       set_property(env, result, "cachedTokens", js_number(env, stats_.cached_tokens)) &&
       set_property(env, result, "completionTokens", js_number(env, stats_.completion_tokens)) &&
       set_property(env, result, "sanitizedChars", js_number(env, stats_.sanitized_chars)) &&
       set_property(env, result, "kvBlocks", js_number(env, stats_.kv_blocks)) &&
       set_property(env, result, "timings", timings) &&
       set_property(env, result, "peakRssBytes", js_number(env, static_cast<double>(stats_.peak_rss_bytes))) &&
       set_property(env, result, "modelVersion", js_string(env, model_version_)) &&
       set_property(env, result, "route", route) &&
       set_property(env, result, "sessionStored", js_bool(env, session_stored_)) &&
       set_property(env, result, "sessionSaveError", save_error) &&
       set_property(env, result, "content", js_string(env, content_)) &&
       set_property(env, result, "toolCalls", calls) &&
       set_property(env, result, "speculation", spec);
  return ok ? result : nullptr;
}

void FinalMessage::deliver(napi_env env) {
  Generation* g = g_;
  g->settled(env);
  napi_value outcome = nullptr;
  bool resolve = false;
  if (g->thrown_) {
    napi_get_reference_value(env, g->thrown_, &outcome);
  } else if (reason_ == EDGELLM_FINISH_ERROR) {
    outcome =
        make_error(env, status_code(status_), error_message_.empty() ? edgellm_status_name(status_) : error_message_);
  } else {
    outcome = result_object(env);
    resolve = outcome != nullptr;
  }
  if (!outcome) napi_get_and_clear_last_exception(env, &outcome);  // building it threw
  if (resolve) {
    napi_resolve_deferred(env, g->deferred_, outcome);
  } else {
    napi_reject_deferred(env, g->deferred_, outcome ? outcome : js_undefined(env));
  }
  if (g->on_token_) napi_delete_reference(env, g->on_token_);
  if (g->thrown_) napi_delete_reference(env, g->thrown_);
  g->on_token_ = g->thrown_ = nullptr;
}

void TokenMessage::deliver(napi_env env) {
  Generation* g = g_;
  if (g->thrown_ || !g->on_token_) return;  // onToken threw before: the request is being cancelled
  napi_value fn = nullptr, ignored = nullptr;
  napi_value args[2] = {js_string(env, piece_), nullptr};
  bool ok = args[0] != nullptr;
  if (ok && tools_) {
    // { content, toolCalls: [{ index, id, name, arguments }] }: OpenAI's delta.content and
    // delta.tool_calls (id and name on a call's first piece, '' after).
    napi_value calls = nullptr;
    ok = napi_create_array_with_length(env, deltas_.size(), &calls) == napi_ok;
    for (size_t i = 0; ok && i < deltas_.size(); ++i) {
      napi_value c = js_object(env);
      ok = set_property(env, c, "index", js_number(env, deltas_[i].index)) &&
           set_property(env, c, "id", js_string(env, deltas_[i].id)) &&
           set_property(env, c, "name", js_string(env, deltas_[i].name)) &&
           set_property(env, c, "arguments", js_string(env, deltas_[i].arguments)) &&
           napi_set_element(env, calls, static_cast<uint32_t>(i), c) == napi_ok;
    }
    args[1] = js_object(env);
    ok = ok && set_property(env, args[1], "content", js_string(env, content_)) &&
         set_property(env, args[1], "toolCalls", calls);
  }
  if (!ok || napi_get_reference_value(env, g->on_token_, &fn) != napi_ok ||
      napi_call_function(env, js_undefined(env), fn, tools_ ? 2 : 1, args, &ignored) != napi_ok) {
    napi_value exception = nullptr;
    if (napi_get_and_clear_last_exception(env, &exception) != napi_ok || !exception) {
      exception = make_error(env, "INTERNAL", "onToken could not be called");
    }
    if (exception) napi_create_reference(env, exception, 1, &g->thrown_);
    if (edgellm_runtime* rt = g->core()->runtime()) edgellm_cancel(rt, g->id_);
  }
}

// cancel(): bound to the request through this (a finalizer frees it with the function). Holds
// the model weakly: a Generation object alone does not keep a model loaded.
struct CancelTarget {
  std::weak_ptr<ModelCore> core;
  edgellm_request_id id;
};

napi_value cancel(napi_env env, napi_callback_info info) {
  void* data = nullptr;
  if (napi_get_cb_info(env, info, nullptr, nullptr, nullptr, &data) != napi_ok) return nullptr;
  auto* target = static_cast<CancelTarget*>(data);
  if (std::shared_ptr<ModelCore> core = target->core.lock()) {
    // NOT_FOUND (finished already) and a released model (destroy cancelled it) need nothing.
    if (edgellm_runtime* rt = core->runtime()) edgellm_cancel(rt, target->id);
  }
  return js_undefined(env);
}

// { id, result, cancel }.
napi_value generation_object(napi_env env, const std::shared_ptr<ModelCore>& core, edgellm_request_id id,
                             napi_value promise) {
  auto target = std::make_unique<CancelTarget>(CancelTarget{core, id});
  napi_value fn = nullptr;
  if (napi_create_function(env, "cancel", NAPI_AUTO_LENGTH, cancel, target.get(), &fn) != napi_ok ||
      napi_add_finalizer(
          env, fn, target.get(), [](napi_env, void* d, void*) { delete static_cast<CancelTarget*>(d); }, nullptr,
          nullptr) != napi_ok) {
    throw_napi_failure(env, "generate");
    return nullptr;
  }
  target.release();  // owned by fn's finalizer now
  napi_value obj = js_object(env);
  if (!set_property(env, obj, "id", js_number(env, static_cast<double>(id))) ||
      !set_property(env, obj, "result", promise) || !set_property(env, obj, "cancel", fn)) {
    throw_napi_failure(env, "generate");
    return nullptr;
  }
  return obj;
}

}  // namespace

napi_value generate(napi_env env, const std::shared_ptr<ModelCore>& core, napi_value input, napi_value options,
                    napi_value on_token) {
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  if (napi_create_promise(env, &deferred, &promise) != napi_ok) {
    throw_napi_failure(env, "napi_create_promise");
    return nullptr;
  }
  auto reject = [&](const std::string& code, const std::string& message) -> napi_value {
    reject_error(env, deferred, code, message);
    return generation_object(env, core, 0, promise);
  };

  RequestConfig config;
  std::string error;
  if (!read_request_config(env, input, options, &config, &error)) return reject("INVALID_ARGUMENT", error);
  napi_valuetype callback_type = type_of(env, on_token);
  if (callback_type != napi_undefined && callback_type != napi_null && callback_type != napi_function) {
    return reject("INVALID_ARGUMENT", "onToken must be a function");
  }
  if (!core->runtime()) return reject(status_code(EDGELLM_ERR_SHUT_DOWN), "the model was released");

  auto* g = new Generation(core, deferred);
  if (callback_type == napi_function) {
    if (napi_create_reference(env, on_token, 1, &g->on_token_) != napi_ok) {
      delete g;
      throw_napi_failure(env, "napi_create_reference");
      return nullptr;
    }
    g->streams_ = true;
  }
  napi_ref callback_ref = g->on_token_;
  if (!g->open(env, "edgellm.generate")) {  // g is gone
    if (callback_ref) napi_delete_reference(env, callback_ref);
    return nullptr;
  }
  g->tools_ = config.params.tools != nullptr;
  config.params.on_token = &Generation::on_token;
  config.params.on_finish = &Generation::on_finish;
  config.params.user_data = g;
  edgellm_request_id id = 0;
  edgellm_status st = edgellm_submit(core->runtime(), &config.params, &id);
  if (st != EDGELLM_OK) {
    // Nothing was queued and no callback will come: settle here and close the channel.
    std::string message = last_error_message(st);
    g->settled(env);
    if (g->on_token_) napi_delete_reference(env, g->on_token_);
    g->on_token_ = nullptr;
    g->close();
    return reject(status_code(st), message);
  }
  // The callbacks may already be running; id_ is read only by JS-thread code (messages), which
  // cannot run before this function returns.
  g->id_ = id;
  return generation_object(env, core, id, promise);
}

}  // namespace edgellm_napi
