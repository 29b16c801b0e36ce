#pragma once
// The wgmma steps of the 128-row matmul tile against the mma.sync chain of the other tiles (wgmma_steps.cu).
#include <cstdint>

namespace plumb::cuda::testing {

struct WgmmaComparison {
  bool compiled = false;  // the device code has the wgmma path (an sm_90a build on an sm_90 GPU)
  unsigned long long outputs = 0, mismatches = 0;
  // The first mismatch: its case (input kind, accumulator kind, whether the wgmma chain started from
  // nothing), output index within the case, and the mma.sync (expected) and wgmma (got) bits.
  int kind = -1, accumulator = -1, from_nothing = -1;
  int64_t index = -1;
  uint32_t expected = 0, got = 0;
};

// How the wgmma chain takes the operands: x as A and the weight rows as B K-major (the matmul tile, the score
// walk) or N-major (the values walk), or swapped, the weight rows as A and x as B (a decode tile of few rows
// would take 64 weight rows a warpgroup and the rows of x as N). mma_sync_swapped compares no wgmma: the
// mma.sync chain itself with the weight rows as A and x's rows as B (the decode layout's kernel at up to 8
// rows, k_matmul_decode_lanes.cu).
enum class WgmmaForm { k_major, n_major, swapped, mma_sync_swapped };

// Runs every case over `blocks` blocks of 64 x 128 outputs, K = 256, on device 0, in `form`; false where a
// CUDA call failed.
bool compare_wgmma_with_mma_sync(int blocks, WgmmaForm form, WgmmaComparison& result);

}  // namespace plumb::cuda::testing
