/*
 * The C ABI's runner of the face-parity table (tests/parity/cases.json, driven by
 * tests/server/node/parity.test.mjs): reads cases as lines on stdin, runs each through
 * libedgellm.so exactly as a C app would, and prints one result line per case. C11, linked only
 * against libedgellm.so, so the C face is exercised on its own (no JSON library: the node side
 * turns the table into this line format).
 *
 * Input (strings hex-encoded so any byte, invalid UTF-8 included, survives):
 *   model HEX_PATH                      once, first
 *   runtime N_CTX N_PARALLEL MAX_QUEUED  once, second
 *   case HEX_NAME                       starts a case; fields until "end"
 *   prompt HEX | message HEX_ROLE HEX_CONTENT | tool_call HEX_ID HEX_NAME HEX_ARGUMENTS (a call of
 *   the last message) | tool_call_id HEX (the last message's) | tokens N id... | max_tokens N | temperature F |
 *   top_k N | top_p F | min_p F | repeat_penalty F | frequency_penalty F | presence_penalty F |
 *   penalty_last_n N | seed N | stop HEX | logit_bias ID BIAS | n_keep N | context_shift 0|1 |
 *   priority N (the enum's value as given, in range or not) | add_special 0|1 | parse_special 0|1 |
 *   session_id HEX | session_load_path HEX | import_session HEX_ID HEX_PATH (the case imports a
 *   session file into the store instead of submitting)
 *   end
 * Output, one line per case:
 *   result HEX_NAME STATUS HEX_MESSAGE HEX_TEXT FINISH
 * where STATUS is edgellm_status_name of the refusal or of the result ("ok" for a normal end),
 * FINISH the finish reason name ("-" when refused at submit).
 */
#include <edgellm/edgellm.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS 5000

static char* unhex(const char* h) {
  if (!h) h = ""; /* an empty field: its hex is empty, so the line ends early */
  size_t n = strlen(h) / 2;
  char* out = malloc(n + 1);
  if (!out) exit(3);
  for (size_t i = 0; i < n; ++i) {
    unsigned v = 0;
    if (sscanf(h + 2 * i, "%2x", &v) != 1) exit(4);
    out[i] = (char)v;
  }
  out[n] = '\0';
  return out;
}

static void print_hex(const char* s, size_t n) {
  if (n == 0) {
    fputs("-", stdout);
    return;
  }
  for (size_t i = 0; i < n; ++i) printf("%02x", (unsigned char)s[i]);
}

struct finish_state {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int done;
  edgellm_status status;
  edgellm_finish_reason reason;
  char* message;
  char* text;
  size_t text_len;
};

static void on_finish(const edgellm_result* r, void* user) {
  struct finish_state* s = user;
  pthread_mutex_lock(&s->mutex);
  s->status = r->status;
  s->reason = r->finish_reason;
  const size_t n = strlen(r->error_message);
  s->message = malloc(n + 1);
  memcpy(s->message, r->error_message, n + 1);
  s->text = malloc(r->text_len + 1);
  memcpy(s->text, r->text, r->text_len + 1);
  s->text_len = r->text_len;
  s->done = 1;
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->mutex);
}

