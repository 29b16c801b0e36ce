#pragma once
// The parts of the decode matmul that its two weight sources share (k_matmul_decode.cu reads the packed rows
// through a ring, k_matmul_decode_lanes.cu its own copy of 4-bit weights): a block's K split, x staged in
// shared memory by segments, the k16 mma steps of a tile, and the sums' store or split reduction.
#include <type_traits>

#include "cuda/dependent_launch.cuh"
#include "cuda/gelu.cuh"
#include "cuda/k_matmul_blocks.cuh"
#include "cuda/k_matmul_fragments.cuh"
#include "cuda/launchers.hpp"
#include "cuda/split_sums.cuh"

namespace plumb::cuda {
bool matmul_decode_supports(const WeightArgs& weight);  // k_matmul_decode.cu
}  // namespace plumb::cuda

namespace plumb::cuda::matmul {

// The shape of a weight's decode layout: 16-column slices, 64-wide k tiles, and scale words per column and
// tile (2 for groups of 32, whose tile halves have groups of their own, else 1). Each (slice, tile) is one
// record of record_bytes(): the lanes' codes (32 x 16 bytes), the words ([8 g][halves][2 j]) and the form,
// padded to 16 bytes, so that a warp copies a tile in one or two 16-byte copies a lane.
struct LaneLayout {
  int64_t slices, tiles;
  int halves;

  static constexpr int codes_bytes() { return 32 * 16; }
  constexpr int words_bytes() const { return 8 * halves * kDecodeNTiles * 4; }
  constexpr int form_at() const { return codes_bytes() + words_bytes(); }
  constexpr int record_bytes() const { return form_at() + 16; }
  int64_t bytes() const { return slices * tiles * record_bytes(); }
};

// A record's form word holds the TileForm in its low byte and, from this bit, the run of tiles from it on
// that take the subnormal form.
constexpr int kSubnormalRunShift = 8;

inline LaneLayout lane_layout(int64_t n, int64_t k, int group) {
  return {(n + kDecodeWarpCols - 1) / kDecodeWarpCols, (k + kTileK - 1) / kTileK, group == 32 ? 2 : 1};
}

constexpr int64_t kSegmentBytes = 32 * 1024;  // x staged per block at a time, so that two blocks fit an SM

// Three blocks per SM where the registers allow (2- and 4-bit codes for up to 16 rows): the kernel issues
// dequantization more than it waits on memory, so more warps to choose from keep the schedulers busier.
template <int kBits, int kMTiles>
constexpr int kBlocksPerSm = kBits <= 4 && kMTiles == 1 ? 3 : 2;

// A launch of one to kMatmulGroupMembers matmuls of one x (a plain matmul is a group of one): member i's
// blocks are [first_block[i], first_block[i + 1]), its column strips for split 0, then for split 1, and so
// on.
struct DecodeGroup {
  static_assert(kMatmulGroupMembers == 3, "the decode kernels have a body per member");
  DecodeParams member[kMatmulGroupMembers];
  int first_block[kMatmulGroupMembers + 1];
  int strips[kMatmulGroupMembers];  // column strips of kDecodeBlockCols
  int members;
};

// k_matmul_decode_lanes.cu: a group whose members all have the decode layout (4-bit codes).
cudaError_t run_decode_lanes(DecodeGroup& group, cudaStream_t stream);

// Runs block(p, strip, split) for member i's block `local`: the member's strips for split 0, then split 1...
template <class Block>
__device__ __forceinline__ void run_strip_block(const DecodeGroup& group, const DecodeParams& p, int i,
                                                int local, const Block& block) {
  const int strips = group.strips[i];
  block(p, local % strips, local / strips);
}

// Runs block(p, strip, split) for the member that owns this block (run_group_member: a body per member).
template <class Block>
__device__ __forceinline__ void run_member_block(const DecodeGroup& group, const Block& block) {
  run_group_member(
      group, [&](const DecodeParams& p, int local, int i) { run_strip_block(group, p, i, local, block); });
}

// A weight's fields of DecodeParams: its arrays and shape, and its decode layout's where `layout` is one.
DecodeParams weight_params(const WeightArgs& weight, const void* layout);

// The shared memory a launch needs besides the weights' slots (x segments of about segment_bytes), setting
// each member's segment.
size_t stage_x_bytes(DecodeGroup& group, int64_t segment_bytes = kSegmentBytes);

template <class Kernel>
cudaError_t launch_decode_kernel(Kernel kernel, const DecodeGroup& group, size_t shared,
                                 cudaStream_t stream) {
  if (shared > 48 * 1024) {
    const cudaError_t code =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (code != cudaSuccess) return code;
  }
  launch_dependent(kernel, dim3(static_cast<unsigned>(group.first_block[group.members])), kDecodeThreads,
                   shared, stream, group);
  return cudaGetLastError();
}

// The k tiles of split `split` of a block: [kt0, kt0 + tiles), of which the first full_tiles lie wholly
// inside k; held in registers (the tile loop would recompute them under the register cap).
struct DecodeSplit {
  int64_t kt0;
  int tiles, full_tiles;

