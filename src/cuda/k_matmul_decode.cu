// out = x · Wᵀ for up to 32 rows (decode steps and small batches) of MLX affine weights: the same sums in the
// same order as k_matmul.cu (each K split's k16 mma steps in ascending order from zero, splits added in split
// order, one rounding to bf16 or none for f32), so a row's bits never depend on which kernel or how many rows
// ran it (I1). Each warp streams 16 weight columns of one K split, with their scales and biases, through a
// ring of shared-memory slots filled by cp.async several tiles ahead, and dequantizes them in registers into
// mma fragments (k_matmul_fragments.cuh): on tiles where one rounding gives the reference's bits, one
// bf16x2 fma a pair of 4-bit codes (two for 2-bit codes or large scales); x is staged per block. With
// several splits, the block that finishes a column strip last (a counter per strip) adds the splits' partial
// sums in split order, so no second launch is needed. A launch takes one to three matmuls of one x
// (matmul_group), each with its own plan, scratch and counters. bf16 weights take the tiled kernel, which
// streams them faster at these row counts (65% against 45% of the copy bound at 1 row, measured on the H200).
// 4-bit weights with a decode layout (made at load) take k_matmul_decode_lanes.cu instead: the same sums.
#include <algorithm>
#include <span>
#include <type_traits>

#include "cuda/k_matmul_decode.cuh"
#include "cuda/matmul_plan.hpp"

