// The 128-row tile on sm_90a as a producer and two consumers: one thread of a producer warpgroup copies each
// k tile of x and of the weight (bf16, or 2/4/6-bit affine codes, which the consumers dequantize) with the
// tensor memory accelerator into a ring of stages, two warpgroups of 64 rows multiply with wgmma and hand
// each stage back on a barrier, so no block-wide barrier stands between k tiles (as in k_matmul.cu's tiles)
// and no thread computes copy addresses. Blocks of bf16 tiles stay resident and take the call's tiles and K
// splits in turn, so the copies of the next run while one is written, and sum each split into one of two sets
// in turn, so the tensor cores are not drained at a split's fold (consume_rotating). The same wgmma steps in
// the same order and the same K-split fold as k_matmul.cu's 128-row tile: the same bits. bf16 calls of two
// row tiles or more run in pairs of blocks (a cluster) that each copy half of a weight tile into both.
// PLUMB_CUDA_TMA_MATMUL=0 turns the ring off, PLUMB_CUDA_RING_PAIRS=0 the pairs.
#include <cudaTypedefs.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <string_view>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_blocks.cuh"
#include "cuda/k_matmul_ring.cuh"
#include "cuda/launchers.hpp"
#include "cuda/tma.cuh"

namespace plumb::cuda::matmul {

namespace {

// One thread: each k tile of each item into the next stage once the consumers have given that stage back
// (in pairs, both blocks' consumers: the stage's weight rows land in both; this block copies half of them,
// whose map's box is 64 rows).
template <int kBits, bool kPairs = false>
__device__ void produce(const Ring<kBits>& ring, const CUtensorMap* x_map, const CUtensorMap* w_map,
                        const Params& p, const RingWork& work, int rank = 0) {
  using R = RingLayout<kBits>;
  int t = 0;  // stages used so far
  each_item<kBits, kPairs>(work, [&](int item) {
    const RingItem it = ring_item<kPairs>(p, work, item, rank);
    for (int kt = it.kt0; kt < it.kt1; ++kt, ++t) {
      const int slot = t % kRingStages;
      barrier_wait(ring.empty(slot), static_cast<uint32_t>(t / kRingStages & 1) ^ 1u);
      barrier_arrive_expect(ring.full(slot), R::kStageBytes);
      if constexpr (kPairs) {
        tile_copy_multicast(ring.weight_tile(slot) + rank * (kTileBytes / 2), w_map, kt * kTileK,
                            it.n0 + rank * (kTileN / 2), ring.full(slot), 0b11);
      } else {
        // Affine codes are addressed in 32-bit words: 2 * kBits of them a row per k tile.
        tile_copy(ring.weight_tile(slot), w_map, kBits == 0 ? kt * kTileK : kt * 2 * kBits, it.n0,
                  ring.full(slot));
      }
      tile_copy(ring.x_tile(slot), x_map, kt * kTileK, it.m0, ring.full(slot));
    }
  });
}

#if PLUMB_WGMMA
// The consumer threads meet (not the producer warp).
__device__ __forceinline__ void consumers_sync() {
  asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumerThreads) : "memory");
}

// Consumer thread `c` turns half-row c of the stage's codes into bf16 weights in the tile.
template <int kBits>
__device__ void dequantize_stage(const Params& p, const uint32_t* codes, uint4* tile, int c, int n0, int kt) {
  const int r = c / 2, h = c % 2;
  const int64_t n = n0 + r, k_half = kt * kTileK + h * 32;
  const bool present = n < p.n && k_half < p.k;
  const int64_t e = present ? n * (p.k >> p.group_shift) + (k_half >> p.group_shift) : 0;
  uint32_t words[kBits];
  half_row_codes<kBits>(codes, c, words);
  dequantize_half_row<kBits>(tile, r, h, words, present, bf16_value(p.scales[e]), bf16_value(p.biases[e]));
}

