/* Reference quantizer for scripts/llamacpp-quant-reference.sh: what `llama-quantize --pure IN OUT
 * TYPE` does to a llama-architecture F32 GGUF, written against libggml-base (ggml + gguf) of the
 * llama.cpp source bundle, so the reference needs only that library built (libllama, which
 * llama-quantize links, took too long to build on the shared 2-core machine). Per tensor it calls
 * ggml_quantize_chunk(type, f32, out, 0, nrows, n_per_row, imatrix = NULL), the call
 * llama_tensor_quantize_impl (src/llama-quant.cpp) makes; it quantizes the tensors
 * tensor_allows_quantization() allows for this architecture: >= 2 dimensions, name ending in
 * "weight", not "*_norm.weight"; with --pure every such tensor gets TYPE. Metadata is copied and
 * general.file_type set, as llama-quantize does. Not part of EdgeLLM and never built by CI.
 *
 * With IMATRIX.gguf (llama-imatrix's GGUF layout, e.g. written by `edgellm imatrix`), each tensor
 * with an entry gets its importance, in_sum2 / counts per column, as llama-quantize normalises
 * it: ggml's weighted quantizers (quantize_row_*_impl) then run, so scripts/imatrix-vs-llamacpp.sh
 * can compare our weighted bytes with ggml's.
 *
 *   cc -O2 -I SRC/ggml/include ggml-quantize-file.c -L SRC/build/bin -lggml-base -o ggml-quantize-file
 *   ggml-quantize-file IN-F32.gguf OUT.gguf TYPE [IMATRIX.gguf]  (TYPE: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q4_K_S Q5_K_S Q6_K)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

struct type_entry {
  const char* name;
  enum ggml_type type;
  unsigned ftype; /* llama_ftype */
};

static const struct type_entry kTypes[] = {
    {"Q4_0", GGML_TYPE_Q4_0, 2},   {"Q4_1", GGML_TYPE_Q4_1, 3},   {"Q8_0", GGML_TYPE_Q8_0, 7},
    {"Q5_0", GGML_TYPE_Q5_0, 8},   {"Q5_1", GGML_TYPE_Q5_1, 9},   {"Q4_K_S", GGML_TYPE_Q4_K, 14},
    {"Q5_K_S", GGML_TYPE_Q5_K, 16}, {"Q6_K", GGML_TYPE_Q6_K, 18},
};

/* Rows that do not fit the type's blocks stay F32 here (llama-quantize would pick a fallback type;
 * the comparison skips them: edgellm_quant_rmse measures only quantized tensors). */
static int allows_quantization(const struct ggml_tensor* t, enum ggml_type type) {
  const char* name = ggml_get_name(t);
  const size_t n = strlen(name);
  if (t->type != GGML_TYPE_F32 || ggml_n_dims(t) < 2) return 0;
  if (t->ne[0] % ggml_blck_size(type) != 0) return 0;
  if (n < 6 || strcmp(name + n - 6, "weight") != 0) return 0;
  return strstr(name, "_norm.weight") == NULL;
}

/* The importance of `name`'s columns from an imatrix (NULL when it has no entry): in_sum2 / counts,
 * 1 where the count is 0 (llama-quantize's load_imatrix). Caller frees. */
static float* importance(struct ggml_context* imat, const char* name, int64_t n) {
  if (imat == NULL) return NULL;
  char key[512];
  snprintf(key, sizeof key, "%s.in_sum2", name);
  const struct ggml_tensor* sums = ggml_get_tensor(imat, key);
  snprintf(key, sizeof key, "%s.counts", name);
  const struct ggml_tensor* counts = ggml_get_tensor(imat, key);
  if (sums == NULL || counts == NULL || ggml_nelements(sums) != n || ggml_nelements(counts) != 1) return NULL;
  const float count = ((const float*)counts->data)[0];
  float* w = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) w[i] = count > 0 ? ((const float*)sums->data)[i] / count : 1.0f;
  return w;
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: %s IN-F32.gguf OUT.gguf TYPE [IMATRIX.gguf]\n", argv[0]);
    return 2;
  }
  struct ggml_context* imat = NULL;
  if (argc == 5) {
    struct gguf_init_params mp = {/*no_alloc=*/false, /*ctx=*/&imat};
    if (gguf_init_from_file(argv[4], mp) == NULL) {
      fprintf(stderr, "cannot read imatrix %s\n", argv[4]);
      return 1;
    }
  }
  const struct type_entry* te = NULL;
  for (size_t i = 0; i < sizeof(kTypes) / sizeof(kTypes[0]); ++i) {
    if (strcmp(argv[3], kTypes[i].name) == 0) te = &kTypes[i];
  }
  if (te == NULL) {
    fprintf(stderr, "unknown type %s\n", argv[3]);
    return 2;
  }
  struct ggml_context* data = NULL;
  struct gguf_init_params ip = {/*no_alloc=*/false, /*ctx=*/&data};
  struct gguf_context* in = gguf_init_from_file(argv[1], ip);
  if (in == NULL) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  const int64_t n_tensors = gguf_get_n_tensors(in);
  size_t bytes = 0;
  for (int64_t i = 0; i < n_tensors; ++i) {
    const struct ggml_tensor* t = ggml_get_tensor(data, gguf_get_tensor_name(in, i));
    bytes += ggml_row_size(te->type, t->ne[0]) * (size_t)ggml_nrows(t) + 64;
  }
  struct ggml_init_params cp = {bytes + (size_t)n_tensors * ggml_tensor_overhead(), NULL, false};
  struct ggml_context* qctx = ggml_init(cp);
  struct gguf_context* out = gguf_init_empty();
  gguf_set_kv(out, in);
  gguf_set_val_u32(out, "general.file_type", te->ftype);
  for (int64_t i = 0; i < n_tensors; ++i) {
    struct ggml_tensor* t = ggml_get_tensor(data, gguf_get_tensor_name(in, i));
    if (!allows_quantization(t, te->type)) {
      gguf_add_tensor(out, t);
      continue;
    }
    struct ggml_tensor* q = ggml_new_tensor(qctx, te->type, ggml_n_dims(t), t->ne);
    ggml_set_name(q, ggml_get_name(t));
    float* imp = importance(imat, ggml_get_name(t), t->ne[0]);
    ggml_quantize_chunk(te->type, (const float*)t->data, q->data, 0, ggml_nrows(t), t->ne[0], imp);
    free(imp);
    gguf_add_tensor(out, q);
  }
  if (!gguf_write_to_file(out, argv[2], false)) {
    fprintf(stderr, "cannot write %s\n", argv[2]);
    return 1;
  }
  gguf_free(out);
  gguf_free(in);
  ggml_free(qctx);
  ggml_free(data);
  return 0;
}
