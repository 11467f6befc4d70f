// `edgellm serve`: the OpenAI-compatible HTTP server (src/server/, docs/server.md), a face of
// one edgellm::Runtime (src/runtime/runtime.h) like the C ABI and NAPI.
//   edgellm serve -m MODEL [--host 127.0.0.1] [--port 8080] [--api-key KEY] [-c N] [-np N]
//                 [--max-queued N] [--cors-origin ORIGIN] [--log-prompts] [--sessions N] ...
//   edgellm serve -m MODEL --embedding-model EMB [--rerank-model RR] [--docqa-index FILE] ...
//   edgellm serve -m EMB --embeddings [--pooling none|mean|cls|last]   (llama-server's embedding mode)
//   edgellm serve -m RR --reranking                                     (--rerank; = --embeddings --pooling rank)
//   edgellm serve --registry DIR -m NAME[@VERSION] ...   (POST /admin/reload follows the registry)
// Loopback only unless --api-key is given; the admin endpoints need the key. The port is bound
// before the model is loaded, so a busy port is reported at once. SIGINT / SIGTERM stop it
// cleanly (open requests are cancelled, the model is unloaded).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_args.h"
#include "command.h"
#include "core/error.h"
#include "core/log.h"
#include "generation_options.h"
#include "gguf/gguf_reader.h"
#include "runtime/runtime.h"
#include "model/pooling_type.h"
#include "server/http_server.h"
#include "server/listening_socket.h"
#include "service/inference_service.h"
#include "service/request_limits.h"
#if defined(EDGELLM_HAVE_CURL)
#include "tools/fetch/https_transport.h"
#endif

namespace edgellm::cli {
namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_stop_signal(int) { g_stop.store(true); }

std::string file_stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = name.rfind(".gguf");
  if (dot != std::string::npos && dot + 5 == name.size()) name.resize(dot);
  return name;
}

