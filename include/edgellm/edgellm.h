/*
 * EdgeLLM C ABI: run a GGUF language model on the device, many requests at once, from any thread.
 * docs/c-api.md is the guide (examples, the limits, what changed between ABI versions).
 *
 * Lifecycle (the order of this header)
 *   edgellm_runtime_create()    load the model, start the runtime (blocks: initialise once, off
 *                               the UI thread)
 *   edgellm_submit()            queue a request; returns at once with an id, or BUSY when the
 *                               waiting queue is full; tokens then stream through on_token and
 *                               exactly one on_finish follows
 *   edgellm_cancel(), _pause(), _resume(), _trim(), _warmup()
 *   sessions, model and text, hot swap and registry, pressure, router, metrics
 *   edgellm_runtime_destroy()   cancel what is left (each request still gets on_finish), stop
 *
 * Threads
 *   The runtime runs every forward pass and every callback on its own threads: a scheduler
 *   thread (tokens, results) and a router thread (routed answers). The library holds none of its
 *   locks while it calls back, so a callback may call any function here except those that say
 *   "not from a callback" (they return EDGELLM_ERR_WRONG_THREAD there). Callbacks hold up every
 *   running request: copy what you need and return. Unless a function says otherwise it is safe
 *   to call from any thread at any time on a live runtime. The log callback may run on any thread.
 *
 * Errors
 *   Every function returns an edgellm_status (or a value documented below). No C++ exception
 *   crosses this boundary. A failed call changes nothing unless its documentation says so, and
 *   edgellm_last_error() then returns a message for the calling thread. Messages never contain
 *   the user's text.
 *
 * Memory
 *   The library copies every input before a call returns. Pointers it passes to callbacks are
 *   valid only during the callback. Outputs of variable size go to caller-owned buffers: pass
 *   (buf, capacity, &length); *length receives the full size (bytes without the NUL, or
 *   elements), and a capacity that is too small gives EDGELLM_ERR_BUFFER_TOO_SMALL with nothing
 *   written, so a first call with capacity 0 asks for the size.
 *
 * Growing without breaking
 *   Every struct starts with `uint32_t struct_size`. Structs you pass in come from their
 *   *_default_params() / *_init() function, which sets struct_size to the size this header
 *   declares; the library reads only the fields that lie within struct_size and uses the
 *   defaults for the rest, so a program built against an older header keeps working with a newer
 *   library. Structs the library passes out carry the library's struct_size: read a field only
 *   when offsetof(field) < struct_size (a newer program on an older library). New fields are only
 *   ever appended.
 */
#ifndef EDGELLM_EDGELLM_H
#define EDGELLM_EDGELLM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define EDGELLM_API __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define EDGELLM_API __attribute__((visibility("default")))
#else
#define EDGELLM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library, "MAJOR.MINOR.PATCH". */
EDGELLM_API const char* edgellm_version(void);
/* Changes when this header breaks compatibility (docs/c-api.md, "ABI history"): compare
 * edgellm_abi_version() with EDGELLM_ABI_VERSION to detect a header / library mismatch. Appending a
 * struct field does not change it. */
#define EDGELLM_ABI_VERSION 5
EDGELLM_API uint32_t edgellm_abi_version(void);

/* ============================================================================== statuses, logs */

typedef enum edgellm_status {
  EDGELLM_OK = 0,
  /* A null pointer where one is required, a value out of range, text that is not valid UTF-8 or
   * holds control characters (input policy REFUSE), an unknown message role, no input or more
   * than one. Nothing was changed or queued. */
  EDGELLM_ERR_INVALID_ARGUMENT = 1,
  /* The waiting queue is full: max_queued requests already wait beyond those the free sequences
   * take at once. Nothing was queued; try again later. Answered at once, never after a wait. */
  EDGELLM_ERR_BUSY = 2,
  /* No waiting or running request, session or registry entry has this id / name. */
  EDGELLM_ERR_NOT_FOUND = 3,
  /* A file cannot be opened, read or written. */
  EDGELLM_ERR_IO = 4,
  /* A file is malformed (not GGUF, truncated, hostile, a digest mismatch, a corrupted session). */
  EDGELLM_ERR_INVALID_FILE = 5,
  /* Well-formed but not supported (architecture, tensor type, this CPU's kernels). */
  EDGELLM_ERR_UNSUPPORTED = 6,
  /* Memory could not be allocated, or a request needs more KV blocks than the pool has. */
  EDGELLM_ERR_OUT_OF_MEMORY = 7,
  /* In a result: the prompt does not fit the context (it needs n_ctx - 1 positions at most). */
  EDGELLM_ERR_CONTEXT_FULL = 8,
  /* The runtime is shutting down; nothing was queued. */
  EDGELLM_ERR_SHUT_DOWN = 9,
  /* The output buffer is smaller than *length + 1 (text) or *length (arrays); nothing written. */
  EDGELLM_ERR_BUFFER_TOO_SMALL = 10,
  /* Called from one of the runtime's own callbacks where that would wait for itself or stall
   * every request (edgellm_runtime_destroy, edgellm_swap_model, edgellm_reload_registry).
   * Nothing changed. */
  EDGELLM_ERR_WRONG_THREAD = 11,
  /* A bug in EdgeLLM (a broken invariant). The request or call failed; the runtime runs on. */
  EDGELLM_ERR_INTERNAL = 12,
  /* The device is under pressure (memory, heat, power) and the degradation ladder refuses new
   * requests, or ended a running one (docs/device-fitness.md); the message names the reason.
   * Nothing was queued; retry when the pressure is gone. */
  EDGELLM_ERR_DEGRADED = 13,
  /* A blocking call's deadline passed before its result was there (edgellm_embed,
   * edgellm_rerank: deadline_ms, the queue wait included); nothing was written. */
  EDGELLM_ERR_TIMEOUT = 14
} edgellm_status;

/* "ok", "invalid_argument", "busy", ... (static strings; "unknown" for other values). */
EDGELLM_API const char* edgellm_status_name(edgellm_status status);

/* The message of the last failed call on this thread ("" when none): valid until the next call
 * into the library on this thread. */
EDGELLM_API const char* edgellm_last_error(void);

typedef enum edgellm_log_level {
  EDGELLM_LOG_DEBUG = 0,
  EDGELLM_LOG_INFO = 1,
  EDGELLM_LOG_WARN = 2,
  EDGELLM_LOG_ERROR = 3
} edgellm_log_level;

typedef void (*edgellm_log_callback)(edgellm_log_level level, const char* message, void* user_data);

/* Sends the library's log lines at min_level and above to fn (process-wide, every runtime).
 * NULL fn: warnings and errors go to stderr. The callback may run on any thread, concurrently;
 * after replacing it, a call already in progress may still reach the old one. */
EDGELLM_API void edgellm_set_log_callback(edgellm_log_callback fn, void* user_data, edgellm_log_level min_level);

/* ============================================================================== the runtime */

typedef struct edgellm_runtime edgellm_runtime; /* opaque */

/* KV cache element types. Q8_0 (8-bit, half of F16's memory) and Q4_0 (4-bit, 36 % of F16's at
 * head_dim 64) need a head_dim that is a multiple of 32. EDGELLM_KV_SAME is only for kv_type_v:
 * V in kv_type. */
typedef enum edgellm_kv_type {
  EDGELLM_KV_SAME = -1,
  EDGELLM_KV_F16 = 0,
  EDGELLM_KV_F32 = 1,
  EDGELLM_KV_Q8_0 = 2,
  EDGELLM_KV_Q4_0 = 3
} edgellm_kv_type;

typedef enum edgellm_repack {
  EDGELLM_REPACK_AUTO = 0, /* interleave weights at load where this CPU has a kernel for it */
  EDGELLM_REPACK_ON = 1,
  EDGELLM_REPACK_OFF = 2 /* multiply the mapped file as it is: least memory, slower */
} edgellm_repack;

/* Power modes (docs/device-fitness.md, "Power modes"): thread counts, cores and worker priority
 * per phase, for this device's CPU clusters. Prefill runs on the fast cores; decode on as many
 * (PERFORMANCE, worker nice -5 where permitted), half as many (BALANCED), or the efficiency cores
 * at nice 10 (EFFICIENCY). A priority the system refuses is reported in the metrics
 * (thread_priority_denied), never an error. */
typedef enum edgellm_power_mode {
  EDGELLM_POWER_NONE = 0, /* threads as n_threads / n_threads_batch say, where the system puts them */
  EDGELLM_POWER_PERFORMANCE = 1,
  EDGELLM_POWER_BALANCED = 2,
  EDGELLM_POWER_EFFICIENCY = 3
} edgellm_power_mode;

/* What happens to user text (prompt, message contents) with invalid UTF-8 or control characters
 * (C0 except TAB / LF / CR, DEL, C1): REFUSE (the request fails with INVALID_ARGUMENT naming the
 * field and byte) or STRIP (invalid sequences become U+FFFD, control characters are removed;
 * the result's stats.sanitized_chars counts them). The same rule in every face. */
typedef enum edgellm_input_policy {
  EDGELLM_INPUT_REFUSE = 0,
  EDGELLM_INPUT_STRIP = 1
} edgellm_input_policy;

/* What a runtime serves (edgellm_runtime_params.role). A GENERATE runtime opened with an encoder
 * model (BERT family: it cannot generate) serves embeddings: edgellm_runtime_role tells. */
