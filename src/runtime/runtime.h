// The Runtime: the one object an app (or `edgellm serve`) holds. It owns everything between a
// face and the forward pass, so a request takes the same path and the same checks whichever
// face it came through:
//
//            C ABI (src/api)        NAPI (bindings/napi, over the C ABI)       edgellm serve
//                      \                        |                               /
//   Runtime ---------------------------------------------------------------------------------
//     router          local first, the cloud where allowed (router.h; CloudTransport from the host)
//     sessions        conversations' KV by id (session_store.h), files, import / export
//     degradation     pressure (host-fed + Linux readers) -> ladder rungs (degradation_controller.h)
//     model host      versions, hot swap, draining (model_host.h), registry reload
//     request checks  one place (service/request_limits.h), applied by the service at submit
//     metrics         service + ladder + router + sessions, JSON and Prometheus
//   InferenceService  scheduler thread -> Context -> forward (service/inference_service.h)
//
// Request path: submit -> (route != kOff and a router: Router) -> sessions (id / files) ->
// DegradationController (refuses at rung >= 5) -> ModelHost (current version) ->
// InferenceService::submit (check_request, queue).
//
// Two roles (RuntimeParams::role). A generation runtime serves text as above. An embedding
// runtime serves embeddings and rerank scores: embed() -> EmbeddingService::submit
// (check_embedding_request, queue), the same queue / BUSY / deadline / cancel / pause / trim /
// metrics machinery, without a model host (an embedder keeps its model: vectors of two models
// do not compare, so a swap would silently break every index built with it), ladder, sessions
// or router. An app that needs both holds two runtimes; their forwards share the process's
// thread pool, which serialises them, and the planner counts both models (device/planner.h).
//
// Threads: every public function may be called from any thread, including a request's
// callbacks, unless it says otherwise. Callbacks run on a scheduler thread (tokens, local
// results) or the router thread (routed answers), never under a lock of the runtime.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/json.h"
#include "generation/classify.h"
#include "runtime/degradation_controller.h"
#include "runtime/model_host.h"
#include "runtime/router.h"
#include "runtime/session_store.h"
#include "service/embedding_service.h"
#include "service/inference_service.h"

namespace edgellm {

enum class RuntimeRole {
  kGenerate,  // text (InferenceService); an encoder model makes the runtime kEmbed (it cannot generate)
  kEmbed,     // embeddings and rerank scores (EmbeddingService): llama-server's --embeddings / --reranking
};
const char* runtime_role_name(RuntimeRole role);  // "generate", "embed"

struct RuntimeParams {
  std::string model_path;           // the GGUF file (with a registry: see registry_dir)
  std::string model_version = "1";  // labels results (RequestResult::model_version)
  // With a registry (registry/model_registry.h): model_path may be left empty and registry_name
  // ("NAME" or "NAME@VERSION") names the model; it is verified by SHA-256 before it loads and
  // reload_from_registry() switches to the registry's current version later.
  std::string registry_dir;
  std::string registry_name;
  ServiceParams service;

  // The degradation ladder (docs/device-fitness.md): models its "smaller model" rung may use
  // (path, version; best first), hysteresis, and whether Linux's pressure files are read too.
  std::vector<std::pair<std::string, std::string>> fallback_models;
  int64_t recover_ms = 10000;
  bool linux_pressure = false;

  // Sessions kept by id (ServiceRequest::session_id): count and total bytes, LRU. 0: off.
  size_t max_sessions = 16;
  size_t max_session_bytes = size_t{256} << 20;

  RouterParams router;  // no transport: no cloud (requests with a route are answered locally)

  RuntimeRole role = RuntimeRole::kGenerate;
  EmbeddingServiceParams embedding;  // role kEmbed: the embedder's context, batch, threads, queue
};

class Runtime {
 public:
  // Loads the model and starts every part. Throws Error (kIo, kInvalidFile, kUnsupported,
  // kInvalidArgument, kOutOfMemory) and leaves nothing running.
  explicit Runtime(RuntimeParams params);
  // shutdown()
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Ends every request (each gets its on_finish, cancelled), stops every thread, unloads the
  // model. Idempotent. Throws Error(kInvalidArgument) from a callback of this runtime (it would
  // wait for itself): on_callback_thread().
  void shutdown();
  bool on_callback_thread() const;

  // The role this runtime serves (an encoder model opened as kGenerate is kEmbed).
  RuntimeRole role() const { return role_; }

  // ---- embeddings and reranking (role kEmbed)
  // Queues an embedding or rerank request (service/embedding_request.h documents every field).
  // on_finish runs exactly once, on the embedder's scheduler thread, with model_version set.
  // Returns the request's id (for cancel()). Throws Error: kInvalidArgument (the checks of
  // request_limits.h), kUnsupported (rerank without a classification head; a generation
  // runtime), kBusy, kCancelled (shut down).
  uint64_t embed(EmbeddingRequest request);
  // The embedding service (tokenizer, model, dims, default pooling, can_rerank); null on a
  // generation runtime. Valid for the runtime's life.
  std::shared_ptr<EmbeddingService> embedding_service() const { return embedder_; }
  EmbeddingMetrics embedding_metrics() const;

