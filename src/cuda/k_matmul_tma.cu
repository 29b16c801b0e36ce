// The 128-row tile of a bf16 weight on sm_90a as a producer and two consumers: one thread copies each k tile
// of x and of the weight with the tensor memory accelerator into a ring of stages, two warpgroups multiply
// with wgmma and hand each stage back on a barrier, so no block-wide barrier stands between k tiles (as in
// k_matmul.cu's tiles) and no thread computes copy addresses. The same wgmma steps in the same order and the
// same K-split fold as k_matmul.cu's 128-row tile: the same bits. PLUMB_CUDA_TMA_MATMUL=0 turns it off.
#include <cudaTypedefs.h>

#include <cstdlib>
#include <string_view>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_tiles.cuh"
#include "cuda/tma.cuh"

namespace plumb::cuda::matmul {

namespace {

using L = Layout<128, 0>;
constexpr int kRingStages = 6;
constexpr int kProducerThreads = 128;  // a warpgroup, so the consumers' warpgroups stay aligned
constexpr int kRingThreads = kProducerThreads + 256;
constexpr int kConsumerWarps = 8;
constexpr int kTileBytes = 128 * kTileK * 2;
constexpr int kRingShared = 1024 + kRingStages * (2 * kTileBytes + 2 * 8);

struct Ring {
  char* x_tiles;
  char* w_tiles;
  uint64_t* full;   // a stage's tiles have landed
  uint64_t* empty;  // every consumer warp is done with a stage
};

__device__ Ring ring_in(char* shared_bytes) {
  char* base = shared_bytes + (1024 - shared_address(shared_bytes) % 1024) % 1024;
  Ring ring{base, base + kRingStages * kTileBytes, nullptr, nullptr};
  ring.full = reinterpret_cast<uint64_t*>(base + 2 * kRingStages * kTileBytes);
  ring.empty = ring.full + kRingStages;
  return ring;
}

// One thread: each k tile into the next stage once the consumers have given that stage back.
__device__ void produce(const Ring& ring, const CUtensorMap* x_map, const CUtensorMap* w_map, int64_t m0,
                        int64_t n0, int64_t kt0, int64_t tiles) {
  for (int64_t t = 0; t < tiles; ++t) {
    const int slot = static_cast<int>(t % kRingStages);
    barrier_wait(ring.empty + slot, static_cast<uint32_t>(t / kRingStages & 1) ^ 1u);
    barrier_arrive_expect(ring.full + slot, 2 * kTileBytes);
    const auto k = static_cast<int32_t>((kt0 + t) * kTileK);
    tile_copy(ring.w_tiles + slot * kTileBytes, w_map, k, static_cast<int32_t>(n0), ring.full + slot);
    tile_copy(ring.x_tiles + slot * kTileBytes, x_map, k, static_cast<int32_t>(m0), ring.full + slot);
  }
}

#if PLUMB_WGMMA
// A consumer warpgroup's 64 rows: each stage's wgmma steps (one group left in flight), the stage before it
// given back once its steps are done, each K split folded into total.
__device__ void consume(const Ring& ring, const Params& p, int group, int64_t kt0, int64_t kt1,
                        Accumulators<L>& acc, Accumulators<L>& total) {
  for (int64_t t = 0; t < kt1 - kt0; ++t) {
    const int slot = static_cast<int>(t % kRingStages);
    barrier_wait(ring.full + slot, static_cast<uint32_t>(t / kRingStages & 1));
    const int64_t kt = kt0 + t;
    const uint32_t a_rows = shared_address(ring.x_tiles + slot * kTileBytes) + group * 64 * kTileK * 2;
    multiply_warpgroup<L>(a_rows, shared_address(ring.w_tiles + slot * kTileBytes), acc,
                          kt == kt0 || kt % p.tiles_per_split == 0);
    wgmma_wait<1>();
    if (t > 0 && threadIdx.x % 32 == 0) barrier_arrive(ring.empty + (t - 1) % kRingStages);
    if (ends_split(p, kt, kt1)) {
      wgmma_wait<0>();
      fold_split<L, false>(acc, total, kt / p.tiles_per_split == kt0 / p.tiles_per_split);
    }
  }
  wgmma_wait<0>();  // the last tile ends a split, so nothing is in flight; the compiler cannot tell
}
#endif

__global__ void __launch_bounds__(kRingThreads, 1)
    matmul_ring_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                       Params p) {
#if PLUMB_WGMMA
  extern __shared__ __align__(128) char shared_bytes[];
  const Ring ring = ring_in(shared_bytes);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      barrier_init(ring.full + s, 1);
      barrier_init(ring.empty + s, kConsumerWarps);
    }
    fence_barrier_init();
  }
  __syncthreads();
  const TilePlace place = place_block();
  const int64_t n0 = place.n_tile * kTileN, m0 = place.m_tile * 128;
  const int64_t kt0 = p.cross ? blockIdx.z * p.tiles_per_split : 0;
  const int64_t kt1 = p.cross ? min(kt0 + p.tiles_per_split, p.k_tiles) : p.k_tiles;
  wait_for_previous_kernel();
  if (threadIdx.x < kProducerThreads) {
    if (threadIdx.x == 0) produce(ring, &x_map, &w_map, m0, n0, kt0, kt1 - kt0);
    return;
  }
  const int consumer = static_cast<int>(threadIdx.x) - kProducerThreads;
  Accumulators<L> acc, total;
  consume(ring, p, consumer / 128, kt0, kt1, acc, total);
  write_tile<L>(p, total, m0, n0, consumer / 32, 0, consumer % 32);
