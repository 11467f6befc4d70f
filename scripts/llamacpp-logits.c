/* First-step logits of llama.cpp for a GGUF file and a prompt: the independent side of
 * scripts/convert-vs-llamacpp.sh. Loads MODEL with llama.cpp (libllama of the reference build,
 * scripts/build-llamacpp-reference.sh), tokenizes PROMPT with llama.cpp's tokenizer (special
 * tokens added as the file's add_bos / add_eos flags say, special-token text not parsed), decodes
 * it in one batch on one thread, and writes the logits of the last position to OUT as raw
 * float32 (n_vocab values). Prints the token ids, one line, space separated, to stdout.
 *
 *   llamacpp-logits MODEL PROMPT OUT
 *
 * Not part of EdgeLLM or its CI: built by the script against llama.cpp's headers. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static bool no_progress(float progress, void* user) {
  (void)progress;
  (void)user;
  return true;
}

static void quiet(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level >= GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL PROMPT OUT\n", argv[0]);
    return 2;
  }
  llama_log_set(quiet, NULL);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  mp.progress_callback = no_progress;  /* no loading dots on stderr */
  struct llama_model* model = llama_model_load_from_file(argv[1], mp);
  if (!model) {
    fprintf(stderr, "llama.cpp could not load %s\n", argv[1]);
    return 1;
  }
  const struct llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  llama_token tokens[512];
  const int n = llama_tokenize(vocab, argv[2], (int32_t)strlen(argv[2]), tokens, 512, /*add_special=*/1,
                               /*parse_special=*/0);
  if (n <= 0) {
    fprintf(stderr, "tokenize failed (%d)\n", n);
    return 1;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_ubatch = 512;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  struct llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) {
    fprintf(stderr, "cannot create a context\n");
    return 1;
  }
  if (llama_decode(ctx, llama_batch_get_one(tokens, n)) != 0) {
    fprintf(stderr, "decode failed\n");
    return 1;
  }
  const float* logits = llama_get_logits_ith(ctx, -1);
  FILE* f = fopen(argv[3], "wb");
  if (!f || fwrite(logits, sizeof(float), (size_t)n_vocab, f) != (size_t)n_vocab || fclose(f) != 0) {
    fprintf(stderr, "cannot write %s\n", argv[3]);
    return 1;
  }
  for (int i = 0; i < n; ++i) printf(i ? " %d" : "%d", tokens[i]);
  printf("\n");
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