typedef enum edgellm_runtime_role {
  EDGELLM_ROLE_GENERATE = 0, /* text: edgellm_submit and everything around it */
  EDGELLM_ROLE_EMBED = 1     /* embeddings and rerank scores (edgellm_embed, edgellm_rerank):
                                llama-server's --embeddings / --reranking; a decoder model
                                (Qwen3-Embedding) embeds with last-token pooling */
} edgellm_runtime_role;

typedef struct edgellm_runtime_params {
  uint32_t struct_size;    /* set by edgellm_runtime_default_params() */
  int32_t n_ctx;           /* positions per sequence; 0: the model's training context, at most 4096 */
  int32_t n_parallel;      /* requests decoded at once (sequences); default 4 */
  int32_t max_queued;      /* requests that may wait for a sequence (0: none wait); default 3 */
  int32_t step_tokens;     /* most tokens one step runs (decode tokens + a prompt chunk); default 256 */
  int32_t n_threads;       /* decode threads (llama.cpp -t); 0: the power mode's, else every core
                              not in the slowest cluster (docs/device-fitness.md, "Threads") */
  int32_t n_threads_batch; /* prefill threads (llama.cpp -tb); 0: the power mode's, else n_threads */
  bool pin_threads;        /* pin worker threads to the cores the count was taken from */
  edgellm_power_mode power_mode; /* default NONE; explicit n_threads / n_threads_batch override it */
  edgellm_kv_type kv_type;       /* K cache type, and V's unless kv_type_v is set; default F16 */
  edgellm_kv_type kv_type_v;     /* the V cache type (llama.cpp --cache-type-v); default SAME */
  uint64_t kv_budget_bytes;      /* KV pool bytes; 0: see kv_budget_fraction */
  /* With kv_budget_bytes 0: in (0, 1] the KV pool is this fraction of the memory available at
   * creation (at most twice n_parallel full sequences; the rest of a large budget keeps prefixes
   * cached); 0 (default): n_parallel full sequences. The pool never grows: a request whose
   * prompt + max_tokens cannot fit the whole pool ends with OUT_OF_MEMORY, one that does not fit
   * beside the running ones waits. */
  double kv_budget_fraction;
  edgellm_repack repack;         /* default AUTO */
  /* Where pack files are looked for (edgellm_pack_model): NULL (default) = beside the model,
   * "<model path>.x16.pack"; a folder = "<pack_dir>/<model file name>.x16.pack" (an app's
   * writable cache folder when the model sits in a read-only one; a hot swap looks there too);
   * "" = never map a pack file. A pack file that is missing or does not fit is not an error: the
   * load repacks, and edgellm_model_info_json's "pack_file" says why. */
  const char* pack_dir;
  uint64_t warmup_min_free_bytes; /* warm-up skipped below this much available memory; default 256 MiB */
  const char* chat_template;      /* NULL: the model's; else a built-in name or a file path */
  edgellm_input_policy input_policy; /* default REFUSE */
  /* The label of the model version results carry (edgellm_result.model_version); NULL: "1", or
   * the registry's version when the model comes from a registry. */
  const char* model_version;
  /* A model registry folder (edgellm_registry_install). When set, edgellm_runtime_create's model
   * names an installed model, "NAME" (its current version) or "NAME@VERSION", verified by SHA-256
   * before it loads, and edgellm_reload_registry() switches to NAME's current version later. */
  const char* registry_dir;
  /* Sessions kept by id (edgellm_request_params.session_id, edgellm_session_*): at most
   * max_sessions of them and max_session_bytes in all, least recently used dropped first;
   * defaults 16 and 256 MiB; max_sessions 0 turns them off. */
  int32_t max_sessions;
  uint64_t max_session_bytes;
  /* The degradation ladder (edgellm_set_pressure): also read Linux's pressure files (PSI
   * /proc/pressure/memory, cgroup memory.events, thermal zones) every second, the higher level
   * winning over what the app feeds; default false. recover_ms: how long the pressure must stay
   * lower before each step back up; default 10000. */
  bool linux_pressure;
  int32_t recover_ms;
  /* An embedding runtime (role EMBED, or an encoder model): n_ctx is the longest input in tokens
   * (0: the model's positions, or a decoder's training context capped at 4096), embed_n_batch
   * the tokens one forward runs (0: max(n_ctx, 1024); at least n_ctx for encoders), and
   * n_threads, max_queued, repack, pack_dir, kv_type, warmup_min_free_bytes, input_policy and
   * model_version apply; the generation fields do not. Default GENERATE, 0. */
  edgellm_runtime_role role;
  int32_t embed_n_batch;
  /* A draft model for speculative decoding (edgellm_spec_params mode DRAFT): a GGUF file with the
   * model's vocabulary, token for token, loaded beside it; the runtime keeps one small draft
   * context per parallel sequence (its KV: one sequence of n_ctx at the draft model's shape;
   * edgellm_plan_json counts them with "draft_model"). NULL (default): none, and requests in mode
   * DRAFT are INVALID_ARGUMENT. A file that cannot be loaded, or has another vocabulary, fails
   * edgellm_runtime_create naming it. Generation runtimes only. */
  const char* draft_model;
} edgellm_runtime_params;

EDGELLM_API edgellm_runtime_params edgellm_runtime_default_params(void);

/* Loads the model and starts the runtime. `model` is a GGUF file path, or with
 * params->registry_dir a registry name ("NAME" or "NAME@VERSION"). params NULL: the defaults. On
 * success *out is the new runtime; on failure *out is NULL and the status says why (IO,
 * INVALID_FILE, UNSUPPORTED, OUT_OF_MEMORY, INVALID_ARGUMENT). Blocks while the model loads. */
EDGELLM_API edgellm_status edgellm_runtime_create(const char* model, const edgellm_runtime_params* params,
                                                  edgellm_runtime** out);

/* Cancels every waiting and running request (each gets on_finish with CANCELLED before this
 * returns), stops the runtime's threads and frees it. NULL: no-op, OK. Not from a callback
 * (WRONG_THREAD, nothing done). No other call may use the runtime once this has started. */
EDGELLM_API edgellm_status edgellm_runtime_destroy(edgellm_runtime* runtime);

/* ============================================================================== requests */

typedef uint64_t edgellm_request_id; /* 0 is never a valid id */

typedef enum edgellm_priority {
  EDGELLM_PRIORITY_INTERACTIVE = 0, /* admitted first */
  EDGELLM_PRIORITY_BACKGROUND = 1
} edgellm_priority;

typedef enum edgellm_finish_reason {
  EDGELLM_FINISH_STOP = 0,      /* end-of-generation token or a stop string */
  EDGELLM_FINISH_LENGTH = 1,    /* max_tokens reached or the context is full */
  EDGELLM_FINISH_CANCELLED = 2, /* edgellm_cancel, on_token returned false, or the runtime was destroyed */
  EDGELLM_FINISH_TIMEOUT = 3,   /* the deadline passed (the text so far is in the result) */
  EDGELLM_FINISH_ERROR = 4,     /* see the result's status and error_message */
  EDGELLM_FINISH_TOOL_CALLS = 5 /* a request with tools ended by itself with tool calls (the
                                   result's tool_calls); a reply cut short keeps LENGTH, TIMEOUT
                                   or CANCELLED: a call cut short is not a call to run */
} edgellm_finish_reason;

/* "stop", "length", "cancelled", "timeout", "error", "tool_calls". */
EDGELLM_API const char* edgellm_finish_reason_name(edgellm_finish_reason reason);

/* The edge-cloud router (edgellm_set_router, docs/router.md). */
typedef enum edgellm_route {
  EDGELLM_ROUTE_OFF = 0,   /* no router: the local model answers, tokens stream as they come */
  EDGELLM_ROUTE_AUTO = 1,  /* the local answer's confidence decides: local, local marked
                              low-confidence, or the cloud; the chosen answer arrives as one
                              text event (token -1) before on_finish */
  EDGELLM_ROUTE_LOCAL = 2, /* local and streamed; the cloud only when the local run fails
                              (OUT_OF_MEMORY, DEGRADED, CONTEXT_FULL) and the router allows it */
  EDGELLM_ROUTE_CLOUD = 3  /* the cloud answers (a retry of a low-confidence answer); the local
                              model when the cloud cannot */
} edgellm_route;

/* One tool call: parsed from a reply (edgellm_result.tool_calls), or, in a follow-up request, a
 * call an earlier assistant turn made (edgellm_message.tool_calls: the result's calls can be
 * passed back as they are). Elements of an array are tool_calls[0].struct_size apart. */
typedef struct edgellm_tool_call {
  uint32_t struct_size;
  const char* id;        /* "call_" + 24 letters and digits, unique within the result */
  const char* name;      /* one of the request's tools */
  const char* arguments; /* the arguments object as JSON text; it follows the tool's parameters schema */
} edgellm_tool_call;

/* One turn of a chat. The tool fields (docs/c-api.md "Tool calls") carry a
 * tool-call follow-up as OpenAI's messages do: the assistant turn that called tools lists its
 * calls, and each "tool" turn carries the result of one of them with that call's id. Checked in
 * edgellm_submit and edgellm_apply_template (INVALID_ARGUMENT naming the message): tool_calls
 * only on an assistant turn, each with a non-empty id and name and arguments that are a JSON
 * object; a "tool" turn needs a tool_call_id that an earlier assistant turn's call has. */