int cmd_serve(const std::vector<std::string>& args) {
  ModelOptions model_opt;
  ContextOptions ctx;
  std::string chat_template;
  int32_t parallel = 4;
  int32_t max_queued = 3;
  int32_t port = 8080;
  int64_t timeout_s = 120;
  int32_t max_body_kib = 1024;
  server::ServerOptions so;
  bool no_warmup = false;
  bool no_linux_pressure = false;
  std::string input_policy = "refuse";
  std::string api_key_env;
  std::string embedding_model, rerank_model, pooling_name, docqa_index;
  bool embeddings_mode = false, reranking_mode = false;
  ArgParser ap("serve", "-m MODEL [--host ADDR] [--port N] [--api-key KEY] [options]");
  add_model_options(ap, &model_opt);
  ap.add_string("--host", &so.host, "ADDR",
                "address to listen on (default 127.0.0.1; any non-loopback address needs --api-key)");
  ap.add_int("--port", &port, "N", "TCP port; 0 = any free one, printed at start (default 8080)", 0, 65535);
  ap.add_string("--api-key", &so.api_key, "KEY", "require 'Authorization: Bearer KEY' on every endpoint but / and /health");
  ap.add_string("--api-key-env", &api_key_env, "VAR", "read the API key from environment variable VAR (keeps it out of ps)");
  ap.add_int(shared_option("parallel"), &parallel, 1, 64, "requests decoded at once; default 4");
  ap.add_int("--max-queued", &max_queued, "N", "requests that may wait for a sequence; more get 429 (default 3)", 0, 4096);
  ap.add_int64("--timeout", &timeout_s, "S", "deadline of one request in seconds, queue wait included (default 120)", 1,
               86400);
  ap.add_int("--max-body-kib", &max_body_kib, "N", "largest request body in KiB; larger gets 413 (default 1024)", 1,
             1 << 20);
  RuntimeParams rp;
  int32_t max_sessions = static_cast<int32_t>(rp.max_sessions);
  int32_t max_session_mib = static_cast<int32_t>(rp.max_session_bytes >> 20);
  ap.add_int("--sessions", &max_sessions, "N",
             "sessions kept in memory for x_edgellm_session and /v1/sessions (LRU; 0 = off; default 16)", 0, 1 << 16);
  ap.add_int("--sessions-max-mib", &max_session_mib, "N",
             "their total size in MiB, also the largest session import (LRU; default 256)", 1, 1 << 20);
  ap.add_string("--cors-origin", &so.cors_origin, "ORIGIN",
                "allow browser pages from ORIGIN to call the server ('*': any page; default: CORS off)");
  ap.add_custom("--allowed-hosts", "H1,H2", "without an API key, also answer requests whose Host is one of these "
                "names (default: localhost, 127.0.0.1, [::1] and --host; '*': any)",
                [&](const std::string& v) {
                  for (size_t start = 0; start <= v.size();) {
                    const size_t comma = std::min(v.find(',', start), v.size());
                    std::string name = v.substr(start, comma - start);
                    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
                    while (!name.empty() && name.back() == ' ') name.pop_back();
                    if (!name.empty()) so.allowed_hosts.push_back(name);
                    start = comma + 1;
                  }
                });
  int32_t max_connections = static_cast<int32_t>(so.max_connections);
  int32_t max_client_connections = static_cast<int32_t>(so.max_client_connections);
  ap.add_int("--max-connections", &max_connections, "N", "open connections in all; more are refused 503 (default 512)",
             1, 1 << 20);
  ap.add_int("--max-client-connections", &max_client_connections, "N",
             "open connections from one client address; more are refused 503 (default 64)", 1, 1 << 20);
  ap.add_flag("--log-prompts", &so.log_prompts, "log request text (default: only ids, sizes and timings)");
  ap.add_string("--alias", &so.model_name, "NAME", "model id in /v1/models and responses (default: the file name)");
  ap.add_string("--chat-template", &chat_template, "NAME|FILE", "chat template (default: the model's own)");
  ap.add_flag("--no-warmup", &no_warmup, "skip the warm-up forward pass at start");
  ap.add_flag("--no-linux-pressure", &no_linux_pressure,
              "do not read Linux's memory pressure (PSI, cgroup events) and thermal zones for the degradation "
              "ladder (default: read them; POST /admin/pressure feeds levels either way)");
  // The ladder's "smaller model" rung (docs/device-fitness.md), as the C ABI's
  // edgellm_set_fallback_model and NAPI's setFallbackModel give it.
  std::string fallback_model, fallback_version = "fallback";
  ap.add_string("--fallback-model", &fallback_model, "FILE",
                "the smaller model the degradation ladder serves at its rung 4 (memory level 2 and up; default: none)");
  ap.add_string("--fallback-version", &fallback_version, "V",
                "the version that labels its answers (default \"fallback\")");
  SpeculationOptions spec;
  add_speculation_options(ap, &spec);
  ap.add_string("--input-policy", &input_policy, "refuse|strip",
                "text with invalid UTF-8 or control characters: refused 400 (default) or stripped");
  // The router is the Runtime's (runtime/router.h, docs/router.md); this command gives it the
  // cloud transport: libcurl, certificates verified (tools/fetch/https_transport.h).
  RouterParams& router = rp.router;
  std::string cloud_url, cloud_url_large, cloud_key_env, cloud_ca;
  bool cloud_insecure_tls = false, cloud_allow_http = false, no_cloud_on_failure = false;
  int32_t cloud_timeout_ms = router.cloud_timeout_ms;
  double route_local = router.local_threshold, route_cloud = router.cloud_threshold;
  ap.add_string("--cloud-url", &cloud_url, "URL",
                "router: OpenAI-compatible cloud endpoint base, https://HOST[:PORT][/v1] (plain http:// only to "
                "loopback or with --cloud-allow-http; default: no cloud)");
  ap.add_string("--cloud-model", &router.cloud_model, "NAME",
                "router: model name sent to the cloud (default: this server's model name)");
  ap.add_string("--cloud-model-large", &router.cloud_model_large, "NAME",
                "router: a second, larger cloud tier: asked for a full context and when the first tier fails");
  ap.add_string("--cloud-url-large", &cloud_url_large, "URL", "router: the large tier's endpoint (default: --cloud-url)");
  ap.add_string("--cloud-key-env", &cloud_key_env, "VAR", "router: environment variable holding the cloud's API key");
  ap.add_string("--cloud-ca", &cloud_ca, "FILE", "router: PEM bundle of the CA(s) to trust for the cloud (default: the system's)");
  ap.add_flag("--cloud-insecure-tls", &cloud_insecure_tls,
              "router: do not verify the cloud's certificate (testing only: anyone on the path can read the chat)");
  ap.add_flag("--cloud-allow-http", &cloud_allow_http,
              "router: allow plain http:// to a non-loopback cloud (the key and the chat cross the network unencrypted)");
  ap.add_int("--cloud-timeout", &cloud_timeout_ms, "MS",
             "router: a cloud call not answered by then fails over (default 30000)", 1, 600000);
  ap.add_flag("--no-cloud-on-failure", &no_cloud_on_failure,
              "router: a local run that fails (out of memory, degraded, context full) is not retried in the cloud");
  ap.add_custom("--route-local", "P", "router: answer locally when the confidence score >= P (default 0.85)",
                [&](const std::string& v) { route_local = parse_double(v, "--route-local"); });
  ap.add_custom("--route-cloud", "P", "router: ask the cloud when the score < P (default 0.6)",
                [&](const std::string& v) { route_cloud = parse_double(v, "--route-cloud"); });
  ap.add_flag("--privacy", &router.privacy, "router: never call the cloud (answers stay on this device)");
  // Embeddings (docs/server.md, "Embeddings and rerank"). llama-server's way, one model per
  // server: -m is the embedder (--embeddings) or the cross-encoder (--reranking) and the
  // generation endpoints answer 501. Ours besides: up to three runtimes in one server, the -m
  // generator with --embedding-model / --rerank-model beside it (document Q&A needs all three).
  ap.add_flag("--embeddings,--embedding", &embeddings_mode,
              "serve only POST /v1/embeddings, from the -m model (llama-server's embedding mode: the generation "
              "endpoints answer 501)");
  ap.add_flag("--reranking,--rerank", &reranking_mode,
              "serve only POST /v1/rerank, from the -m cross-encoder with rank pooling (llama-server's)");
  ap.add_string("--embedding-model", &embedding_model, "FILE",
                "also serve POST /v1/embeddings with this embedding model (BERT family, or Qwen3-Embedding)");
  ap.add_string("--rerank-model", &rerank_model, "FILE",
                "also serve POST /v1/rerank with this cross-encoder (bge-reranker, ms-marco MiniLM)");
  ap.add_string(shared_option("pooling"), &pooling_name,
                "of /v1/embeddings, default the model's; rank: --reranking's");
  ap.add_string("--docqa-index", &docqa_index, "FILE",
                "also serve document Q&A (/v1/docqa/*) on this index file (`edgellm docqa`'s; created when absent), "
                "embedded by --embedding-model, answered by -m");
  add_context_options(ap, &ctx);
  add_kv_type_options(ap, &ctx.kv);
  if (!ap.parse(args)) return 0;
  if (!docqa_index.empty() && embedding_model.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "--docqa-index needs --embedding-model FILE (the model that embeds the documents and questions)");
  }
  PoolingType pooling = PoolingType::kUnspecified;
  if (!pooling_name.empty()) {
    const auto p = pooling_type_from_name(pooling_name);
    if (!p.has_value()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--pooling '" + pooling_name + "' is not one of none, mean, cls, last, rank");
    }
    pooling = *p;
  }
  // llama-server: --reranking is --embeddings with rank pooling; --pooling rank with --embeddings
  // is the same server.
  if (embeddings_mode && pooling == PoolingType::kRank) reranking_mode = true;
  const bool embedding_only = embeddings_mode || reranking_mode;
  if (embedding_only) {
    if (reranking_mode && pooling != PoolingType::kUnspecified && pooling != PoolingType::kRank) {
      throw Error(ErrorCode::kInvalidArgument, "--reranking scores with rank pooling: --pooling " + pooling_name +
                                                   " does not combine with it");
    }
    if (!embedding_model.empty() || !rerank_model.empty() || !docqa_index.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "--embeddings / --reranking serve the -m model alone (llama-server's embedding mode); "
                  "--embedding-model, --rerank-model and --docqa-index go beside a generation model given with -m");
    }
    if (!cloud_url.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "--cloud-url routes generation: this server only embeds (--embeddings)");
    }
  } else if (pooling == PoolingType::kRank) {
    throw Error(ErrorCode::kInvalidArgument, "--pooling rank: give --reranking (-m a cross-encoder), or --rerank-model");
  } else if (pooling != PoolingType::kUnspecified && embedding_model.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--pooling needs --embeddings (-m an embedding model) or --embedding-model");
  }
  if (model_opt.model.empty()) throw Error(ErrorCode::kInvalidArgument, "no model given (-m MODEL)");
  if (!api_key_env.empty()) {
    const char* v = std::getenv(api_key_env.c_str());
    if (v == nullptr || *v == '\0') throw Error(ErrorCode::kInvalidArgument, "--api-key-env: $" + api_key_env + " is empty");
    so.api_key = v;
  }
  std::string cloud_key;
  if (!cloud_key_env.empty()) {
    const char* v = std::getenv(cloud_key_env.c_str());
    if (v == nullptr) throw Error(ErrorCode::kInvalidArgument, "--cloud-key-env: $" + cloud_key_env + " is not set");
    cloud_key = v;
  }
  if (!(route_cloud >= 0 && route_cloud <= route_local && route_local <= 1.0)) {
    throw Error(ErrorCode::kInvalidArgument, "--route-cloud and --route-local: need 0 <= cloud <= local <= 1");
  }
  router.local_threshold = route_local;
  router.cloud_threshold = route_cloud;
  router.cloud_timeout_ms = cloud_timeout_ms;
  router.cloud_on_failure = !no_cloud_on_failure;
  if (cloud_url.empty() && (!cloud_url_large.empty() || !router.cloud_model_large.empty())) {
    throw Error(ErrorCode::kInvalidArgument, "--cloud-model-large and --cloud-url-large need --cloud-url");
  }
  if (!cloud_url_large.empty() && router.cloud_model_large.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--cloud-url-large needs --cloud-model-large (the large tier's model)");
  }
  std::shared_ptr<CloudTransport> transport;
  if (!cloud_url.empty()) {
#if defined(EDGELLM_HAVE_CURL)
    HttpsTransportOptions to;
    to.tiers["small"] = CloudEndpoint{cloud_url, cloud_key};
    if (!router.cloud_model_large.empty()) {
      to.tiers["large"] = CloudEndpoint{cloud_url_large.empty() ? cloud_url : cloud_url_large, cloud_key};
    }
    to.ca_file = cloud_ca;
    to.insecure_tls = cloud_insecure_tls;
    to.allow_http = cloud_allow_http;
    to.timeout_ms = cloud_timeout_ms + 5000;  // the router gives up first, by its own timeout
    transport = std::make_shared<HttpsTransport>(std::move(to));  // checks the URLs (https, or http to loopback)
#else
    throw Error(ErrorCode::kUnsupported, "--cloud-url: this build has no libcurl (the router's HTTPS client)");
#endif
  }
  // Speculative decoding in the service: the server's default mode for requests that do not
  // choose; with -md (--spec draft) the runtime holds the draft model, one small draft context
  // per --parallel sequence, and requests may also choose "draft" themselves.
  const SpeculationParams spec_params = speculation_params(spec);  // checks the mode's name and -md
  so.speculation = speculation_mode_name(spec_params.mode);
  so.draft_max = spec_params.draft_max;
  so.port = port;
  so.deadline_ms = timeout_s * 1000;
  so.max_body_bytes = static_cast<size_t>(max_body_kib) << 10;
  so.max_connections = static_cast<size_t>(max_connections);
  so.max_client_connections = static_cast<size_t>(max_client_connections);
  // With --registry the Runtime resolves NAME[@VERSION] itself (the current or named version,
  // re-hashed unless unchanged since its last verification; a file that fails is not served),
  // labels results with the registry's version and follows the registry on /admin/reload.
  if (model_opt.registry.empty()) {
    rp.model_path = model_opt.model;
  } else {
    require_registry(model_opt.registry);  // read, never created
    rp.registry_dir = model_opt.registry;
    rp.registry_name = model_opt.model;
  }
  if (so.model_name.empty()) so.model_name = model_opt.registry.empty() ? file_stem(model_opt.model) : model_opt.model;
  if (router.cloud_model.empty()) router.cloud_model = so.model_name;
  router.transport = transport;

  ServiceParams& sp = rp.service;
  sp.context = context_params(ctx);
  sp.context.n_seq_max = parallel;
  sp.load = model_load_params(ctx);
  sp.max_queued = max_queued;
  sp.chat_template = chat_template;
  sp.input_policy = input_policy_from_name(input_policy);
  if (spec_params.mode == SpeculationMode::kDraft) sp.draft_model_path = spec.model_draft;  // loaded with -m's options
  rp.max_sessions = static_cast<size_t>(max_sessions);
  rp.max_session_bytes = static_cast<size_t>(max_session_mib) << 20;
  rp.linux_pressure = !no_linux_pressure;
  if (!fallback_model.empty()) {
    // Opened now (the header only), not first when the ladder needs it, perhaps days later: a
    // path that is not a readable GGUF stops the server at start, naming it.
    try {
      (void)gguf::GgufFile::open(fallback_model);
    } catch (const Error& e) {
      throw Error(e.code(), "--fallback-model " + fallback_model + ": " + e.what());
    }
    rp.fallback_models = {{fallback_model, fallback_version}};
  }
  // Refuse a public bind, and take the port, before spending seconds on loading the model: a
  // port that is in use is reported now, naming it.
  server::HttpServer::check_options(so);
  server::ListeningSocket socket = server::ListeningSocket::open(so.host, so.port);
  // Info messages (request ids, timings; prompts with --log-prompts) to stderr.
  set_log_sink([](LogLevel level, const char* message, void*) {
    std::fprintf(stderr, "[%s] %s\n", log_level_name(level), message);
  }, nullptr, LogLevel::kInfo);
  // The embedding runtimes: their own queue (8 waiting), the server's threads, the model's context.
  auto embedding_params = [&](const std::string& path) {
    RuntimeParams ep;
    ep.model_path = path;
    ep.model_version = "1";
    ep.role = RuntimeRole::kEmbed;
    ep.embedding.embedder.n_threads = ctx.threads_batch > 0 ? ctx.threads_batch : ctx.threads;
    ep.embedding.load = model_load_params(ctx);
    ep.embedding.input_policy = input_policy_from_name(input_policy);
    return ep;
  };
  auto embedding_runtime = [&](const std::string& path) { return std::make_unique<Runtime>(embedding_params(path)); };
  const std::unique_ptr<Runtime> embedder = embedding_model.empty() ? nullptr : embedding_runtime(embedding_model);
  const std::unique_ptr<Runtime> reranker = rerank_model.empty() ? nullptr : embedding_runtime(rerank_model);
  if (embedding_only) {  // -m is the embedder (from the registry too: the Runtime resolves it)
    RuntimeParams ep = embedding_params(rp.model_path);
    ep.registry_dir = rp.registry_dir;
    ep.registry_name = rp.registry_name;
    rp = std::move(ep);
  }
  Runtime runtime(std::move(rp));
  server::HttpServer http(runtime, so, std::move(socket));
  if (!embedding_only && runtime.role() == RuntimeRole::kEmbed) {
    throw Error(ErrorCode::kInvalidArgument,
                "-m " + model_opt.model + " is an embedding model (an encoder): serve it with --embeddings (a "
                "cross-encoder with --reranking), or beside a generator with --embedding-model FILE");
  }
  if (embedding_only) {
    Runtime* own = &runtime;
    http.attach_embedding_runtimes(reranking_mode ? nullptr : own, so.model_name, reranking_mode ? own : nullptr,
                                   so.model_name, reranking_mode ? PoolingType::kUnspecified : pooling);
  } else {
    http.attach_embedding_runtimes(embedder.get(), file_stem(embedding_model), reranker.get(),
                                   file_stem(rerank_model), pooling);
  }
  if (!docqa_index.empty()) http.attach_docqa(docqa_index, DocQaOptions{});
  const int bound = http.bind();
  if (!no_warmup) runtime.warmup();
  std::fprintf(stderr, "edgellm serve: %s version %s on http://%s:%d (%s)%s%s\n", so.model_name.c_str(),
               runtime.model_version().c_str(), so.host.c_str(), bound,
               reranking_mode    ? "/v1/rerank only"
               : embedding_only  ? "/v1/embeddings only"
                                 : (std::to_string(parallel) + " parallel, " + std::to_string(max_queued) + " queued").c_str(),
               so.api_key.empty() ? "" : ", API key required",
               runtime.router_params().privacy ? ", router: privacy mode"
               : transport                      ? ", router: cloud on"
                                                : "");
  if (embedder) std::fprintf(stderr, "edgellm serve: /v1/embeddings: %s\n", file_stem(embedding_model).c_str());
  if (reranker) std::fprintf(stderr, "edgellm serve: /v1/rerank: %s\n", file_stem(rerank_model).c_str());
  if (!docqa_index.empty()) std::fprintf(stderr, "edgellm serve: /v1/docqa: %s\n", docqa_index.c_str());
  std::fflush(stderr);

  // serve() blocks; a watcher thread turns SIGINT/SIGTERM into stop().
  std::signal(SIGPIPE, SIG_IGN);  // a client that left must not kill the server mid-write
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  std::atomic<bool> served{false};
  std::thread watcher([&] {
    while (!g_stop.load() && !served.load()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    http.stop();
  });
  http.serve();
  served.store(true);
  watcher.join();
  runtime.shutdown();
  if (embedder) embedder->shutdown();
  if (reranker) reranker->shutdown();
  std::fprintf(stderr, "edgellm serve: stopped\n");
  return 0;
}

const CommandRegistration kServeRegistration("serve", "OpenAI-compatible HTTP server with a web chat page", cmd_serve);

}  // namespace
}  // namespace edgellm::cli
