/*
 * EdgeLLM C ABI: run a GGUF language model on the device, many requests at once, from any thread.
 *
 * Lifecycle
 *   edgellm_service_create()   load the model, start the scheduler thread (blocks: initialise
 *                              once, off the UI thread)
 *   edgellm_submit()           queue a request; returns at once with an id, or BUSY when the
 *                              waiting queue is full; tokens then stream through on_token and
 *                              exactly one on_finish follows
 *   edgellm_cancel()           end one request (finish reason CANCELLED)
 *   edgellm_pause() / _resume() the app went to the background / came back: nothing runs, KV kept
 *   edgellm_trim()             give scratch and cached KV memory back (memory pressure)
 *   edgellm_warmup()           a short forward in the background so the first request is fast
 *   edgellm_service_destroy()  cancel what is left (each request still gets on_finish), stop
 *
 * Threads
 *   One scheduler thread per service runs every forward pass and calls every callback
 *   (on_token, on_finish, trim and warm-up completions). The library holds none of its locks
 *   while it calls back, so a callback may call any function here except
 *   edgellm_service_destroy() for its own service (EDGELLM_ERR_WRONG_THREAD). Callbacks hold up
 *   every running request: copy what you need and return. Unless a function says otherwise it
 *   is safe to call from any thread at any time on a live service. The log callback may run on
 *   any thread.
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
/* Bumped whenever a struct or a signature of this header changes: compare it with
 * EDGELLM_ABI_VERSION to detect a header / library mismatch. */
#define EDGELLM_ABI_VERSION 5
EDGELLM_API uint32_t edgellm_abi_version(void);

/* ------------------------------------------------------------------------------ statuses */

typedef enum edgellm_status {
  EDGELLM_OK = 0,
  /* A null pointer where one is required, a value out of range, text that is not valid UTF-8,
   * an unknown message role, no input or more than one. Nothing was changed or queued. */
  EDGELLM_ERR_INVALID_ARGUMENT = 1,
  /* The waiting queue is full: max_queued requests already wait beyond those the free sequences
   * take at once. Nothing was queued; try again later. Answered at once, never after a wait. */
  EDGELLM_ERR_BUSY = 2,
  /* edgellm_cancel: no waiting or running request has this id (unknown or already finished). */
  EDGELLM_ERR_NOT_FOUND = 3,
  /* The model file cannot be opened or read. No service was created. */
  EDGELLM_ERR_IO = 4,
  /* The model file is malformed (not GGUF, truncated, hostile). No service was created. */
  EDGELLM_ERR_INVALID_FILE = 5,
  /* Well-formed but not supported (architecture, tensor type). No service was created. */
  EDGELLM_ERR_UNSUPPORTED = 6,
  /* Memory could not be allocated, or a request needs more KV blocks than the pool has. */
  EDGELLM_ERR_OUT_OF_MEMORY = 7,
  /* In a result: the prompt does not fit the context (it needs n_ctx - 1 positions at most). */
  EDGELLM_ERR_CONTEXT_FULL = 8,
  /* The service is shutting down; nothing was queued. */
  EDGELLM_ERR_SHUT_DOWN = 9,
  /* The output buffer is smaller than *length + 1 (text) or *length (arrays); nothing written. */
  EDGELLM_ERR_BUFFER_TOO_SMALL = 10,
  /* edgellm_service_destroy called from one of the service's own callbacks. Nothing changed. */
  EDGELLM_ERR_WRONG_THREAD = 11,
  /* A bug in EdgeLLM (a broken invariant). The request or call failed; the service runs on. */
  EDGELLM_ERR_INTERNAL = 12,
  /* The device is under pressure (memory, heat, power) and the degradation ladder refuses new
   * requests, or ended a running one (docs/device-fitness.md); the message names the reason.
   * Nothing was queued; retry when the pressure is gone. */
  EDGELLM_ERR_DEGRADED = 13
} edgellm_status;

/* "ok", "invalid_argument", "busy", ... (static strings; "unknown" for other values). */
EDGELLM_API const char* edgellm_status_name(edgellm_status status);

