// The C ABI's runtime: parameters, create / destroy, and the lifecycle calls that need no
// request (pause, resume, trim, warm-up).
#include <string>
#include <thread>

#include "api/c_api_internal.h"
#include "device/power_mode.h"
#include "kernels/tensor_type.h"

using namespace edgellm;
using capi::fail;
using capi::guard;

namespace {

TensorType kv_tensor_type(int kv_type, const char* field) {
  switch (kv_type) {
    case EDGELLM_KV_F16: return TensorType::F16;
    case EDGELLM_KV_F32: return TensorType::F32;
    case EDGELLM_KV_Q8_0: return TensorType::Q8_0;
    case EDGELLM_KV_Q4_0: return TensorType::Q4_0;
    default: throw Error(ErrorCode::kInvalidArgument, std::string(field) + " " + std::to_string(kv_type) + " is unknown");
  }
}

RuntimeParams to_runtime_params(const edgellm_runtime_params& p) {
  RuntimeParams rp;
  ServiceParams& sp = rp.service;
  ContextParams& cp = sp.context;
  if (p.n_ctx < 0) throw Error(ErrorCode::kInvalidArgument, "n_ctx must be >= 0, got " + std::to_string(p.n_ctx));
  cp.n_ctx = p.n_ctx;
  cp.n_seq_max = p.n_parallel;
  cp.n_threads = p.n_threads;  // explicit counts win over the power mode's (apply_thread_plan fills zeros)
  cp.n_threads_batch = p.n_threads_batch;
  const int power = capi::enum_value(p.power_mode);
  switch (power) {
    case EDGELLM_POWER_NONE: break;
    case EDGELLM_POWER_PERFORMANCE: apply_thread_plan(plan_threads(detect_this_device(), PowerMode::kPerformance), cp); break;
    case EDGELLM_POWER_BALANCED: apply_thread_plan(plan_threads(detect_this_device(), PowerMode::kBalanced), cp); break;
    case EDGELLM_POWER_EFFICIENCY: apply_thread_plan(plan_threads(detect_this_device(), PowerMode::kEfficiency), cp); break;
    default: throw Error(ErrorCode::kInvalidArgument, "power_mode " + std::to_string(power) + " is unknown");
  }
  cp.pin_threads = p.pin_threads;
  cp.kv_type = kv_tensor_type(capi::enum_value(p.kv_type), "kv_type");
  const int kv_type_v = capi::enum_value(p.kv_type_v);
  if (kv_type_v != EDGELLM_KV_SAME) cp.kv_type_v = kv_tensor_type(kv_type_v, "kv_type_v");
  cp.kv_budget_bytes = static_cast<size_t>(p.kv_budget_bytes);
  cp.kv_budget_fraction = p.kv_budget_fraction;
  const int repack = capi::enum_value(p.repack);
  switch (repack) {
    case EDGELLM_REPACK_AUTO: sp.load.repack = RepackMode::kAuto; break;
    case EDGELLM_REPACK_ON: sp.load.repack = RepackMode::kOn; break;
    case EDGELLM_REPACK_OFF: sp.load.repack = RepackMode::kOff; break;
    default: throw Error(ErrorCode::kInvalidArgument, "repack " + std::to_string(repack) + " is unknown");
  }
  if (p.pack_dir != nullptr) {
    if (p.pack_dir[0] == '\0') {
      sp.load.pack_file = PackFileMode::kOff;
    } else {
      sp.load.pack_dir = p.pack_dir;
    }
  }
  sp.max_queued = p.max_queued;
  sp.step_tokens = p.step_tokens;
  sp.warmup_min_free_bytes = static_cast<size_t>(p.warmup_min_free_bytes);
  if (p.chat_template != nullptr) sp.chat_template = p.chat_template;
  const int policy = capi::enum_value(p.input_policy);
  if (policy != EDGELLM_INPUT_REFUSE && policy != EDGELLM_INPUT_STRIP) {
    throw Error(ErrorCode::kInvalidArgument, "input_policy " + std::to_string(policy) + " is unknown");
  }
  sp.input_policy = policy == EDGELLM_INPUT_STRIP ? InputPolicy::kStrip : InputPolicy::kRefuse;
  if (p.model_version != nullptr) {
    rp.model_version = p.model_version;
    if (rp.model_version.empty() || rp.model_version.size() > 64) {
      throw Error(ErrorCode::kInvalidArgument, "model_version must be 1 to 64 bytes");
    }
  }
  if (p.registry_dir != nullptr) rp.registry_dir = p.registry_dir;
  if (p.max_sessions < 0) throw Error(ErrorCode::kInvalidArgument, "max_sessions must be >= 0");
  rp.max_sessions = static_cast<size_t>(p.max_sessions);
  rp.max_session_bytes = static_cast<size_t>(p.max_session_bytes);
  rp.linux_pressure = p.linux_pressure;
  if (p.recover_ms < 0) throw Error(ErrorCode::kInvalidArgument, "recover_ms must be >= 0");
  rp.recover_ms = p.recover_ms;
  // An embedding runtime (role EMBED, or an encoder file the Runtime recognises) reads the
  // fields that mean something to an embedder; the generation ones are ignored there.
  const int role = capi::enum_value(p.role);
  if (role != EDGELLM_ROLE_GENERATE && role != EDGELLM_ROLE_EMBED) {
    throw Error(ErrorCode::kInvalidArgument, "role " + std::to_string(role) + " is unknown");
  }
  rp.role = role == EDGELLM_ROLE_EMBED ? RuntimeRole::kEmbed : RuntimeRole::kGenerate;
  if (p.embed_n_batch < 0) {
    throw Error(ErrorCode::kInvalidArgument, "embed_n_batch must be >= 0, got " + std::to_string(p.embed_n_batch));
  }
  if (p.draft_model != nullptr) {
    if (p.draft_model[0] == '\0') throw Error(ErrorCode::kInvalidArgument, "draft_model is \"\" (NULL: none)");
    sp.draft_model_path = p.draft_model;
  }
  EmbeddingServiceParams& ep = rp.embedding;
  ep.embedder.n_ctx = cp.n_ctx;
  ep.embedder.n_batch = p.embed_n_batch;
  ep.embedder.n_threads = cp.n_threads_batch > 0 ? cp.n_threads_batch : cp.n_threads;  // forwards are prefill-shaped
  ep.embedder.kv_type = cp.kv_type;
  ep.load = sp.load;
  ep.max_queued = sp.max_queued;
  ep.warmup_min_free_bytes = sp.warmup_min_free_bytes;
  ep.input_policy = sp.input_policy;
  return rp;
}

}  // namespace

