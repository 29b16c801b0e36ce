// The decode matmul (k_matmul_decode.cu: the same sums, so the same bits) on its own copy of a 4-bit affine
// weight, made once at load, in which a warp's 64-wide k tile is one record: each lane's 32 codes in 16
// bytes, the scale and bias words of its columns, and the tile's form decided at load for the warp. A tile
// then costs a lane one or two 16-byte cp.async copies of the record into the warp's ring, three shared reads
// (the words and the form broadcast to the lanes that share them) and the dequantization, instead of the ring
// kernel's 16-column chunks, word parities, bounds tests and form vote.
//
// The record (LaneLayout) of slice `slice` (16 columns, one warp's) and tile `tile`, [slices][tiles]:
//   codes uint4   [32 lanes]: lane (g, t)'s word 2j + s/2 holds the codes of column 16 slice + 8j + g at
//                 k = 64 tile + 16s + 8h + 2t and k + 1 in its nibbles p and p + 4, p = 2(s % 2) + h:
//                 b0 (h = 0) and b1 (h = 1) of k16 step s of column tile j, so that a pair needs at most a
//                 shift and a mask;
//   words uint32  [8 g][halves][2 j]: scale | bias << 16 of that column for the tile's 32-wide half h (one
//                 half for groups of 64 or more, as both halves share the group);
//   form uint32   the TileForm tile_form gives the warp's tile in its low byte, and above it the run of
//                 tiles from this one on that take the subnormal form (0 where this one does not); then 12
//                 zero bytes.
// Columns past n repeat the last column and codes or halves past k are zero, as the ring kernel reads them.
// A warp whose split lies inside k and within the run of its first record takes a loop with the subnormal
// form alone: the same fragments with no form dispatch or full-tile test a tile; up to 8 rows with the
// operands swapped (kSwapped, below). The layout's kernels are in k_matmul_decode_layout.cu.
#include <algorithm>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_decode.cuh"

namespace plumb::cuda::matmul {

namespace {

// Three blocks an SM for any row count: the largest launches have about 2.7 blocks an SM (the K splits aim
// at 256 blocks), and two an SM (the registers for 17 to 32 rows, the shared memory of x for 2 to 16) ran
// them in 1.4 waves. For three blocks' shared memory in an SM, x is staged 16 KiB at a time for up to 16
// rows, and the ring takes 6 slots (5 with two scale words a tile) for 17 to 32 rows.
constexpr int kLanesBlocksPerSm = 3;

template <int kMTiles, int kHalves>
constexpr int kLaneSlots = kMTiles == 1 ? (kHalves == 1 ? 8 : 6) : (kHalves == 1 ? 6 : 5);
template <int kMTiles>
constexpr int64_t kLaneSegmentBytes = kMTiles == 1 ? 16 * 1024 : kSegmentBytes;

// A warp's ring slot holds one record (LaneLayout): the codes, then the words, then the form.
constexpr int kLaneCodesBytes = LaneLayout::codes_bytes();
template <int kHalves>
constexpr int kLaneWordBytes = 8 * kHalves;  // the words of one lane's columns, which four lanes share
template <int kHalves>
constexpr int kLaneFormAt = LaneLayout{0, 0, kHalves}.form_at();
template <int kHalves>
constexpr int kLaneSlotBytes = LaneLayout{0, 0, kHalves}.record_bytes();
// 16-byte chunks of a record past the codes, copied by the first lanes.
template <int kHalves>
constexpr int kLaneTailChunks = (kLaneSlotBytes<kHalves> - kLaneCodesBytes) / 16;

template <int kHalves>
struct LaneTile {
  uint4 codes;
  uint32_t words[kHalves][kDecodeNTiles];  // scale | bias << 16 of column tile j's column, per half
  TileForm form;
};

// The warp's records of one split, copied a tile at a time into a ring slot: each lane its own 16 bytes of
// codes, and the first lanes the rest of the record.
template <int kHalves>
struct LaneSource {
  const char* record;  // the lane's chunk of codes in the split's first record

  __device__ __forceinline__ LaneSource(const DecodeParams& p, int64_t slice, int64_t kt0) {
    const int lane = threadIdx.x % 32;
    record = reinterpret_cast<const char*>(p.lane_records) +
             (slice * p.k_tiles + kt0) * kLaneSlotBytes<kHalves> + lane * 16;
  }

  // The run of subnormal tiles from the split's first record (a weight, read before the kernel ahead ends).
  __device__ __forceinline__ uint32_t subnormal_run() const {
    const char* first = record - threadIdx.x % 32 * 16;
    return __ldg(reinterpret_cast<const uint32_t*>(first + kLaneFormAt<kHalves>)) >> kSubnormalRunShift;
  }