/* The message of the last failed call on this thread ("" when none): valid until the next call
 * into the library on this thread. */
EDGELLM_API const char* edgellm_last_error(void);

/* ------------------------------------------------------------------------------ logging */

typedef enum edgellm_log_level {
  EDGELLM_LOG_DEBUG = 0,
  EDGELLM_LOG_INFO = 1,
  EDGELLM_LOG_WARN = 2,
  EDGELLM_LOG_ERROR = 3
} edgellm_log_level;

typedef void (*edgellm_log_callback)(edgellm_log_level level, const char* message, void* user_data);

/* Sends the library's log lines at min_level and above to fn (process-wide, every service).
 * NULL fn: warnings and errors go to stderr. The callback may run on any thread, concurrently;
 * after replacing it, a call already in progress may still reach the old one. */
EDGELLM_API void edgellm_set_log_callback(edgellm_log_callback fn, void* user_data, edgellm_log_level min_level);

/* ------------------------------------------------------------------------------ the service */

typedef struct edgellm_service edgellm_service; /* opaque */

/* KV cache element types. Q8_0 (8-bit, half of F16's memory) and Q4_0 (ABI 3; 4-bit, 36 % of
 * F16's at head_dim 64) need a head_dim that is a multiple of 32. EDGELLM_KV_SAME (ABI 3) is
 * only for kv_type_v: V in kv_type. */
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

/* ABI 3: power modes (docs/device-fitness.md, "Power modes"): thread counts, cores and worker
 * priority per phase, for this device's CPU clusters. Prefill runs on the fast cores; decode on
 * as many (PERFORMANCE, worker nice -5 where permitted), half as many (BALANCED), or the
 * efficiency cores at nice 10 (EFFICIENCY). A priority the system refuses is reported in the
 * metrics (thread_priority_denied, and a note in edgellm_metrics_json), never an error. */
typedef enum edgellm_power_mode {
  EDGELLM_POWER_NONE = 0, /* threads as n_threads / n_threads_batch say, where the system puts them */
  EDGELLM_POWER_PERFORMANCE = 1,
  EDGELLM_POWER_BALANCED = 2,
  EDGELLM_POWER_EFFICIENCY = 3
} edgellm_power_mode;

typedef struct edgellm_service_params {
  int32_t n_ctx;           /* positions per sequence; 0: the model's training context, at most 4096 */
  int32_t n_parallel;      /* requests decoded at once (sequences); default 4 */
  int32_t max_queued;      /* requests that may wait for a sequence (0: none wait); default 3 */
  int32_t step_tokens;     /* most tokens one step runs (decode tokens + a prompt chunk); default 256 */
  int32_t n_threads;       /* threads for decode (llama.cpp -t); 0: the power mode's, else the big cores */
  int32_t n_threads_batch; /* threads for prefill (llama.cpp -tb); 0: the power mode's, else n_threads */
  edgellm_kv_type kv_type; /* K cache type, and V's unless kv_type_v is set; default F16 */
  uint64_t kv_budget_bytes;       /* KV pool bytes; 0: see kv_budget_fraction */
  edgellm_repack repack;          /* default AUTO */
  uint64_t warmup_min_free_bytes; /* warm-up skipped below this much available memory; default 256 MiB */
  const char* chat_template;      /* NULL: the model's; else a built-in name or a file path */
  bool pin_threads;               /* pin worker threads to the big cores */
  /* ABI 2. With kv_budget_bytes 0: in (0, 1] the KV pool is this fraction of the memory
   * available at creation (at most twice n_parallel full sequences; the rest of a large budget
   * keeps prefixes cached); 0 (default): n_parallel full sequences. The pool never grows: a
   * request whose prompt + max_tokens cannot fit the whole pool ends with OUT_OF_MEMORY, one
   * that does not fit beside the running ones waits. */
  double kv_budget_fraction;
  /* ABI 3: default NONE. Explicit n_threads / n_threads_batch override the mode's counts. */
  edgellm_power_mode power_mode;
  /* ABI 3. The V cache type when it differs from kv_type (llama.cpp's --cache-type-v);
   * EDGELLM_KV_SAME (the default): kv_type. */
  edgellm_kv_type kv_type_v;
  /* ABI 4. Where pack files are looked for (edgellm_pack_model): NULL (the default) = beside the
   * model, "<model path>.x16.pack"; a folder = "<pack_dir>/<model file name>.x16.pack" (an app's
   * writable cache folder when the model sits in a read-only one; a hot swap looks there for
   * the new model's); "" = never map a pack file. A pack file that is missing or does not fit
   * (another model file, another library version's layouts, a CPU without the kernels) is not
   * an error: the load repacks as `repack` says, and edgellm_model_info_json's "pack_file" says
   * why. Unused with repack OFF. */
  const char* pack_dir;
} edgellm_service_params;