typedef struct edgellm_message {
  uint32_t struct_size; /* sizeof(edgellm_message); every element of an array has the same */
  const char* role;     /* "system", "user", "assistant" or "tool" */
  const char* content;  /* UTF-8; NULL only on an assistant turn with tool_calls (read as "") */
  const edgellm_tool_call* tool_calls; /* assistant: the calls it made (n_tool_calls); NULL: none */
  size_t n_tool_calls;
  const char* tool_call_id; /* "tool": the id of the call whose result content is; NULL otherwise */
} edgellm_message;

/* Which replies a request with tools allows (edgellm_request_params.tool_choice), OpenAI's
 * tool_choice. */
typedef enum edgellm_tool_choice {
  EDGELLM_TOOL_CHOICE_AUTO = 0,     /* text or tool calls, as the model writes (a call that starts is
                                       constrained to the tools' schemas); the default */
  EDGELLM_TOOL_CHOICE_NONE = 1,     /* text only: the tools are not rendered, nothing is constrained */
  EDGELLM_TOOL_CHOICE_REQUIRED = 2, /* one or more calls (one with parallel_tool_calls false) */
  EDGELLM_TOOL_CHOICE_FUNCTION = 3  /* exactly one call of the tool tool_choice_name names */
} edgellm_tool_choice;

typedef struct edgellm_logit_bias {
  int32_t token; /* a token id of the model */
  float bias;    /* added to its logit: [-100, 100], or -INFINITY to ban the token */
} edgellm_logit_bias;

typedef struct edgellm_sampling {
  uint32_t struct_size;    /* set by edgellm_sampling_default() */
  float temperature;       /* 0: greedy; [0, 100]; default 0.8 */
  int32_t top_k;           /* 0: off; default 40 */
  float top_p;             /* [0, 1]; 1: off; default 0.95 */
  float min_p;             /* [0, 1]; 0: off; default 0.05 */
  float repeat_penalty;    /* 1: off; (0, 100]; default 1 */
  float frequency_penalty; /* [-2, 2]; default 0 */
  float presence_penalty;  /* [-2, 2]; default 0 */
  int32_t penalty_last_n;  /* tokens the penalties look back at; -1: all; default 64 */
  uint64_t seed;           /* default 0 */
  const edgellm_logit_bias* logit_bias; /* at most 4096 entries; default none */
  size_t n_logit_bias;
} edgellm_sampling;

EDGELLM_API edgellm_sampling edgellm_sampling_default(void);

/* A piece of a streamed tool call (edgellm_token_event.tool_call_deltas), OpenAI's
 * delta.tool_calls element: the first delta of a call carries its id and name (arguments may
 * be empty), later ones append to its arguments' JSON text (id and name ""). */
typedef struct edgellm_tool_call_delta {
  uint32_t struct_size;
  int32_t index;         /* which call of the reply (0-based) */
  const char* id;        /* the call's id (as in edgellm_result.tool_calls) on its first delta, else "" */
  const char* name;      /* the function on its first delta, else "" */
  const char* arguments; /* more of the arguments' JSON text */
} edgellm_tool_call_delta;

typedef struct edgellm_token_event {
  uint32_t struct_size;
  edgellm_request_id id;
  int32_t token;    /* the sampled token id; -1 for text released at the end (held-back text, or
                       a routed answer delivered whole) */
  const char* text; /* the text that became final with it: whole UTF-8 characters, may be empty
                       (held back: an incomplete character or a possible stop-string start) */
  size_t text_len;
  int32_t index; /* 0-based: events of this request before this one */
  /* A request with tools (docs/c-api.md "Tool calls"): text split as the
   * server streams it. content is the text outside calls that became certain with this event
   * (text that may still open a call is held back), tool_call_deltas the call pieces that did;
   * the last event (token -1) releases the rest, and the result's tool_calls have the ids the
   * deltas gave. Without tools: content = text, no deltas. */
  const char* content; /* NUL-terminated */
  size_t content_len;
  const edgellm_tool_call_delta* tool_call_deltas; /* n_tool_call_deltas elements, struct_size apart */
  size_t n_tool_call_deltas;
} edgellm_token_event;

typedef struct edgellm_request_stats {
  uint32_t struct_size;
  double queue_ms;   /* submit -> admitted to a sequence */
  double ttft_ms;    /* submit -> first token (0 when none) */
  double prefill_ms; /* admitted -> prompt prefilled */
  double decode_ms;  /* first -> last token */
  double total_ms;   /* submit -> on_finish */
  int32_t prompt_tokens;
  int32_t cached_tokens; /* of prompt_tokens, taken from the KV prefix cache (not prefilled) */
  int32_t completion_tokens;
  double prefill_tokens_per_second;
  double decode_tokens_per_second;
  int32_t kv_blocks;       /* KV blocks the request held at the end */
  uint64_t peak_rss_bytes; /* the process's peak resident memory when it ended */
  int32_t sanitized_chars; /* characters the STRIP input policy replaced or removed */
} edgellm_request_stats;

/* What the router did (edgellm_result.route); route is "" when the request was not routed. */
typedef struct edgellm_route_info {
  uint32_t struct_size;
  const char* route;  /* "", "local", "local-low-confidence" or "cloud" */
  const char* reason; /* why, in words */
  const char* tier;   /* the cloud tier that answered ("small", "large"), "" when local */
  double score;       /* the local answer's confidence (geometric mean of token probabilities); -1 without one */
  double mean_p;
  double min_p;
  double latency_ms;   /* submit -> the routed answer */
  bool retry_in_cloud; /* low confidence: submitting the same request with EDGELLM_ROUTE_CLOUD may help */
} edgellm_route_info;

/* Speculative decoding's counters for one request (docs/speculative-decoding.md "In the
 * service"): the decode phase's forward passes and the tokens sampled from them (tokens_per_forward
 * = forward_tokens / forwards: 1 without speculation, up to draft_max + 1), the drafted tokens
 * and how many of them the model kept. off_reason: why a request that asked for speculation did
 * not speculate ("a grammar constrains the output ...", "tools are active ..."), "" otherwise. */
typedef struct edgellm_spec_stats {
  uint32_t struct_size;
  int32_t drafted;
  int32_t accepted;
  int32_t forwards;
  int32_t verify_forwards; /* of forwards, those that carried drafts */
  int32_t forward_tokens;
  double acceptance_rate;    /* accepted / drafted; 0 without drafts */
  double tokens_per_forward; /* forward_tokens / forwards; 0 before a decode forward */
  const char* off_reason;    /* NUL-terminated */
} edgellm_spec_stats;

typedef struct edgellm_result {
  uint32_t struct_size;
  edgellm_request_id id;
  edgellm_finish_reason finish_reason;
  edgellm_status status;     /* OK unless finish_reason is ERROR */
  const char* error_message; /* "" unless finish_reason is ERROR */
  const char* text;          /* all text the token events delivered, NUL-terminated */
  size_t text_len;
  const char* stop_string; /* the stop string that ended it, or "" */
  /* The model version that served the request from start to end ("1" or what the runtime was
   * created with, then what edgellm_swap_model named; "cloud:MODEL" when the router's cloud
   * answered). */
  const char* model_version;
  edgellm_request_stats stats;
  edgellm_route_info route;
  /* session_id: the request's KV was kept under it. session_save_path: OK when written (or not
   * asked for), else why not (IO; INVALID_ARGUMENT: a request that ended with ERROR saves nothing). */
  bool session_stored;
  edgellm_status session_save_status;
  /* Tool calls (a request with tools, docs/c-api.md "Tool calls"): the calls parsed from the
   * reply, in order, and content = the reply's text outside them (text keeps the whole reply as
   * the token events delivered it, calls included). Without tools: no calls, content = text. A
   * call cut short (LENGTH, TIMEOUT, CANCELLED) is not parsed as one: it stays in content. */
  const edgellm_tool_call* tool_calls; /* n_tool_calls elements, each tool_calls[0].struct_size apart */
  size_t n_tool_calls;
  const char* content; /* NUL-terminated */
  size_t content_len;
  /* Speculative decoding (edgellm_request_params.spec_mode); appended: read it only when
   * offsetof(edgellm_result, speculation) < struct_size. */
  edgellm_spec_stats speculation;
} edgellm_result;

/* Called for each token (on the scheduler thread); return false to cancel the request. */
typedef bool (*edgellm_token_callback)(const edgellm_token_event* event, void* user_data);
/* Called exactly once per accepted request, after its last token event. */
typedef void (*edgellm_finish_callback)(const edgellm_result* result, void* user_data);

/* Speculative decoding modes (edgellm_request_params.spec_mode; llama.cpp's --spec names). */
typedef enum edgellm_spec_mode {
  EDGELLM_SPEC_OFF = 0,
  EDGELLM_SPEC_NGRAM = 1, /* prompt lookup: drafts from the prompt and the text so far */
  EDGELLM_SPEC_DRAFT = 2  /* a draft model: edgellm_runtime_params.draft_model (INVALID_ARGUMENT without one) */
} edgellm_spec_mode;

/* Speculative decoding (docs/speculative-decoding.md "In the service";
 * edgellm_request_params.speculation): NGRAM drafts up to draft_max tokens from the prompt and the
 * text so far (prompt lookup, no second model) and verifies them in the same batched forward as
 * the other requests' tokens; the output is exactly that of OFF (greedy: the same tokens;
 * sampling: the same tokens at the same seed), in fewer forward passes when the reply quotes its
 * input. The runtime backs off by itself when drafts are rejected or the batch is full; with a
 * grammar, json_schema, json_object or tools it does not speculate (result.speculation.off_reason
 * says why). DRAFT drafts with the runtime's draft model (edgellm_runtime_params.draft_model:
 * greedy drafts, one draft-model forward each, the same output guarantee) and is INVALID_ARGUMENT
 * on a runtime opened without one; so are an unknown mode and, unless the mode is OFF, a
 * draft_max outside 1..8. */
