// out = x · Wᵀ with bf16 tensor-core products and fp32 accumulation (mma.sync m16n8k16; the 128-row tile
// takes wgmma m64n128k16 on sm_90a, whose steps give the same bits, wgmma.cuh): each output element sums its
// k16 steps in ascending order within a K split, and the splits are added in split order (t = a0; t
// += a1 ...), then rounded once to bf16 (or kept f32). The K splits come from the weight shape alone; the row
// tile only decides how many rows share a block, and whether one block or several run a row's splits changes
// no bit (the same sums in the same order), so a row's bits never depend on the row count (I1). With the
// backend's decode option, up to 32 rows of 2/4/8-bit affine weights go to k_matmul_decode.cu, which
// makes the same sums with the codes streamed through shared memory. Affine weights are dequantized in the
// kernel to bf16(scale * q + bias) (k_matmul_tiles.cuh); f16 and f32 weights go to k_matmul_simt.cu.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "cuda/dependent_launch.cuh"
#include "cuda/gelu.cuh"
#include "cuda/k_matmul_blocks.cuh"
#include "cuda/launchers.hpp"
#include "cuda/matmul_plan.hpp"
#include "cuda/wgmma.cuh"

namespace plumb::cuda {

cudaError_t launch_matmul_simt(const MatmulArgs& launch, cudaStream_t stream);
bool matmul_decode_supports(const WeightArgs& weight);

namespace matmul {

// k_matmul_dequant.cu: tall calls of affine weights dequantized once into scratch for the bf16 ring.
bool dequantize_fits(const WeightArgs& weight, int64_t rows);
size_t dequantized_bytes(const WeightArgs& weight);
cudaError_t launch_dequantize(const WeightArgs& weight, uint16_t* dense, cudaStream_t stream);

// k_matmul_tma.cu: the 128-row tile as a producer thread and two consumer warpgroups on sm_90a.
bool ring_tile_fits(const Params& p, int bits);
template <int kBits>
cudaError_t launch_ring_tile(const Params& p, int64_t n_tiles, int64_t m_tiles, int64_t splits,
                             cudaStream_t stream);

namespace {

constexpr int64_t kDecodeRows = 32;
constexpr int64_t kMinTilesPerSplit = 4;

// Runs k tiles [kt0, kt1) through one software pipeline of mma.sync tiles, folding each K split; with
// kOneSplit the range is one split, whose fold would copy acc: acc is the total (total aliases it).
template <class L, int kBits, bool kOneSplit = false>
__device__ void run_tiles(const Params& p, char* shared, Accumulators<L>& acc, Accumulators<L>& total,
                          int64_t m0, int64_t n0, int64_t kt0, int64_t kt1, int warp_m, int warp_n) {
  uint4* dequantized = reinterpret_cast<uint4*>(shared + L::kStages * L::kStageBytes);
  const StageLoads<L, kBits> load{p, shared, m0, n0};
  const int64_t tiles = kt1 - kt0;
  load.weights_ahead(L::kStages - 1, kt0, tiles);
  wait_for_previous_kernel();
  load.x_ahead(L::kStages - 1, kt0, tiles);
  each_fragment_element<L::kMTiles, L::kNTiles>([&](int mt, int nt, int e) { acc[mt][nt][e] = 0.0f; });
  SplitCursor<int64_t> split(kt0, kt1, p.tiles_per_split);
  for (int64_t t = 0; t < tiles; ++t) {
    copy_wait<L::kStages - 2>();
    __syncthreads();
    const char* stage = shared + (t % L::kStages) * L::kStageBytes;
    const uint4* b_tile = reinterpret_cast<const uint4*>(stage + L::kABytes);
    if constexpr (kBits != 0) {
      dequantize<kBits>(stage + L::kABytes, dequantized, p, n0, kt0 + t);
      __syncthreads();
      b_tile = dequantized;
    }
    const int64_t next = t + L::kStages - 1;
    if (next < tiles) {
      load.x(static_cast<int>(next % L::kStages), kt0 + next);
      load.weight(static_cast<int>(next % L::kStages), kt0 + next);
    }
    copy_commit();
    multiply<L>(reinterpret_cast<const uint4*>(stage), b_tile, acc, warp_m, warp_n);
    if constexpr (!kOneSplit) {
      if (split.ends(kt0 + t)) {
        fold_split<L>(acc, total, split.first());
        split.next();
      }
    }
  }
  copy_wait<0>();
}

#if PLUMB_WGMMA
// The 128-row tile's pipeline on sm_90a: tile t's wgmma steps run while tile t + 1 is staged and dequantized
// (two dequantized tiles alternate), so a stage is refilled two tiles after its multiply began, once every
// warpgroup has waited for that multiply; kStages - 2 tiles are in flight ahead. The accumulators are touched
// only once no step is in flight (at a split's end), else the compiler would wait for the steps there.
template <class L, int kBits>
__device__ void run_tiles_warpgroups(const Params& p, char* shared, Accumulators<L>& acc,
                                     Accumulators<L>& total, int64_t m0, int64_t n0, int64_t kt0,
                                     int64_t kt1) {
  constexpr int kAhead = L::kStages - 2;
  char* dequantized = shared + L::kStages * L::kStageBytes;
  const StageLoads<L, kBits> load{p, shared, m0, n0};
  const int64_t tiles = kt1 - kt0;
  load.weights_ahead(kAhead, kt0, tiles);
  wait_for_previous_kernel();
  load.x_ahead(kAhead, kt0, tiles);
  SplitCursor<int64_t> split(kt0, kt1, p.tiles_per_split);
  for (int64_t t = 0; t < tiles; ++t) {
    copy_wait<kAhead - 1>();
    fence_async_shared();
    __syncthreads();
    const char* stage = shared + (t % L::kStages) * L::kStageBytes;
    const uint4* b_tile = reinterpret_cast<const uint4*>(stage + L::kABytes);
    if constexpr (kBits != 0) {
      uint4* tile = reinterpret_cast<uint4*>(dequantized + (t % 2) * (L::kDequantizedBytes / 2));
      dequantize<kBits>(stage + L::kABytes, tile, p, n0, kt0 + t);
      fence_async_shared();
      __syncthreads();
      b_tile = tile;
    }
    const int64_t kt = kt0 + t;
    const uint32_t a_rows = shared_address(stage) + (threadIdx.x / 128) * 64 * kTileK * 2;
    multiply_warpgroup<L>(a_rows, shared_address(b_tile), acc, split.starts(kt));
    const int64_t next = t + kAhead;
    if (next < tiles) {
      load.x(static_cast<int>(next % L::kStages), kt0 + next);
      load.weight(static_cast<int>(next % L::kStages), kt0 + next);
    }
    copy_commit();
    if (split.ends(kt)) {
      wgmma_wait<0>();
      fold_split<L, false>(acc, total, split.first());
      split.next();
    } else {
      wgmma_wait<1>();
    }
  }
  wgmma_wait<0>();  // the last tile ends a split, so nothing is in flight; the compiler cannot tell
  copy_wait<0>();
}
#endif

// One block: output tile `place` over the k tiles of cross-block split `split` (all of k without them).
template <int kRowsTile, int kBits, int kStages = 0, bool kOneSplit = false>
__device__ __forceinline__ void matmul_block(const Params& p, TilePlace place, int64_t split) {
  using L = Layout<kRowsTile, kBits, kStages>;
  extern __shared__ __align__(128) char shared_bytes[];
  char* shared = shared_bytes;
  if constexpr (L::kAlignBytes != 0)
    shared += (L::kAlignBytes - shared_address(shared_bytes) % L::kAlignBytes) % L::kAlignBytes;
  const int64_t n0 = place.n_tile * kTileN;
  const int64_t m0 = place.m_tile * kRowsTile;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_m = warp / L::kWarpsN, warp_n = warp % L::kWarpsN;
  const int64_t kt0 = p.cross ? split * p.tiles_per_split : 0;
  const int64_t kt1 = p.cross ? min(kt0 + p.tiles_per_split, p.k_tiles) : p.k_tiles;
  if constexpr (kOneSplit && !L::kWarpgroups) {  // the block's tiles are one split: no second set
    Accumulators<L> acc;
    run_tiles<L, kBits, true>(p, shared, acc, acc, m0, n0, kt0, kt1, warp_m, warp_n);
    write_tile<L>(p, acc, m0, n0, split, warp_m, warp_n, lane);
    return;
  }
  Accumulators<L> acc, total;  // run_tiles starts acc at zero; wgmma's first step of a split overwrites it
#if PLUMB_WGMMA
  if constexpr (L::kWarpgroups) {
    run_tiles_warpgroups<L, kBits>(p, shared, acc, total, m0, n0, kt0, kt1);
  } else
#endif
  {
    run_tiles<L, kBits>(p, shared, acc, total, m0, n0, kt0, kt1, warp_m, warp_n);
  }
  write_tile<L>(p, total, m0, n0, split, warp_m, warp_n, lane);
}

// kStages 0: the layout's pipeline stages (run chooses otherwise for the bf16 32-row tile).
template <int kRowsTile, int kBits, int kStages>
__global__ void __launch_bounds__(kThreads) matmul_kernel(Params p) {
  matmul_block<kRowsTile, kBits, kStages>(p, place_block(), blockIdx.z);
}

// Up to kMatmulGroupMembers bf16 matmuls of one x in one launch: member i's blocks are [first_block[i],
// first_block[i + 1]), numbered as matmul_kernel's grid would be (column tiles, row tiles, then splits), and
// its reduce blocks [first_reduce[i], first_reduce[i + 1]) (none without cross-block splits).
struct GroupParams {
  static_assert(kMatmulGroupMembers == 3, "matmul_group_kernel has a body per member");
  Params member[kMatmulGroupMembers];
  uint32_t first_block[kMatmulGroupMembers + 1];  // 32-bit: a grid's x counts fit, and 32-bit math is short
  uint32_t first_reduce[kMatmulGroupMembers + 1];
  int members;
};

// The bf16 32-row tile takes three pipeline stages: 60 KiB of shared memory, so three blocks an SM where four
// stages fit two. The 3840 x 15360 down projection's 270 blocks at 32 rows then run in one wave instead of
// 264 and a tail of 6 (+2.5% at 32-stream decode). The grouped kernel takes them too: tiled_group_fits sends
// it only members whose blocks each run one split (cross-block or unsplit), so a block keeps one set of sums,
// 78 registers under the bound where two sets took 119 and two blocks an SM (+2% at 32-stream decode).
template <int kRowsTile, int kBits>
constexpr int kTileStages = kRowsTile == 32 && kBits == 0 ? 3 : 0;

template <int kRowsTile>
__global__ void __launch_bounds__(kThreads, 3)
    matmul_group_kernel(const __grid_constant__ GroupParams group) {
  run_group_member(group, [](const Params& p, int64_t local, int) {
    const auto n_tiles = static_cast<uint32_t>((p.n + kTileN - 1) / kTileN);
    const auto m_tiles = static_cast<uint32_t>((p.rows + kRowsTile - 1) / kRowsTile);
    const uint32_t per_split = n_tiles * m_tiles, at = local;
    matmul_block<kRowsTile, 0, kTileStages<kRowsTile, 0>, true>(
        p, place_tile(at % per_split, n_tiles, m_tiles), at / per_split);
  });
}

// t = partial[0]; t += partial[s] for s = 1.. in order; the same additions a single block makes.
__device__ __forceinline__ float split_total(const Params& p, int64_t col, int64_t row) {
  float total = p.partial[row * p.n + col];
  for (int s = 1; s < p.splits; ++s) total = total + p.partial[(s * p.rows + row) * p.n + col];
  return total;
}

__device__ __forceinline__ void reduce_column(const Params& p, int64_t col, int64_t row) {
  if (col >= p.n) return;
  const float total = split_total(p, col, row);
  if (p.out_f32) {
    static_cast<float*>(p.out)[row * p.out_stride + col] = total;
  } else {
    static_cast<uint16_t*>(p.out)[row * p.out_stride + col] = bf16_bits(total);
  }
}

__global__ void reduce_kernel(Params p) {
  wait_for_previous_kernel();
  reduce_column(p, static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, blockIdx.y);
}

__global__ void reduce_group_kernel(const __grid_constant__ GroupParams group) {
  wait_for_previous_kernel();
  const int i = group_member(group.first_reduce, group.members, static_cast<uint32_t>(blockIdx.x));
  const int64_t local = blockIdx.x - group.first_reduce[i];
  reduce_column(group.member[i], local * kThreads + threadIdx.x, blockIdx.y);
}

// matmul_geglu's gate and up (bf16 outputs, one shape, both split across blocks) and geglu's output.
struct GegluPair {
  Params gate, up;
  uint16_t* out;
  int64_t out_stride;
};

// Both members' splits added as reduce_column adds them, then stored with geglu of the two (geglu_bits).
__global__ void reduce_geglu_kernel(const __grid_constant__ GegluPair pair) {
  wait_for_previous_kernel();
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, row = blockIdx.y;
  if (col >= pair.gate.n) return;
  const GegluBits bits = geglu_bits(split_total(pair.gate, col, row), split_total(pair.up, col, row));
  static_cast<uint16_t*>(pair.gate.out)[row * pair.gate.out_stride + col] = bits.gate;
  static_cast<uint16_t*>(pair.up.out)[row * pair.up.out_stride + col] = bits.up;
  pair.out[row * pair.out_stride + col] = bits.out;  // last: out may be gate or up
}

template <int kRowsTile, int kBits>
cudaError_t run(const Params& p, const Plan& plan, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(plan.n_tiles), static_cast<unsigned>(plan.m_tiles),
                  plan.cross ? plan.splits : 1);
  if constexpr (kRowsTile == 128 && kBits % 2 == 0 && kBits < 8)
    if (ring_tile_fits(p, kBits)) return launch_ring_tile<kBits>(p, grid.x, grid.y, grid.z, stream);
  constexpr int kStages = kTileStages<kRowsTile, kBits>;
  using L = Layout<kRowsTile, kBits, kStages>;
  auto kernel = matmul_kernel<kRowsTile, kBits, kStages>;
  const cudaError_t code =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kSharedBytes);
  if (code != cudaSuccess) return code;
  launch_dependent(kernel, grid, kThreads, L::kSharedBytes, stream, p);
  return cudaGetLastError();
}

template <int kBits>
cudaError_t run_bits(const Params& p, const Plan& plan, cudaStream_t stream) {
  switch (plan.rows_tile) {
    case 16:
      return run<16, kBits>(p, plan, stream);
    case 32:
      return run<32, kBits>(p, plan, stream);
    case 64:
      return run<64, kBits>(p, plan, stream);
    default:
      return run<128, kBits>(p, plan, stream);
  }
}

cudaError_t run_any(const Params& p, const Plan& plan, int bits, cudaStream_t stream) {
  return with_bits(bits, [&](auto width) { return run_bits<decltype(width)::value>(p, plan, stream); });
}

bool aligned16(const void* pointer) {
  return reinterpret_cast<uintptr_t>(pointer) % 16 == 0;
}

bool uses_tensor_cores(const MatmulArgs& launch) {
  return launch.weight.affine || launch.weight.dense_kind == DenseKind::bf16;
}

bool x_vector(const MatmulArgs& launch) {
  return aligned16(launch.x) && launch.x_stride % 8 == 0 && launch.weight.in % 8 == 0;
}

// Whether the call's affine weight is dequantized into scratch first and the bf16 ring multiplies it (the
// same values into the same wgmma steps as the affine tiles, so the same bits).
bool dequantize_first(const MatmulArgs& launch) {
  if (!dequantize_fits(launch.weight, launch.rows)) return false;
  Params p{};
  p.rows = std::min<int64_t>(launch.rows, int64_t{65535} * 128);
  p.n = launch.weight.out;
  p.k = launch.weight.in;
  p.splits = plan_for(p.rows, p.n, p.k).splits;
  p.x_vector = x_vector(launch);
  p.dense_vector = true;  // the scratch is aligned and k % 32 == 0
  return ring_tile_fits(p, 0);
}

}  // namespace

