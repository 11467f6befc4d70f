// The text half of the C ABI: model info, tokenize / detokenize, chat-template rendering. The
// tokenizer and the template are immutable, so these run on the calling thread, concurrently
// with the scheduler.
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "core/json.h"
#include "core/utf8.h"
#include "engine/memory_plan.h"
#include "kernels/tensor_type.h"
#include "model/model.h"
#include "service/request_limits.h"
#include "tokenizer/tokenizer.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

namespace {

void check_utf8(const char* text, const char* what) {
  if (text == nullptr) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is NULL");
  if (!utf8::is_valid(text)) throw Error(ErrorCode::kInvalidArgument, std::string(what) + " is not valid UTF-8");
}

// The tokenizer of the model serving: the generator's (held while in use: a swap may replace
// it) or the embedder's (the runtime's for its life).
struct TokenizerUse {
  std::shared_ptr<InferenceService> generator;
  std::shared_ptr<EmbeddingService> embedder;
  const Tokenizer* tokenizer = nullptr;
};
TokenizerUse tokenizer_of(Runtime& rt) {
  TokenizerUse u;
  if ((u.embedder = rt.embedding_service())) {
    u.tokenizer = &u.embedder->tokenizer();
  } else if ((u.generator = rt.service())) {
    u.tokenizer = &u.generator->tokenizer();
  }
  return u;
}

// An embedding runtime's model: what an app needs to size buffers and pick options.
edgellm_status embedder_info(Runtime& rt, const EmbeddingService& s, char* buf, size_t capacity, size_t* length) {
  const HParams& hp = s.model().hparams();
  Json j = Json::object();
  j.set("role", Json("embed"));
  j.set("architecture", Json(hp.arch));
  j.set("n_vocab", static_cast<int>(hp.n_vocab));
  j.set("n_ctx_train", static_cast<int>(hp.n_ctx_train));
  j.set("n_embd", static_cast<int>(hp.n_embd));
  j.set("n_layer", static_cast<int>(hp.n_layer));
  j.set("dims", static_cast<int>(s.dims()));
  j.set("pooling", Json(pooling_type_name(s.default_pooling())));
  j.set("can_rerank", s.can_rerank());
  j.set("n_ctx", static_cast<int>(s.n_ctx()));
  j.set("n_batch", static_cast<int>(s.n_batch()));
  j.set("weight_bytes", static_cast<uint64_t>(s.model().weight_bytes()));
  j.set("model_version", rt.model_version());
  j.set("input_policy", input_policy_name(s.params().input_policy));
  return capi::copy_out(j.dump(), buf, capacity, length);
}

}  // namespace

extern "C" {

edgellm_status edgellm_model_info_json(edgellm_runtime* runtime, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    Runtime& rt = capi::runtime_of(runtime);
    if (const std::shared_ptr<EmbeddingService> emb = rt.embedding_service()) return embedder_info(rt, *emb, buf, capacity, length);
    const std::shared_ptr<InferenceService> current = rt.service();
    if (!current) return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shut down");
    const InferenceService& s = *current;
    const Model& m = s.model();
    const HParams& hp = m.hparams();
    Json j = Json::object();
    j.set("role", Json("generate"));
    j.set("architecture", Json(hp.arch));
    j.set("n_vocab", static_cast<int>(hp.n_vocab));
    j.set("n_ctx_train", static_cast<int>(hp.n_ctx_train));
    j.set("n_embd", static_cast<int>(hp.n_embd));
    j.set("n_layer", static_cast<int>(hp.n_layer));
    j.set("n_head", static_cast<int>(hp.n_head));
    j.set("n_head_kv", static_cast<int>(hp.n_head_kv));
    j.set("head_dim", static_cast<int>(hp.head_dim));
    j.set("n_ff", static_cast<int>(hp.n_ff));
    j.set("rope_freq_base", static_cast<double>(hp.rope_freq_base));
    int64_t n_params = 0;
    Json types = Json::object();
    for (const WeightView* w : m.matrices()) {
      n_params += w->n_in * w->n_out;
      const std::string name = tensor_type_name(w->type);
      const Json* seen = types.find(name);
      types.set(name, Json((seen != nullptr ? seen->as_number() : 0.0) + 1.0));
    }
    j.set("matrix_parameters", n_params);
    j.set("matrix_types", std::move(types));
    j.set("weight_bytes", static_cast<uint64_t>(m.weight_bytes()));
    j.set("repacked_bytes", static_cast<uint64_t>(m.repacked_bytes()));
    // Matrices mapped from a pack file beside the model (model/pack_file.h) and what the load did
    // with it ("mapped <path>", "none at <path>", "refused: <why>").
    j.set("pack_mapped_tensors", m.pack_mapped_tensors());
    j.set("pack_file", m.pack_file_status());
    const ContextParams& cp = s.context_params();
    j.set("n_ctx", static_cast<int>(cp.n_ctx));
    j.set("n_parallel", static_cast<int>(cp.n_seq_max));
    j.set("kv_type", Json(tensor_type_name(cp.kv_k())));  // K
    j.set("kv_type_v", Json(tensor_type_name(cp.kv_v())));
    j.set("kv_block_tokens", static_cast<int>(cp.kv_block_tokens));
    j.set("n_threads", static_cast<int>(cp.n_threads));
    j.set("n_threads_batch", static_cast<int>(cp.n_threads_batch));
    j.set("model_version", capi::runtime_of(runtime).model_version());
    j.set("input_policy", input_policy_name(s.params().input_policy));
    // What this service's configuration adds to the process (engine/memory_plan.h).
    j.set("memory", plan_memory(m, cp, RepackMode::kAuto).to_json());
    return capi::copy_out(j.dump(), buf, capacity, length);
  });
}