  // Unsigned tile offsets, so that each address is one 32 x 32 + 64-bit multiply-add.
  __device__ __forceinline__ void copy(char* slot, uint32_t t) const {
    const int lane = threadIdx.x % 32;
    const char* from = record + t * static_cast<uint32_t>(kLaneSlotBytes<kHalves>);
    copy16(slot + lane * 16, from, true);
    if (lane < kLaneTailChunks<kHalves>)
      copy16(slot + kLaneCodesBytes + lane * 16, from + kLaneCodesBytes, true);
  }
};

template <int kHalves>
__device__ __forceinline__ LaneTile<kHalves> read_lane_tile(const char* slot) {
  const int lane = threadIdx.x % 32;
  LaneTile<kHalves> tile;
  tile.codes = *reinterpret_cast<const uint4*>(slot + lane * 16);
  const char* words = slot + kLaneCodesBytes + lane / 4 * kLaneWordBytes<kHalves>;
  if constexpr (kHalves == 1) {
    const uint2 w = *reinterpret_cast<const uint2*>(words);
    tile.words[0][0] = w.x, tile.words[0][1] = w.y;
  } else {
    const uint4 w = *reinterpret_cast<const uint4*>(words);
    tile.words[0][0] = w.x, tile.words[0][1] = w.y, tile.words[1][0] = w.z, tile.words[1][1] = w.w;
  }
  tile.form = static_cast<TileForm>(*reinterpret_cast<const uint32_t*>(slot + kLaneFormAt<kHalves>) & 0xffu);
  return tile;
}

// The half of a tile (its own scale words for groups of 32) that k step kStep lies in.
template <int kHalves, int kStep>
constexpr int kLaneHalf = kHalves == 2 ? kStep / 2 : 0;

// The lane's word of codes for k step kStep of column tile j, shifted so that b0's codes (k 2t and 2t + 1)
// sit at bits 0 and 16 and b1's at bits 4 and 20.
template <int kStep>
__device__ __forceinline__ uint32_t step_codes(const uint4& codes, int j) {
  const uint32_t code[4] = {codes.x, codes.y, codes.z, codes.w};
  const uint32_t w = code[2 * j + kStep / 2];
  return kStep % 2 == 0 ? w : w >> 8;
}

// Masked in place, b0's and b1's codes are the bf16 bits of q x 2^-133 and q x 2^-129 in both halves (the
// subnormals and the first normal binade are spaced 2^-133 alike), so one fma with the scale pair shifted by
// 2^133 or 2^129 rounds scale * q + bias once: subnormal_pair's form with one shift for the two halves.
constexpr uint32_t kLaneScaleB0 = 133u << 7 | 133u << 23, kLaneScaleB1 = 129u << 7 | 129u << 23;

// Codes at bits 0 and 16 of w as the bf16 pair 128 + q (magic_pairs' form).
__device__ __forceinline__ uint32_t magic_low(uint32_t w) {
  return and_or(w, 0x000f000fu, 0x43004300u);
}

// Codes at bits kAt and kAt + 16 of w moved to bits 0 and 4, for dequantize_pair.
template <int kAt>
__device__ __forceinline__ uint32_t code_byte(uint32_t w) {
  return (w >> kAt & 0xfu) | (w >> (kAt + 12) & 0xf0u);
}

// The tile's scale (for the packed form; + kLaneScaleB0 or B1 for the subnormal form) and bias pairs.
template <int kHalves>
struct LanePairs {
  uint32_t scale[kDecodeNTiles][kHalves], bias[kDecodeNTiles][kHalves];

