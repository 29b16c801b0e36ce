// The 128-row tile on sm_90a as a producer and two consumers: one thread copies each k tile of x and of the
// weight (bf16, or 2/4/6-bit affine codes, which the consumers dequantize) with the tensor memory
// accelerator into a ring of stages, two warpgroups multiply with wgmma and hand each stage back on a
// barrier, so no block-wide barrier stands between k tiles (as in k_matmul.cu's tiles) and no thread computes
// copy addresses. The same wgmma steps in the same order and the same K-split fold as k_matmul.cu's 128-row
// tile: the same bits. PLUMB_CUDA_TMA_MATMUL=0 turns it off.
#include <cudaTypedefs.h>

#include <cstdlib>
#include <string_view>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_tiles.cuh"
#include "cuda/tma.cuh"

namespace plumb::cuda::matmul {

namespace {

constexpr int kRingStages = 6;
constexpr int kProducerThreads = 128;  // a warpgroup, so the consumers' warpgroups stay aligned
constexpr int kConsumerThreads = 256;
constexpr int kRingThreads = kProducerThreads + kConsumerThreads;
constexpr int kConsumerWarps = kConsumerThreads / 32;
constexpr int kTileBytes = 128 * kTileK * 2;  // a bf16 [128, 64] tile

// A stage holds the x tile and the weight's tile (bf16, or its affine codes); affine weights are dequantized
// into one of three bf16 tiles in turn (written while the tensor cores may still read the one before).
template <int kBits>
struct RingLayout {
  static constexpr int kWeightBytes = kBits == 0 ? kTileBytes : kTileN * 2 * kBits * 4;
  static constexpr int kStageBytes = kTileBytes + kWeightBytes;
  static constexpr int kDequantized = kBits == 0 ? 0 : 3;
  static constexpr int kShared =
      1024 + kRingStages * kStageBytes + kDequantized * kTileBytes + 2 * kRingStages * 8;
};

template <int kBits>
struct Ring {
  using R = RingLayout<kBits>;
  char* base;

  __device__ char* x_tile(int slot) const { return base + slot * kTileBytes; }
  __device__ char* weight_tile(int slot) const {
    return base + kRingStages * kTileBytes + slot * R::kWeightBytes;
  }
  __device__ char* dequantized(int64_t t) const {
    return base + kRingStages * R::kStageBytes + static_cast<int>(t % 3) * kTileBytes;
  }
  __device__ uint64_t* full(int slot) const {  // a stage's tiles have landed
    return reinterpret_cast<uint64_t*>(base + kRingStages * R::kStageBytes + R::kDequantized * kTileBytes) +
           slot;
  }
  __device__ uint64_t* empty(int slot) const {
    return full(kRingStages) + slot;
  }  // every consumer warp is done
};

template <int kBits>
__device__ Ring<kBits> ring_in(char* shared_bytes) {
  return Ring<kBits>{shared_bytes + (1024 - shared_address(shared_bytes) % 1024) % 1024};
}

// One thread: each k tile into the next stage once the consumers have given that stage back.
template <int kBits>
__device__ void produce(const Ring<kBits>& ring, const CUtensorMap* x_map, const CUtensorMap* w_map,
                        int64_t m0, int64_t n0, int64_t kt0, int64_t tiles) {
  for (int64_t t = 0; t < tiles; ++t) {
    const int slot = static_cast<int>(t % kRingStages);
    barrier_wait(ring.empty(slot), static_cast<uint32_t>(t / kRingStages & 1) ^ 1u);
    barrier_arrive_expect(ring.full(slot), RingLayout<kBits>::kStageBytes);
    const int64_t kt = kt0 + t;
    // Affine codes are addressed in 32-bit words: 2 * kBits of them a row per k tile.
    const auto weight_k = static_cast<int32_t>(kBits == 0 ? kt * kTileK : kt * 2 * kBits);
    tile_copy(ring.weight_tile(slot), w_map, weight_k, static_cast<int32_t>(n0), ring.full(slot));
    tile_copy(ring.x_tile(slot), x_map, static_cast<int32_t>(kt * kTileK), static_cast<int32_t>(m0),
              ring.full(slot));
  }
}

#if PLUMB_WGMMA
// The consumer threads meet (not the producer's warpgroup).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
}

// Consumer thread `c` turns half-row c of the stage's codes into bf16 weights in the tile.
template <int kBits>
__device__ void dequantize_stage(const Params& p, const uint32_t* codes, uint4* tile, int c, int64_t n0,
                                 int64_t kt) {
  const int r = c / 2, h = c % 2;
  const int64_t n = n0 + r, k_half = kt * kTileK + h * 32;
  const bool present = n < p.n && k_half < p.k;
  const int64_t e = present ? n * (p.k / p.group) + k_half / p.group : 0;
  uint32_t words[kBits];
  half_row_codes<kBits>(codes, c, words);
  dequantize_half_row<kBits>(tile, r, h, words, present, bf16_value(p.scales[e]), bf16_value(p.biases[e]));
}

// A consumer warpgroup's 64 rows: each stage's wgmma steps (one group left in flight), the stage before it
// given back once its steps are done, each K split folded into total.
template <int kBits>
__device__ void consume(const Ring<kBits>& ring, const Params& p, int c, int64_t n0, int64_t kt0, int64_t kt1,
                        Accumulators<Layout<128, kBits>>& acc, Accumulators<Layout<128, kBits>>& total) {
  using L = Layout<128, kBits>;
  const int group = c / 128;
  for (int64_t t = 0; t < kt1 - kt0; ++t) {
    const int slot = static_cast<int>(t % kRingStages);
    barrier_wait(ring.full(slot), static_cast<uint32_t>(t / kRingStages & 1));
    const int64_t kt = kt0 + t;
    uint32_t b_tile = shared_address(ring.weight_tile(slot));
    if constexpr (kBits != 0) {
      uint4* tile = reinterpret_cast<uint4*>(ring.dequantized(t));
      dequantize_stage<kBits>(p, reinterpret_cast<const uint32_t*>(ring.weight_tile(slot)), tile, c, n0, kt);
      fence_async_shared();
      consumers_sync();
      b_tile = shared_address(tile);
    }
    const uint32_t a_rows = shared_address(ring.x_tile(slot)) + group * 64 * kTileK * 2;
    multiply_warpgroup<L>(a_rows, b_tile, acc, kt == kt0 || kt % p.tiles_per_split == 0);
    wgmma_wait<1>();
    if (t > 0 && threadIdx.x % 32 == 0) barrier_arrive(ring.empty(static_cast<int>((t - 1) % kRingStages)));
    if (ends_split(p, kt, kt1)) {
      wgmma_wait<0>();
      fold_split<L, false>(acc, total, kt / p.tiles_per_split == kt0 / p.tiles_per_split);
    }
  }
  wgmma_wait<0>();  // the last tile ends a split, so nothing is in flight; the compiler cannot tell
}
#endif

template <int kBits>
__global__ void __launch_bounds__(kRingThreads, 1)
    matmul_ring_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                       Params p) {
#if PLUMB_WGMMA
  using L = Layout<128, kBits>;
  extern __shared__ __align__(128) char shared_bytes[];
  const Ring<kBits> ring = ring_in<kBits>(shared_bytes);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      barrier_init(ring.full(s), 1);
      barrier_init(ring.empty(s), kConsumerWarps);
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
    if (threadIdx.x == 0) produce<kBits>(ring, &x_map, &w_map, m0, n0, kt0, kt1 - kt0);
    return;
  }
  const int c = static_cast<int>(threadIdx.x) - kProducerThreads;
  Accumulators<L> acc, total;
  consume<kBits>(ring, p, c, n0, kt0, kt1, acc, total);
  write_tile<L>(p, total, m0, n0, c / 32, 0, c % 32);
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

