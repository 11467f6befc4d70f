/*
 * concurrent_streams: four requests streaming at once from one runtime (n_parallel 4: the
 * scheduler decodes one token of each per step), and the three ways a request ends early. One
 * is cancelled from the main thread with edgellm_cancel after it produced some tokens; one has
 * a deadline that passes while it is still generating, so it ends TIMEOUT with the text it had
 * produced; two run to their end (LENGTH or STOP). It prints one line per request (finish
 * reason, tokens, a preview of the text) and checks each outcome, exiting non-zero otherwise.
 * Every wait is bounded (pthread_cond_timedwait), so a bug fails the run instead of hanging it.
 *
 * Making it deterministic on any machine. Left alone, the "cancel" and "timeout" requests race
 * the clock: on a fast machine the cancel could come after the request reached the end of the
 * context, and a short deadline could pass before the first token. So the two of them pause the
 * runtime from their on_token callback (calls into the library are allowed there) as soon as
 * both have produced 3 tokens. Paused, no forward pass runs and no request can end by itself,
 * but cancellations and deadlines still end requests (deadlines keep running while paused). The
 * main thread then cancels one, waits until the other's deadline has ended it, and resumes; the
 * two others, frozen meanwhile with their KV kept, continue to their end. The only timing left
 * is that both paused requests produce 3 tokens within TIMEOUT_DEADLINE_MS of being submitted,
 * a few milliseconds of work for the test model.
 *
 * Usage: concurrent_streams MODEL.gguf
 *
 * EDGELLM_EXAMPLE_ARGS: @TESTDATA@/models/stories260K.gguf
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

#define N_STREAMS 4
#define WAIT_SECONDS 60          /* bound on every wait of the main thread */
#define TOKENS_BEFORE_PAUSE 3    /* what the cancelled and the timed-out request produce first */
#define TIMEOUT_DEADLINE_MS 1500 /* the timed-out request's deadline */
#define COMPLETE_MAX_TOKENS 40   /* the two requests that run to their end */

enum { CANCELLED_STREAM = 0, TIMEOUT_STREAM = 1 }; /* indices of the two that end early */

typedef struct app app;

/* One request. The fields after `id` are written by the scheduler thread under app->mutex. */
typedef struct stream {
  app* app;
  const char* name;
  const char* prompt;
  edgellm_request_id id;
  int tokens;            /* token events carrying a sampled token */
  size_t streamed_bytes; /* text delivered by the token events */
  bool done;
  edgellm_finish_reason reason;
  edgellm_status status;
  char error[160];
  size_t text_len;
  int32_t completion_tokens;
  char preview[48]; /* the start of the text, for the report */
} stream;

struct app {
  pthread_mutex_t mutex;
  pthread_cond_t cond; /* broadcast on every change main may wait for */
  edgellm_runtime* runtime;
  stream streams[N_STREAMS];
  bool pause_requested; /* a callback decided to pause (exactly one does) */
  bool paused;          /* ... and edgellm_pause returned */
  edgellm_status pause_status;
};

/* Copies the start of text into out, cut at a UTF-8 character boundary, newlines as spaces. */
static void make_preview(char* out, size_t size, const char* text, size_t len) {
  size_t n = len < size - 1 ? len : size - 1;
  if (n < len) {
    while (n > 0 && ((unsigned char)text[n] & 0xC0) == 0x80) --n; /* do not split a character */
  }
  for (size_t i = 0; i < n; ++i) out[i] = (text[i] == '\n' || text[i] == '\r') ? ' ' : text[i];
  out[n] = '\0';
}

static bool on_token(const edgellm_token_event* event, void* user_data) {
  stream* s = user_data;
  app* a = s->app;
  pthread_mutex_lock(&a->mutex);
  if (event->token >= 0) ++s->tokens;
  s->streamed_bytes += event->text_len;
  const bool pause_now = !a->pause_requested && a->streams[CANCELLED_STREAM].tokens >= TOKENS_BEFORE_PAUSE &&
                         a->streams[TIMEOUT_STREAM].tokens >= TOKENS_BEFORE_PAUSE;
  if (pause_now) a->pause_requested = true;
  pthread_cond_broadcast(&a->cond);
  pthread_mutex_unlock(&a->mutex);
  if (pause_now) {
    /* Outside our lock: the library may be called from here, and main locks a->mutex around
     * nothing but its own bookkeeping, so no lock order can form anyway; keeping library calls
     * outside it keeps that obvious. a->runtime was set before the first submit. */
    const edgellm_status st = edgellm_pause(a->runtime);
    pthread_mutex_lock(&a->mutex);
    a->paused = true;
    a->pause_status = st;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mutex);
  }
  return true;
}

