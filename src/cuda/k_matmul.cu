// out = x · Wᵀ with bf16 tensor-core products and fp32 accumulation (mma.sync m16n8k16; the 128-row tile
// takes wgmma m64n128k16 on sm_90a, whose steps give the same bits, wgmma.cuh): each output element sums its
// k16 steps in ascending order within a K split, and the splits are added in split order (t = a0; t
// += a1 ...), then rounded once to bf16 (or kept f32). The K splits come from the weight shape alone; the row
// tile only decides how many rows share a block, and whether one block or several run a row's splits changes
// no bit (the same sums in the same order), so a row's bits never depend on the row count (I1). With the
// backend's decode option, up to 32 rows of 2/4/8-bit affine weights go to k_matmul_decode.cu, which
// makes the same sums with the codes streamed through shared memory. Affine weights are dequantized in the
// kernel to bf16(scale * q + bias) (k_matmul_tiles.cuh); f16 and f32 weights go to k_matmul_simt.cu. The
// block's pipelines are in k_matmul_pipeline.cuh; groups of tiled matmuls in k_matmul_tiled_group.cu.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_pipeline.cuh"
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

// kStages 0: the layout's pipeline stages (run chooses otherwise for the bf16 32-row tile).
template <int kRowsTile, int kBits, int kStages>
__global__ void __launch_bounds__(kThreads) matmul_kernel(Params p) {
  matmul_block<kRowsTile, kBits, kStages>(p, place_block(), blockIdx.z);
}

__global__ void reduce_kernel(Params p) {
  wait_for_previous_kernel();
  reduce_column(p, static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x, blockIdx.y);
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

cudaError_t run_any(const Params& p, const Plan& plan, int bits, cudaStream_t stream) {
  return with_bits(bits, [&](auto width) { return run_bits<decltype(width)::value>(p, plan, stream); });
}

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

size_t member_scratch_bytes(const MatmulArgs& launch) {
  return (matmul_scratch_bytes(launch) + 255) / 256 * 256;
}

bool decode_takes(const MatmulArgs& launch, bool decode) {
  return decode && launch.rows <= kDecodeRows && uses_tensor_cores(launch) &&
         matmul_decode_supports(launch.weight);
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