typedef struct edgellm_spec_params {
  uint32_t struct_size;    /* set by edgellm_spec_default_params() */
  edgellm_spec_mode mode;  /* default OFF */
  int32_t draft_max;       /* k: most tokens drafted per forward, 1..8; default 8 (llama.cpp's --draft-max) */
} edgellm_spec_params;

EDGELLM_API edgellm_spec_params edgellm_spec_default_params(void);

typedef struct edgellm_request_params {
  uint32_t struct_size; /* set by edgellm_request_default_params() */
  /* The input: exactly one of prompt, messages, tokens. */
  const char* prompt;              /* raw UTF-8 text, NUL-terminated */
  const edgellm_message* messages; /* a chat, rendered with the model's chat template; at most 4096 */
  size_t n_messages;
  const int32_t* tokens; /* token ids */
  size_t n_tokens;
  bool add_special;   /* raw prompt: add BOS/EOS as the model asks; default true */
  bool parse_special; /* raw prompt: control-token text becomes the control token; default false */

  const edgellm_sampling* sampling; /* NULL: edgellm_sampling_default() */
  int32_t max_tokens; /* < 0: until a stop or the context is full; 0: prefill only; default 256 */
  const char* const* stop; /* stop strings (never part of the output), at most 16 of 1-256 bytes */
  size_t n_stop;
  bool ignore_eos;     /* never sample end-of-generation tokens (llama.cpp's ignore_eos) */
  int64_t deadline_ms; /* from submit, queue wait included; <= 0: none; default 15000 */
  edgellm_priority priority;

  /* Endless streams (docs/context-shift.md): when the sequence fills the context, the older half
   * of its positions after the first n_keep is dropped (cached K re-rotated to the new positions)
   * and generation goes on instead of ending with LENGTH; set max_tokens or a deadline to bound
   * it. n_keep: positions at the start never dropped (attention sinks, the system prompt); -1 =
   * the whole prompt; it must leave 2 positions of the context. Defaults: false, 4. */
  bool context_shift;
  int32_t n_keep;

  /* Sessions (docs/sessions.md): continue a conversation without prefilling it again, across
   * restarts or devices running the same model file and KV type. The prompt is always the whole
   * conversation; the saved positions that start it are restored instead of prefilled.
   *   session_id         continue from the session the runtime keeps under this id (none yet: a
   *                      new one) and keep this request's KV under it when it ends
   *                      (result.session_stored); 1-64 characters of A-Z a-z 0-9 _ - .
   *   session_load_path  continue from a session file (read and checked in edgellm_submit: IO,
   *                      INVALID_FILE, INVALID_ARGUMENT for another model, KV type or shape)
   *   session_save_path  write this request's KV to a file when it ends without ERROR
   *                      (FILE.tmp, then renamed; result.session_save_status)
   * NULL: none ("" is INVALID_ARGUMENT). Not session_id together with session_load_path. */
  const char* session_id;
  const char* session_load_path;
  const char* session_save_path;

  edgellm_route route; /* the router (edgellm_set_router); default OFF */

  edgellm_token_callback on_token;   /* may be NULL */
  edgellm_finish_callback on_finish; /* may be NULL */
  void* user_data;                   /* passed to both */

  /* Constrained output (docs/structured-output.md): at most one of the three; NULL / false:
   * unconstrained ("" is INVALID_ARGUMENT). Compiled in edgellm_submit, on the calling thread, for
   * the vocabulary of the model version serving the request; compiled grammars are cached per
   * model version, so a repeated grammar or schema costs a lookup. INVALID_ARGUMENT names the
   * grammar's line and column, or the schema's unsupported keyword. The local model generates
   * it: a routed request (route AUTO / LOCAL) is answered locally and never sent to the cloud,
   * route CLOUD is INVALID_ARGUMENT.
   *   grammar      GBNF text (llama.cpp's grammar format; rule "root" is matched); at most 1 MiB
   *   json_schema  a JSON Schema as JSON text (object properties / required, arrays, enum /
   *                const, anyOf, $ref, string lengths, numeric bounds, ...); at most 1 MiB
   *   json_object  any JSON object (OpenAI's response_format {"type": "json_object"}) */
  const char* grammar;
  const char* json_schema;
  bool json_object;

  /* Tool calling (docs/c-api.md "Tool calls"; messages requests only: INVALID_ARGUMENT with a
   * prompt or tokens). As the server's tools / tool_choice / parallel_tool_calls: the chat template
   * renders the tools (or, for a template without tool support, a system prompt teaches a JSON
   * call shape), a call is constrained to its tool's parameters schema while it is generated, and
   * the result carries the parsed calls (edgellm_result.tool_calls, finish TOOL_CALLS). Not together
   * with grammar / json_schema / json_object unless tool_choice is NONE. Checked in edgellm_submit:
   * INVALID_ARGUMENT for JSON that does not parse, a tool that is not {"type": "function",
   * "function": {"name", "description"?, "parameters"?}}, a schema the grammar cannot hold, an
   * unknown tool_choice, REQUIRED / FUNCTION without tools, or a tool_choice_name that is not
   * among the tools.
   *   tools               JSON text: an array of OpenAI function tools; NULL: none; at most 1 MiB
   *   tool_choice         default AUTO
   *   tool_choice_name    the function of tool_choice FUNCTION (NULL otherwise)
   *   parallel_tool_calls more than one call in a reply; default true */
  const char* tools;
  edgellm_tool_choice tool_choice;
  const char* tool_choice_name;
  bool parallel_tool_calls;

  /* Speculative decoding (edgellm_spec_params); NULL: off. */
  const edgellm_spec_params* speculation;
} edgellm_request_params;

EDGELLM_API edgellm_request_params edgellm_request_default_params(void);

/* Validates and queues a request; returns at once. OK: *out_id is its id and on_finish will be
 * called exactly once. INVALID_ARGUMENT (null pointers, no input or several, text the input
 * policy refuses, unknown role, a last message from the assistant, token ids outside the
 * vocabulary, sampling values out of range, bad stop strings, a bad session id; the limits are in
 * docs/c-api.md), IO / INVALID_FILE (session_load_path), BUSY (queue full), DEGRADED (the ladder
 * refuses new requests and the router may not take it) or SHUT_DOWN: nothing queued, no
 * callback, *out_id is 0. A prompt longer than the context is reported by on_finish (ERROR,
 * status CONTEXT_FULL): it is tokenized on the scheduler thread. */
EDGELLM_API edgellm_status edgellm_submit(edgellm_runtime* runtime, const edgellm_request_params* params,
                                          edgellm_request_id* out_id);

/* Ends a waiting or running request: its on_finish (CANCELLED, with the text so far) follows,
 * and a running request gets no token event after the step in flight. NOT_FOUND when the id is
 * unknown or the request has finished. */
EDGELLM_API edgellm_status edgellm_cancel(edgellm_runtime* runtime, edgellm_request_id id);

/* Pause: the step in flight is abandoned (and redone on resume, so outputs do not change), no
 * forward pass runs, KV memory is kept; cancellations and deadlines still end requests (deadlines
 * keep running). Resume continues. Both return at once: a step already past its last abort check
 * may still stream its tokens; edgellm_metrics.paused_idle turns true once nothing runs. */
EDGELLM_API edgellm_status edgellm_pause(edgellm_runtime* runtime);
EDGELLM_API edgellm_status edgellm_resume(edgellm_runtime* runtime);

typedef void (*edgellm_trim_callback)(uint64_t bytes_released, void* user_data);
/* Releases scratch buffers (and the KV pool's pages when no request holds KV) between two steps;
 * done (may be NULL) runs on the scheduler thread with the bytes released. Returns at once. */
EDGELLM_API edgellm_status edgellm_trim(edgellm_runtime* runtime, edgellm_trim_callback done, void* user_data);

typedef void (*edgellm_warmup_callback)(bool ran, const char* reason, void* user_data);
/* Runs a short forward pass in the background. done (may be NULL) runs on the scheduler thread:
 * ran true, or false with the reason it was skipped (less available memory than
 * warmup_min_free_bytes, requests already running, shutting down). Deferred while paused.
 * Returns at once. */
EDGELLM_API edgellm_status edgellm_warmup(edgellm_runtime* runtime, edgellm_warmup_callback done, void* user_data);

/* ============================================================================== embeddings, rerank */
/* On an embedding runtime (edgellm_runtime_role() is EMBED; docs/c-api.md, "Embeddings"). Both
 * calls block until the result is there (one forward for a few short texts: milliseconds to tens
 * of milliseconds on a phone's big cores; call them off the UI thread) and take the same path as
 * every request: the waiting queue (BUSY when full), the deadline (queue wait included), pause,
 * the input policy, the metrics. Several threads may call them at once: their inputs share
 * forwards. Not from one of this runtime's callbacks (WRONG_THREAD: it would wait for itself). */

/* The runtime's role: GENERATE, or EMBED (edgellm_embed / edgellm_rerank serve, edgellm_submit
 * is UNSUPPORTED). *dims (may be NULL) receives the floats per embedding vector (the model's
 * n_embd) on an embedding runtime, 0 on a generation runtime; *can_rerank (may be NULL) whether
 * the model has a classification head (a cross-encoder: edgellm_rerank works). */