  __device__ __forceinline__ explicit LanePairs(const LaneTile<kHalves>& tile) {
#pragma unroll
    for (int j = 0; j < kDecodeNTiles; ++j)
#pragma unroll
      for (int h = 0; h < kHalves; ++h) {
        scale[j][h] = __byte_perm(tile.words[h][j], 0u, 0x1010u);
        bias[j][h] = __byte_perm(tile.words[h][j], 0u, 0x3232u);
      }
  }
};

// b0 and b1 of column tile j at k16 step kStep in the subnormal form, each bf16(scale * q + bias) rounded
// once.
template <int kHalves, int kStep>
__device__ __forceinline__ void subnormal_fragments(const LaneTile<kHalves>& tile,
                                                    const LanePairs<kHalves>& pairs, int j, uint32_t& b0,
                                                    uint32_t& b1) {
  constexpr int kH = kLaneHalf<kHalves, kStep>;
  const uint32_t w = step_codes<kStep>(tile.codes, j);
  b0 = fma_bf16x2(pairs.scale[j][kH] + kLaneScaleB0, w & 0x000f000fu, pairs.bias[j][kH]);
  b1 = fma_bf16x2(pairs.scale[j][kH] + kLaneScaleB1, w & 0x00f000f0u, pairs.bias[j][kH]);
}

// The tile's four k16 steps in the subnormal form.
template <int kMTiles, bool kFull, int kHalves>
__device__ __forceinline__ void multiply_subnormal_tile(const LaneTile<kHalves>& tile,
                                                        const uint32_t (&a_rows)[kMTiles], int local,
                                                        int steps, float (&acc)[kMTiles][kDecodeNTiles][4]) {
  const LanePairs<kHalves> pairs(tile);
  multiply_steps<kMTiles, kFull>(
      a_rows, local, steps, acc, [&](auto step, int j, uint32_t& b0, uint32_t& b1) {
        subnormal_fragments<kHalves, decltype(step)::value>(tile, pairs, j, b0, b1);
      });
}

// The tile's four k16 steps in its form, each fragment the ring kernel's (k_matmul_fragments.cuh) for the
// same codes, scales and biases.
template <int kMTiles, bool kFull, int kHalves>
__device__ __forceinline__ void multiply_lane_tile(const LaneTile<kHalves>& tile,
                                                   const uint32_t (&a_rows)[kMTiles], int local, int steps,
                                                   float (&acc)[kMTiles][kDecodeNTiles][4]) {
  if (tile.form == TileForm::subnormal) {
    multiply_subnormal_tile<kMTiles, kFull>(tile, a_rows, local, steps, acc);
    return;
  }
  if (tile.form == TileForm::packed) {
    const LanePairs<kHalves> pairs(tile);
    multiply_steps<kMTiles, kFull>(
        a_rows, local, steps, acc, [&](auto step, int j, uint32_t& b0, uint32_t& b1) {
          constexpr int kStep = decltype(step)::value, kH = kLaneHalf<kHalves, kStep>;
          const uint32_t w = step_codes<kStep>(tile.codes, j);
          b0 = packed_pair(magic_low(w), pairs.scale[j][kH], pairs.bias[j][kH]);
          b1 = packed_pair(magic_low(w >> 4), pairs.scale[j][kH], pairs.bias[j][kH]);
        });
    return;
  }
  HalfRow<4> halves[kDecodeNTiles][kHalves];
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j)
#pragma unroll
    for (int h = 0; h < kHalves; ++h) halves[j][h] = half_row<4>(tile.words[h][j]);
  multiply_steps<kMTiles, kFull>(
      a_rows, local, steps, acc, [&](auto step, int j, uint32_t& b0, uint32_t& b1) {
        constexpr int kStep = decltype(step)::value, kH = kLaneHalf<kHalves, kStep>;
        const uint32_t w = step_codes<kStep>(tile.codes, j);
        b0 = dequantize_pair<4, 0>(code_byte<0>(w), halves[j][kH]);
        b1 = dequantize_pair<4, 2>(code_byte<4>(w), halves[j][kH]);
      });
}

// Up to 8 rows, for weights with one scale word a tile (groups of 64 or more), a warp whose split takes the
// subnormal loop multiplies with the weight's 16 columns as mma's A and x's rows as its B (kSwapped;
// PLUMB_CUDA_LANE_SWAP=0 turns it off): one m16n8k16 a k16 step instead of two. Each sum is the same 16
// products added to the same accumulator, and the tensor cores give the same bits either way round: the whole
// contract, test_cuda and the exactness suite pass with it, and 4-bit 12B decode draws the same tokens
// (H100). Its 16 layers in the kernel bench: 1.309 -> 1.278 ms at 1 row, 1.716 -> 1.700 ms at 8;
// `plumb bench` +1.7% at 1 stream and +1.8% at 8.

// The shared address of the lane's ldmatrix row for the swapped steps: x row lane % 8 (rows past p.rows read
// the last), 8 k on for each of the four 8 x 8 matrices: b0 and b1 of two k16 steps.
__device__ __forceinline__ uint32_t swapped_x_row(const XSegments<1>& x, const DecodeParams& p) {
  const int lane = threadIdx.x % 32;
  return held(
      shared_address(x.rows + min(static_cast<int64_t>(lane % 8), p.rows - 1) * x.row_bytes + lane / 8 * 16));
}

// k16 step kStep of a subnormal tile with the weight as A: a0 and a1 are b0 of column tiles 0 and 1 (columns
// g and 8 + g), a2 and a3 their b1, and the x registers b0 and b1 of rows g.
template <int kStep>
__device__ __forceinline__ void swapped_step(const LaneTile<1>& tile, const LanePairs<1>& pairs,
                                             const uint32_t (&xs)[2][4], float (&sums)[4]) {
  uint32_t a[4];
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) subnormal_fragments<1, kStep>(tile, pairs, j, a[j], a[2 + j]);
  mma_bf16(sums, a, xs[kStep / 2][2 * (kStep % 2)], xs[kStep / 2][2 * (kStep % 2) + 1]);
}

