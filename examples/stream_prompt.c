/*
 * stream_prompt: the smallest complete use of the EdgeLLM C ABI. It loads a GGUF model into a
 * runtime, submits one prompt, writes the text to stdout piece by piece as the scheduler thread
 * delivers it (on_token), and waits on a mutex and condition variable for the one final callback
 * (on_finish) that every accepted request gets. Then it prints the finish reason and the
 * request's statistics (prompt and completion tokens, time to first token, decode speed) to
 * stderr. Every call's status is checked and a failure prints edgellm_last_error(), which must
 * be read on the thread that made the failing call, right after it. The callbacks copy what
 * they need and return at once: they run on the runtime's scheduler thread, and a slow callback
 * holds up every request the runtime is running.
 *
 * Usage: stream_prompt MODEL.gguf [PROMPT]     (PROMPT defaults to "Once upon a time")
 * Exit status: 0 when the request ended by itself (stop or length), 1 on any failure, 2 on bad
 * usage.
 *
 * EDGELLM_EXAMPLE_ARGS: @TESTDATA@/models/stories260K.gguf "Lily went to the park"
 */
/* POSIX.1-2008 for pthread_condattr_setclock and clock_gettime, which strict C11 (-std=c11)
 * hides. Threads come from libc (glibc >= 2.34, bionic, musl): no -pthread needed there. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <edgellm/edgellm.h>

/* Bounds the wait for on_finish. The request's own deadline (15 s by default) ends it well
 * before this; the bound only turns a bug into an error message instead of a hang. */
#define WAIT_SECONDS 60

/* What the callbacks share with main. on_token touches only the fields marked "scheduler
 * thread" (it is the only writer and main reads them after on_finish, whose mutex unlock orders
 * them); everything else is under mutex. */
typedef struct stream_state {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  size_t streamed_bytes; /* scheduler thread: bytes written to stdout */
  bool write_failed;     /* scheduler thread: stdout failed, the request was cancelled */
  bool done;             /* on_finish ran */
  /* Copies from the result: its pointers are valid only during on_finish. */
  edgellm_finish_reason reason;
  edgellm_status status;
  char error[256];
  size_t text_len;
  edgellm_request_stats stats;
} stream_state;

static bool on_token(const edgellm_token_event* event, void* user_data) {
  stream_state* s = user_data;
  if (event->text_len == 0) return true; /* text held back (e.g. half a UTF-8 character) */
  if (fwrite(event->text, 1, event->text_len, stdout) != event->text_len || fflush(stdout) != 0) {
    s->write_failed = true;
    return false; /* nobody reads the output any more: cancel instead of generating on */
  }
  s->streamed_bytes += event->text_len;
  return true;
}

static void on_finish(const edgellm_result* result, void* user_data) {
  stream_state* s = user_data;
  pthread_mutex_lock(&s->mutex);
  s->reason = result->finish_reason;
  s->status = result->status;
  snprintf(s->error, sizeof s->error, "%s", result->error_message);
  s->text_len = result->text_len;
  s->stats = result->stats;
  s->done = true;
  /* Signalled under the lock: main may destroy the condition variable once it sees done. */
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->mutex);
}

static void report_failure(const char* call, edgellm_status status) {
  fprintf(stderr, "stream_prompt: %s failed: %s: %s\n", call, edgellm_status_name(status), edgellm_last_error());
}

/* The condition variable times out on CLOCK_MONOTONIC so a clock change cannot stretch or
 * shorten the wait. */
static int init_sync(stream_state* s) {
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc != 0) return rc;
  rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  if (rc == 0) rc = pthread_cond_init(&s->cond, &attr);
  pthread_condattr_destroy(&attr);
  if (rc != 0) return rc;
  rc = pthread_mutex_init(&s->mutex, NULL);
  if (rc != 0) pthread_cond_destroy(&s->cond);
  return rc;
}