// A row-major matrix [rows, cols] (rows `stride` elements apart) in boxes of 128 rows by `box_cols`; bf16
// tiles are 128-byte swizzled (as wgmma reads them), 32-bit code words are not; outside it the copies read
// zeros.
bool encode_rows(CUtensorMap& map, const void* matrix, CUtensorMapDataType type, int64_t cols, int64_t rows,
                 int64_t stride, uint32_t box_cols) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const bool bf16 = type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * (bf16 ? 2 : 4)};
  const cuuint32_t box[2] = {box_cols, 128};
  const cuuint32_t steps[2] = {1, 1};
  return encode(&map, type, 2, const_cast<void*>(matrix), dims, strides, box, steps,
                CU_TENSOR_MAP_INTERLEAVE_NONE, bf16 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
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

bool ring_tile_fits(const Params& p, int bits) {
  // Code rows of whole 16-byte units and code boxes of them: even widths, k * bits a multiple of 128 (8-bit
  // codes would spill the consumers' registers and take k_matmul.cu's tile).
  const bool codes_fit = bits == 0 || (bits % 2 == 0 && bits < 8 && p.k * bits % 128 == 0);
  return p.x_vector && (bits != 0 || p.dense_vector) && codes_fit && p.k <= INT32_MAX &&
         p.rows <= INT32_MAX && p.n <= INT32_MAX && ring_enabled() && wgmma_runs_here();
}

template <int kBits>
cudaError_t launch_ring_tile(const Params& p, dim3 grid, cudaStream_t stream) {
  CUtensorMap x_map{}, w_map{};
  const bool weight_mapped =
      kBits == 0 ? encode_rows(w_map, p.dense, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, p.n, p.k, kTileK)
                 : encode_rows(w_map, p.packed, CU_TENSOR_MAP_DATA_TYPE_UINT32, p.k * kBits / 32, p.n,
                               p.k * kBits / 32, 2 * kBits);
  if (!weight_mapped ||
      !encode_rows(x_map, p.x, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, p.rows, p.x_stride, kTileK))
    return cudaErrorInvalidValue;
  constexpr int kShared = RingLayout<kBits>::kShared;
  const cudaError_t code =
      cudaFuncSetAttribute(matmul_ring_kernel<kBits>, cudaFuncAttributeMaxDynamicSharedMemorySize, kShared);
  if (code != cudaSuccess) return code;
  launch_dependent(matmul_ring_kernel<kBits>, grid, kRingThreads, kShared, stream, x_map, w_map, p);
  return cudaGetLastError();
}

template cudaError_t launch_ring_tile<0>(const Params&, dim3, cudaStream_t);
template cudaError_t launch_ring_tile<2>(const Params&, dim3, cudaStream_t);
template cudaError_t launch_ring_tile<4>(const Params&, dim3, cudaStream_t);
template cudaError_t launch_ring_tile<6>(const Params&, dim3, cudaStream_t);

}  // namespace plumb::cuda::matmul