// PLUMB_CUDA_TARGET_BLOCKS (64 to 1024) sets another count for an A/B of the plan on another GPU. It moves
// the splits, so the sums' order and the bits of every call; one count holds for the whole process, so I1-I4
// hold under each. On an H100, 128, 192, 384 and 512 were each slower than 256 at every decode stream count.
int64_t split_target_blocks() {
  static const int64_t blocks = [] {
    const char* value = std::getenv("PLUMB_CUDA_TARGET_BLOCKS");
    if (value == nullptr) return kDefaultSplitBlocks;
    char* end = nullptr;
    const long long parsed = std::strtoll(value, &end, 10);
    if (end == value || *end != '\0' || parsed < 64 || parsed > 1024) {
      std::fprintf(stderr,
                   "cuda.matmul: PLUMB_CUDA_TARGET_BLOCKS '%s' is not a block count; expected 64 to "
                   "1024, using %lld\n",
                   value, static_cast<long long>(kDefaultSplitBlocks));
      return kDefaultSplitBlocks;
    }
    return static_cast<int64_t>(parsed);
  }();
  return blocks;
}

// Splits from the weight shape (n, k) alone; the row tile and cross-block choice only place work.
Plan plan_for(int64_t rows, int64_t n, int64_t k) {
  const int64_t target = split_target_blocks();
  Plan plan{};
  plan.k_tiles = (k + kTileK - 1) / kTileK;
  plan.n_tiles = (n + kTileN - 1) / kTileN;
  const int64_t wanted = (target + plan.n_tiles - 1) / plan.n_tiles;
  const int64_t most = std::max<int64_t>(1, plan.k_tiles / kMinTilesPerSplit);
  const int64_t splits = std::clamp<int64_t>(wanted, 1, most);
  plan.tiles_per_split = (plan.k_tiles + splits - 1) / splits;
  plan.splits = static_cast<int>((plan.k_tiles + plan.tiles_per_split - 1) / plan.tiles_per_split);
  plan.rows_tile = rows <= 16 ? 16 : rows <= 32 ? 32 : rows <= 64 ? 64 : 128;
  plan.m_tiles = (rows + plan.rows_tile - 1) / plan.rows_tile;
  plan.cross = plan.splits > 1 && plan.m_tiles * plan.n_tiles < target;
  return plan;
}

