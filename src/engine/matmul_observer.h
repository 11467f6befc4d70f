// A window on the inputs of the forward pass's matrix multiplications, for tools that collect
// activation statistics (the importance matrix of tools/quant/imatrix_collector.h). Nothing an
// app runs installs one; without one the pass pays a null-pointer test per matmul group.
#pragma once

#include <cstdint>
#include <string_view>

namespace edgellm {

class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // Called once per weight matrix and forward chunk, before the multiplication, on the thread
  // that runs the pass (Context::decode's caller):
  //   weight   the matrix's tensor name ("blk.3.ffn_down.weight"; "token_embd.weight" for a tied
  //            output head), valid during the call;
  //   x        the F32 input rows [n_tokens, n_in] exactly as the kernels are about to quantize
  //            them (Q, K and V each see their shared input; the FFN may come in slices of
  //            tokens, the output head only the rows that want logits).
  // An exception thrown here aborts the decode like any error of the pass.
  virtual void on_matmul_input(std::string_view weight, const float* x, int64_t n_tokens, int64_t n_in) = 0;
};

}  // namespace edgellm