// The affine consumers, thread c's warpgroup over the block's item: each stage's wgmma steps (one group left
// in flight), the stage before it given back once its steps are done, each K split folded into total, the
// item's tile written.
template <int kBits>
__device__ void consume(const Ring<kBits>& ring, const Params& p, const RingWork& work, int c) {
  using L = Layout<128, kBits>;  // each warp's share: 16 rows by 128 columns
  static_assert(kBits == 0 || kConsumerThreads == 2 * kTileN, "a consumer thread per weight half-row");
  const int group = c / 128;
  const bool lead = c % 32 == 0;
  int t = 0;  // stages used so far
  each_item<kBits, false>(work, [&](int item) {
    const RingItem it = ring_item<false>(p, work, item, 0);
    const int first = t;
    Accumulators<L> acc, total;
    SplitCursor<int> split(it.kt0, it.kt1, static_cast<int>(p.tiles_per_split));
    for (int kt = it.kt0; kt < it.kt1; ++kt, ++t) {
      const int slot = t % kRingStages;
      barrier_wait(ring.full(slot), static_cast<uint32_t>(t / kRingStages & 1));
      uint32_t b_tile = shared_address(ring.weight_tile(slot));
      if constexpr (kBits != 0) {
        uint4* tile = reinterpret_cast<uint4*>(ring.dequantized(t));
        dequantize_stage<kBits>(p, reinterpret_cast<const uint32_t*>(ring.weight_tile(slot)), tile, c, it.n0,
                                kt);
        fence_async_shared();
        consumers_sync();
        b_tile = shared_address(tile);
      }
      const uint32_t a_rows = shared_address(ring.x_tile(slot)) + group * 64 * kTileK * 2;
      multiply_warpgroup<L>(a_rows, b_tile, acc, split.starts(kt));
      wgmma_wait<1>();
      if (t > first && lead) barrier_arrive(ring.empty((t - 1) % kRingStages));
      if (split.ends(kt)) {
        wgmma_wait<0>();
        fold_split<L, false>(acc, total, split.first());
        split.next();
      }
    }
    wgmma_wait<0>();  // the last tile ends a split, so nothing is in flight; the compiler cannot tell
    if (t > first && lead) barrier_arrive(ring.empty((t - 1) % kRingStages));
    write_tile<L>(p, total, it.m0, it.n0, it.split, c / 32, 0, c % 32);
  });
}

// The bf16 consumers' walk over their splits with two sets of sums in turn: a split's first wgmma steps go
// into one set while the split before, in the other, is still in flight; once those steps are issued the
// earlier split's last group is waited for and folded into total (and an item's total written), so the
// tensor cores are not drained at each fold. The same steps and folds in the same order as consume.
template <class L>
struct RotatingSums {
  Accumulators<L> total;
  RingSplit done;  // the split whose sums wait in the other set
  bool pending = false;
  int t = 0;  // stages used so far
};

template <class L>
__device__ __forceinline__ void fold_done(const Params& p, RotatingSums<L>& sums, Accumulators<L>& other,
                                          int c) {
  fold_split<L, false>(other, sums.total, sums.done.first);
  if (sums.done.last)
    write_tile<L>(p, sums.total, sums.done.m0, sums.done.n0, sums.done.split, c / 32, 0, c % 32);
}

// One k tile of the split: its wgmma steps into acc, then the stage before it given back (in pairs, to both
// blocks' producers, since both copy into it).
template <class L, bool kPairs>
__device__ __forceinline__ void run_tile(const Ring<0>& ring, Accumulators<L>& acc, int t, bool start, int c,
                                         int rank) {
  const int slot = t % kRingStages;
  barrier_wait(ring.full(slot), static_cast<uint32_t>(t / kRingStages & 1));
  const uint32_t a_rows = shared_address(ring.x_tile(slot)) + c / 128 * 64 * kTileK * 2;
  multiply_warpgroup<L>(a_rows, shared_address(ring.weight_tile(slot)), acc, start);
  wgmma_wait<1>();  // every step but this tile's is done
  if (t > 0 && c % 32 == 0) {
    uint64_t* before = ring.empty((t - 1) % kRingStages);
    barrier_arrive(before);
    if constexpr (kPairs) barrier_arrive_in(before, static_cast<uint32_t>(rank ^ 1));
  }
}

// Split s into acc; the split before it (in other) is folded once s's first steps are in flight.
template <class L, bool kPairs>
__device__ __forceinline__ void run_split(const Ring<0>& ring, const Params& p, const RingSplit& s,
                                          Accumulators<L>& acc, Accumulators<L>& other, RotatingSums<L>& sums,
                                          int c, int rank) {
  run_tile<L, kPairs>(ring, acc, sums.t++, true, c, rank);
  if (sums.pending) fold_done<L>(p, sums, other, c);
  for (int kt = s.kt0 + 1; kt < s.kt1; ++kt) run_tile<L, kPairs>(ring, acc, sums.t++, false, c, rank);
  sums.done = s;
  sums.pending = true;
}

template <bool kPairs>
__device__ void consume_rotating(const Ring<0>& ring, const Params& p, const RingWork& work, int c,
                                 int rank) {
  using L = Layout<128, 0>;
  Accumulators<L> acc_a, acc_b;
  RotatingSums<L> sums;
  SplitWalk<kPairs> walk(p, work, rank);
  RingSplit s;
  for (;;) {
    if (!walk.next(s)) {
      wgmma_wait<0>();
      if (sums.pending) fold_done<L>(p, sums, acc_b, c);
      return;
    }
    run_split<L, kPairs>(ring, p, s, acc_a, acc_b, sums, c, rank);
    if (!walk.next(s)) {
      wgmma_wait<0>();
      fold_done<L>(p, sums, acc_a, c);
      return;
    }
    run_split<L, kPairs>(ring, p, s, acc_b, acc_a, sums, c, rank);
  }
}
#endif