// The tile's four k16 steps in the subnormal form with the weight as A: multiply_subnormal_tile's sums.
__device__ __forceinline__ void multiply_swapped_tile(const LaneTile<1>& tile, uint32_t x_row, int t,
                                                      float (&sums)[4]) {
  const LanePairs<1> pairs(tile);
  uint32_t xs[2][4];
  ldmatrix_x4_at(xs[0], x_row + t * kTileK * 2);
  ldmatrix_x4_at(xs[1], x_row + t * kTileK * 2 + 64);
  swapped_step<0>(tile, pairs, xs, sums);
  swapped_step<1>(tile, pairs, xs, sums);
  swapped_step<2>(tile, pairs, xs, sums);
  swapped_step<3>(tile, pairs, xs, sums);
}

// The swapped sums (lane (g', t'): columns g' and 8 + g' of rows 2t' and 2t' + 1) moved to the layout
// finish_sums stores (lane (g, t): row g, columns 8j + 2t and 8j + 2t + 1; rows 8 to 15 are never stored).
__device__ __forceinline__ void unswap_sums(const float (&sums)[4], float (&acc)[1][kDecodeNTiles][4]) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int from = (2 * t + e) * 4 + g / 2;
      const float even = __shfl_sync(0xffffffffu, sums[2 * j], from);
      const float odd = __shfl_sync(0xffffffffu, sums[2 * j + 1], from);
      acc[0][j][e] = g % 2 == 0 ? even : odd;
      acc[0][j][2 + e] = 0.0f;
    }
}

// One block: the warps' 16-column slices of column strip `strip`, over the k tiles of split `split`; the
// ring kernel's loop (decode_block) with each lane copying and reading its own parts of a slot.
template <int kMTiles, int kHalves, bool kSwapped>
__device__ __forceinline__ void lanes_block(const DecodeParams& p, int64_t strip, int split) {
  constexpr int kSlots = kLaneSlots<kMTiles, kHalves>, kSlot = kLaneSlotBytes<kHalves>;
  extern __shared__ __align__(16) char shared[];
  const int warp = threadIdx.x / 32;
  const int64_t col0 = strip * kDecodeBlockCols + warp * kDecodeWarpCols;
  const DecodeSplit range(p, split);
  // Shared memory: the ring ([warps][slots][slot bytes]), then x.
  char* ring = shared + warp * kSlots * kSlot;
  XSegments<kMTiles> x(shared + kDecodeWarps * kSlots * kSlot, p);
  // Warps past n read the last slice (their sums are never stored).
  const LaneSource<kHalves> source(p, min(col0 / kDecodeWarpCols, p.slices - 1), range.kt0);
  // A split inside k whose tiles all take the subnormal form (the same form each tile's own test gives); not
  // for 17 to 32 rows with two scale words a tile, where the second loop spills under the register cap.
  constexpr bool kSubnormalLoop = kMTiles == 1 || kHalves == 1;
  const bool subnormal = kSubnormalLoop && range.tiles > 0 && range.full_tiles >= range.tiles &&
                         source.subnormal_run() >= static_cast<uint32_t>(range.tiles);
  // One commit group per tile (empty past the split), so tile t's copy is done once kSlots - 2 are pending.
#pragma unroll
  for (int i = 0; i < kSlots - 1; ++i) {
    if (i < range.tiles) source.copy(ring + i * kSlot, static_cast<uint32_t>(i));
    copy_commit();
  }
  wait_for_previous_kernel();  // the weights above do not depend on earlier launches; x and the sums do
  float acc[kMTiles][kDecodeNTiles][4] = {};
  float swapped[4] = {};  // kSwapped's sums of a subnormal split, in the swapped layout
  int slot = 0;           // tile t's slot, t % kSlots
  // Tile t from its slot, refilling the slot read one tile ago (this lane's reads of it are done, as its
  // values were used then) with tile t + kSlots - 1.
  const auto next_tile = [&](int t) {
    copy_wait<kSlots - 2>();
    const LaneTile<kHalves> tile = read_lane_tile<kHalves>(ring + slot * kSlot);
    if (t + kSlots - 1 < range.tiles)
      source.copy(ring + (slot == 0 ? kSlots - 1 : slot - 1) * kSlot, static_cast<uint32_t>(t + kSlots - 1));
    copy_commit();
    slot = slot + 1 == kSlots ? 0 : slot + 1;
    return tile;
  };
  // x a segment at a time, the whole block at each segment's first tile.
  for (int first = 0; first < range.tiles; first += p.segment_tiles) {
    x.stage(p, range, first);
    const int end = min(first + p.segment_tiles, range.tiles);
    if constexpr (kSwapped) {
      if (subnormal) {
        const uint32_t x_row = swapped_x_row(x, p);
        for (int t = first; t < end; ++t) multiply_swapped_tile(next_tile(t), x_row, t - first, swapped);
        continue;
      }
    }
    if (kSubnormalLoop && subnormal) {
      for (int t = first; t < end; ++t)
        multiply_subnormal_tile<kMTiles, true>(next_tile(t), x.a_rows, t - first, 4, acc);
      continue;
    }
    for (int t = first; t < end; ++t) {
      const LaneTile<kHalves> tile = next_tile(t);
      if (t < range.full_tiles) {
        multiply_lane_tile<kMTiles, true>(tile, x.a_rows, t - first, 4, acc);
      } else {
        multiply_lane_tile<kMTiles, false>(tile, x.a_rows, t - first, tile_steps(p, range, t), acc);
      }
    }
  }
  copy_wait<0>();
  if constexpr (kSwapped)
    if (subnormal) unswap_sums(swapped, acc);
  finish_sums<kMTiles>(p, strip, split, col0, acc);
}

