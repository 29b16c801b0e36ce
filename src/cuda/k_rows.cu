// Elementwise row ops (--fmad=false: each fp32 step rounds on its own, as HF's separate bf16 tensor ops do):
// add bf16(a + b); scale bf16(x * bf16(f)); geglu bf16(bf16(gelu_tanh(g)) * up) with PyTorch's tanh form;
// soft_cap bf16(bf16(tanh(bf16(x / cap))) * cap).
#include "cuda/bf16.cuh"
#include "cuda/dependent_launch.cuh"
#include "cuda/gelu.cuh"
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
  __device__ float operator()(float gate, float up, float) const { return geglu_value(gate, up); }
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

// rows_kernel with eight columns a thread, 16-byte loads and stores, and a block's rows unrolled so that
// their loads are in flight together; bf16 outputs whose rows allow it (vector_rows). It unpacks its words
// itself: bf16.cuh's unpack_bf16x8 changed the loads nvcc generates here, in a change not measured on a GPU.
template <class Element>
__global__ void rows_vector_kernel(RowsArgs launch, Element element) {
  wait_for_previous_kernel();
  const int64_t k = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) * 8;
  if (k >= launch.width) return;
  const int64_t first = static_cast<int64_t>(blockIdx.y) * kRowsPerBlock;
  uint4 a[kRowsPerBlock], b[kRowsPerBlock];
#pragma unroll
  for (int i = 0; i < kRowsPerBlock; ++i) {
    if (first + i >= launch.rows) break;
    a[i] = *reinterpret_cast<const uint4*>(launch.a + (first + i) * launch.a_stride + k);
    b[i] = launch.b != nullptr ? *reinterpret_cast<const uint4*>(launch.b + (first + i) * launch.b_stride + k)
                               : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int i = 0; i < kRowsPerBlock; ++i) {
    if (first + i >= launch.rows) break;
    const uint32_t a_words[4] = {a[i].x, a[i].y, a[i].z, a[i].w},
                   b_words[4] = {b[i].x, b[i].y, b[i].z, b[i].w};
    uint32_t out[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const uint32_t low =
          bf16_bits(element(bf16_value(static_cast<uint16_t>(a_words[j] & 0xffffu)),
                            bf16_value(static_cast<uint16_t>(b_words[j] & 0xffffu)), launch.factor));
      const uint32_t high =
          bf16_bits(element(bf16_value(static_cast<uint16_t>(a_words[j] >> 16)),
                            bf16_value(static_cast<uint16_t>(b_words[j] >> 16)), launch.factor));
      out[j] = low | high << 16;
    }
    *reinterpret_cast<uint4*>(static_cast<uint16_t*>(launch.out) + (first + i) * launch.out_stride + k) =
        make_uint4(out[0], out[1], out[2], out[3]);
  }
}

bool vector_rows(const RowsArgs& launch) {
  return !launch.out_f32 && launch.width % 8 == 0 && rows_aligned16(launch.a, launch.a_stride) &&
         (launch.b == nullptr || rows_aligned16(launch.b, launch.b_stride)) &&
         rows_aligned16(launch.out, launch.out_stride);
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
    if (vector_rows(slab)) {
      const dim3 grid(blocks_for(launch.width / 8, kThreads), blocks_for(slab.rows, kRowsPerBlock));
      launch_dependent(rows_vector_kernel<Element>, grid, kThreads, 0, stream, slab, Element{});
    } else {
      const dim3 grid(blocks_for(launch.width, kThreads), blocks_for(slab.rows, kRowsPerBlock));
      launch_dependent(rows_kernel<Element>, grid, kThreads, 0, stream, slab, Element{});
    }
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
