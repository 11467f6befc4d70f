// llama.cpp's side of the embedding comparison and benchmark (scripts/embed-vs-llamacpp.sh;
// docs/embeddings.md, docs/benchmarks.md). Not part of EdgeLLM and not built by CI: compiled
// by the script against the reference build's libllama (scripts/build-llamacpp-reference.sh),
// because llama-embedding needs llama.cpp's `common` library, which that build does not make.
// It drives libllama exactly as examples/embedding/embedding.cpp does: every token an output,
// sequences packed into batches of n_batch tokens (n_ubatch = n_batch: non-causal), the KV
// memory cleared before each batch, llama_decode, llama_get_embeddings_seq (or _ith with pooling
// none), then common_embd_normalize's euclidean normalisation.
//
//   llamacpp-embed MODEL THREADS N_BATCH POOLING NORMALIZE REPEATS < token-lines
//
// stdin: one sequence per line, token ids separated by spaces (both engines get the same ids).
// stdout: one embedding per sequence (per token with pooling 0), values separated by spaces.
// stderr: "seconds S repeats R sequences N tokens T peak_rss_kib K" — S the wall time of the R
// repeats of all batches (model load excluded).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <math.h>

#include "llama.h"

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long peak_rss_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (!f) return -1;
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, NULL, 10);
  }
  fclose(f);
  return kib;
}

// common_embd_normalize: -1 none, 0 max-abs to int16, 2 euclidean, else p-norm.
static void normalize(const float* in, float* out, int n, int norm) {
  double sum = 0.0;
  if (norm == -1) {
    sum = 1.0;
  } else if (norm == 0) {
    for (int i = 0; i < n; i++) sum = fabs(in[i]) > sum ? fabs(in[i]) : sum;
    sum /= 32760.0;
  } else if (norm == 2) {
    for (int i = 0; i < n; i++) sum += (double)in[i] * in[i];
    sum = sqrt(sum);
  } else {
    for (int i = 0; i < n; i++) sum += pow(fabs(in[i]), norm);
    sum = pow(sum, 1.0 / norm);
  }
  const double scale = sum > 0.0 ? 1.0 / sum : 0.0;
  for (int i = 0; i < n; i++) out[i] = (float)(in[i] * scale);
}

typedef struct {
  int* ids;
  int n;
} Seq;

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: %s MODEL THREADS N_BATCH POOLING NORMALIZE REPEATS < token-lines\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  const int threads = atoi(argv[2]);
  const int n_batch = atoi(argv[3]);
  const int pooling = atoi(argv[4]);
  const int norm = atoi(argv[5]);
  const int repeats = atoi(argv[6]);

  // Read the sequences.
  Seq* seqs = NULL;
  int n_seqs = 0, cap = 0;
  long total_tokens = 0;
  char* line = NULL;
  size_t line_cap = 0;
  while (getline(&line, &line_cap, stdin) > 0) {
    Seq s = {NULL, 0};
    int s_cap = 0;
    for (char* p = strtok(line, " \n"); p; p = strtok(NULL, " \n")) {
      if (s.n == s_cap) s.ids = realloc(s.ids, sizeof(int) * (size_t)(s_cap = s_cap ? 2 * s_cap : 64));
      s.ids[s.n++] = atoi(p);
    }
    if (s.n == 0) continue;
    if (n_seqs == cap) seqs = realloc(seqs, sizeof(Seq) * (size_t)(cap = cap ? 2 * cap : 64));
    seqs[n_seqs++] = s;
    total_tokens += s.n;
  }
  free(line);

  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  struct llama_model* model = llama_model_load_from_file(path, mp);
  if (!model) {
    fprintf(stderr, "cannot load %s\n", path);
    return 1;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.embeddings = true;
  cp.n_ctx = (uint32_t)n_batch;
  cp.n_batch = (uint32_t)n_batch;
  cp.n_ubatch = (uint32_t)n_batch;
  cp.n_seq_max = 64;
  cp.kv_unified = true;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.pooling_type = (enum llama_pooling_type)pooling;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    fprintf(stderr, "cannot create a context\n");
    return 1;
  }
  const int n_embd = llama_model_n_embd(model);
  const int rows = pooling == 0 ? (int)total_tokens : n_seqs;
  float* out = calloc((size_t)rows * (size_t)n_embd, sizeof(float));
  struct llama_batch batch = llama_batch_init(n_batch, 0, 1);

  double seconds = 0;
  for (int rep = 0; rep < repeats; rep++) {
    const double t0 = now_seconds();
    int row = 0;
    for (int k = 0; k < n_seqs;) {
      // Pack sequences [k, end) into one batch.
      batch.n_tokens = 0;
      int end = k;
      while (end < n_seqs && batch.n_tokens + seqs[end].n <= n_batch && end - k < 64) {
        for (int i = 0; i < seqs[end].n; i++) {
          const int t = batch.n_tokens++;
          batch.token[t] = seqs[end].ids[i];
          batch.pos[t] = i;
          batch.n_seq_id[t] = 1;
          batch.seq_id[t][0] = end - k;
          batch.logits[t] = 1;
        }
        end++;
      }
      if (end == k) {
        fprintf(stderr, "sequence %d has %d tokens, more than n_batch %d\n", k, seqs[k].n, n_batch);
        return 1;
      }
      llama_memory_clear(llama_get_memory(ctx), true);
      if (llama_decode(ctx, batch) < 0) {
        fprintf(stderr, "llama_decode failed\n");
        return 1;
      }
      if (pooling == 0) {
        for (int t = 0; t < batch.n_tokens; t++) normalize(llama_get_embeddings_ith(ctx, t), out + (size_t)(row++) * n_embd, n_embd, norm);
      } else {
        for (int s = k; s < end; s++) normalize(llama_get_embeddings_seq(ctx, s - k), out + (size_t)(row++) * n_embd, n_embd, norm);
      }
      k = end;
    }
    seconds += now_seconds() - t0;
  }
  for (int r = 0; r < rows; r++) {
    for (int i = 0; i < n_embd; i++) printf(i ? " %.9g" : "%.9g", out[(size_t)r * n_embd + i]);
    printf("\n");
  }
  fprintf(stderr, "seconds %.6f repeats %d sequences %d tokens %ld peak_rss_kib %ld\n", seconds, repeats, n_seqs,
          total_tokens, peak_rss_kib());
  llama_batch_free(batch);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