#if PLUMB_WGMMA
// A block of the ring, once the kernel ahead has finished: its barriers, then the producer warpgroup and the
// consumers (in pairs, the two blocks meet once their barriers are set and again before either exits, as each
// copies and arrives into the other).
template <int kBits, bool kPairs>
__device__ __forceinline__ void ring_block(const CUtensorMap* x_map, const CUtensorMap* w_map,
                                           const Params& p, const RingWork& work) {
  extern __shared__ __align__(128) char shared_bytes[];
  const Ring<kBits> ring = ring_in<kBits>(shared_bytes);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kRingStages; ++s) {
      barrier_init(ring.full(s), 1);
      barrier_init(ring.empty(s), kConsumerWarps * kClusterBlocks<kPairs>);
    }
    fence_barrier_init();
  }
  if constexpr (kPairs)
    cluster_sync();
  else
    __syncthreads();
  const int c = static_cast<int>(threadIdx.x);
  const int rank = kPairs ? static_cast<int>(cluster_rank()) : 0;
  if (c >= kConsumerThreads) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
    if (c == kConsumerThreads) produce<kBits, kPairs>(ring, x_map, w_map, p, work, rank);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
    if constexpr (kResident<kBits>)
      consume_rotating<kPairs>(ring, p, work, c, rank);
    else
      consume<kBits>(ring, p, work, c);
  }
  if constexpr (kPairs) cluster_sync();
}
#endif

template <int kBits>
__global__ void __launch_bounds__(kRingThreads, 1)
    matmul_ring_kernel(const __grid_constant__ CUtensorMap x_map, const __grid_constant__ CUtensorMap w_map,
                       Params p, RingWork work) {
#if PLUMB_WGMMA
  wait_for_previous_kernel();
  ring_block<kBits, false>(&x_map, &w_map, p, work);
#else
  (void)x_map, (void)w_map, (void)p, (void)work;
#endif
}

// Pairs are clusters, which sm_90 has and earlier targets do not (their pass compiles the body out; the pairs
// run only where wgmma_runs_here).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define PLUMB_RING_PAIR
#else
#define PLUMB_RING_PAIR __cluster_dims__(2, 1, 1)
#endif

// bf16 items of two row tiles in pairs of blocks; w_map's box is half a weight tile (64 rows).
__global__ void PLUMB_RING_PAIR __launch_bounds__(kRingThreads, 1)
    matmul_ring_pairs_kernel(const __grid_constant__ CUtensorMap x_map,
                             const __grid_constant__ CUtensorMap w_map, Params p, RingWork work) {
#if PLUMB_WGMMA
  wait_for_previous_kernel();
  ring_block<0, true>(&x_map, &w_map, p, work);
#else
  (void)x_map, (void)w_map, (void)p, (void)work;
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

// A row-major matrix [rows, cols] (rows `stride` elements apart) in boxes of `box_rows` by `box_cols`; bf16
// tiles are 128-byte swizzled (as wgmma reads them), 32-bit code words are not; outside it the copies read
// zeros.
bool encode_rows(CUtensorMap& map, const void* matrix, CUtensorMapDataType type, int64_t cols, int64_t rows,
                 int64_t stride, uint32_t box_cols, uint32_t box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr) return false;
  const bool bf16 = type == CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * (bf16 ? 2 : 4)};
  const cuuint32_t box[2] = {box_cols, box_rows};
  const cuuint32_t steps[2] = {1, 1};
  return encode(&map, type, 2, const_cast<void*>(matrix), dims, strides, box, steps,
                CU_TENSOR_MAP_INTERLEAVE_NONE, bf16 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// Pairs of ring blocks that the current device holds at once (0 where it holds none), asked once a device:
// the pairs' grid, since a pair waiting for SMs would walk its items after the others had finished theirs.
int resident_pairs() {
  static std::array<std::atomic<int>, kCachedDevices> known_plus_one{};  // 0: not asked yet
  const int device = current_device_slot();
  if (device < 0) return 0;
  if (const int known = known_plus_one[device].load(); known > 0) return known - 1;
  int clusters = 0;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(2 * current_multiprocessors()));
  config.blockDim = dim3(kRingThreads);
  config.dynamicSmemBytes = RingLayout<0>::kShared;
  if (cudaOccupancyMaxActiveClusters(&clusters, matmul_ring_pairs_kernel, &config) != cudaSuccess) {
    (void)cudaGetLastError();
    clusters = 0;
  }
  known_plus_one[device].store(clusters + 1);
  return clusters;
}