EDGELLM_API edgellm_status edgellm_runtime_role_get(edgellm_runtime* runtime, edgellm_runtime_role* role,
                                                    int32_t* dims, bool* can_rerank);

/* Pooling: how an input's per-token states become its vector (llama.cpp's --pooling). */
typedef enum edgellm_pooling {
  EDGELLM_POOLING_MODEL = -1, /* what the model's GGUF declares (encoders without one: mean,
                                 decoders: last) */
  EDGELLM_POOLING_NONE = 0,   /* one vector per token of every input */
  EDGELLM_POOLING_MEAN = 1,
  EDGELLM_POOLING_CLS = 2,    /* the first token's ([CLS]) state */
  EDGELLM_POOLING_LAST = 3    /* the last token's (Qwen3-Embedding) */
} edgellm_pooling;

/* An input longer than the runtime's n_ctx tokens. */
typedef enum edgellm_truncation {
  EDGELLM_TRUNCATE_REFUSE = 0, /* INVALID_ARGUMENT naming the input and the lengths (llama-server) */
  EDGELLM_TRUNCATE_END = 1     /* keep the first tokens and the closing special token, as
                                  sentence-transformers cuts to max_seq_length */
} edgellm_truncation;

typedef struct edgellm_embed_params {
  uint32_t struct_size;          /* set by edgellm_embed_default_params() */
  edgellm_pooling pooling;       /* default MODEL; not for rerank (always the classifier's score) */
  /* llama.cpp's --embd-normalize: -1 none, 0 max-abs scaled to int16 range, 1 taxicab, 2
   * euclidean (default: unit vectors, cosine = dot product), p > 2 the p-norm. Not for rerank. */
  int32_t normalize;
  edgellm_truncation truncation; /* default REFUSE */
  int64_t deadline_ms;           /* from the call, queue wait included; <= 0: none; default 30000 */
  edgellm_priority priority;     /* default INTERACTIVE */
} edgellm_embed_params;

EDGELLM_API edgellm_embed_params edgellm_embed_default_params(void);

/* What a call ran (optional out-parameter of edgellm_embed / edgellm_rerank). */
typedef struct edgellm_embed_info {
  uint32_t struct_size;    /* set by edgellm_embed_info_init(); the library writes only within it */
  /* In, optional: an array of one int32_t per input (text or document) that receives the tokens
   * each ran (after truncation: with pooling NONE input i owns that many rows, after input i-1's);
   * NULL: not wanted. */
  int32_t* input_tokens;
  int32_t n_rows;          /* vectors written (one per input; per token with pooling NONE); scores for rerank */
  int32_t dims;            /* floats per vector (0 for rerank) */
  edgellm_pooling pooling; /* what ran (MODEL resolved); NONE for rerank */
  int32_t truncated;       /* inputs cut to fit (truncation END) */
  int64_t prompt_tokens;   /* tokens run in all (OpenAI's usage) */
  double queue_ms;         /* call -> admitted */
  double total_ms;         /* call -> result */
} edgellm_embed_info;

EDGELLM_API edgellm_embed_info edgellm_embed_info_init(void);

/* Embeds n_texts UTF-8 texts (1 to 2048; each framed with the model's special tokens, [CLS] ...
 * [SEP] for BERT) into vectors: n_rows x dims floats, row i for texts[i], written to the
 * caller's buffer (capacity in floats; *n_floats receives the floats of the result). Pooled
 * results have n_texts x dims floats, known before anything runs: a capacity that is too small
 * (e.g. 0, to ask) gives BUFFER_TOO_SMALL at once with *n_floats set and nothing run. With
 * pooling NONE the size is known only after the forward: a too small buffer gets
 * BUFFER_TOO_SMALL and *n_floats after the run (nothing written; call again with the size).
 * params NULL: the defaults. info (may be NULL) receives what ran. INVALID_ARGUMENT: a NULL
 * runtime / texts / element / n_floats, no text, more than 2048, an empty text, text the input
 * policy refuses (invalid UTF-8, control characters; the message names the text's index and
 * byte), an input longer than n_ctx under REFUSE, values out of range; UNSUPPORTED on a
 * generation runtime; BUSY (queue full, answered at once); TIMEOUT (deadline_ms passed, the
 * queue wait included); SHUT_DOWN (the runtime is being destroyed: a call already blocked here
 * when edgellm_runtime_destroy starts returns SHUT_DOWN and destroy waits for it to leave the
 * runtime; a call that starts after destroy started is still forbidden). Nothing is written
 * unless OK. */
EDGELLM_API edgellm_status edgellm_embed(edgellm_runtime* runtime, const char* const* texts, size_t n_texts,
                                         const edgellm_embed_params* params, float* vectors, size_t capacity,
                                         size_t* n_floats, edgellm_embed_info* info);

/* Scores each of n_documents (1 to 2048) for query with the runtime's cross-encoder ([CLS] query
 * [SEP] document [SEP] through the classification head, as llama-server's /v1/rerank): one
 * float per document in document order (raw logits as llama-server returns them; higher is more
 * relevant; sort them yourself for top-n). capacity is in floats: fewer than n_documents gives
 * BUFFER_TOO_SMALL at once (*n_scores = n_documents, nothing run). params: truncation, deadline
 * and priority (pooling and normalize are ignored); NULL: the defaults. UNSUPPORTED when the
 * model has no classification head (an embedding model) or on a generation runtime; the other
 * statuses as edgellm_embed. */
EDGELLM_API edgellm_status edgellm_rerank(edgellm_runtime* runtime, const char* query, const char* const* documents,
                                          size_t n_documents, const edgellm_embed_params* params, float* scores,
                                          size_t capacity, size_t* n_scores, edgellm_embed_info* info);

/* ============================================================================== classify */
/* Intent recognition on a generation runtime (docs/c-api.md, "Classify"): the model reads text
 * (with an instruction, through its chat template) and each label is scored as the answer by its
 * log-probability; the most probable label wins, so the answer is always one of the labels. The
 * prompt's prefix held by the runtime's KV prefix cache is reused (cached_tokens), the rest
 * prefilled once, then one forward over the labels' tokens per 8 labels (each label's sequence
 * shares the prompt's KV). Blocks (a prefill and a short forward: call it off the UI thread);
 * queued on the runtime's service like a request (BUSY when the queue is full; the deadline
 * counts the wait) and run by its scheduler between two steps; any thread may call it at once.
 * Not from one of this runtime's callbacks (WRONG_THREAD). */

typedef struct edgellm_classify_params {
  uint32_t struct_size;    /* set by edgellm_classify_default_params() */
  /* Chat mode: the system message. NULL or "": "Classify the text into exactly one of these
   * labels: a, b, c. Answer with the label only." Raw mode: put in front of the text as is. */
  const char* instruction;
  /* false (default): the chat template renders [system: instruction, user: text] and the
   * assistant's turn start, labels follow. true: the prompt is instruction + text as given (BOS
   * as the vocabulary asks): a base model, or a prompt the app wrote; put the separator (" ")
   * in the labels or at the end of the text. */
  bool raw;
  /* false (default): probabilities are the softmax of each label's summed token log-probs (the
   * log-likelihood llama.cpp and lm-eval report); true: of the mean per token (long labels are
   * not penalised for their length). */
  bool length_normalize;
  int64_t deadline_ms;     /* from the call; <= 0: none; default 30000 */
} edgellm_classify_params;

EDGELLM_API edgellm_classify_params edgellm_classify_default_params(void);

/* What a call chose (out-parameter of edgellm_classify). */
typedef struct edgellm_classify_result {
  uint32_t struct_size;    /* set by edgellm_classify_result_init(); the library writes only within it */
  /* In, optional: arrays of n_labels that receive each label's summed log-probability (natural
   * log) and its token count; NULL: not wanted. */
  double* logprobs;
  int32_t* label_tokens;
  int32_t index;           /* the chosen label: labels[index] (the highest probability, the first on a tie) */
  int32_t prompt_tokens;   /* the prompt's tokens (template and instruction included) */
  double total_ms;         /* call -> result */
  /* Of prompt_tokens, taken from the runtime's KV prefix cache, not prefilled: an earlier classify
   * or request that started with the same tokens (instruction, labels) left them there. */
  int32_t cached_tokens;
} edgellm_classify_result;

EDGELLM_API edgellm_classify_result edgellm_classify_result_init(void);

/* Classifies UTF-8 text into one of n_labels labels (1 to 64, distinct, each 1 to 256 bytes of
 * valid UTF-8 without control characters: a label is an answer the app compares, never
 * altered). probabilities: the caller's array of n_labels doubles, in label order, summing to 1.
 * result (required) receives the choice. params NULL: the defaults. INVALID_ARGUMENT: a NULL
 * runtime / text / labels / element / probabilities / result, an empty text, no label, more than
 * 64, an empty, over-long, invalid or repeated label (the message names its index), text or
 * instruction the input policy refuses, a prompt plus the longest label longer than n_ctx
 * tokens (the message gives both), a bad struct_size; UNSUPPORTED on an embedding runtime;
 * DEGRADED (the ladder refuses new requests); BUSY (the runtime's queue is full); TIMEOUT
 * (deadline_ms passed, queued or running); OUT_OF_MEMORY (the prompt and its label forks need
 * more KV blocks than the whole pool); SHUT_DOWN (the runtime is being destroyed: a call queued
 * or in flight ends with it, destroy waits for it to leave). Nothing is written unless OK. */