namespace {

// A call's operands as the tiled kernels take them (the plan's fields are set per slab).
Params params_for(const MatmulArgs& launch, void* scratch) {
  const WeightArgs& weight = launch.weight;
  Params p{};
  p.x = launch.x;
  p.x_stride = launch.x_stride;
  p.rows = launch.rows;
  p.n = weight.out;
  p.k = weight.in;
  p.out = launch.out;
  p.out_f32 = launch.out_f32;
  p.out_stride = launch.out_stride;
  p.partial = static_cast<float*>(scratch);
  p.x_vector = x_vector(launch);
  if (weight.affine) {
    p.packed = weight.packed;
    p.scales = weight.scales;
    p.biases = weight.biases;
    p.group_shift = group_shift_of(weight.group);
  } else {
    p.dense = static_cast<const uint16_t*>(weight.dense);
    p.dense_vector = aligned16(weight.dense) && p.k % 8 == 0;
  }
  return p;
}

void apply_plan(Params& p, const Plan& plan) {
  p.k_tiles = plan.k_tiles;
  p.tiles_per_split = plan.tiles_per_split;
  p.splits = plan.splits;
  p.cross = plan.cross;
}

// The grouped tiled kernel takes bf16 weights at 17 to 32 rows (the 32-row tile, one slab). At 1 row the
// grouped 16-row tile made bf16 decode 3.5% slower (q/k/v and gate/up grouped, measured on the H200), at 32
// rows the 32-row one 3.6% faster.
constexpr int kGroupRowsTile = 32;

}  // namespace