EDGELLM_API edgellm_service_params edgellm_service_default_params(void);

/* Loads the GGUF model at model_path and starts the service. params NULL: the defaults. On
 * success *out is the new service; on failure *out is NULL and the status says why (IO,
 * INVALID_FILE, UNSUPPORTED, OUT_OF_MEMORY, INVALID_ARGUMENT). Blocks while the model loads.
 * Any thread. */
EDGELLM_API edgellm_status edgellm_service_create(const char* model_path, const edgellm_service_params* params,
                                                  edgellm_service** out);

/* ABI 4. Writes the pack file of the model at model_path: its matrices in the interleaved layout
 * this library's kernels multiply (the repacking a load with repack AUTO does, ~1 s per GB), so
 * that later loads map them in milliseconds instead. Written to "<pack_dir>/<model file
 * name>.x16.pack" (pack_dir NULL: beside the model; "" is INVALID_ARGUMENT), atomically: a
 * temporary file of its own ("<pack file>.tmp.XXXXXX") renamed over the old one, so a full disk
 * (IO) leaves the previous file or none, never a torn one, and concurrent calls for one model
 * each leave a whole file (the last rename wins); a killed process can leave its temporary file.
 * About the size of the model; a service using this model need not be stopped (it keeps what it
 * loaded; its steps may wait while a slab is repacked on the shared threads). n_threads 0: the
 * default count, at most 256. Blocks (seconds for a 1-3B model): call it off the UI thread, e.g.
 * once after installing or updating a model. Any thread. INVALID_ARGUMENT: NULL model_path,
 * n_threads out of range, or a model with no matrix to repack; UNSUPPORTED: this CPU has no SIMD
 * kernels for the model's interleaved layouts (loads here would refuse the file, so none is
 * written); IO, INVALID_FILE as for a load. */
EDGELLM_API edgellm_status edgellm_pack_model(const char* model_path, const char* pack_dir, int32_t n_threads);

/* Cancels every waiting and running request (each gets on_finish with CANCELLED before this
 * returns), stops the scheduler thread and frees the service. NULL: no-op, OK. Returns
 * WRONG_THREAD (and does nothing) from the service's own callbacks. No other call may use the
 * service once this has started. */
EDGELLM_API edgellm_status edgellm_service_destroy(edgellm_service* service);

/* ------------------------------------------------------------------------------ requests */

typedef uint64_t edgellm_request_id; /* 0 is never a valid id */

typedef enum edgellm_priority {
  EDGELLM_PRIORITY_INTERACTIVE = 0, /* admitted first */
  EDGELLM_PRIORITY_BACKGROUND = 1
} edgellm_priority;

typedef enum edgellm_finish_reason {
  EDGELLM_FINISH_STOP = 0,      /* end-of-generation token or a stop string */
  EDGELLM_FINISH_LENGTH = 1,    /* max_tokens reached or the context is full */
  EDGELLM_FINISH_CANCELLED = 2, /* edgellm_cancel, on_token returned false, or the service was destroyed */
  EDGELLM_FINISH_TIMEOUT = 3,   /* the deadline passed (the text so far is in the result) */
  EDGELLM_FINISH_ERROR = 4      /* see the result's status and error_message */
} edgellm_finish_reason;

/* "stop", "length", "cancelled", "timeout", "error". */
EDGELLM_API const char* edgellm_finish_reason_name(edgellm_finish_reason reason);