// bf16 calls of two row tiles or more in pairs of blocks sharing weight tiles (PLUMB_CUDA_RING_PAIRS=0: one
// block a tile).
// The pairs kernel's shared memory allowed (set for the current device), then resident_pairs; 0 where either
// fails, so the call takes one block a tile.
int pairs_ready() {
  if (cudaFuncSetAttribute(matmul_ring_pairs_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           RingLayout<0>::kShared) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return resident_pairs();
}

cudaError_t launch_ring_pairs(const Params& p, const CUtensorMap& x_map, int64_t n_tiles, int64_t m_tiles,
                              int64_t splits, int resident, cudaStream_t stream) {
  CUtensorMap w_map{};
  if (!encode_rows(w_map, p.dense, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, p.n, p.k, kTileK, kTileN / 2))
    return cudaErrorInvalidValue;

  const int64_t m_pairs = (m_tiles + 1) / 2;
  const auto items = static_cast<int>(n_tiles * m_pairs * splits);
  const RingWork work{static_cast<int>(n_tiles), static_cast<int>(m_pairs), items};
  const int pairs = std::min(items, resident);
  launch_dependent(matmul_ring_pairs_kernel, dim3(static_cast<unsigned>(2 * pairs)), kRingThreads,
                   RingLayout<0>::kShared, stream, x_map, w_map, p, work);
  return cudaGetLastError();
}

bool pairs_enabled() {
  static const bool enabled = env_switch_on("PLUMB_CUDA_RING_PAIRS");
  return enabled;
}

bool ring_enabled() {
  static const bool enabled = env_switch_on("PLUMB_CUDA_TMA_MATMUL");
  return enabled;
}

// The build has sm_90a code and the current GPU is compute 9.0, so the kernel's wgmma body is what runs.
bool wgmma_runs_here() {
  return std::string_view(PLUMB_CUDA_TARGETS).find("90a") != std::string_view::npos &&
         current_compute_capability() == 90;
}

}  // namespace

bool ring_tile_fits(const Params& p, int bits) {
  // Code rows of whole 16-byte units and code boxes of them: even widths, k * bits a multiple of 128 (8-bit
  // codes would spill the consumers' registers and take k_matmul.cu's tile).
  const bool codes_fit = bits == 0 || (bits % 2 == 0 && bits < 8 && p.k * bits % 128 == 0);
  // Rows, k and the work items (tiles times splits) count in 32 bits in the kernel.
  const int64_t items = (p.rows + 127) / 128 * ((p.n + kTileN - 1) / kTileN) * p.splits;
  return p.x_vector && (bits != 0 || p.dense_vector) && codes_fit && p.k <= INT32_MAX &&
         p.rows <= INT32_MAX && p.n <= INT32_MAX && items <= INT32_MAX && ring_enabled() && wgmma_runs_here();
}

template <int kBits>
cudaError_t launch_ring_tile(const Params& p, int64_t n_tiles, int64_t m_tiles, int64_t splits,
                             cudaStream_t stream) {
  using R = RingLayout<kBits>;
  CUtensorMap x_map{}, w_map{};
  const bool weight_mapped =
      kBits == 0
          ? encode_rows(w_map, p.dense, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, p.n, p.k, kTileK, kTileN)
          : encode_rows(w_map, p.packed, CU_TENSOR_MAP_DATA_TYPE_UINT32, p.k * kBits / 32, p.n,
                        p.k * kBits / 32, 2 * kBits, kTileN);
  if (!weight_mapped ||
      !encode_rows(x_map, p.x, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, p.k, p.rows, p.x_stride, kTileK, 128))
    return cudaErrorInvalidValue;
  if constexpr (kBits == 0) {
    if (m_tiles >= 2 && pairs_enabled()) {
      const int pairs = pairs_ready();
      if (pairs > 0) return launch_ring_pairs(p, x_map, n_tiles, m_tiles, splits, pairs, stream);
    }
  }
  const cudaError_t code = cudaFuncSetAttribute(matmul_ring_kernel<kBits>,
                                                cudaFuncAttributeMaxDynamicSharedMemorySize, R::kShared);
  if (code != cudaSuccess) return code;
  const auto items = static_cast<int>(n_tiles * m_tiles * splits);
  const RingWork work{static_cast<int>(n_tiles), static_cast<int>(m_tiles), items};
  const int blocks = kResident<kBits> ? std::min(items, current_multiprocessors()) : items;
  launch_dependent(matmul_ring_kernel<kBits>, dim3(static_cast<unsigned>(blocks)), kRingThreads, R::kShared,
                   stream, x_map, w_map, p, work);
  return cudaGetLastError();
}

template cudaError_t launch_ring_tile<0>(const Params&, int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t launch_ring_tile<2>(const Params&, int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t launch_ring_tile<4>(const Params&, int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t launch_ring_tile<6>(const Params&, int64_t, int64_t, int64_t, cudaStream_t);

}  // namespace plumb::cuda::matmul