#else
  (void)x_map, (void)w_map, (void)p;
#endif
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const auto encode = []() -> PFN_cuTensorMapEncodeTiled_v12000 {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault,
                                         &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return encode;
}

// A row-major bf16 matrix [rows, cols] (rows `stride` elements apart) in boxes of 128 rows by one k tile,
// 128-byte swizzled; outside it the copies read zeros.
bool encode_rows(CUtensorMap& map, const uint16_t* matrix, int64_t cols, int64_t rows, int64_t stride) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * sizeof(uint16_t)};
  const cuuint32_t box[2] = {kTileK, 128};
  const cuuint32_t steps[2] = {1, 1};
  return encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, const_cast<uint16_t*>(matrix), dims, strides, box,
                steps, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool ring_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("PLUMB_CUDA_TMA_MATMUL");
    return value == nullptr || std::string_view(value) != "0";
  }();
  return enabled;
}

// The build has sm_90a code and the current GPU is compute 9.0, so the kernel's wgmma body is what runs.
bool wgmma_runs_here() {
  if (std::string_view(PLUMB_CUDA_TARGETS).find("90a") == std::string_view::npos) return false;
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return major == 9 && minor == 0;
}

}  // namespace

bool ring_tile_fits(const Params& p) {
  return p.x_vector && p.dense_vector && p.k <= INT32_MAX && p.rows <= INT32_MAX && p.n <= INT32_MAX &&
         ring_enabled() && wgmma_runs_here();
}

cudaError_t launch_ring_tile(const Params& p, dim3 grid, cudaStream_t stream) {
  CUtensorMap x_map{}, w_map{};
  if (!encode_rows(x_map, p.x, p.k, p.rows, p.x_stride) || !encode_rows(w_map, p.dense, p.k, p.n, p.k))
    return cudaErrorInvalidValue;
  const cudaError_t code =
      cudaFuncSetAttribute(matmul_ring_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingShared);
  if (code != cudaSuccess) return code;
  launch_dependent(matmul_ring_kernel, grid, kRingThreads, kRingShared, stream, x_map, w_map, p);
  return cudaGetLastError();
}

}  // namespace plumb::cuda::matmul