  __device__ __forceinline__ DecodeSplit(const DecodeParams& p, int split) {
    kt0 = split * p.tiles_per_split;
    tiles = static_cast<int>(held(static_cast<uint32_t>(min(kt0 + p.tiles_per_split, p.k_tiles) - kt0)));
    // Negative where the split starts past the full tiles.
    full_tiles = static_cast<int>(held(static_cast<uint32_t>(min(p.full_tiles - kt0, int64_t{tiles}))));
  }
};

// Rows of x for k tiles [kt, kt + tiles) into shared memory (row stride row_bytes, zeros past k).
__device__ __forceinline__ void stage_x(char* shared, const DecodeParams& p, int64_t kt, int tiles,
                                        int row_bytes) {
  const int chunks = tiles * (kTileK / 8);
  for (int i = threadIdx.x; i < static_cast<int>(p.rows) * chunks; i += kDecodeThreads) {
    const int r = i / chunks, c = i - r * chunks;
    const int64_t col = kt * kTileK + c * 8;
    const bool present = col < p.k;
    const uint16_t* source = p.x + r * p.x_stride + (present ? col : 0);
    uint4* target = reinterpret_cast<uint4*>(shared + r * row_bytes) + c;
    if (p.x_vector) {
      copy16(target, source, present);
    } else {
      *target = gather8(source, present, p.k - col);
    }
  }
  copy_commit();
}

// x of the block's split in shared memory, segment_tiles k tiles at a time; a_rows are the lane's ldmatrix
// rows at the segment's first tile (rows past p.rows read row p.rows - 1: an mma row's sums depend on its own
// row of x alone, and those rows are never stored).
template <int kMTiles>
struct XSegments {
  char* rows;
  int row_bytes;
  int first = 0;  // the first tile of the segment in shared memory
  uint32_t a_rows[kMTiles];

  __device__ __forceinline__ XSegments(char* shared, const DecodeParams& p)
      : rows(shared), row_bytes(p.segment_tiles * 128 + 16) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
      a_rows[mt] = held(shared_address(
          rows + min(static_cast<int64_t>(mt * 16 + lane % 16), p.rows - 1) * row_bytes + (lane / 16) * 16));
  }

  // Stages the next segment when tile t (of the split starting at kt0) is its first; the whole block calls.
  __device__ __forceinline__ void reach(const DecodeParams& p, const DecodeSplit& split, int t) {
    if (t != 0 && t != first + p.segment_tiles) return;
    stage(p, split, t);
  }

  // Stages the segment whose first tile is t (0, then each segment_tiles on); the whole block calls.
  __device__ __forceinline__ void stage(const DecodeParams& p, const DecodeSplit& split, int t) {
    if (t > 0) __syncthreads();
    first = t;
    stage_x(rows, p, split.kt0 + t, min(p.segment_tiles, split.tiles - t), row_bytes);
    copy_wait<0>();
    __syncthreads();
  }
};

// acc += x[:, tile] · W[tile columns]ᵀ for k16 step kStep of the tile (if it is one of the tile's `steps`
// steps inside k; every step of a full tile, with no test); a_rows are the shared addresses of the lane's
// ldmatrix rows of x at the segment's first tile, and fragment(step, j, b0, b1) builds the weight registers.
template <int kMTiles, int kStep, bool kFull, class Fragment>
__device__ __forceinline__ void multiply_step(const uint32_t (&a_rows)[kMTiles], int local, int steps,
                                              float (&acc)[kMTiles][kDecodeNTiles][4],
                                              const Fragment& fragment) {
  uint32_t a[kMTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) ldmatrix_x4_at(a[mt], a_rows[mt] + (local * kTileK + kStep * 16) * 2);
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j) {
    uint32_t b0 = 0, b1 = 0;
    if (kFull || kStep < steps) fragment(std::integral_constant<int, kStep>{}, j, b0, b1);
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) mma_bf16(acc[mt][j], a[mt], b0, b1);
  }
}

template <int kMTiles, bool kFull, class Fragment>
__device__ __forceinline__ void multiply_steps(const uint32_t (&a_rows)[kMTiles], int local, int steps,
                                               float (&acc)[kMTiles][kDecodeNTiles][4],
                                               const Fragment& fragment) {
  multiply_step<kMTiles, 0, kFull>(a_rows, local, steps, acc, fragment);
  multiply_step<kMTiles, 1, kFull>(a_rows, local, steps, acc, fragment);
  multiply_step<kMTiles, 2, kFull>(a_rows, local, steps, acc, fragment);
  multiply_step<kMTiles, 3, kFull>(a_rows, local, steps, acc, fragment);
}

// The k16 steps of tile t of the split inside k: 4, or fewer for a last tile that k cuts.
__device__ __forceinline__ int tile_steps(const DecodeParams& p, const DecodeSplit& split, int t) {
  return t < split.full_tiles ? 4 : static_cast<int>(min(int64_t{4}, (p.k - (split.kt0 + t) * kTileK) / 16));
}