EDGELLM_API edgellm_status edgellm_classify(edgellm_runtime* runtime, const char* text, const char* const* labels,
                                            size_t n_labels, const edgellm_classify_params* params,
                                            double* probabilities, edgellm_classify_result* result);

/* ============================================================================== document Q&A */
/* "Ask my notes" on the device (docs/c-api.md, "Document Q&A"; docs/docqa.md): documents are cut
 * into chunks (sentences kept whole, sizes in the embedder's tokens, an overlap), embedded by an
 * embedding runtime and kept in a local index file (exact cosine search over int8 or f16
 * vectors: 10,000 chunks of 384 dims are ~4 MB and a few milliseconds per search); a question is
 * embedded the same way, the nearest chunks found, optionally reordered by a reranker runtime,
 * and a generation runtime answers from them citing the chunk ids it used. Nothing leaves the
 * device.
 *
 * A handle owns its index (in memory, and the file it saves to) and refers to the runtimes it
 * was created with: they must outlive every call on it (edgellm_docqa_destroy itself never
 * touches them, so it may come after them). Calls on one handle take turns (a mutex: any thread
 * may call any of them; a second caller waits for the first, so keep long calls off the UI
 * thread); handles over the same runtimes may run at once. The calls that embed or generate
 * block until the runtimes answer (their queues, BUSY, pause and metrics as every request).
 * No edgellm_docqa_* function that takes a handle is for one of its runtimes' callbacks:
 * WRONG_THREAD (it would wait for itself, or for a call that waits for that callback); destroy
 * does not look at the runtimes (they may be gone), so it must not be called there either. No function here calls back into the app. Chunk ids are never reused: an id in a
 * citation names one piece of text for the index's whole life. */

typedef struct edgellm_docqa edgellm_docqa; /* opaque */

typedef enum edgellm_docqa_vectors {
  EDGELLM_DOCQA_INT8 = 0, /* dims + 4 bytes per chunk: one scale and dims codes (default) */
  EDGELLM_DOCQA_F16 = 1   /* 2 x dims bytes per chunk */
} edgellm_docqa_vectors;

typedef struct edgellm_docqa_params {
  uint32_t struct_size;   /* set by edgellm_docqa_default_params() */
  int32_t chunk_tokens;   /* tokens per chunk at most; 0 (default): min(256, the embedder's n_ctx - 2);
                             at least 8 */
  int32_t overlap_tokens; /* tokens a chunk repeats of the previous one; default 32, at most chunk_tokens / 2 */
  int32_t top_k;          /* chunks an answer is generated from (and search's default); default 4 */
  int32_t candidates;     /* chunks retrieved before a reranker keeps top_k of them; default 16, >= top_k */
  int32_t max_answer_tokens;      /* the answer's longest; default 256 */
  edgellm_docqa_vectors vectors;  /* for a new index (an existing file keeps its own); default INT8 */
  edgellm_truncation truncation;  /* a chunk or question longer than the embedder's context; default END */
  /* Put before a question when it is embedded (documents are embedded as they are): bge English
   * v1.5 wants "Represent this sentence for searching relevant passages: "; NULL or "": none. */
  const char* query_prefix;
  /* Start from an empty index: the file is not read, the next save replaces it (after a corrupt
   * file was refused: the documents are then added again). Default false. */
  bool rebuild;
} edgellm_docqa_params;

EDGELLM_API edgellm_docqa_params edgellm_docqa_default_params(void);

/* Opens the index file at index_path (UTF-8; a new, empty index when no file is there; nothing is
 * written until a call changes the index) for documents embedded by embedder (an EMBED runtime).
 * reranker (may be NULL): an EMBED runtime with a classification head that reorders the top
 * candidates. generator (may be NULL: search only, ask is UNSUPPORTED): a GENERATE runtime that
 * writes answers through its chat template. params NULL: the defaults. *out receives the handle
 * (NULL unless OK). INVALID_ARGUMENT: a NULL embedder / index_path / out, an embedder that is not
 * an embedding runtime, a reranker without a classification head, a generator that does not
 * generate, params out of range, an index built with another embedding model (vectors of two
 * models do not compare: rebuild); INVALID_FILE: a corrupt index file, refused whole with the
 * reason (nothing on disk is changed: restore "<index_path>.bak", the previous good generation,
 * or open with rebuild and add the documents again); IO. Blocks for the file's read (~4 MB per
 * 10,000 chunks); not from a callback of the three runtimes (WRONG_THREAD). */
EDGELLM_API edgellm_status edgellm_docqa_create(edgellm_runtime* embedder, edgellm_runtime* reranker,
                                                edgellm_runtime* generator, const char* index_path,
                                                const edgellm_docqa_params* params, edgellm_docqa** out);
/* Frees the handle (the index file keeps what the last call saved). NULL: OK. Waits for a call on
 * the handle in another thread to end; never call it while one might still start. Never touches
 * the runtimes. */
EDGELLM_API edgellm_status edgellm_docqa_destroy(edgellm_docqa* docqa);

/* What a change did (optional out-parameter of edgellm_docqa_add / _remove / _index_folder). */
typedef struct edgellm_docqa_report {
  uint32_t struct_size; /* set by edgellm_docqa_report_init(); the library writes only within it */
  int32_t added, updated, removed, unchanged, skipped; /* documents */
  int64_t chunks_added, chunks_removed, tokens_embedded;
  int64_t documents, chunks; /* in the index afterwards */
  uint64_t memory_bytes;     /* the index's estimated heap afterwards */
  double seconds;
} edgellm_docqa_report;

EDGELLM_API edgellm_docqa_report edgellm_docqa_report_init(void);

/* Adds the document text (UTF-8) under key (an app's note id, a path: 1 to 4096 bytes of valid
 * UTF-8 without control characters), or replaces the one under key when its content changed
 * (its chunks get new ids; the old ids never come back as hits); an unchanged text is left alone.
 * Then saves the index atomically (write to a temporary file, fsync, rename; the previous file
 * becomes "<index_path>.bak"): a crash or a full disk leaves the old file. Text that is not valid
 * UTF-8 is refused (INVALID_ARGUMENT naming the byte) when the embedder's input_policy is REFUSE,
 * replaced by U+FFFD under STRIP; an empty text is refused. On an error before the save nothing
 * changed; an IO error in the save (a full disk) leaves the old file whole and the change in
 * memory (the next call that saves writes it). Statuses as edgellm_embed's (BUSY, SHUT_DOWN,
 * DEGRADED) and IO. */
EDGELLM_API edgellm_status edgellm_docqa_add(edgellm_docqa* docqa, const char* key, const char* text,
                                             edgellm_docqa_report* report);
/* Removes the document under key and its chunks, then saves as edgellm_docqa_add. NOT_FOUND when
 * no document has that key (nothing changed). */
EDGELLM_API edgellm_status edgellm_docqa_remove(edgellm_docqa* docqa, const char* key, edgellm_docqa_report* report);
/* Indexes every .txt / .md / .markdown file under the folder dir (keys: paths relative to it):
 * new files added, changed ones re-embedded, vanished ones removed (documents added under other
 * keys by edgellm_docqa_add are removed too: use one handle per source), unreadable or over 16
 * MiB skipped; one save at the end. As edgellm_docqa_add otherwise. */
EDGELLM_API edgellm_status edgellm_docqa_index_folder(edgellm_docqa* docqa, const char* dir,
                                                      edgellm_docqa_report* report);

/* One retrieved chunk (library-owned, inside an edgellm_docqa_result). */
typedef struct edgellm_docqa_hit {
  uint32_t struct_size;   /* the library's: read a field only when offsetof(field) < struct_size */
  uint32_t chunk;         /* the chunk id (what citations name) */
  const char* key;        /* its document's key (NUL-terminated UTF-8) */
  uint32_t begin, end;    /* the chunk's byte range in that document's text (after STRIP) */
  const char* text;       /* the chunk's text (NUL-terminated UTF-8) */
  float score;            /* cosine with the question (up to the int8 / f16 storage rounding) */
  bool has_rerank_score;  /* a reranker ordered the hits */
  float rerank_score;     /* its raw score (higher is more relevant) */
} edgellm_docqa_hit;

/* A search's or an answer's result, library-owned: free it with edgellm_docqa_result_free. Every
 * pointer in it stays valid until then, also after the handle is destroyed. */
typedef struct edgellm_docqa_result {
  uint32_t struct_size; /* the library's (as edgellm_docqa_hit) */
  /* ask: the answer (NUL-terminated UTF-8); search: "". */
  const char* answer;
  edgellm_finish_reason finish_reason; /* ask: STOP, LENGTH (max_answer_tokens), ERROR; search: STOP */
  const char* error;                   /* finish_reason ERROR: why; else "" */
  /* search: the hits, best first; ask: the chunks the generator was given, best first (the
   * lowest-ranked are dropped while the prompt and max_answer_tokens exceed its context). Index
   * with edgellm_docqa_result_hit (hits are hit_size bytes apart: a newer library may append
   * fields). */
  size_t n_hits;
  const edgellm_docqa_hit* hits;
  size_t hit_size;
  /* ask: the chunk ids the answer cites ("[12]", "[3, 7]" markers naming a chunk it was given), in
   * order of first use; search: none. */
  size_t n_citations;
  const uint32_t* citations;
  double embed_ms, search_ms, rerank_ms, generate_ms; /* where the time went */
} edgellm_docqa_result;