int main(void) {
  char line[1 << 16];
  char* model = NULL;
  edgellm_runtime_params rp = edgellm_runtime_default_params();
  edgellm_runtime* rt = NULL;
  while (fgets(line, sizeof line, stdin)) {
    line[strcspn(line, "\n")] = '\0';
    char* key = strtok(line, " ");
    if (!key) continue;
    if (strcmp(key, "model") == 0) {
      model = unhex(strtok(NULL, " "));
      continue;
    }
    if (strcmp(key, "runtime") == 0) {
      rp.n_ctx = atoi(strtok(NULL, " "));
      rp.n_parallel = atoi(strtok(NULL, " "));
      rp.max_queued = atoi(strtok(NULL, " "));
      rp.kv_type = EDGELLM_KV_F32;
      if (edgellm_runtime_create(model, &rp, &rt) != EDGELLM_OK) {
        fprintf(stderr, "parity_capi: cannot load %s: %s\n", model, edgellm_last_error());
        return 2;
      }
      continue;
    }
    if (strcmp(key, "case") != 0) continue;
    char* name = unhex(strtok(NULL, " "));
    edgellm_request_params p = edgellm_request_default_params();
    edgellm_sampling s = edgellm_sampling_default();
    static edgellm_message messages[MAX_ITEMS];
    static edgellm_tool_call calls[MAX_ITEMS];
    size_t n_calls = 0;
    static char* stops[MAX_ITEMS];
    static int32_t tokens[MAX_ITEMS];
    static edgellm_logit_bias bias[64];
    size_t n_messages = 0, n_stops = 0, n_tokens = 0, n_bias = 0;
    int have_messages = 0, have_tokens = 0;
    char* import_id = NULL;
    char* import_path = NULL;
    char* owned[3 * MAX_ITEMS];
    size_t n_owned = 0;
    p.deadline_ms = 0;
    while (fgets(line, sizeof line, stdin)) {
      line[strcspn(line, "\n")] = '\0';
      char* k = strtok(line, " ");
      if (!k || strcmp(k, "end") == 0) break;
      char* v = strtok(NULL, " ");
      if (strcmp(k, "prompt") == 0) {
        p.prompt = owned[n_owned++] = unhex(v ? v : "");
      } else if (strcmp(k, "message") == 0) {
        have_messages = 1;
        memset(&messages[n_messages], 0, sizeof messages[n_messages]); /* reused across cases */
        messages[n_messages].struct_size = sizeof(edgellm_message);
        messages[n_messages].role = owned[n_owned++] = unhex(v);
        messages[n_messages].content = owned[n_owned++] = unhex(strtok(NULL, " "));
        ++n_messages;
      } else if (strcmp(k, "tool_call") == 0 && n_messages > 0) {
        /* The last message's calls are consecutive elements of calls[]. */
        edgellm_message* m = &messages[n_messages - 1];
        if (m->n_tool_calls == 0) m->tool_calls = &calls[n_calls];
        calls[n_calls].struct_size = sizeof(edgellm_tool_call);
        calls[n_calls].id = owned[n_owned++] = unhex(v);
        calls[n_calls].name = owned[n_owned++] = unhex(strtok(NULL, " "));
        calls[n_calls].arguments = owned[n_owned++] = unhex(strtok(NULL, " "));
        ++n_calls;
        ++m->n_tool_calls;
      } else if (strcmp(k, "tool_call_id") == 0 && n_messages > 0) {
        messages[n_messages - 1].tool_call_id = owned[n_owned++] = unhex(v);
      } else if (strcmp(k, "messages_empty") == 0) {
        have_messages = 1;
      } else if (strcmp(k, "tokens") == 0) {
        have_tokens = 1;
        const int n = atoi(v);
        for (int i = 0; i < n; ++i) tokens[n_tokens++] = (int32_t)strtol(strtok(NULL, " "), NULL, 10);
      } else if (strcmp(k, "max_tokens") == 0) {
        p.max_tokens = atoi(v);
      } else if (strcmp(k, "temperature") == 0) {
        s.temperature = strtof(v, NULL);
      } else if (strcmp(k, "top_k") == 0) {
        s.top_k = atoi(v);
      } else if (strcmp(k, "top_p") == 0) {
        s.top_p = strtof(v, NULL);
      } else if (strcmp(k, "min_p") == 0) {
        s.min_p = strtof(v, NULL);
      } else if (strcmp(k, "repeat_penalty") == 0) {
        s.repeat_penalty = strtof(v, NULL);
      } else if (strcmp(k, "frequency_penalty") == 0) {
        s.frequency_penalty = strtof(v, NULL);
      } else if (strcmp(k, "presence_penalty") == 0) {
        s.presence_penalty = strtof(v, NULL);
      } else if (strcmp(k, "penalty_last_n") == 0) {
        s.penalty_last_n = atoi(v);
      } else if (strcmp(k, "seed") == 0) {
        s.seed = strtoull(v, NULL, 10);
      } else if (strcmp(k, "stop") == 0) {
        stops[n_stops++] = owned[n_owned++] = unhex(v ? v : "");
      } else if (strcmp(k, "logit_bias") == 0) {
        bias[n_bias].token = atoi(v);
        bias[n_bias].bias = strtof(strtok(NULL, " "), NULL);
        ++n_bias;
      } else if (strcmp(k, "n_keep") == 0) {
        p.n_keep = atoi(v);
      } else if (strcmp(k, "context_shift") == 0) {
        p.context_shift = atoi(v) != 0;
      } else if (strcmp(k, "priority") == 0) {
        p.priority = (edgellm_priority)atoi(v);
      } else if (strcmp(k, "add_special") == 0) {
        p.add_special = atoi(v) != 0;
      } else if (strcmp(k, "parse_special") == 0) {
        p.parse_special = atoi(v) != 0;
      } else if (strcmp(k, "session_id") == 0) {
        p.session_id = owned[n_owned++] = unhex(v);
      } else if (strcmp(k, "session_load_path") == 0) {
        p.session_load_path = owned[n_owned++] = unhex(v);
      } else if (strcmp(k, "import_session") == 0) {
        import_id = owned[n_owned++] = unhex(v);
        import_path = owned[n_owned++] = unhex(strtok(NULL, " "));
      }
    }
    if (have_messages) {
      p.messages = messages;
      p.n_messages = n_messages;
    }
    if (have_tokens) {
      p.tokens = tokens;
      p.n_tokens = n_tokens;
    }
    if (n_stops > 0) {
      p.stop = (const char* const*)stops;
      p.n_stop = n_stops;
    }
    if (n_bias > 0) {
      s.logit_bias = bias;
      s.n_logit_bias = n_bias;
    }
    p.sampling = &s;
    fputs("result ", stdout);
    print_hex(name, strlen(name));
    if (import_id) {
      const edgellm_status st = edgellm_session_load_file(rt, import_id, import_path, NULL);
      const char* msg = st == EDGELLM_OK ? "" : edgellm_last_error();
      printf(" %s ", edgellm_status_name(st));
      print_hex(msg, strlen(msg));
      fputs(" - -\n", stdout);
    } else {
      struct finish_state fs;
      memset(&fs, 0, sizeof fs);
      pthread_mutex_init(&fs.mutex, NULL);
      pthread_cond_init(&fs.cond, NULL);
      p.on_finish = on_finish;
      p.user_data = &fs;
      edgellm_request_id id = 0;
      const edgellm_status st = edgellm_submit(rt, &p, &id);
      if (st != EDGELLM_OK) {
        const char* msg = edgellm_last_error();
        printf(" %s ", edgellm_status_name(st));
        print_hex(msg, strlen(msg));
        fputs(" - -\n", stdout);
      } else {
        pthread_mutex_lock(&fs.mutex);
        while (!fs.done) pthread_cond_wait(&fs.cond, &fs.mutex);
        pthread_mutex_unlock(&fs.mutex);
        printf(" %s ", edgellm_status_name(fs.status));
        print_hex(fs.message, strlen(fs.message));
        fputs(" ", stdout);
        print_hex(fs.text, fs.text_len);
        printf(" %s\n", edgellm_finish_reason_name(fs.reason));
        free(fs.message);
        free(fs.text);
      }
      pthread_mutex_destroy(&fs.mutex);
      pthread_cond_destroy(&fs.cond);
    }
    fflush(stdout);
    for (size_t i = 0; i < n_owned; ++i) free(owned[i]);
    free(name);
  }
  edgellm_runtime_destroy(rt);
  free(model);
  return 0;
}