typedef struct edgellm_message {
  const char* role;    /* "system", "user", "assistant" or "tool" */
  const char* content; /* UTF-8 */
} edgellm_message;

typedef struct edgellm_sampling {
  float temperature;       /* 0: greedy; [0, 100]; default 0.8 */
  int32_t top_k;           /* 0: off; default 40 */
  float top_p;             /* [0, 1]; 1: off; default 0.95 */
  float min_p;             /* [0, 1]; 0: off; default 0.05 */
  float repeat_penalty;    /* 1: off; (0, 100]; default 1 */
  float frequency_penalty; /* [-2, 2]; default 0 */
  float presence_penalty;  /* [-2, 2]; default 0 */
  int32_t penalty_last_n;  /* tokens the penalties look back at; -1: all; default 64 */
  uint64_t seed;           /* default 0 */
} edgellm_sampling;

typedef struct edgellm_token_event {
  edgellm_request_id id;
  int32_t token;    /* the sampled token id; -1 for text released when generation ends */
  const char* text; /* the text that became final with it: whole UTF-8 characters, may be empty
                       (held back: an incomplete character or a possible stop-string start) */
  size_t text_len;
  int32_t index; /* 0-based: events of this request before this one */
} edgellm_token_event;

typedef struct edgellm_request_stats {
  double queue_ms;   /* submit -> admitted to a sequence */
  double ttft_ms;    /* submit -> first token (0 when none) */
  double prefill_ms; /* admitted -> prompt prefilled */
  double decode_ms;  /* first -> last token */
  double total_ms;   /* submit -> on_finish */
  int32_t prompt_tokens;
  int32_t completion_tokens;
  double prefill_tokens_per_second;
  double decode_tokens_per_second;
  int32_t kv_blocks;       /* KV blocks the request held at the end */
  uint64_t peak_rss_bytes; /* the process's peak resident memory when it ended */
  int32_t cached_tokens;   /* ABI 2: of prompt_tokens, taken from the KV prefix cache (not prefilled) */
} edgellm_request_stats;

typedef struct edgellm_result {
  edgellm_request_id id;
  edgellm_finish_reason finish_reason;
  edgellm_status status;     /* OK unless finish_reason is ERROR */
  const char* error_message; /* "" unless finish_reason is ERROR */
  const char* text;          /* all text the token events delivered, NUL-terminated */
  size_t text_len;
  const char* stop_string; /* the stop string that ended it, or "" */
  edgellm_request_stats stats;
  /* ABI 2: OK when session_save was written (or not asked for), else why not (IO; SHUT_DOWN
   * never; a request that ended with ERROR saves nothing and reports INVALID_ARGUMENT). */
  edgellm_status session_status;
  /* ABI 2: the model version that served the request from start to end ("1" for the file the
   * service was created with, then what edgellm_swap_model named). */
  const char* model_version;
} edgellm_result;

/* Called on the scheduler thread for each token; return false to cancel the request. */
typedef bool (*edgellm_token_callback)(const edgellm_token_event* event, void* user_data);
/* Called exactly once per accepted request, after its last token event. */
typedef void (*edgellm_finish_callback)(const edgellm_result* result, void* user_data);