size_t member_scratch_bytes(const MatmulArgs& launch) {
  return (matmul_scratch_bytes(launch) + 255) / 256 * 256;
}

bool decode_takes(const MatmulArgs& launch, bool decode) {
  return decode && launch.rows <= kDecodeRows && uses_tensor_cores(launch) &&
         matmul_decode_supports(launch.weight);
}

bool tiled_group_fits(std::span<const MatmulArgs> members) {
  for (const MatmulArgs& member : members) {
    if (member.weight.affine || member.weight.dense_kind != DenseKind::bf16 || member.rows > kGroupRowsTile ||
        member.rows <= kGroupRowsTile / 2)
      return false;
    // One split a block (matmul_group_kernel keeps one set of sums); at one row tile every plan is.
    const Plan plan = plan_for(member.rows, member.weight.out, member.weight.in);
    if (!plan.cross && plan.splits > 1) return false;
  }
  return true;
}

namespace {

// The members' planned params, their blocks and their reduce blocks, numbered as GroupParams keeps them.
GroupParams group_params(std::span<const MatmulArgs> members, std::span<void* const> areas) {
  GroupParams group{};
  group.members = static_cast<int>(members.size());
  for (int i = 0; i < group.members; ++i) {
    const MatmulArgs& member = members[i];
    const Plan plan = plan_for(member.rows, member.weight.out, member.weight.in);
    Params& p = group.member[i] = params_for(member, areas[i]);
    apply_plan(p, plan);
    group.first_block[i + 1] = group.first_block[i] + static_cast<uint32_t>(plan.n_tiles * plan.m_tiles *
                                                                            (plan.cross ? plan.splits : 1));
    group.first_reduce[i + 1] =
        group.first_reduce[i] + static_cast<uint32_t>(plan.cross ? blocks_for(p.n, kThreads) : 0);
  }
  return group;
}

// Where member i's sums are after the group's tiled launches, for a reduce launch of the caller's.
void member_sums(const GroupParams& group, MemberSums* sums) {
  for (int i = 0; i < group.members; ++i) {
    const Params& p = group.member[i];
    sums[i] = {p.partial, static_cast<const uint16_t*>(p.out), p.out_stride, p.rows, p.n, p.splits, p.cross};
  }
}

// One reduce_group_kernel launch for every member whose splits run across blocks.
cudaError_t launch_group_reduce(const GroupParams& group, int64_t rows, cudaStream_t stream) {
  if (group.first_reduce[group.members] == 0) return cudaSuccess;
  launch_dependent(
      reduce_group_kernel,
      dim3(static_cast<unsigned>(group.first_reduce[group.members]), static_cast<unsigned>(rows)), kThreads,
      0, stream, group);
  return cudaGetLastError();
}

}  // namespace

