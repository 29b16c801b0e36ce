// Elementwise row ops (--fmad=false: each fp32 step rounds on its own, as HF's separate bf16 tensor ops do):
// add bf16(a + b); scale bf16(x * bf16(f)); geglu bf16(bf16(gelu_tanh(g)) * up) with PyTorch's tanh form;
// soft_cap bf16(bf16(tanh(bf16(x / cap))) * cap).
#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = 8;

struct Add {
  __device__ float operator()(float a, float b, float) const { return a + b; }
};
struct Scale {
  __device__ float operator()(float x, float, float factor) const { return x * factor; }
};
struct Geglu {
  __device__ float operator()(float gate, float up, float) const {
    // PyTorch's gelu(approximate="tanh"): kBeta = sqrt(2) * (2 / sqrt(pi)) * 0.5 as an fp32 constant.
    constexpr float kBeta = static_cast<float>(1.41421356237309504880 * 1.12837916709551257390 * 0.5);
    constexpr float kKappa = 0.044715f;
    const float cube = gate * gate * gate;
    const float inner = kBeta * (gate + kKappa * cube);
    const float gelu = 0.5f * gate * (1.0f + tanhf(inner));
    return round_bf16(gelu) * up;
  }
};
struct SoftCap {
  __device__ float operator()(float x, float, float cap) const {
    return round_bf16(tanhf(round_bf16(x / cap))) * cap;
  }
};

template <class Element>
__global__ void rows_kernel(RowsArgs launch, Element element) {
  wait_for_previous_kernel();
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (k >= launch.width) return;
  const int64_t last = min(launch.rows, static_cast<int64_t>(blockIdx.y + 1) * kRowsPerBlock);
  for (int64_t r = static_cast<int64_t>(blockIdx.y) * kRowsPerBlock; r < last; ++r) {
    const float a = bf16_value(launch.a[r * launch.a_stride + k]);
    const float b = launch.b != nullptr ? bf16_value(launch.b[r * launch.b_stride + k]) : 0.0f;
    const float value = element(a, b, launch.factor);
    if (launch.out_f32) {
      static_cast<float*>(launch.out)[r * launch.out_stride + k] = round_bf16(value);
    } else {
      static_cast<uint16_t*>(launch.out)[r * launch.out_stride + k] = bf16_bits(value);
    }
  }
}

template <class Element>
cudaError_t launch_rows(const RowsArgs& launch, cudaStream_t stream) {
  if (launch.rows == 0 || launch.width == 0) return cudaSuccess;
  // Rows go in blocks of kRowsPerBlock along y (at most 65535 blocks), so very tall calls loop over slabs.
  const int64_t slab_rows = int64_t{65535} * kRowsPerBlock;
  for (int64_t first = 0; first < launch.rows; first += slab_rows) {
    RowsArgs slab = launch;
    slab.rows = std::min(slab_rows, launch.rows - first);
    slab.a += first * launch.a_stride;
    if (slab.b != nullptr) slab.b += first * launch.b_stride;
    const size_t out_size = launch.out_f32 ? 4 : 2;
    slab.out = static_cast<char*>(launch.out) + first * launch.out_stride * out_size;
    const dim3 grid(blocks_for(launch.width, kThreads), blocks_for(slab.rows, kRowsPerBlock));
    launch_dependent(rows_kernel<Element>, grid, kThreads, 0, stream, slab, Element{});
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_add(const RowsArgs& launch, cudaStream_t stream) {
  return launch_rows<Add>(launch, stream);
}
cudaError_t launch_scale(const RowsArgs& launch, cudaStream_t stream) {
  return launch_rows<Scale>(launch, stream);
}
cudaError_t launch_geglu(const RowsArgs& launch, cudaStream_t stream) {
  return launch_rows<Geglu>(launch, stream);
}
cudaError_t launch_soft_cap(const RowsArgs& launch, cudaStream_t stream) {
  return launch_rows<SoftCap>(launch, stream);
}

}  // namespace plumb::cuda
