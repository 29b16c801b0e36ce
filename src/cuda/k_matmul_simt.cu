// out = x · Wᵀ for f16 and f32 weights (not on the Gemma 4 path): one warp per output, element k to lane k %
// 32, each lane summing its products in ascending k in fp32 (--fmad=false: product, then sum), lanes added in
// a fixed butterfly; rounded once to bf16 or kept f32. Nothing depends on the row count.
#include <cuda_fp16.h>

#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

constexpr int kWarps = 8;

__global__ void matmul_simt_kernel(MatmulArgs launch) {
  wait_for_previous_kernel();
  const int lane = threadIdx.x % 32;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int64_t row = blockIdx.y;
  const WeightArgs& weight = launch.weight;
  if (col >= weight.out) return;
  const uint16_t* x = launch.x + row * launch.x_stride;
  float sum = 0.0f;
  for (int64_t k = lane; k < weight.in; k += 32) {
    const int64_t at = col * weight.in + k;
    const float w = weight.dense_kind == DenseKind::f32
                        ? static_cast<const float*>(weight.dense)[at]
                        : __half2float(__ushort_as_half(static_cast<const uint16_t*>(weight.dense)[at]));
    sum = sum + bf16_value(x[k]) * w;
  }
  for (int offset = 16; offset >= 1; offset /= 2) sum = sum + __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane != 0) return;
  if (launch.out_f32) {
    static_cast<float*>(launch.out)[row * launch.out_stride + col] = sum;
  } else {
    static_cast<uint16_t*>(launch.out)[row * launch.out_stride + col] = bf16_bits(sum);
  }
}

}  // namespace

cudaError_t launch_matmul_simt(const MatmulArgs& launch, cudaStream_t stream) {
  for (int64_t first = 0; first < launch.rows; first += 65535) {
    MatmulArgs part = launch;
    part.rows = std::min<int64_t>(65535, launch.rows - first);
    part.x += first * launch.x_stride;
    part.out = static_cast<char*>(launch.out) + first * launch.out_stride * (launch.out_f32 ? 4 : 2);
    const dim3 grid(blocks_for(launch.weight.out, kWarps), static_cast<unsigned>(part.rows));
    launch_dependent(matmul_simt_kernel, grid, kWarps * 32, 0, stream, part);
  }
  return cudaGetLastError();
}

}  // namespace plumb::cuda