static void on_finish(const edgellm_result* result, void* user_data) {
  stream* s = user_data;
  app* a = s->app;
  pthread_mutex_lock(&a->mutex);
  s->reason = result->finish_reason;
  s->status = result->status;
  snprintf(s->error, sizeof s->error, "%s", result->error_message);
  s->text_len = result->text_len;
  s->completion_tokens = result->stats.completion_tokens;
  make_preview(s->preview, sizeof s->preview, result->text, result->text_len);
  s->done = true;
  pthread_cond_broadcast(&a->cond); /* under the lock: main may free app once it sees done */
  pthread_mutex_unlock(&a->mutex);
}

static void report_failure(const char* call, edgellm_status status) {
  fprintf(stderr, "concurrent_streams: %s failed: %s: %s\n", call, edgellm_status_name(status), edgellm_last_error());
}

/* Conditions main waits for (called with a->mutex held). */
static bool paused_or_early_end(const app* a) {
  return a->paused || a->streams[CANCELLED_STREAM].done || a->streams[TIMEOUT_STREAM].done;
}
static bool early_ones_done(const app* a) {
  return a->streams[CANCELLED_STREAM].done && a->streams[TIMEOUT_STREAM].done;
}
static bool all_done(const app* a) {
  for (int i = 0; i < N_STREAMS; ++i) {
    if (!a->streams[i].done) return false;
  }
  return true;
}

/* Waits until pred holds or the absolute CLOCK_MONOTONIC time `until`; returns pred. */
static bool wait_for(app* a, bool (*pred)(const app*), const struct timespec* until, const char* what) {
  pthread_mutex_lock(&a->mutex);
  int rc = 0;
  while (!pred(a) && rc == 0) rc = pthread_cond_timedwait(&a->cond, &a->mutex, until);
  const bool ok = pred(a);
  pthread_mutex_unlock(&a->mutex);
  if (!ok) fprintf(stderr, "concurrent_streams: gave up waiting for %s (%s)\n", what, strerror(rc));
  return ok;
}

static int init_sync(app* a) {
  pthread_condattr_t attr;
  int rc = pthread_condattr_init(&attr);
  if (rc != 0) return rc;
  rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* immune to wall-clock changes */
  if (rc == 0) rc = pthread_cond_init(&a->cond, &attr);
  pthread_condattr_destroy(&attr);
  if (rc != 0) return rc;
  rc = pthread_mutex_init(&a->mutex, NULL);
  if (rc != 0) pthread_cond_destroy(&a->cond);
  return rc;
}

/* The whole run after the runtime exists; false on any failure. The caller destroys the
 * runtime, which ends whatever is still running (each request still gets on_finish). */
static bool run(app* a, const struct timespec* until) {
  static const char* const names[N_STREAMS] = {"cancel", "timeout", "complete-1", "complete-2"};
  static const char* const prompts[N_STREAMS] = {"Once upon a time", "The little dog", "Lily wanted to",
                                                 "Tom and his friend"};
  edgellm_sampling greedy = edgellm_sampling_default(); /* copied by edgellm_submit */
  greedy.temperature = 0;
  for (int i = 0; i < N_STREAMS; ++i) {
    stream* s = &a->streams[i];
    s->app = a;
    s->name = names[i];
    s->prompt = prompts[i];
    edgellm_request_params rp = edgellm_request_default_params();
    rp.prompt = s->prompt;
    rp.sampling = &greedy; /* the same text every run */
    if (i == CANCELLED_STREAM || i == TIMEOUT_STREAM) {
      rp.max_tokens = -1; /* cannot end by itself before the context is full */
      rp.ignore_eos = true;
    } else {
      rp.max_tokens = COMPLETE_MAX_TOKENS;
    }
    /* Only the timed request has a deadline: the pause would count against the others'. */
    rp.deadline_ms = i == TIMEOUT_STREAM ? TIMEOUT_DEADLINE_MS : 0;
    rp.on_token = on_token;
    rp.on_finish = on_finish;
    rp.user_data = s;
    edgellm_request_id id = 0;
    const edgellm_status st = edgellm_submit(a->runtime, &rp, &id);
    if (st != EDGELLM_OK) {
      report_failure("edgellm_submit", st);
      return false;
    }
    /* on_token reads only counters, never id, so writing it after submit returns is safe. */
    pthread_mutex_lock(&a->mutex);
    s->id = id;
    pthread_mutex_unlock(&a->mutex);
  }

  /* Phase 1: both early-ending requests produce their first tokens; one of them pauses. */
  if (!wait_for(a, paused_or_early_end, until, "the pause")) return false;
  pthread_mutex_lock(&a->mutex);
  const bool paused = a->paused;
  const edgellm_status pause_status = a->pause_status;
  const edgellm_request_id cancel_id = a->streams[CANCELLED_STREAM].id;
  pthread_mutex_unlock(&a->mutex);
  if (!paused) {
    fprintf(stderr, "concurrent_streams: a request ended before both produced %d tokens (machine too slow for a %d ms "
                    "deadline?)\n", TOKENS_BEFORE_PAUSE, TIMEOUT_DEADLINE_MS);
    return false;
  }
  if (pause_status != EDGELLM_OK) {
    fprintf(stderr, "concurrent_streams: edgellm_pause from a callback failed: %s\n", edgellm_status_name(pause_status));
    return false;
  }

  /* Phase 2, paused: a cancel and a deadline still end requests. */
  const edgellm_status st = edgellm_cancel(a->runtime, cancel_id);
  if (st != EDGELLM_OK) {
    report_failure("edgellm_cancel", st); /* NOT_FOUND would mean it had ended: a bug here */
    return false;
  }
  if (!wait_for(a, early_ones_done, until, "the cancelled and the timed-out request")) return false;

  /* Phase 3: the two others continue where they stopped. */
  const edgellm_status rs = edgellm_resume(a->runtime);
  if (rs != EDGELLM_OK) {
    report_failure("edgellm_resume", rs);
    return false;
  }
  return wait_for(a, all_done, until, "the requests to finish");
}