typedef struct edgellm_request_params {
  /* The input: exactly one of prompt, messages, tokens. */
  const char* prompt; /* raw UTF-8 text, NUL-terminated */
  const edgellm_message* messages; /* a chat, rendered with the model's chat template */
  size_t n_messages;
  const int32_t* tokens; /* token ids */
  size_t n_tokens;
  bool add_special;   /* raw prompt: add BOS/EOS as the model asks; default true */
  bool parse_special; /* raw prompt: control-token text becomes the control token; default false */

  edgellm_sampling sampling;
  int32_t max_tokens; /* < 0: until a stop or the context is full; 0: prefill only; default 256 */
  const char* const* stop; /* stop strings (never part of the output), at most 16 of 1-256 bytes */
  size_t n_stop;
  bool ignore_eos;     /* never sample end-of-generation tokens (llama.cpp's ignore_eos) */
  int64_t deadline_ms; /* from submit, queue wait included; <= 0: none; default 15000 */
  edgellm_priority priority;

  edgellm_token_callback on_token;   /* may be NULL */
  edgellm_finish_callback on_finish; /* may be NULL */
  void* user_data;                   /* passed to both */

  /* ABI 2: sessions (docs/sessions.md), to continue a conversation across restarts or devices
   * running the same model file and KV type. session_load: a session file to continue from;
   * the saved positions that start this request's prompt are restored instead of prefilled (the
   * prompt is the whole conversation, as always). It is read and checked in edgellm_submit, on
   * the calling thread: IO (cannot read), INVALID_FILE (truncated, corrupted), INVALID_ARGUMENT
   * (another model, KV type or shape); nothing is queued then. session_save: when the request
   * ends without ERROR, its KV (prompt + answer) is written to this file (FILE.tmp, then renamed)
   * on the scheduler thread before on_finish; result->session_status says whether it was.
   * NULL: none. The strings are copied by edgellm_submit. */
  const char* session_load;
  const char* session_save;

  /* ABI 2: endless streams (docs/context-shift.md). context_shift: when the sequence fills the
   * context, the older half of its positions after the first n_keep is dropped (cached K
   * re-rotated to the new positions) and generation goes on instead of ending with LENGTH; set
   * max_tokens or a deadline to bound it. n_keep: positions at the start never dropped (attention
   * sinks, the system prompt); -1 = the whole prompt; it must leave 2 positions of the context
   * (else on_finish reports ERROR, INVALID_ARGUMENT). Defaults: false, 4. */
  bool context_shift;
  int32_t n_keep;
} edgellm_request_params;

EDGELLM_API edgellm_request_params edgellm_request_default_params(void);

/* Validates and queues a request; returns at once. OK: *out_id is its id and on_finish will be
 * called exactly once. INVALID_ARGUMENT (null pointers, no input or several, invalid UTF-8,
 * unknown role, a last message from the assistant, token ids outside the vocabulary, sampling
 * values out of range, bad stop strings), BUSY (queue full) or SHUT_DOWN: nothing queued, no
 * callback, *out_id is 0. A prompt longer than the context is reported by on_finish (ERROR,
 * status CONTEXT_FULL): it is tokenized on the scheduler thread. */
EDGELLM_API edgellm_status edgellm_submit(edgellm_service* service, const edgellm_request_params* params,
                                          edgellm_request_id* out_id);

/* Ends a waiting or running request: its on_finish (CANCELLED, with the text so far) follows on
 * the scheduler thread, and a running request gets no token event after the step in flight.
 * NOT_FOUND when the id is unknown or the request has finished. */
EDGELLM_API edgellm_status edgellm_cancel(edgellm_service* service, edgellm_request_id id);

/* Pause: the step in flight is abandoned (and redone on resume, so outputs do not change), no
 * forward pass runs, KV memory is kept; cancellations and deadlines still end requests (deadlines
 * keep running). Resume continues. Both return at once: a step already past its last abort check
 * may still stream its tokens; edgellm_metrics.paused_idle (ABI 5) turns true once nothing runs. */
EDGELLM_API edgellm_status edgellm_pause(edgellm_service* service);
EDGELLM_API edgellm_status edgellm_resume(edgellm_service* service);

typedef void (*edgellm_trim_callback)(uint64_t bytes_released, void* user_data);
/* Releases scratch buffers (and the KV pool's pages when no request holds KV) between two steps;
 * done (may be NULL) runs on the scheduler thread with the bytes released. Returns at once. */
EDGELLM_API edgellm_status edgellm_trim(edgellm_service* service, edgellm_trim_callback done, void* user_data);

typedef void (*edgellm_warmup_callback)(bool ran, const char* reason, void* user_data);
/* Runs a short forward pass in the background. done (may be NULL) runs on the scheduler thread:
 * ran true, or false with the reason it was skipped (less available memory than
 * warmup_min_free_bytes, requests already running, shutting down). Deferred while paused.
 * Returns at once. */
EDGELLM_API edgellm_status edgellm_warmup(edgellm_service* service, edgellm_warmup_callback done, void* user_data);

/* ------------------------------------------------------------------------------ metrics */

