// Context::seq_shift: the sliding window of an endless stream. KvCache::seq_drop moves the rows;
// this re-rotates the moved K rows, which needs the model's RoPE (engine/rope.h).
//
// K is stored rotated at its position (the attention kernels read it in place), so a row that
// moves from position p to p - d is rotated by the angles of -d: R(a(-d)) R(a(p)) k = R(a(p - d)) k.
// For F32 K that is exact up to float rounding (about 1e-6 relative); F16, Q8_0 and Q4_0 rows are
// dequantized, rotated and stored again, which adds one more rounding of the K type per shift
// a row lives through (docs/context-shift.md has the measured errors). V carries no position and
// moves unchanged.
#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "engine/context.h"
#include "engine/rope.h"
#include "kernels/kernels.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace edgellm {

namespace {

void load_row(TensorType type, const uint8_t* src, float* dst, int32_t n) {
  switch (type) {
    case TensorType::F32:
      std::copy_n(reinterpret_cast<const float*>(src), n, dst);
      break;
    case TensorType::F16:
      kernels::fp16_to_fp32_row(reinterpret_cast<const uint16_t*>(src), dst, n);
      break;
    default:
      kernels::dequantize_row(type, src, dst, n);
      break;
  }
}

}  // namespace

void Context::seq_shift(int32_t seq_id, int32_t n_keep, int32_t n_discard) {
  KvCache& kv = kv_cache();
  kv.seq_drop(seq_id, n_keep, n_discard);  // validates; unchanged on error
  const HParams& hp = model_.hparams();
  const int32_t half = hp.n_rot / 2;
  std::vector<float> cs(static_cast<size_t>(half)), sn(static_cast<size_t>(half));
  rope_angles(hp, model_.rope_freqs().data, -static_cast<float>(n_discard), cs.data(), sn.data());
  const TensorType type = kv.params().type_k;
  const int32_t hd = hp.head_dim;
  std::vector<float> row(static_cast<size_t>(hd));
  const int32_t length = kv.seq_length(seq_id);
  for (int32_t layer = 0; layer < hp.n_layer; ++layer) {
    for (int32_t head = 0; head < hp.n_head_kv; ++head) {
      for (int32_t pos = n_keep; pos < length; ++pos) {
        uint8_t* k = kv.k_row(seq_id, layer, head, pos);
        load_row(type, k, row.data(), hd);
        rope_rotate(hp.rope_style, hp.n_rot, cs.data(), sn.data(), row.data());
        kv.store_k_row(row.data(), k);
      }
    }
  }
}

}  // namespace edgellm