  // ---- requests (role kGenerate; an embedding runtime throws kUnsupported where a function
  // only makes sense for generation: submit, swap_model, reload_from_registry, sessions, router)
  struct Submitted {
    uint64_t id = 0;      // 0 is never an id
    std::string version;  // the model version that serves it ("router" while a route decides)
  };
  // Queues a request (ServiceRequest documents every field). Throws Error: kInvalidArgument (the
  // checks of request_limits.h, a bad session id, an unreadable session file: kIo /
  // kInvalidFile), kBusy, kDegraded (the ladder refuses new requests), kCancelled (shut down).
  // On success on_finish runs exactly once.
  Submitted submit(ServiceRequest request);
  // Ends a waiting or running request (cancelled). False when the id is unknown or finished.
  bool cancel(uint64_t id);
  void pause();
  void resume();
  bool paused() const;
  // Scratch and unused KV pages back to the system between two steps; done(bytes released).
  void trim(std::function<void(size_t)> done = {});
  // A short forward in the background (InferenceService::warmup).
  void warmup(std::function<void(bool ran, const std::string& why)> done = {});

  // ---- classification (role kGenerate; generation/classify.h)
  // Chooses one of request.labels for request.text by the serving model's log-probability of
  // each label after the prompt. Served by the serving version's InferenceService like a
  // request (InferenceService::submit_classify, service/classify_job.h): queued with the
  // generation requests (the same max_queued / BUSY rule; deadline_ms counts from the call,
  // queue wait included), run by its scheduler between two steps on the service's Context: the
  // prompt's prefix from the KV prefix cache (ClassifyResult::cached_tokens), the rest prefilled
  // once, the labels forking the prompt's blocks, one batched forward per 8 labels; the prompt's
  // full blocks stay cached for the next classify or chat with the same start. Blocks until the
  // answer; any number of threads may classify at once (they queue). Any thread but a callback
  // of this runtime (the scheduler would wait for itself). A call that did not finish returns
  // finish_reason kTimeout (deadline_ms passed, queued or running) or kCancelled (the runtime
  // shut down) with index -1. Throws Error: kInvalidArgument (check_classify_request; a prompt
  // plus the longest label over the service's n_ctx; from a callback), kUnsupported (an
  // embedding runtime), kDegraded (the ladder refuses requests), kBusy (the queue is full),
  // kCancelled (already shut down), kOutOfMemory (the prompt and its label forks exceed the
  // whole KV pool).
  ClassifyResult classify(ClassifyRequest request);

  // ---- the model
  // Loads `path` and switches new requests to it (the current version keeps serving what it
  // admitted and while the new one loads; a failure changes nothing). Blocks while loading. At
  // a degraded rung the new model gets that rung's configuration.
  void swap_model(const std::string& path, const std::string& version);
  // The registry's current version of registry_name, verified, swapped in when it differs from
  // the one serving. Returns the version serving afterwards. Throws kInvalidArgument without a
  // registry, what the registry throws (kInvalidFile: digest mismatch) and what swap_model throws.
  std::string reload_from_registry();
  std::string model_version() const;
  std::vector<std::string> live_versions() const;  // serving first, then those draining
  uint64_t swaps() const;
  // The service serving new requests (tokenizer, template, model, context parameters). Valid
  // until the next swap; hold the pointer while using it.
  std::shared_ptr<InferenceService> service() const;

  // ---- degradation
  void set_pressure(const PressureSignals& signals);
  void set_fallback_models(std::vector<std::pair<std::string, std::string>> models);
  Rung rung() const;
  bool wait_degradation_settled(std::chrono::milliseconds timeout) const;
  Json degradation_json() const;

  // ---- sessions
  // Checks bytes against the serving model (kInvalidFile: truncated / corrupted;
  // kInvalidArgument: another model file, KV type or shape) and keeps them under id. Returns
  // the positions the session holds. kInvalidArgument: a bad id, sessions off, too large.
  int32_t import_session(const std::string& id, std::string bytes);
  std::shared_ptr<const std::string> export_session(const std::string& id);  // nullptr: none
  bool delete_session(const std::string& id);
  // The same through files (kv/session_file.h format): load_session_file imports a file,
  // save_session_file writes a kept session (false when there is none).
  int32_t load_session_file(const std::string& id, const std::string& path);
  bool save_session_file(const std::string& id, const std::string& path);
  SessionStore& sessions() { return sessions_; }

  // ---- router
  void set_router(RouterParams params);  // kInvalidArgument for thresholds out of order
  RouterParams router_params() const;

  // ---- metrics: the service's, the ladder's, the router's, the sessions' and the model host's
  ServiceMetrics service_metrics() const;
  RouterCounters router_counters() const;
  Json metrics_json() const;
  std::string metrics_prometheus() const;

 private:
  ModelHost::Submitted submit_local(ServiceRequest request);  // sessions -> ladder -> host
  void check_routed(ServiceRequest& request) const;
  void require_generator(const char* what) const;  // kUnsupported on an embedding runtime

  RuntimeParams params_;
  RuntimeRole role_ = RuntimeRole::kGenerate;
  SessionStore sessions_;
  std::shared_ptr<EmbeddingService> embedder_;  // role kEmbed (host_, ladder_, router_ null)
  std::unique_ptr<ModelHost> host_;
  std::unique_ptr<DegradationController> ladder_;  // destroyed before host_
  std::unique_ptr<Router> router_;                 // destroyed before both
  mutable std::mutex swap_mutex_;                  // one swap or reload at a time
  std::mutex shutdown_mutex_;
  bool shut_down_ = false;
  std::atomic<bool> stopping_{false};  // set first by shutdown(): classify refuses from then on
};

}  // namespace edgellm
