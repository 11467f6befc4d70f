#include "engine/pooling.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "kernels/kernels.h"

namespace edgellm {

PoolingType resolve_pooling(const HParams& hp, PoolingType requested) {
  if (requested != PoolingType::kUnspecified) return requested;
  if (hp.pooling != PoolingType::kUnspecified) return hp.pooling;
  return hp.encoder ? PoolingType::kMean : PoolingType::kLast;
}

int32_t pooled_dims(const HParams& hp, PoolingType pooling) {
  return pooling == PoolingType::kRank ? hp.n_cls_out : hp.n_embd;
}

void check_pooling(const Model& model, PoolingType pooling) {
  require(pooling != PoolingType::kUnspecified, ErrorCode::kInternal, "pooling: unresolved (resolve_pooling first)");
  if (pooling == PoolingType::kRank) {
    require(model.cls_out().present(), ErrorCode::kUnsupported,
            "pooling rank needs a reranker: " + model.hparams().arch +
                " model without a classification head (cls.output.weight)");
  }
}

void pool_hidden(PoolingType pooling, const float* hidden, int32_t n, int32_t n_embd, float* out) {
  require(n >= 1, ErrorCode::kInternal, "pool_hidden: empty sequence");
  const auto row = [&](int32_t t) { return hidden + static_cast<int64_t>(t) * n_embd; };
  switch (pooling) {
    case PoolingType::kCls:
      for (int32_t i = 0; i < n_embd; ++i) out[i] = row(0)[i];
      return;
    case PoolingType::kLast:
      for (int32_t i = 0; i < n_embd; ++i) out[i] = row(n - 1)[i];
      return;
    case PoolingType::kMean: {
      for (int32_t i = 0; i < n_embd; ++i) {
        double sum = 0;
        for (int32_t t = 0; t < n; ++t) sum += row(t)[i];
        out[i] = static_cast<float>(sum / n);
      }
      return;
    }
    default: throw Error(ErrorCode::kInternal, std::string("pool_hidden: pooling ") + pooling_type_name(pooling));
  }
}

namespace {

// y[n_out] = W x (+ b): one token through the kernels, as the forward pass multiplies.
void matvec(const WeightView& w, const VectorView& b, const float* x, float* y) {
  AlignedBuffer xq(kernels::activation_row_bytes(w.type, w.n_in), "rank head input");
  kernels::quantize_activation_row(w.type, x, xq.data(), w.n_in);
  kernels::matmul(w.type, w.n_in, w.data, w.row_bytes, 0, w.n_out, xq.data(), 0, 1, y, w.n_out);
  if (b.present()) kernels::add_f32(y, b.data, y, w.n_out);
}

}  // namespace

void rank_head(const Model& model, const float* h, float* out) {
  const HParams& hp = model.hparams();
  std::vector<float> t(h, h + hp.n_embd);
  if (model.cls().present()) {
    std::vector<float> y(static_cast<size_t>(hp.n_embd));
    matvec(model.cls(), model.cls_b(), t.data(), y.data());
    for (int32_t i = 0; i < hp.n_embd; ++i) t[static_cast<size_t>(i)] = std::tanh(y[static_cast<size_t>(i)]);
  }
  matvec(model.cls_out(), model.cls_out_b(), t.data(), out);
  if (hp.arch == "qwen3") kernels::softmax(out, hp.n_cls_out);
}

void check_normalize(int normalize) {
  require(normalize >= -1 && normalize <= 64, ErrorCode::kInvalidArgument,
          "embd_normalize " + std::to_string(normalize) +
              " is outside [-1, 64] (-1 none, 0 max absolute to int16, 1 taxicab, 2 euclidean, p: p-norm)");
}

void normalize_embedding(float* x, int32_t n, int normalize) {
  check_normalize(normalize);
  double sum = 0;
  switch (normalize) {
    case -1: return;
    case 0:
      for (int32_t i = 0; i < n; ++i) sum = std::max(sum, static_cast<double>(std::fabs(x[i])));
      sum /= 32760.0;  // to an int16 range
      break;
    case 2:
      for (int32_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
      sum = std::sqrt(sum);
      break;
    default:
      for (int32_t i = 0; i < n; ++i) sum += std::pow(std::fabs(static_cast<double>(x[i])), normalize);
      sum = std::pow(sum, 1.0 / normalize);
      break;
  }
  const double scale = sum > 0 ? 1.0 / sum : 0.0;
  for (int32_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] * scale);
}

}  // namespace edgellm