namespace plumb::cuda {

namespace matmul {

namespace {

// The tile's four k16 steps in order (kFull: all four inside k), in the tile's form (k_matmul_fragments.cuh):
// subnormal or packed pairs made once per tile, else through f32 with the half-rows' scales, biases and
// forms read once per tile.
template <int kBits, int kMTiles, bool kFull>
__device__ __forceinline__ void multiply_tile(const WeightTile<kBits>& tile, TileForm form, int group_shift,
                                              const uint32_t (&a_rows)[kMTiles], int local, int steps,
                                              float (&acc)[kMTiles][kDecodeNTiles][4]) {
  if constexpr (kBits == 4) {
    if (form == TileForm::subnormal) {
      const PackedPairs pairs = packed_pairs<kBits>(tile, kSubnormalScaleOffset);
      multiply_steps<kMTiles, kFull>(a_rows, local, steps, acc,
                                     [&](auto step, int j, uint32_t& b0, uint32_t& b1) {
                                       subnormal_fragment<decltype(step)::value>(tile, pairs, j, b0, b1);
                                     });
      return;
    }
  }
  if constexpr (kPackable<kBits>) {
    if (form == TileForm::packed) {
      const PackedPairs pairs = packed_pairs<kBits>(tile, 0u);
      multiply_steps<kMTiles, kFull>(a_rows, local, steps, acc,
                                     [&](auto step, int j, uint32_t& b0, uint32_t& b1) {
                                       packed_fragment<kBits, decltype(step)::value>(tile, pairs, j, b0, b1);
                                     });
      return;
    }
  }
  // With groups of 64 or more both halves of a tile share one scale and bias.
  HalfRow<kBits> halves[kDecodeNTiles][2];
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) {
    halves[j][0] = half_row<kBits>(tile.scale_bias[j][0]);
    halves[j][1] = group_shift >= 6 ? halves[j][0] : half_row<kBits>(tile.scale_bias[j][1]);
  }
  multiply_steps<kMTiles, kFull>(a_rows, local, steps, acc,
                                 [&](auto step, int j, uint32_t& b0, uint32_t& b1) {
                                   constexpr int kStep = decltype(step)::value;
                                   affine_fragment<kBits, kStep>(tile, j, halves[j][kStep / 2], b0, b1);
                                 });
}

// One block: the warps' 16-column slices of column strip `strip`, over the k tiles of split `split`.
template <int kBits, int kMTiles>
__device__ __forceinline__ void decode_block(const DecodeParams& p, int64_t strip, int split) {
  constexpr int kSlots = kRingSlots<kBits>;
  extern __shared__ __align__(16) char shared[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t col0 = strip * kDecodeBlockCols + warp * kDecodeWarpCols;
  const DecodeSplit range(p, split);
  const uint32_t k0 = held(static_cast<uint32_t>(range.kt0 * kTileK));  // the split's first k (k < 2^31)
  // Shared memory: the ring ([warps][slots][slot bytes]), then x.
  char* ring = shared + warp * kSlots * kSlotBytes<kBits>;
  XSegments<kMTiles> x(shared + kDecodeWarps * kSlots * kSlotBytes<kBits>, p);
  CodeSource<kBits> source(p, col0, range.kt0);
  // Bit j: the parity of the first scale element of the lane's column in column tile j (odd only where the
  // group count is odd).
  uint32_t odd_rows = 0;
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j)
    odd_rows |= static_cast<uint32_t>(min(col0 + j * 8 + lane / 4, p.n - 1) & p.groups & 1) << j;
  odd_rows = held(odd_rows);
  // One commit group per tile (empty past the split), so tile t's copy is done once kSlots - 2 are pending.
#pragma unroll
  for (int i = 0; i < kSlots - 1; ++i) {
    if (i < range.tiles) source.copy_next(ring + i * kSlotBytes<kBits>, p);
    copy_commit();
  }
  wait_for_previous_kernel();  // the weights above do not depend on earlier launches; x and the sums do
  float acc[kMTiles][kDecodeNTiles][4] = {};
  for (int t = 0; t < range.tiles; ++t) {
    x.reach(p, range, t);
    copy_wait<kSlots - 2>();
    __syncwarp();
    WeightTile<kBits> tile;
    read_tile<kBits>(tile, ring + (t % kSlots) * kSlotBytes<kBits>, odd_rows,
                     k0 + static_cast<uint32_t>(t) * kTileK, p.group_shift);
    __syncwarp();  // every lane has read the slot the next copy refills
    if (t + kSlots - 1 < range.tiles)
      source.copy_next(ring + ((t + kSlots - 1) % kSlots) * kSlotBytes<kBits>, p);
    copy_commit();
    const TileForm form = tile_form<kBits>(tile, p.group_shift);
    if (t < range.full_tiles) {
      multiply_tile<kBits, kMTiles, true>(tile, form, p.group_shift, x.a_rows, t - x.first, 4, acc);
    } else {
      multiply_tile<kBits, kMTiles, false>(tile, form, p.group_shift, x.a_rows, t - x.first,
                                           tile_steps(p, range, t), acc);
    }
  }
  copy_wait<0>();
  finish_sums<kMTiles>(p, strip, split, col0, acc);
}

template <int kBits, int kMTiles>
__global__ void __launch_bounds__(kDecodeThreads, (kBlocksPerSm<kBits, kMTiles>))
    decode_kernel(const __grid_constant__ DecodeGroup group) {
  run_member_block(group, [](const DecodeParams& p, int64_t strip, int split) {
    decode_block<kBits, kMTiles>(p, strip, split);
  });
}

template <int kBits, int kMTiles>
cudaError_t run_decode(DecodeGroup& group, cudaStream_t stream) {
  const size_t ring = size_t{kDecodeWarps} * kRingSlots<kBits> * kSlotBytes<kBits>;
  return launch_decode_kernel(decode_kernel<kBits, kMTiles>, group, ring + stage_x_bytes(group), stream);
}

template <int kMTiles>
cudaError_t run_decode_bits(DecodeGroup& group, int bits, cudaStream_t stream) {
  switch (bits) {
    case 2:
      return run_decode<2, kMTiles>(group, stream);
    case 4:
      return run_decode<4, kMTiles>(group, stream);
    case 8:
      return run_decode<8, kMTiles>(group, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

bool aligned(const void* pointer, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(pointer) % bytes == 0;
}

}  // namespace

DecodeParams weight_params(const WeightArgs& weight, const void* layout) {
  DecodeParams p{};
  p.packed = weight.packed;
  p.scales = weight.scales;
  p.biases = weight.biases;
  p.n = weight.out;
  p.k = weight.in;
  p.row_words = p.k * weight.bits / 32;
  p.groups = p.k / weight.group;
  p.group_shift = group_shift_of(weight.group);
  p.k_tiles = (p.k + kTileK - 1) / kTileK;
  p.full_tiles = p.k / kTileK;
  if (layout != nullptr) {
    const LaneLayout shape = lane_layout(p.n, p.k, weight.group);
    p.lane_records = static_cast<const uint4*>(layout);
    p.slices = shape.slices;
    p.lane_halves = shape.halves;
  }
  return p;
}

size_t stage_x_bytes(DecodeGroup& group, int64_t segment_bytes) {
  size_t bytes = 0;
  for (int i = 0; i < group.members; ++i) {
    DecodeParams& p = group.member[i];
    const int64_t x_tiles = (segment_bytes / std::max<int64_t>(p.rows, 1) - 32) / 128;
    p.segment_tiles = static_cast<int>(std::max<int64_t>(1, std::min(p.tiles_per_split, x_tiles)));
    bytes = std::max(bytes, static_cast<size_t>(p.rows * (p.segment_tiles * 128 + 16) + 16));
  }
  return bytes;
}

}  // namespace matmul

bool matmul_decode_supports(const WeightArgs& weight) {
  if (!weight.affine) return false;
  const bool bits = weight.bits == 2 || weight.bits == 4 || weight.bits == 8;
  // Whole 16-byte code chunks per row, scale and bias tensors copied by aligned 4-byte words, and k and the
  // scale elements indexed in 32 bits.
  const int64_t elements = weight.out * (weight.in / weight.group);
  return bits && weight.in * weight.bits % 128 == 0 && matmul::aligned(weight.packed, 16) &&
         matmul::aligned(weight.scales, 4) && matmul::aligned(weight.biases, 4) &&
         elements < (int64_t{1} << 31) && weight.in + matmul::kTileK < (int64_t{1} << 31);
}

namespace matmul {
namespace {

// A member's fields: its K splits from the weight's plan, its partial sums' scratch and its strips' counters.
DecodeParams decode_params(const MatmulArgs& launch, void* scratch, unsigned* counters) {
  const Plan plan = plan_for(launch.rows, launch.weight.out, launch.weight.in);
  DecodeParams p = weight_params(launch.weight, launch.weight.decode_layout);
  p.x = launch.x;
  p.x_stride = launch.x_stride;
  p.rows = launch.rows;
  p.out = launch.out;
  p.out_f32 = launch.out_f32;
  p.out_stride = launch.out_stride;
  p.partial = static_cast<float*>(scratch);
  p.counters = counters;
  p.tiles_per_split = plan.tiles_per_split;
  p.splits = plan.splits;
  p.x_vector = aligned(launch.x, 16) && launch.x_stride % 8 == 0 && p.k % 8 == 0;
  return p;
}

// Whether every member has a decode layout, all with one count of scale words a tile.
bool lanes_take(const DecodeGroup& group) {
  for (int i = 0; i < group.members; ++i) {
    const DecodeParams& p = group.member[i];
    if (p.lane_records == nullptr || p.lane_halves != group.member[0].lane_halves) return false;
  }
  return true;
}

// matmul_geglu's gate (member 0) and up (member 1), of one shape and split into several: both carry the
// pair, and up's strips count on gate's counters.
cudaError_t pair_for_geglu(DecodeGroup& group, const RowsArgs& geglu) {
  DecodeParams &gate = group.member[0], &up = group.member[1];
  if (group.members != 2 || gate.n != up.n || gate.splits != up.splits || gate.splits < 2 || gate.out_f32 ||
      up.out_f32 || geglu.width != gate.n || geglu.rows != gate.rows || geglu.out_f32)
    return cudaErrorInvalidValue;
  gate.geglu = {gate.partial,
                up.partial,
                static_cast<uint16_t*>(gate.out),
                static_cast<uint16_t*>(up.out),
                static_cast<uint16_t*>(geglu.out),
                gate.out_stride,
                up.out_stride,
                geglu.out_stride};
  up.geglu = gate.geglu;
  up.counters = gate.counters;
  return cudaSuccess;
}

}  // namespace

// Every member supported (matmul_decode_supports), of one width of codes and one row count; with `geglu`,
// matmul_geglu's gate and up (pair_for_geglu).
cudaError_t launch_decode_group(std::span<const MatmulArgs> members, std::span<void* const> areas,
                                unsigned* counters, cudaStream_t stream, const RowsArgs* geglu) {
  if (members.empty() || members.size() > kMatmulGroupMembers) return cudaErrorInvalidValue;
  DecodeGroup group{};
  group.members = static_cast<int>(members.size());
  for (int i = 0; i < group.members; ++i) {
    const DecodeParams& p = group.member[i] = decode_params(members[i], areas[i], counters);
    const unsigned strips = blocks_for(p.n, kDecodeBlockCols);
    counters += strips;
    if (p.splits > 1 && strips > kMatmulCounters) return cudaErrorInvalidValue;
    group.strips[i] = static_cast<int>(strips);
    group.first_block[i + 1] = group.first_block[i] + group.strips[i] * p.splits;
  }
  if (geglu != nullptr)
    if (const cudaError_t code = pair_for_geglu(group, *geglu); code != cudaSuccess) return code;
  if (lanes_take(group)) return run_decode_lanes(group, stream);
  const MatmulArgs& first = members[0];
  return first.rows <= 16 ? run_decode_bits<1>(group, first.weight.bits, stream)
                          : run_decode_bits<2>(group, first.weight.bits, stream);
}

}  // namespace matmul

}  // namespace plumb::cuda