cudaError_t launch_tiled_group(std::span<const MatmulArgs> members, std::span<void* const> areas,
                               cudaStream_t stream, bool reduce, MemberSums* sums) {
  constexpr int kRowsTile = kGroupRowsTile;
  const GroupParams group = group_params(members, areas);
  using L = Layout<kRowsTile, 0, kTileStages<kRowsTile, 0>>;
  auto kernel = matmul_group_kernel<kRowsTile>;
  cudaError_t code =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::kSharedBytes);
  if (code != cudaSuccess) return code;
  launch_dependent(kernel, dim3(static_cast<unsigned>(group.first_block[group.members])), kThreads,
                   L::kSharedBytes, stream, group);
  if ((code = cudaGetLastError()) != cudaSuccess) return code;
  if (sums != nullptr) member_sums(group, sums);
  return reduce ? launch_group_reduce(group, members[0].rows, stream) : cudaSuccess;
}

bool tiled_members_fit(std::span<const MatmulArgs> members) {
  return std::ranges::all_of(members, [](const MatmulArgs& m) {
    return !m.weight.affine && m.weight.dense_kind == DenseKind::bf16 &&
           plan_for(m.rows, m.weight.out, m.weight.in).m_tiles <= 65535;  // one slab, as launch_matmul's
  });
}