/* Waits for on_finish until WAIT_SECONDS from now; false when it did not come in time. */
static bool wait_done(stream_state* s) {
  struct timespec until;
  if (clock_gettime(CLOCK_MONOTONIC, &until) != 0) {
    perror("stream_prompt: clock_gettime");
    return false;
  }
  until.tv_sec += WAIT_SECONDS;
  pthread_mutex_lock(&s->mutex);
  int rc = 0;
  while (!s->done && rc == 0) rc = pthread_cond_timedwait(&s->cond, &s->mutex, &until);
  const bool done = s->done; /* may have arrived together with the timeout */
  pthread_mutex_unlock(&s->mutex);
  if (!done) fprintf(stderr, "stream_prompt: no final callback after %d s (%s)\n", WAIT_SECONDS, strerror(rc));
  return done;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s MODEL.gguf [PROMPT]\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const char* prompt = argc == 3 ? argv[2] : "Once upon a time";

  /* The structs below are laid out as this header says: refuse a library built from another. */
  if (edgellm_abi_version() != EDGELLM_ABI_VERSION) {
    fprintf(stderr, "stream_prompt: libedgellm %s has ABI %u, this program was built for %d\n", edgellm_version(),
            (unsigned)edgellm_abi_version(), EDGELLM_ABI_VERSION);
    return 1;
  }

  stream_state state;
  memset(&state, 0, sizeof state);
  const int rc = init_sync(&state);
  if (rc != 0) {
    fprintf(stderr, "stream_prompt: cannot create the mutex / condition variable: %s\n", strerror(rc));
    return 1;
  }

  /* One stream: one sequence is enough, and it keeps the KV pool to one context's worth. */
  edgellm_runtime_params params = edgellm_runtime_default_params();
  params.n_parallel = 1;
  edgellm_runtime* runtime = NULL;
  edgellm_status st = edgellm_runtime_create(model_path, &params, &runtime);
  if (st != EDGELLM_OK) {
    report_failure("edgellm_runtime_create", st);
    pthread_mutex_destroy(&state.mutex);
    pthread_cond_destroy(&state.cond);
    return 1;
  }

  edgellm_request_params rp = edgellm_request_default_params();
  rp.prompt = prompt; /* copied by edgellm_submit */
  rp.max_tokens = 128;
  rp.on_token = on_token;
  rp.on_finish = on_finish;
  rp.user_data = &state;
  edgellm_request_id id = 0;
  bool ok = true;
  st = edgellm_submit(runtime, &rp, &id);
  if (st != EDGELLM_OK) {
    report_failure("edgellm_submit", st); /* no callback will come: nothing to wait for */
    ok = false;
  } else if (!wait_done(&state)) {
    ok = false; /* destroy below cancels the request and delivers its on_finish before it returns */
  }

  /* Every callback has run once destroy returns, so state may be read without the lock and
   * then freed. */
  st = edgellm_runtime_destroy(runtime);
  if (st != EDGELLM_OK) {
    report_failure("edgellm_runtime_destroy", st);
    ok = false;
  }
  /* End the streamed line, and flush it before the report on stderr so the two do not interleave. */
  if (state.streamed_bytes > 0 && (fputc('\n', stdout) == EOF || fflush(stdout) != 0)) ok = false;

  if (state.done) {
    const edgellm_request_stats* s = &state.stats;
    fprintf(stderr, "finish: %s\n", edgellm_finish_reason_name(state.reason));
    fprintf(stderr, "prompt tokens: %d, completion tokens: %d\n", (int)s->prompt_tokens, (int)s->completion_tokens);
    fprintf(stderr, "time to first token: %.2f ms, decode: %.1f tokens/s, total: %.2f ms\n", s->ttft_ms,
            s->decode_tokens_per_second, s->total_ms);
    switch (state.reason) {
      case EDGELLM_FINISH_STOP:
      case EDGELLM_FINISH_LENGTH:
      case EDGELLM_FINISH_TOOL_CALLS: break; /* only with tools, which this example does not send */
      case EDGELLM_FINISH_ERROR:
        fprintf(stderr, "stream_prompt: the request failed: %s: %s\n", edgellm_status_name(state.status), state.error);
        ok = false;
        break;
      case EDGELLM_FINISH_TIMEOUT:
        fprintf(stderr, "stream_prompt: the request's deadline passed (the text above is partial)\n");
        ok = false;
        break;
      case EDGELLM_FINISH_CANCELLED:
        fprintf(stderr, "stream_prompt: the request was cancelled%s\n",
                state.write_failed ? " (writing to stdout failed)" : "");
        ok = false;
        break;
    }
    /* The result's text is everything the token events delivered. */
    if (state.text_len != state.streamed_bytes && !state.write_failed) {
      fprintf(stderr, "stream_prompt: streamed %zu bytes but the result holds %zu\n", state.streamed_bytes,
              state.text_len);
      ok = false;
    }
  }

  pthread_mutex_destroy(&state.mutex);
  pthread_cond_destroy(&state.cond);
  return ok ? 0 : 1;
}