// Up to 16 rows one body serves every member, reading its parameters through the member's index: a body per
// member (run_member_block) made 107 KB of code at 1 row, and the 1-row launches' largest stall was waiting
// for instructions; one body gave 4-bit 12B decode +1.4% at 1 stream and +2.3% at 8 (H200). At 17 to 32 rows
// the bodies per member stay: one body measured 3.4% slower at 32 streams.
template <int kMTiles, int kHalves, bool kSwapped>
__global__ void __launch_bounds__(kDecodeThreads, kLanesBlocksPerSm)
    lanes_kernel(const __grid_constant__ DecodeGroup group) {
  static_assert(!kSwapped || (kMTiles == 1 && kHalves == 1),
                "swapped steps: one 16-row tile, one word a tile");
  const auto block = [](const DecodeParams& p, int64_t strip, int split) {
    lanes_block<kMTiles, kHalves, kSwapped>(p, strip, split);
  };
  if constexpr (kMTiles == 1) {
    const auto [i, local] = group_block(group);
    run_strip_block(group, group.member[i], i, local, block);
  } else {
    run_member_block(group, block);
  }
}

template <int kMTiles, int kHalves, bool kSwapped = false>
cudaError_t run_lanes(DecodeGroup& group, cudaStream_t stream) {
  const auto kernel = lanes_kernel<kMTiles, kHalves, kSwapped>;
  const size_t ring = size_t{kDecodeWarps} * kLaneSlots<kMTiles, kHalves> * kLaneSlotBytes<kHalves>;
  const size_t shared = ring + stage_x_bytes(group, kLaneSegmentBytes<kMTiles>);
  // The most shared memory an SM can have, so that three blocks fit.
  const cudaError_t code = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                                cudaSharedmemCarveoutMaxShared);
  if (code != cudaSuccess) return code;
  return launch_decode_kernel(kernel, group, shared, stream);
}

}  // namespace

cudaError_t run_decode_lanes(DecodeGroup& group, cudaStream_t stream) {
  static const bool swap_on = env_switch_on("PLUMB_CUDA_LANE_SWAP");
  const int64_t rows = group.member[0].rows;
  const bool halves1 = group.member[0].lane_halves == 1;
  if (rows <= 8 && halves1 && swap_on) return run_lanes<1, 1, true>(group, stream);
  if (rows <= 16) return halves1 ? run_lanes<1, 1>(group, stream) : run_lanes<1, 2>(group, stream);
  return halves1 ? run_lanes<2, 1>(group, stream) : run_lanes<2, 2>(group, stream);
}

}  // namespace plumb::cuda::matmul