cudaError_t launch_tiled_members(std::span<const MatmulArgs> members, std::span<void* const> areas,
                                 cudaStream_t stream, MemberSums* sums) {
  const GroupParams group = group_params(members, areas);
  for (int i = 0; i < group.members; ++i) {
    const Params& p = group.member[i];
    const cudaError_t code = run_any(p, plan_for(p.rows, p.n, p.k), 0, stream);
    if (code != cudaSuccess) return code;
  }
  if (sums == nullptr) return launch_group_reduce(group, members[0].rows, stream);
  member_sums(group, sums);
  return cudaSuccess;
}

bool tiled_geglu_fits(std::span<const MatmulArgs> members) {
  return std::ranges::all_of(members, [](const MatmulArgs& m) {
    return !m.weight.affine && m.weight.dense_kind == DenseKind::bf16 &&
           plan_for(m.rows, m.weight.out, m.weight.in).cross;
  });
}

cudaError_t launch_tiled_geglu(std::span<const MatmulArgs> members, std::span<void* const> areas,
                               const RowsArgs& geglu, bool grouped, cudaStream_t stream) {
  GegluPair pair{{}, {}, static_cast<uint16_t*>(geglu.out), geglu.out_stride};
  Params* params[2] = {&pair.gate, &pair.up};
  const Plan plan = plan_for(members[0].rows, members[0].weight.out, members[0].weight.in);  // one shape
  const bool group = grouped && tiled_group_fits(members);
  for (int i = 0; i < 2; ++i) {
    apply_plan(*params[i] = params_for(members[i], areas[i]), plan);
    if (const cudaError_t code = group ? cudaSuccess : run_any(*params[i], plan, 0, stream);
        code != cudaSuccess)
      return code;
  }
  if (const cudaError_t code = group ? launch_tiled_group(members, areas, stream, false) : cudaSuccess;
      code != cudaSuccess)
    return code;
  launch_dependent(reduce_geglu_kernel,
                   dim3(blocks_for(pair.gate.n, kThreads), static_cast<unsigned>(geglu.rows)), kThreads, 0,
                   stream, pair);
  return cudaGetLastError();
}

}  // namespace matmul

