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
#include <algorithm>
#include <span>
#include <type_traits>

#include "cuda/dependent_launch.cuh"
#include "cuda/k_matmul_fragments.cuh"
#include "cuda/launchers.hpp"

namespace plumb::cuda {

namespace matmul {

namespace {

constexpr int64_t kSegmentBytes = 32 * 1024;  // x staged per block at a time, so that two blocks fit an SM

// Rows of x for k tiles [kt, kt + tiles) into shared memory (row stride row_bytes, zeros past k).
__device__ void stage_x(char* shared, const DecodeParams& p, int64_t kt, int tiles, int row_bytes) {
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

__device__ __forceinline__ void store(const DecodeParams& p, int64_t row, int64_t col, float value) {
  if (p.out_f32) {
    static_cast<float*>(p.out)[row * p.out_stride + col] = value;
  } else {
    static_cast<uint16_t*>(p.out)[row * p.out_stride + col] = bf16_bits(value);
  }
}

// The last block of a column strip to arrive adds the splits' partials in split order: t = p0; t += p1...
__device__ void reduce_if_last(const DecodeParams& p, int64_t strip) {
  __shared__ bool last;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(p.counters + strip, 1u) == static_cast<unsigned>(p.splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int64_t i = threadIdx.x; i < p.rows * kDecodeBlockCols; i += kDecodeThreads) {
    const int64_t row = i / kDecodeBlockCols, col = strip * kDecodeBlockCols + i % kDecodeBlockCols;
    if (col >= p.n) continue;
    float total = __ldcg(p.partial + row * p.n + col);
    for (int s = 1; s < p.splits; ++s) total = total + __ldcg(p.partial + (s * p.rows + row) * p.n + col);
    store(p, row, col, total);
  }
  if (threadIdx.x == 0) p.counters[strip] = 0u;
}

// Three blocks per SM where the registers allow (2- and 4-bit codes for up to 16 rows): the kernel issues
// dequantization more than it waits on memory, so more warps to choose from keep the schedulers busier.
template <int kBits, int kMTiles>
constexpr int kBlocksPerSm = kBits <= 4 && kMTiles == 1 ? 3 : 2;

// One block: the warps' 16-column slices of column strip `strip`, over the k tiles of split `split`.
template <int kBits, int kMTiles>
__device__ __forceinline__ void decode_block(const DecodeParams& p, int64_t strip, int split) {
  constexpr int kSlots = kRingSlots<kBits>;
  extern __shared__ __align__(16) char shared[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t col0 = strip * kDecodeBlockCols + warp * kDecodeWarpCols;
  const int64_t kt0 = split * p.tiles_per_split;
  const int tiles = static_cast<int>(min(kt0 + p.tiles_per_split, p.k_tiles) - kt0);
  const int full_tiles = static_cast<int>(min(p.full_tiles - kt0, int64_t{tiles}));  // tiles wholly inside k
  const int row_bytes = p.segment_tiles * 128 + 16;
  // Shared memory: the ring ([warps][slots][slot bytes]), then x.
  char* ring = shared + warp * kSlots * kSlotBytes<kBits>;
  char* x_rows = shared + kDecodeWarps * kSlots * kSlotBytes<kBits>;
  CodeSource<kBits> source(p, col0, kt0);
  // Bit j: the parity of the first scale element of the lane's column in column tile j (odd only where the
  // group count is odd).
  uint32_t odd_rows = 0;
#pragma unroll
  for (int j = 0; j < kDecodeNTiles; ++j)
    odd_rows |= static_cast<uint32_t>(min(col0 + j * 8 + lane / 4, p.n - 1) & p.groups & 1) << j;
  odd_rows = held(odd_rows);
  // The lane's ldmatrix rows of x; rows past p.rows read row p.rows - 1, as an mma row's sums depend on its
  // own row of x alone and those rows are never stored.
  uint32_t a_rows[kMTiles];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
    a_rows[mt] = shared_address(
        x_rows + min(static_cast<int64_t>(mt * 16 + lane % 16), p.rows - 1) * row_bytes + (lane / 16) * 16);
    // One commit group per tile (empty past the split), so tile t's copy is done once kSlots - 2 are pending.
#pragma unroll
  for (int i = 0; i < kSlots - 1; ++i) {
    if (i < tiles) source.copy_next(ring + i * kSlotBytes<kBits>, p);
    copy_commit();
  }
  wait_for_previous_kernel();  // the weights above do not depend on earlier launches; x and the sums do
  float acc[kMTiles][kDecodeNTiles][4] = {};
  int segment = 0;  // the first tile of the x segment in shared memory
  for (int t = 0; t < tiles; ++t) {
    if (t == 0 || t == segment + p.segment_tiles) {
      if (t > 0) __syncthreads();
      segment = t;
      const int staged = min(p.segment_tiles, tiles - t);
      stage_x(x_rows, p, kt0 + t, staged, row_bytes);
      copy_wait<0>();
      __syncthreads();
    }
    copy_wait<kSlots - 2>();
    __syncwarp();
    WeightTile<kBits> tile;
    read_tile<kBits>(tile, ring + (t % kSlots) * kSlotBytes<kBits>, odd_rows,
                     static_cast<uint32_t>(kt0 + t) * kTileK, p.group_shift);
    __syncwarp();  // every lane has read the slot the next copy refills
    if (t + kSlots - 1 < tiles) source.copy_next(ring + ((t + kSlots - 1) % kSlots) * kSlotBytes<kBits>, p);
    copy_commit();
    const TileForm form = tile_form<kBits>(tile, p.group_shift);
    if (t < full_tiles) {
      multiply_tile<kBits, kMTiles, true>(tile, form, p.group_shift, a_rows, t - segment, 4, acc);
    } else {
      const int steps = static_cast<int>(min(int64_t{4}, (p.k - (kt0 + t) * kTileK) / 16));
      multiply_tile<kBits, kMTiles, false>(tile, form, p.group_shift, a_rows, t - segment, steps, acc);
    }
  }
  copy_wait<0>();
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
  if (to_partial) reduce_if_last(p, strip);
}

// A launch of one to kMatmulGroupMembers matmuls of one x (a plain matmul is a group of one): member i's
// blocks are [first_block[i], first_block[i + 1]), its column strips for split 0, then for split 1, and so
// on.
struct DecodeGroup {
  static_assert(kMatmulGroupMembers == 3, "decode_kernel has a body per member");
  DecodeParams member[kMatmulGroupMembers];
  int first_block[kMatmulGroupMembers + 1];
  int strips[kMatmulGroupMembers];  // column strips of kDecodeBlockCols
  int members;
};

template <int kBits, int kMTiles>
__global__ void __launch_bounds__(kDecodeThreads, (kBlocksPerSm<kBits, kMTiles>))
    decode_kernel(const __grid_constant__ DecodeGroup group) {
  int i = 0;
  while (i + 1 < group.members && static_cast<int>(blockIdx.x) >= group.first_block[i + 1]) ++i;
  const int local = static_cast<int>(blockIdx.x) - group.first_block[i], strips = group.strips[i];
  // A body per member, so each reads its parameters at fixed offsets (operands of the instructions that use
  // them) rather than loading them through an index in the tile loop.
  switch (i) {
    case 0:
      return decode_block<kBits, kMTiles>(group.member[0], local % strips, local / strips);
    case 1:
      return decode_block<kBits, kMTiles>(group.member[1], local % strips, local / strips);
    default:
      return decode_block<kBits, kMTiles>(group.member[2], local % strips, local / strips);
  }
}

template <int kBits, int kMTiles>
cudaError_t run_decode(DecodeGroup& group, cudaStream_t stream) {
  auto kernel = decode_kernel<kBits, kMTiles>;
  size_t shared = 0;
  for (int i = 0; i < group.members; ++i) {
    DecodeParams& p = group.member[i];
    const int64_t x_tiles = (kSegmentBytes / std::max<int64_t>(p.rows, 1) - 32) / 128;
    p.segment_tiles = static_cast<int>(std::max<int64_t>(1, std::min(p.tiles_per_split, x_tiles)));
    const size_t ring = size_t{kDecodeWarps} * kRingSlots<kBits> * kSlotBytes<kBits>;
    shared = std::max(shared, ring + static_cast<size_t>(p.rows * (p.segment_tiles * 128 + 16) + 16));
  }
  if (shared > 48 * 1024) {
    const cudaError_t code =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared));
    if (code != cudaSuccess) return code;
  }
  launch_dependent(kernel, dim3(static_cast<unsigned>(group.first_block[group.members])), kDecodeThreads,
                   shared, stream, group);
  return cudaGetLastError();
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

DecodeParams decode_params(const DecodeMember& member) {
  const MatmulArgs& launch = *member.launch;
  const WeightArgs& weight = launch.weight;
  DecodeParams p{};
  p.x = launch.x;
  p.x_stride = launch.x_stride;
  p.rows = launch.rows;
  p.packed = weight.packed;
  p.scales = weight.scales;
  p.biases = weight.biases;
  p.n = weight.out;
  p.k = weight.in;
  p.row_words = p.k * weight.bits / 32;
  p.groups = p.k / weight.group;
  p.group_shift = weight.group == 32 ? 5 : weight.group == 64 ? 6 : 7;
  p.out = launch.out;
  p.out_f32 = launch.out_f32;
  p.out_stride = launch.out_stride;
  p.partial = static_cast<float*>(member.scratch);
  p.counters = member.counters;
  p.k_tiles = (p.k + kTileK - 1) / kTileK;
  p.full_tiles = p.k / kTileK;
  p.tiles_per_split = member.tiles_per_split;
  p.splits = member.splits;
  p.x_vector = aligned(launch.x, 16) && launch.x_stride % 8 == 0 && p.k % 8 == 0;
  return p;
}

}  // namespace

// Every member supported (matmul_decode_supports), of one width of codes and one row count.
cudaError_t launch_matmul_decode(std::span<const DecodeMember> members, cudaStream_t stream) {
  if (members.empty() || members.size() > kMatmulGroupMembers) return cudaErrorInvalidValue;
  DecodeGroup group{};
  group.members = static_cast<int>(members.size());
  for (int i = 0; i < group.members; ++i) {
    const DecodeParams& p = group.member[i] = decode_params(members[i]);
    const unsigned strips = blocks_for(p.n, kDecodeBlockCols);
    if (p.splits > 1 && strips > kMatmulCounters) return cudaErrorInvalidValue;
    group.strips[i] = static_cast<int>(strips);
    group.first_block[i + 1] = group.first_block[i] + group.strips[i] * p.splits;
  }
  const MatmulArgs& first = *members[0].launch;
  return first.rows <= 16 ? run_decode_bits<1>(group, first.weight.bits, stream)
                          : run_decode_bits<2>(group, first.weight.bits, stream);
}

}  // namespace matmul

}  // namespace plumb::cuda