/* The i-th hit of result (NULL for a NULL result or i >= n_hits). */
EDGELLM_API const edgellm_docqa_hit* edgellm_docqa_result_hit(const edgellm_docqa_result* result, size_t i);
/* Frees a result (NULL: nothing). */
EDGELLM_API void edgellm_docqa_result_free(edgellm_docqa_result* result);

/* The top_k chunks nearest to query (UTF-8; under the embedder's input policy; a long one cut or
 * refused as params.truncation says): exact cosine over every stored vector, best first (ties by
 * chunk id); with a reranker the params' candidates (at least top_k) are reordered by it and the
 * top_k kept. top_k <= 0: the params' top_k; at most 4096. *out receives a result to free (NULL
 * unless OK). INVALID_ARGUMENT: a NULL docqa / query / out, an empty query, an empty index (the
 * message says so), text the policy refuses; the embedding statuses. */
EDGELLM_API edgellm_status edgellm_docqa_search(edgellm_docqa* docqa, const char* query, int32_t top_k,
                                                edgellm_docqa_result** out);
/* Retrieves as edgellm_docqa_search (top_k: the params') and has the generator answer from those
 * chunks (greedy, at most max_answer_tokens; a system message tells it to cite passages as [id]
 * and to say when they do not hold the answer). *out receives the answer, its context and its
 * citations (NULL unless OK). UNSUPPORTED without a generator; INVALID_ARGUMENT as search and for
 * a question that leaves no room for one passage in the generator's context; a generation that
 * fails after it started is a result with finish_reason ERROR. Blocks for the whole answer. */
EDGELLM_API edgellm_status edgellm_docqa_ask(edgellm_docqa* docqa, const char* question, edgellm_docqa_result** out);

/* The index's documents as JSON ({"documents": [{"key", "bytes", "chunks"}...], "chunks", "dims",
 * "vectors", "model", "memory_bytes"}), by key (the buffer convention above). */
EDGELLM_API edgellm_status edgellm_docqa_list_json(edgellm_docqa* docqa, char* buf, size_t capacity, size_t* length);

/* ============================================================================== sessions */
/* The sessions the runtime keeps by id (edgellm_request_params.session_id). Bytes are the
 * session file format (docs/sessions.md): another device running the same model file and KV type
 * can import them. */

/* Checks bytes against the serving model (INVALID_FILE: truncated or corrupted;
 * INVALID_ARGUMENT: another model file, KV type or shape, a bad id, sessions off, more bytes than
 * the store holds) and keeps them under id (replacing one there). *positions (may be NULL)
 * receives the positions the session holds. */
EDGELLM_API edgellm_status edgellm_session_import(edgellm_runtime* runtime, const char* id, const void* bytes,
                                                  size_t n_bytes, int32_t* positions);
/* The bytes kept under id (the buffer convention above, in bytes); NOT_FOUND when none. */
EDGELLM_API edgellm_status edgellm_session_export(edgellm_runtime* runtime, const char* id, void* buf,
                                                  size_t capacity, size_t* length);
EDGELLM_API edgellm_status edgellm_session_delete(edgellm_runtime* runtime, const char* id);
/* {"sessions": [{"id", "bytes"}, ...] (most recently used first), "bytes", "max_sessions",
 * "max_bytes"}. */
EDGELLM_API edgellm_status edgellm_session_list_json(edgellm_runtime* runtime, char* buf, size_t capacity,
                                                     size_t* length);
/* The same through files: load imports a session file (as edgellm_session_import, IO when it
 * cannot be read); save writes the session kept under id (NOT_FOUND when none; IO). */
EDGELLM_API edgellm_status edgellm_session_load_file(edgellm_runtime* runtime, const char* id, const char* path,
                                                     int32_t* positions);
EDGELLM_API edgellm_status edgellm_session_save_file(edgellm_runtime* runtime, const char* id, const char* path);

/* ============================================================================== model and text */

/* JSON: architecture, parameters, vocabulary size, context, weight types, threads, memory. */
EDGELLM_API edgellm_status edgellm_model_info_json(edgellm_runtime* runtime, char* buf, size_t capacity,
                                                   size_t* length);

/* Text -> token ids (tokens may be NULL with capacity 0 to ask for *n_tokens). */
EDGELLM_API edgellm_status edgellm_tokenize(edgellm_runtime* runtime, const char* text, bool add_special,
                                            bool parse_special, int32_t* tokens, size_t capacity,
                                            size_t* n_tokens);
/* Token ids -> text (control tokens rendered when render_special). */
EDGELLM_API edgellm_status edgellm_detokenize(edgellm_runtime* runtime, const int32_t* tokens, size_t n_tokens,
                                              bool render_special, char* buf, size_t capacity, size_t* length);
/* Renders messages with the model's chat template (what a chat request is prefilled with). */
EDGELLM_API edgellm_status edgellm_apply_template(edgellm_runtime* runtime, const edgellm_message* messages,
                                                  size_t n_messages, bool add_generation_prompt, char* buf,
                                                  size_t capacity, size_t* length);

/* ============================================================================== hot swap, registry */
/* docs/device-fitness.md. The registry functions need no runtime and may be called from any
 * thread; each takes an exclusive file lock on the registry folder while it changes it, so
 * several threads and processes may share one registry. */

/* Switches the runtime to another model file (an update: verify it first with
 * edgellm_registry_install / edgellm_registry_resolve). The new model is loaded and its context
 * built first — this call blocks meanwhile — and on failure (IO, INVALID_FILE, UNSUPPORTED,
 * OUT_OF_MEMORY) nothing changes: the current model keeps serving. Then, in one step, new
 * requests go to the new model while those already admitted finish on the old one, whose file is
 * unmapped after its last request. `version` (1-64 bytes) labels results. At a degraded rung the
 * new model gets that rung's configuration. Not from a callback (WRONG_THREAD). */
EDGELLM_API edgellm_status edgellm_swap_model(edgellm_runtime* runtime, const char* model_path, const char* version);

/* For a runtime created from a registry: switches to the registry's current version of the
 * model's name (verified by SHA-256) when it differs from the one serving, as edgellm_swap_model.
 * Writes the version serving afterwards. INVALID_ARGUMENT without a registry; INVALID_FILE on a
 * digest mismatch (nothing changed). Not from a callback (WRONG_THREAD). */
EDGELLM_API edgellm_status edgellm_reload_registry(edgellm_runtime* runtime, char* version_buf, size_t capacity,
                                                   size_t* length);

/* Installs file_path into the registry at registry_dir as name@version: hashed while it is
 * copied (or, with move_file, renamed in place when it is on the same file system: a file the
 * app downloaded itself), verified against sha256 (64 hex digits; NULL or "" records the file's
 * digest), fsynced, then made the version new loads use in one atomic step. On any failure
 * (INVALID_FILE: digest or format mismatch; IO: read error or full disk) the registry is
 * unchanged and the previous version stays current. Writes the installed manifest as JSON; the
 * install happens once whatever the buffer, so a buffer too small for the manifest still
 * installs (BUFFER_TOO_SMALL then only says the manifest was not written: read it with
 * edgellm_registry_list_json; 16 KiB always holds it). */
EDGELLM_API edgellm_status edgellm_registry_install(const char* registry_dir, const char* file_path, const char* name,
                                                    const char* version, const char* sha256, bool move_file,
                                                    char* buf, size_t capacity, size_t* length);
/* The path of "name" (its current version) or "name@version", verified by SHA-256 before its
 * first use (re-hashed only when the file changed since its last verification): pass it to
 * edgellm_runtime_create or edgellm_swap_model. NOT_FOUND when not installed, INVALID_FILE when
 * the file no longer matches its digest (do not load it). */
EDGELLM_API edgellm_status edgellm_registry_resolve(const char* registry_dir, const char* name_or_key, char* buf,
                                                    size_t capacity, size_t* length);
/* {"models": [manifest + "current" + "path", ...], "unfit": [configuration keys]}. */
EDGELLM_API edgellm_status edgellm_registry_list_json(const char* registry_dir, char* buf, size_t capacity,
                                                      size_t* length);
/* Makes name@version the version new loads of name use (a rollback). NOT_FOUND when not
 * installed. A runtime picks it up with edgellm_reload_registry. */
EDGELLM_API edgellm_status edgellm_registry_set_current(const char* registry_dir, const char* name,
                                                        const char* version);
/* Removes an installed version. INVALID_ARGUMENT for the current version (set another current
 * first, so a removal never switches versions behind the app's back); NOT_FOUND. */
EDGELLM_API edgellm_status edgellm_registry_remove(const char* registry_dir, const char* name, const char* version);

/* ============================================================================== device fitness */

/* Which model and configuration fit a device, with the memory arithmetic. request_json:
 *   {"device": "this" | "phone-4gb" | "phone-8gb" | "phone-12gb" | "phone-16gb" | {profile},
 *    "models": ["/path/a.gguf", ...]  and/or  "registry": "/path/to/registry",
 *    "max_ctx": 4096, "min_ctx": 512, "n_parallel": 1, "headroom": 0.15,
 *    "power_mode": "performance" | "balanced" | "efficiency",
 *    "min_decode_tokens_per_second": 0}
 * (every field optional but one source of models; a registry model measured slower than
 * min_decode_tokens_per_second is not chosen). Writes the plan as JSON ("choice" is null when
 * nothing fits). Blocks while each candidate's index is mapped (no weights are read). */
EDGELLM_API edgellm_status edgellm_plan_json(const char* request_json, char* buf, size_t capacity, size_t* length);

