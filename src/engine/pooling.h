// From hidden states to what an embedding request returns: pooling over a sequence's tokens
// (model/pooling_type.h), the rank head of rerankers, and the normalisation of the result.
// Pure functions over caller buffers; the Embedder (embedder.h) applies them.
#pragma once

#include <cstdint>
#include <vector>

#include "model/model.h"
#include "model/pooling_type.h"

namespace edgellm {

// The pooling `requested` resolves to for this model: the request's, else the model's
// declaration (<arch>.pooling_type), else mean for encoders (sentence-transformers' default)
// and last for decoders (the causal state that has seen every token).
PoolingType resolve_pooling(const HParams& hp, PoolingType requested);

// Floats per output of one input: n_embd, or n_cls_out for rank (kNone: per token).
int32_t pooled_dims(const HParams& hp, PoolingType pooling);

// Checks that `pooling` can run on this model: rank needs a classification head (cls.output),
// kUnspecified must be resolved first. Throws Error(kInvalidArgument / kUnsupported) saying why.
void check_pooling(const Model& model, PoolingType pooling);

// One sequence's hidden states [n, n_embd] -> out [n_embd] (kMean, kCls, kLast). Sums in double.
void pool_hidden(PoolingType pooling, const float* hidden, int32_t n, int32_t n_embd, float* out);

// The rank head over one pooled state h [n_embd] -> out [n_cls_out]:
//   t = cls ? tanh(cls @ h + cls_b) : h;  out = cls_out @ t + cls_out_b
// and, for qwen3 rerankers (llama.cpp's rule), a softmax over the outputs.
void rank_head(const Model& model, const float* h, float* out);

// llama.cpp's --embd-normalize: -1 none, 0 max absolute scaled to int16 (x * 32760 / max|x|),
// 1 taxicab, 2 euclidean (the default), p > 2 the p-norm. In place over n floats; an all-zero
// vector stays zero. Throws Error(kInvalidArgument) for a value outside [-1, 64].
void normalize_embedding(float* x, int32_t n, int normalize);
void check_normalize(int normalize);

}  // namespace edgellm