/* Prints each request's line and checks its outcome (after every callback has run). */
static bool check(const app* a) {
  bool ok = true;
  for (int i = 0; i < N_STREAMS; ++i) {
    const stream* s = &a->streams[i];
    if (!s->done) {
      printf("%-10s  (no result)\n", s->name);
      ok = false;
      continue;
    }
    printf("%-10s  %-9s  %3d tokens  \"%s...\"\n", s->name, edgellm_finish_reason_name(s->reason),
           (int)s->completion_tokens, s->preview);
    bool good;
    switch (i) {
      case CANCELLED_STREAM: good = s->reason == EDGELLM_FINISH_CANCELLED; break;
      case TIMEOUT_STREAM: good = s->reason == EDGELLM_FINISH_TIMEOUT && s->text_len > 0; break;
      default: good = (s->reason == EDGELLM_FINISH_LENGTH || s->reason == EDGELLM_FINISH_STOP) && s->status == EDGELLM_OK;
    }
    if (!good) {
      fprintf(stderr, "concurrent_streams: %s: unexpected end %s (%s%s%s, %zu bytes of text)\n", s->name,
              edgellm_finish_reason_name(s->reason), edgellm_status_name(s->status), s->error[0] ? ": " : "", s->error,
              s->text_len);
      ok = false;
    }
    if (s->text_len != s->streamed_bytes) { /* the result holds exactly what was streamed */
      fprintf(stderr, "concurrent_streams: %s: streamed %zu bytes, the result holds %zu\n", s->name,
              s->streamed_bytes, s->text_len);
      ok = false;
    }
    if (s->tokens != s->completion_tokens) {
      fprintf(stderr, "concurrent_streams: %s: %d token events, %d completion tokens\n", s->name, s->tokens,
              (int)s->completion_tokens);
      ok = false;
    }
  }
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
    return 2;
  }
  if (edgellm_abi_version() != EDGELLM_ABI_VERSION) {
    fprintf(stderr, "concurrent_streams: libedgellm %s has ABI %u, this program was built for %d\n", edgellm_version(),
            (unsigned)edgellm_abi_version(), EDGELLM_ABI_VERSION);
    return 1;
  }
  /* static: zeroed, and alive until exit whatever path main takes. */
  static app a;
  const int rc = init_sync(&a);
  if (rc != 0) {
    fprintf(stderr, "concurrent_streams: cannot create the mutex / condition variable: %s\n", strerror(rc));
    return 1;
  }
  struct timespec until;
  if (clock_gettime(CLOCK_MONOTONIC, &until) != 0) {
    perror("concurrent_streams: clock_gettime");
    return 1;
  }
  until.tv_sec += WAIT_SECONDS;

  edgellm_runtime_params params = edgellm_runtime_default_params();
  params.n_ctx = 256;     /* small: the two open-ended requests reserve a whole context each */
  params.n_parallel = 4;  /* all four decode together */
  params.max_queued = 4;  /* all four may be waiting before the scheduler admits the first */
  edgellm_status st = edgellm_runtime_create(argv[1], &params, &a.runtime);
  if (st != EDGELLM_OK) {
    report_failure("edgellm_runtime_create", st);
    return 1;
  }

  bool ok = run(&a, &until);
  /* Ends anything still waiting or running (a failed run) and delivers every on_finish before
   * it returns: afterwards the streams are read without the lock. It works while paused. */
  st = edgellm_runtime_destroy(a.runtime);
  if (st != EDGELLM_OK) {
    report_failure("edgellm_runtime_destroy", st);
    ok = false;
  }
  if (!check(&a)) ok = false;
  if (fflush(stdout) != 0) ok = false;
  pthread_mutex_destroy(&a.mutex);
  pthread_cond_destroy(&a.cond);
  fprintf(stderr, "concurrent_streams: %s\n", ok ? "all four requests ended as expected" : "FAILED");
  return ok ? 0 : 1;
}