/* Writes the pack file of the model at model_path: its matrices in the interleaved layout this
 * library's kernels multiply (the repacking a load with repack AUTO does, ~1 s per GB), so that
 * later loads map them in milliseconds instead. Written to "<pack_dir>/<model file name>.x16.pack"
 * (pack_dir NULL: beside the model; "" is INVALID_ARGUMENT), atomically: a temporary file renamed
 * over the old one, so a full disk (IO) leaves the previous file or none, never a torn one. About
 * the size of the model; a runtime using this model need not be stopped. n_threads 0: the default
 * count, at most 256. Blocks (seconds for a 1-3B model): call it off the UI thread, e.g. once
 * after installing or updating a model. INVALID_ARGUMENT: NULL model_path, n_threads out of
 * range, or a model with no matrix to repack; UNSUPPORTED: this CPU has no SIMD kernels for the
 * model's interleaved layouts (none is written); IO, INVALID_FILE as for a load. */
EDGELLM_API edgellm_status edgellm_pack_model(const char* model_path, const char* pack_dir, int32_t n_threads);

/* ============================================================================== pressure, degradation */
/* docs/device-fitness.md, "The ladder". */

typedef struct edgellm_pressure {
  uint32_t struct_size;  /* sizeof(edgellm_pressure) */
  int32_t memory_level;  /* 0 none, 1 moderate, 2 high, 3 critical, 4 free memory now */
  int32_t thermal_level; /* 0 none, 1 warm, 2 hot, 3 critical */
  bool power_save;       /* the device is in power-save mode */
} edgellm_pressure;

/* Feeds the device's pressure (the platform's memory-level, thermal and power-save callbacks) to
 * the degradation ladder; returns at once. The ladder steps down one rung at a time — fewer
 * threads, shorter context, int8 KV, the fallback model (edgellm_set_fallback_model), refusing new
 * requests (DEGRADED), and at memory level 4 ending running requests (their result: ERROR with
 * status DEGRADED and the text so far) — and back up once the pressure has stayed lower for
 * recover_ms per rung. No step but the last touches a request already admitted. Levels out of
 * range: INVALID_ARGUMENT. */
EDGELLM_API edgellm_status edgellm_set_pressure(edgellm_runtime* runtime, const edgellm_pressure* pressure);

/* The smaller model the ladder's "smaller model" rung switches to (NULL path: none). The file is
 * opened to read its shape (IO / INVALID_FILE when it cannot be). */
EDGELLM_API edgellm_status edgellm_set_fallback_model(edgellm_runtime* runtime, const char* model_path,
                                                      const char* version);

/* The ladder as JSON: the rung in force, per rung how often it was entered and left and the last
 * reason, the configuration (model version, context, threads, KV type), refused and ended
 * requests. */
EDGELLM_API edgellm_status edgellm_degradation_json(edgellm_runtime* runtime, char* buf, size_t capacity,
                                                    size_t* length);

/* ============================================================================== the router */
/* Local first, the cloud where the app allows it (docs/router.md). The library opens no socket:
 * the app passes a transport that makes the HTTP call (an OpenAI chat-completions POST to the
 * tier's endpoint, which the app knows) and reports the answer with edgellm_cloud_complete. */

typedef struct edgellm_cloud_call edgellm_cloud_call; /* opaque: one call awaiting its answer */

/* Called on the router thread for each cloud call: tier ("small" or "large"), the model name the
 * body asks for, the request body (JSON). Start the call and return; then call
 * edgellm_cloud_complete(call, ...) exactly once, from any thread, even after the runtime was
 * destroyed (the answer is then dropped). */
typedef void (*edgellm_cloud_transport)(edgellm_cloud_call* call, const char* tier, const char* model,
                                        const char* body, size_t body_len, void* user_data);

/* Reports a call's answer: the HTTP status and body, or http_status 0 and an error (NULL: "no
 * answer"). Frees the call: do not use it afterwards. INVALID_ARGUMENT for a NULL call, or a
 * NULL body with body_len > 0 (then the call is not freed: complete it properly). */
EDGELLM_API edgellm_status edgellm_cloud_complete(edgellm_cloud_call* call, int32_t http_status, const char* body,
                                                  size_t body_len, const char* error);

typedef struct edgellm_router_params {
  uint32_t struct_size;   /* set by edgellm_router_default_params() */
  double local_threshold; /* answer locally at a confidence >= this; default 0.85 */
  double cloud_threshold; /* ask the cloud below this; default 0.6; 0 <= cloud <= local <= 1 */
  bool privacy;           /* never call the cloud (the transport is never called); default false */
  int32_t verbatim_turns; /* user turns sent verbatim, older ones as a local summary; default 3 */
  int32_t cloud_timeout_ms; /* a call not completed by then counts as failed; default 30000 */
  bool cloud_on_failure;  /* a local run that fails (memory, degraded, context full) goes to the
                             cloud; default true */
  const char* cloud_model;       /* the "small" tier's model name; NULL: "" */
  const char* cloud_model_large; /* the "large" tier's (a full context, or when small fails); NULL: no second tier */
  int32_t summary_max_tokens;    /* the local summary of older turns; default 128 */
  /* NULL: no cloud (routed requests are answered locally). The transport and its user_data must
   * stay usable until edgellm_runtime_destroy returns: requests submitted before a later
   * edgellm_set_router keep calling the transport they started with. */
  edgellm_cloud_transport transport;
  void* transport_user_data;
} edgellm_router_params;

EDGELLM_API edgellm_router_params edgellm_router_default_params(void);
/* Sets the router (replacing the previous settings; requests in flight keep theirs).
 * INVALID_ARGUMENT for thresholds out of order or values out of range. */
EDGELLM_API edgellm_status edgellm_set_router(edgellm_runtime* runtime, const edgellm_router_params* params);

/* ============================================================================== metrics */

typedef struct edgellm_metrics {
  uint32_t struct_size; /* set by edgellm_metrics_init(); the library writes only within it */
  uint64_t requests_submitted;
  uint64_t requests_finished;
  uint64_t busy_rejections;
  uint64_t invalid_requests;
  uint64_t finished_stop, finished_length, cancellations, timeouts, errors;
  uint64_t prompt_tokens, completion_tokens;
  uint64_t steps, step_tokens, aborted_steps;
  double prefill_tokens_per_second; /* over requests' prefill time */
  double decode_tokens_per_second;  /* per request, over requests' decode time */
  double ttft_ms_mean, queue_ms_mean;
  int32_t running, waiting;
  bool paused;
  uint64_t rss_bytes, peak_rss_bytes;
  /* The KV cache manager. Blocks: used (held by requests) + cached (kept by the prefix cache,
   * evicted when the pool needs them) + free = kv_blocks_total. */
  int32_t kv_blocks_used, kv_blocks_cached, kv_blocks_free, kv_blocks_total;
  uint64_t kv_pool_bytes;        /* the pool's size: the KV budget */
  uint64_t prompt_tokens_cached; /* prompt tokens taken from the prefix cache (of prompt_tokens) */
  double prefix_hit_rate;        /* prompt_tokens_cached / prompt_tokens */
  double kv_fragmentation;       /* unused slots / slots of the blocks running requests hold */
  uint64_t kv_evictions;         /* cached blocks evicted for new content */
  /* Threads decode and prefill run on, and how often a worker priority the power mode asked for
   * was refused (no CAP_SYS_NICE; the threads keep theirs). */
  int32_t n_threads, n_threads_batch;
  uint64_t thread_priority_denied;
  /* The model host and the degradation ladder. */
  uint64_t model_swaps;        /* versions switched in (edgellm_swap_model, reloads, the ladder) */
  int32_t degradation_rung;    /* 0 normal .. 6 ending running requests */
  uint64_t degradation_steps;  /* rungs taken, down and up */
  uint64_t degraded_refusals;  /* requests the ladder refused */
  uint64_t degraded_endings;   /* running requests the ladder ended */
  /* The router: answers by route, cloud calls that failed, cloud routes privacy mode refused,
   * failed local runs sent to the cloud. */
  uint64_t routed_local, routed_low_confidence, routed_cloud;
  uint64_t cloud_failures, privacy_blocks, failure_fallbacks;
  /* Sessions kept by id. */
  int32_t sessions;
  uint64_t session_bytes;
  /* max_decode_batch: the most requests decoded in one step (prompt chunks not counted): above 1
   * only when requests ran batched. paused_idle: paused, and the scheduler has seen it: no step
   * runs and no token is streamed until edgellm_resume (edgellm_pause only asks; this says the
   * step in flight, if any, has ended). */
  int32_t max_decode_batch;
  bool paused_idle;
} edgellm_metrics;

EDGELLM_API edgellm_metrics edgellm_metrics_init(void);
/* Fills *out up to out->struct_size (an older program's smaller struct gets its prefix) and sets
 * out->struct_size to the bytes written: smaller than the caller's when the caller's struct is
 * larger than this library's (a newer program: read only the fields within it).
 * INVALID_ARGUMENT for a NULL out or a struct_size of 0. */
EDGELLM_API edgellm_status edgellm_metrics_get(edgellm_runtime* runtime, edgellm_metrics* out);
/* The same and more (latency histograms, the ladder's rungs, the router, model versions) as JSON,
 * or as Prometheus text exposition. */
EDGELLM_API edgellm_status edgellm_metrics_json(edgellm_runtime* runtime, char* buf, size_t capacity, size_t* length);
EDGELLM_API edgellm_status edgellm_metrics_prometheus(edgellm_runtime* runtime, char* buf, size_t capacity,
                                                      size_t* length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGELLM_EDGELLM_H */