extern "C" {

edgellm_runtime_params edgellm_runtime_default_params(void) {
  edgellm_runtime_params p{};
  const RuntimeParams d;
  p.struct_size = sizeof(edgellm_runtime_params);
  p.n_ctx = 0;
  p.n_parallel = d.service.context.n_seq_max;
  p.max_queued = d.service.max_queued;
  p.step_tokens = d.service.step_tokens;
  p.n_threads = 0;
  p.n_threads_batch = 0;
  p.pin_threads = false;
  p.power_mode = EDGELLM_POWER_NONE;
  p.kv_type = EDGELLM_KV_F16;
  p.kv_type_v = EDGELLM_KV_SAME;
  p.kv_budget_bytes = 0;
  p.kv_budget_fraction = 0;
  p.repack = EDGELLM_REPACK_AUTO;
  p.pack_dir = nullptr;
  p.warmup_min_free_bytes = d.service.warmup_min_free_bytes;
  p.chat_template = nullptr;
  p.input_policy = EDGELLM_INPUT_REFUSE;
  p.model_version = nullptr;
  p.registry_dir = nullptr;
  p.max_sessions = static_cast<int32_t>(d.max_sessions);
  p.max_session_bytes = d.max_session_bytes;
  p.linux_pressure = d.linux_pressure;
  p.recover_ms = static_cast<int32_t>(d.recover_ms);
  p.role = EDGELLM_ROLE_GENERATE;
  p.embed_n_batch = 0;
  p.draft_model = nullptr;
  return p;
}

edgellm_status edgellm_runtime_create(const char* model, const edgellm_runtime_params* params,
                                      edgellm_runtime** out) {
  if (out == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  return guard([&] {
    if (model == nullptr) return fail(EDGELLM_ERR_INVALID_ARGUMENT, "model is NULL");
    const edgellm_runtime_params p = capi::read_struct(params, edgellm_runtime_default_params(), "params");
    RuntimeParams rp = to_runtime_params(p);
    if (rp.registry_dir.empty()) {
      rp.model_path = model;
    } else {
      rp.registry_name = model;
    }
    auto handle = std::make_unique<edgellm_runtime>();
    handle->rt = std::make_unique<Runtime>(std::move(rp));
    *out = handle.release();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_runtime_destroy(edgellm_runtime* runtime) {
  if (runtime == nullptr) return EDGELLM_OK;
  return guard([&] {
    if (runtime->rt && runtime->rt->on_callback_thread()) {
      return fail(EDGELLM_ERR_WRONG_THREAD, "edgellm_runtime_destroy called from the runtime's own callback");
    }
    if (runtime->rt) runtime->rt->shutdown();  // every request gets its on_finish (cancelled) first
    // An edgellm_embed blocked on its request was woken by the shutdown; one still leaving
    // Runtime::embed (submit) gets out before the runtime goes (microseconds).
    while (runtime->embed_submitting.load(std::memory_order_acquire) != 0) std::this_thread::yield();
    runtime->rt.reset();
    delete runtime;
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_pause(edgellm_runtime* runtime) {
  return guard([&] {
    capi::runtime_of(runtime).pause();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_resume(edgellm_runtime* runtime) {
  return guard([&] {
    capi::runtime_of(runtime).resume();
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_trim(edgellm_runtime* runtime, edgellm_trim_callback done, void* user_data) {
  return guard([&] {
    std::function<void(size_t)> cb;
    if (done != nullptr) cb = [done, user_data](size_t bytes) { done(bytes, user_data); };
    capi::runtime_of(runtime).trim(std::move(cb));
    return EDGELLM_OK;
  });
}

edgellm_status edgellm_warmup(edgellm_runtime* runtime, edgellm_warmup_callback done, void* user_data) {
  return guard([&] {
    std::function<void(bool, const std::string&)> cb;
    if (done != nullptr) cb = [done, user_data](bool ran, const std::string& why) { done(ran, why.c_str(), user_data); };
    capi::runtime_of(runtime).warmup(std::move(cb));
    return EDGELLM_OK;
  });
}

}  // extern "C"