edgellm_status edgellm_tokenize(edgellm_runtime* runtime, const char* text, bool add_special, bool parse_special,
                                int32_t* tokens, size_t capacity, size_t* n_tokens) {
  return guard([&] {
    const TokenizerUse tok = tokenizer_of(capi::runtime_of(runtime));
    if (!tok.tokenizer) return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shut down");
    if (n_tokens == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "n_tokens is NULL");
    check_utf8(text, "text");
    const std::vector<int32_t> ids = tok.tokenizer->encode(text, add_special, parse_special);
    *n_tokens = ids.size();
    if (ids.size() > capacity || (tokens == nullptr && !ids.empty())) {
      return fail(EDGELLM_ERR_BUFFER_TOO_SMALL, "the buffer holds " + std::to_string(capacity) + " tokens; " +
                                                    std::to_string(ids.size()) + " are needed");
    }
    std::copy(ids.begin(), ids.end(), tokens);
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_detokenize(edgellm_runtime* runtime, const int32_t* tokens, size_t n_tokens,
                                  bool render_special, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    const TokenizerUse use = tokenizer_of(capi::runtime_of(runtime));
    if (!use.tokenizer) return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shut down");
    if (tokens == nullptr && n_tokens > 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "tokens is NULL");
    const Tokenizer& tok = *use.tokenizer;
    std::vector<int32_t> ids(tokens, tokens + n_tokens);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= tok.n_vocab()) {
        return fail(EDGELLM_ERR_INVALID_ARGUMENT, "tokens[" + std::to_string(i) + "] = " + std::to_string(ids[i]) +
                                                      " is outside the vocabulary [0, " +
                                                      std::to_string(tok.n_vocab()) + ")");
      }
    }
    return capi::copy_out(tok.decode(ids, render_special), buf, capacity, length);
  });
}

edgellm_status edgellm_apply_template(edgellm_runtime* runtime, const edgellm_message* messages, size_t n_messages,
                                      bool add_generation_prompt, char* buf, size_t capacity, size_t* length) {
  return guard([&] {
    const std::shared_ptr<InferenceService> svc = capi::runtime_of(runtime).service();
    if (!svc) return fail(EDGELLM_ERR_SHUT_DOWN, "the runtime is shut down");
    if (messages == nullptr || n_messages == 0) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "no messages");
    const Json conv = capi::to_messages(messages, n_messages, true);
    // The roles a request may hold, refused in the same words as at submit.
    for (size_t i = 0; i < conv.size(); ++i) {
      check_role(conv.at(i).at("role").as_string(), "messages[" + std::to_string(i) + "]");
    }
    check_tool_turns(conv);
    return capi::copy_out(svc->chat_template().render(conv, add_generation_prompt), buf, capacity, length);
  });
}

}  // extern "C"
