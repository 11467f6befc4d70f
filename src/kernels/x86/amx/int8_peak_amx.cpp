// The AMX int8 peak probe (kernels/int8_peak.h): tdpbssd on full 16 x 64-byte tiles, one
// accumulator tile. One chain already runs at the instruction's throughput (16.5 cycles per
// tdpbssd with 1, 2 or 4 accumulator tiles on a Sapphire Rapids-class Xeon): the tile unit takes
// one instruction at a time.
//
// Tiles from the two 64-byte inputs (kSignedTile16x64): A[m][k] = a[(k + 4m) % 64],
// B[r][c] = b[(c + 4r) % 64], so that C[m][n] += sum_k A[m][k] B[k/4][4n + k%4] differs lane by lane.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/int8_peak_isa.h"
#include "kernels/x86/amx/amx_driver.h"  // load_tile_config

namespace edgellm::kernels::amx {

void int8_peak_tdpbssd(const uint8_t* a, const uint8_t* b, int64_t iterations, int32_t* out) {
  alignas(64) uint8_t ta[16 * 64], tb[16 * 64];
  for (int r = 0; r < 16; ++r) {
    for (int k = 0; k < 64; ++k) {
      ta[64 * r + k] = a[(k + 4 * r) % 64];
      tb[64 * r + k] = b[(k + 4 * r) % 64];
    }
  }
  load_tile_config<3>({16, 16, 16}, {64, 64, 64});  // C, A, B: 16 rows of 64 bytes
  _tile_zero(0);
  _tile_loadd(1, ta, 64);
  _tile_loadd(2, tb, 64);
  // The tile intrinsics are volatile asm: neither hoisted nor merged.
  for (int64_t i = 0; i < iterations; ++i) _tile_dpbssd(0, 1, 2);
  _tile_stored(0, out, 64);
  _tile_release();
}

}  // namespace edgellm::kernels::amx