size_t matmul_scratch_bytes(const MatmulArgs& launch) {
  if (!matmul::uses_tensor_cores(launch)) return 0;
  const matmul::Plan plan = matmul::plan_for(launch.rows, launch.weight.out, launch.weight.in);
  const int64_t rows_per_launch = std::min<int64_t>(launch.rows, int64_t{65535} * plan.rows_tile);
  const size_t dense = matmul::dequantize_first(launch) ? matmul::dequantized_bytes(launch.weight) : 0;
  return dense + (plan.cross
                      ? static_cast<size_t>(plan.splits) * rows_per_launch * launch.weight.out * sizeof(float)
                      : 0);
}

cudaError_t launch_matmul(const MatmulArgs& launch, void* scratch, unsigned* counters, bool decode,
                          cudaStream_t stream) {
  using namespace matmul;
  if (launch.rows == 0) return cudaSuccess;
  if (!uses_tensor_cores(launch)) return launch_matmul_simt(launch, stream);
  const WeightArgs& weight = launch.weight;
  if (decode_takes(launch, decode))
    return launch_decode_group(std::span(&launch, 1), std::span(&scratch, 1), counters, stream);
  if (weight.affine && (reinterpret_cast<uintptr_t>(weight.scales) % 4 != 0 ||
                        reinterpret_cast<uintptr_t>(weight.biases) % 4 != 0))
    return cudaErrorMisalignedAddress;
  Params p = params_for(launch, scratch);
  int bits = weight.affine ? weight.bits : 0;
  if (dequantize_first(launch)) {
    auto* dense = static_cast<uint16_t*>(scratch);
    if (const cudaError_t code = launch_dequantize(weight, dense, stream); code != cudaSuccess) return code;
    p.dense = dense;
    p.dense_vector = true;
    p.partial = reinterpret_cast<float*>(static_cast<char*>(scratch) + dequantized_bytes(weight));
    bits = 0;
  }
  const size_t out_size = p.out_f32 ? 4 : 2;
  // Grids hold at most 65535 row tiles, so very tall calls go in slabs (rows are independent).
  for (int64_t first = 0; first < launch.rows;) {
    Plan plan = plan_for(launch.rows - first, p.n, p.k);
    plan.m_tiles = std::min<int64_t>(plan.m_tiles, 65535);
    p.rows = std::min(launch.rows - first, plan.m_tiles * plan.rows_tile);
    p.x = launch.x + first * launch.x_stride;
    p.out = static_cast<char*>(launch.out) + first * launch.out_stride * out_size;
    apply_plan(p, plan);
    cudaError_t code = run_any(p, plan, bits, stream);
    if (code != cudaSuccess) return code;
    if (plan.cross) {
      launch_dependent(reduce_kernel, dim3(blocks_for(p.n, kThreads), static_cast<unsigned>(p.rows)),
                       kThreads, 0, stream, p);
      if ((code = cudaGetLastError()) != cudaSuccess) return code;
    }
    first += p.rows;
  }
  return cudaSuccess;
}

}  // namespace plumb::cuda