typedef struct edgellm_metrics {
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
  int32_t kv_blocks_used, kv_blocks_total;
  bool paused;
  uint64_t rss_bytes, peak_rss_bytes;
  /* ABI 2: the KV cache manager. Blocks: used (held by requests) + cached (kept by the prefix
   * cache, evicted when the pool needs them) + free = kv_blocks_total. */
  int32_t kv_blocks_cached, kv_blocks_free;
  uint64_t kv_pool_bytes;        /* the pool's size: the KV budget */
  uint64_t prompt_tokens_cached; /* prompt tokens taken from the prefix cache (of prompt_tokens) */
  double prefix_hit_rate;        /* prompt_tokens_cached / prompt_tokens */
  double kv_fragmentation;       /* unused slots / slots of the blocks running requests hold */
  uint64_t kv_evictions;         /* cached blocks evicted for new content */
  /* ABI 3: the threads decode and prefill run on, and how often a worker priority the power
   * mode asked for was refused (no CAP_SYS_NICE; the threads keep theirs). */
  int32_t n_threads, n_threads_batch;
  uint64_t thread_priority_denied;
  /* ABI 5. max_decode_batch: the most requests decoded in one step (prompt chunks not counted):
   * above 1 only when requests ran batched. paused_idle: paused, and the scheduler has seen it:
   * no step runs and no token is streamed until edgellm_resume (edgellm_pause only asks; this
   * says the step in flight, if any, has ended). */
  int32_t max_decode_batch;
  bool paused_idle;
} edgellm_metrics;

EDGELLM_API edgellm_status edgellm_get_metrics(edgellm_service* service, edgellm_metrics* out);
/* The same and more (latency histograms) as JSON, or as Prometheus text exposition. */
EDGELLM_API edgellm_status edgellm_metrics_json(edgellm_service* service, char* buf, size_t capacity, size_t* length);
EDGELLM_API edgellm_status edgellm_metrics_prometheus(edgellm_service* service, char* buf, size_t capacity,
                                                      size_t* length);

/* ------------------------------------------------------------------------------ model and text */

/* JSON: architecture, parameters, vocabulary size, context, weight types, memory. */
EDGELLM_API edgellm_status edgellm_model_info_json(edgellm_service* service, char* buf, size_t capacity,
                                                   size_t* length);

/* Text -> token ids (tokens may be NULL with capacity 0 to ask for *n_tokens). */
EDGELLM_API edgellm_status edgellm_tokenize(edgellm_service* service, const char* text, bool add_special,
                                            bool parse_special, int32_t* tokens, size_t capacity,
                                            size_t* n_tokens);
/* Token ids -> text (control tokens rendered when render_special). */
EDGELLM_API edgellm_status edgellm_detokenize(edgellm_service* service, const int32_t* tokens, size_t n_tokens,
                                              bool render_special, char* buf, size_t capacity, size_t* length);
/* Renders messages with the model's chat template (what a chat request is prefilled with). */
EDGELLM_API edgellm_status edgellm_apply_template(edgellm_service* service, const edgellm_message* messages,
                                                  size_t n_messages, bool add_generation_prompt, char* buf,
                                                  size_t capacity, size_t* length);

/* ------------------------------------------------------------------------------ device fitness */
/* docs/device-fitness.md. These functions need no service; each may be called from any thread.
 * The registry functions take an exclusive file lock on the registry folder while they change
 * it, so several threads and processes may share one registry. */

/* Which model and configuration fit a device, with the memory arithmetic. request_json:
 *   {"device": "this" | "phone-4gb" | "phone-8gb" | "phone-12gb" | "phone-16gb" | {profile},
 *    "models": ["/path/a.gguf", ...]  and/or  "registry": "/path/to/registry",
 *    "max_ctx": 4096, "min_ctx": 512, "n_parallel": 1, "headroom": 0.15,
 *    "power_mode": "performance" | "balanced" | "efficiency",
 *    "min_decode_tokens_per_second": 0}
 * (every field optional but one source of models; a registry model measured slower than
 * min_decode_tokens_per_second is not chosen). Writes the plan as JSON ("choice" is null
 * when nothing fits). Blocks while each candidate's index is mapped (no weights are read). */