__device__ __forceinline__ void store(const DecodeParams& p, int64_t row, int64_t col, float value) {
  if (p.out_f32) {
    static_cast<float*>(p.out)[row * p.out_stride + col] = value;
  } else {
    static_cast<uint16_t*>(p.out)[row * p.out_stride + col] = bf16_bits(value);
  }
}

// matmul_geglu's strip: gate's and up's sums added in split order as reduce_if_last adds them (both loaded in
// one batch), then stored with geglu of the two (geglu_bits, gelu.cuh).
// Out of line: inlined, it made the decode kernels spill under their register caps.
static __device__ __noinline__ void reduce_geglu(const DecodeParams& p, int64_t strip) {
  const int sums = static_cast<int>(p.rows) * kDecodeBlockCols;
  const int64_t split_stride = p.rows * p.n;
  const float* partials[2] = {p.geglu.gate_partial, p.geglu.up_partial};
  for (int i = threadIdx.x; i < sums; i += kDecodeThreads) {
    const int64_t row = i / kDecodeBlockCols, col = strip * kDecodeBlockCols + i % kDecodeBlockCols;
    if (col >= p.n) continue;
    float total[2];
    add_splits(
        p.splits, [&](int s, int b) { return __ldcg(partials[b] + s * split_stride + row * p.n + col); },
        total);
    const GegluBits bits = geglu_bits(total[0], total[1]);
    p.geglu.gate_out[row * p.geglu.gate_stride + col] = bits.gate;
    p.geglu.up_out[row * p.geglu.up_stride + col] = bits.up;
    p.geglu.out[row * p.geglu.out_stride + col] = bits.out;  // last: out may be gate or up
  }
}

// The last block of a column strip to arrive adds the splits' partials in split order: t = p0; t += p1...
// (for matmul_geglu, the last of both members' blocks of the strip, which share its counter).
template <int kRounds>
__device__ __forceinline__ void reduce_if_last(const DecodeParams& p, int64_t strip) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  const unsigned arrivals = p.splits * (p.geglu.out != nullptr ? 2u : 1u);
  if (threadIdx.x == 0) last = atomicAdd(p.counters + strip, 1u) == arrivals - 1u;
  __syncthreads();
  if (!last) return;
  __threadfence();
  if (p.geglu.out != nullptr) {
    reduce_geglu(p, strip);
    if (threadIdx.x == 0) p.counters[strip] = 0u;
    return;
  }
  // kRounds rounds of the block's threads at once, so that their loads are in flight together (add_splits):
  // finish_sums passes 2 for 17 to 32 rows (16 rounds of sums) and 1 below, where a second round's loads
  // cost about 1% of a 1-stream 4-bit step.
  const int sums = static_cast<int>(p.rows) * kDecodeBlockCols;
  const int64_t split_stride = p.rows * p.n;
  for (int first = threadIdx.x; first < sums; first += kRounds * kDecodeThreads) {
    int row[kRounds];  // a sum past the strip's rows or columns reads a real one and is not stored
    int64_t col[kRounds];
    bool kept[kRounds];
#pragma unroll
    for (int b = 0; b < kRounds; ++b) {
      const int i = first + b * kDecodeThreads;
      row[b] = min(i, sums - 1) / kDecodeBlockCols;
      col[b] = strip * kDecodeBlockCols + i % kDecodeBlockCols;
      kept[b] = i < sums && col[b] < p.n;
      col[b] = min(col[b], p.n - 1);
    }
    float total[kRounds];
    add_splits(
        p.splits, [&](int s, int b) { return __ldcg(p.partial + s * split_stride + row[b] * p.n + col[b]); },
        total);
#pragma unroll
    for (int b = 0; b < kRounds; ++b)
      if (kept[b]) store(p, row[b], col[b], total[b]);
  }
  if (threadIdx.x == 0) p.counters[strip] = 0u;
}

// The warp's sums of its 16 columns from col0: stored, or with several splits written as the split's
// partials and added by the strip's last block.
template <int kMTiles>
__device__ __forceinline__ void finish_sums(const DecodeParams& p, int64_t strip, int split, int64_t col0,
                                            const float (&acc)[kMTiles][kDecodeNTiles][4]) {
  const int lane = threadIdx.x % 32;
  const bool to_partial = p.splits > 1;
  each_fragment_element<kMTiles, kDecodeNTiles>([&](int mt, int j, int e) {
    const int64_t row = mt * 16 + fragment_row(lane, e);
    const int64_t col = col0 + j * 8 + fragment_col(lane, e);
    if (row >= p.rows || col >= p.n) return;
    if (to_partial) {
      p.partial[(split * p.rows + row) * p.n + col] = acc[mt][j][e];
    } else {
      store(p, row, col, acc[mt][j][e]);
    }
  });
  if (to_partial) reduce_if_last<kMTiles>(p, strip);
}

}  // namespace plumb::cuda::matmul