EDGELLM_API edgellm_status edgellm_plan_json(const char* request_json, char* buf, size_t capacity, size_t* length);

/* Installs file_path into the registry at registry_dir as name@version: hashed while it is
 * copied (or, with move_file, renamed in place when it is on the same file system: a file the
 * app downloaded itself), verified against sha256 (64 hex digits; NULL or "" records the
 * file's digest), fsynced, then made the version new loads use in one atomic step. On any
 * failure (INVALID_FILE: digest or format mismatch; IO: read error or full disk) the registry
 * is unchanged and the previous version stays current. Writes the installed manifest as JSON. */
EDGELLM_API edgellm_status edgellm_registry_install(const char* registry_dir, const char* file_path, const char* name,
                                                    const char* version, const char* sha256, bool move_file,
                                                    char* buf, size_t capacity, size_t* length);
/* The path of "name" (its current version) or "name@version", verified by SHA-256 before its
 * first use (re-hashed only when the file changed since its last verification): pass it to
 * edgellm_service_create. INVALID_ARGUMENT when not installed, INVALID_FILE when the file no
 * longer matches its digest (do not load it). */
EDGELLM_API edgellm_status edgellm_registry_resolve(const char* registry_dir, const char* name_or_key, char* buf,
                                                    size_t capacity, size_t* length);
/* {"models": [manifest + "current" + "path", ...], "unfit": [configuration keys]}. */
EDGELLM_API edgellm_status edgellm_registry_list_json(const char* registry_dir, char* buf, size_t capacity,
                                                      size_t* length);

/* ------------------------------------------------------------------------------ hot swap, degradation */
/* docs/device-fitness.md. */

/* Switches the service to another model file (an update: verify it first with
 * edgellm_registry_install / edgellm_registry_resolve). The new model is loaded and its context
 * built first — this call blocks meanwhile — and on failure (IO, INVALID_FILE, UNSUPPORTED,
 * OUT_OF_MEMORY) nothing changes: the current model keeps serving. Then, in one step, new
 * requests go to the new model while those already admitted finish on the old one, whose file
 * is unmapped after its last request. `version` (1-64 bytes) labels results
 * (edgellm_result.model_version). Any thread except the service's callbacks (WRONG_THREAD). */
EDGELLM_API edgellm_status edgellm_swap_model(edgellm_service* service, const char* model_path, const char* version);

typedef struct edgellm_pressure {
  int32_t memory_level;  /* 0 none, 1 moderate, 2 high, 3 critical, 4 free memory now */
  int32_t thermal_level; /* 0 none, 1 warm, 2 hot, 3 critical */
  bool power_save;       /* the device is in power-save mode */
} edgellm_pressure;

/* Feeds the device's pressure (the platform's memory-level, thermal and power-save callbacks)
 * to the degradation ladder; returns at once. The ladder steps down one rung at a time — fewer
 * threads, shorter context, int8 KV, the fallback model (edgellm_set_fallback_model), refusing new
 * requests (DEGRADED), and at memory level 4 ending running requests (their result: ERROR with
 * status DEGRADED and the text so far) — and back up once the pressure has stayed lower for 10 s
 * per rung. No step but the last touches a request already admitted. Levels out of range:
 * INVALID_ARGUMENT. Any thread. */
EDGELLM_API edgellm_status edgellm_set_pressure(edgellm_service* service, const edgellm_pressure* pressure);

/* The smaller model the ladder's "smaller model" rung switches to (NULL path: none). The file is
 * opened to read its shape (IO / INVALID_FILE when it cannot be). Any thread. */
EDGELLM_API edgellm_status edgellm_set_fallback_model(edgellm_service* service, const char* model_path,
                                                      const char* version);

/* The ladder as JSON: the rung in force, per rung how often it was entered and left and the last
 * reason, the configuration (model version, context, threads, KV type), refused and ended
 * requests. */
EDGELLM_API edgellm_status edgellm_degradation_json(edgellm_service* service, char* buf, size_t capacity,
                                                    size_t* length);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* EDGELLM_EDGELLM_H */
