#pragma once
// Where a tiled matmul block's output tile lies in its call (tile order, grouped launches' members) and how
// its totals go out (write_tile): the pieces of k_matmul.cu, k_matmul_tma.cu and the decode kernels around
// the k loop of k_matmul_tiles.cuh.
#include <cstdint>
#include <type_traits>

#include "cuda/k_matmul_tiles.cuh"

namespace plumb::cuda::matmul {

constexpr int64_t kGroupTiles = 16;

struct TilePlace {
  int64_t m_tile, n_tile;
};

// Tiles run in groups of kGroupTiles row tiles that sweep every column tile together, so the tiles running at
// once share their weight tiles and x rows in L2; `index` counts tiles in that order.
// Index is int64_t or, where the counts fit (a grouped launch's blocks), uint32_t: a 32-bit division is a
// short sequence where a 64-bit one is a call that needs more registers than a block's loop.
template <class Index>
__device__ __forceinline__ TilePlace place_tile(Index index, Index n_tiles, Index m_tiles) {
  const Index group = index / (Index{kGroupTiles} * n_tiles), first = group * Index{kGroupTiles};
  const Index height = min(Index{kGroupTiles}, m_tiles - first);
  const Index within = index - first * n_tiles;
  return {static_cast<int64_t>(first + within % height), static_cast<int64_t>(within / height)};
}

// A block's tile: the grid's x is the column tile, its y the row tile.
__device__ __forceinline__ TilePlace place_block() {
  return place_tile<int64_t>(static_cast<int64_t>(blockIdx.y) * gridDim.x + blockIdx.x, gridDim.x, gridDim.y);
}

// The member of a grouped launch (matmuls of one x) whose block range [first[i], first[i + 1]) holds `index`.
template <class Index, size_t kMembers>
__device__ __forceinline__ int group_member(const Index (&first)[kMembers], int members, Index index) {
  int i = 0;
  while (i + 1 < members && index >= first[i + 1]) ++i;
  return i;
}

// This block's member of a grouped launch, and the block's index among that member's blocks.
template <class Index>
struct GroupBlock {
  int member;
  Index local;
};

template <class Group>
__device__ __forceinline__ auto group_block(const Group& group) {
  using Index = std::remove_cvref_t<decltype(group.first_block[0])>;
  const auto block = static_cast<Index>(blockIdx.x);
  const int i = group_member(group.first_block, group.members, block);
  return GroupBlock<Index>{i, static_cast<Index>(block - group.first_block[i])};
}

// Calls body(group.member[i], blockIdx.x - group.first_block[i], i) for the member that owns this block. A
// body per member, so each reads its parameters at fixed offsets (operands of the instructions that use them)
// rather than loading them through an index in its loops.
template <class Group, class Body>
__device__ __forceinline__ void run_group_member(const Group& group, const Body& body) {
  static_assert(std::extent_v<decltype(Group::member)> == 3, "a body per member");
  const auto [i, local] = group_block(group);
  switch (i) {
    case 0:
      return body(group.member[0], local, i);
    case 1:
      return body(group.member[1], local, i);
    default:
      return body(group.member[2], local, i);
  }
}

// Writes a block's totals: its rows of out (bf16 once, or f32), or with cross-block splits its split's
// partials (fp32 [splits, rows, n], this one split `split`) for the reduce to add; one element a store.
template <class L>
__device__ __forceinline__ void write_elements(const Params& p, const Accumulators<L>& total, int64_t m0,
                                               int64_t n0, int64_t split, int warp_m, int warp_n, int lane) {
  const bool to_partial = p.cross && p.splits > 1;
  // The lane's first element in 64 bits once, the rest as small offsets: recomputing each element's 64-bit
  // row spilled 12 bytes in the affine ring kernels at their 168-register cap.
  const int64_t row0 = m0 + warp_m * L::kWarpRows + fragment_row(lane, 0);
  const int64_t col0 = n0 + warp_n * L::kWarpCols + fragment_col(lane, 0);
  each_fragment_element<L::kMTiles, L::kNTiles>([&](int mt, int nt, int e) {
    const int64_t row = row0 + mt * 16 + (fragment_row(lane, e) - fragment_row(lane, 0));
    const int64_t col = col0 + nt * 8 + (fragment_col(lane, e) - fragment_col(lane, 0));
    if (row >= p.rows || col >= p.n) return;
    const float value = total[mt][nt][e];
    if (to_partial) {
      p.partial[(split * p.rows + row) * p.n + col] = value;
    } else if (p.out_f32) {
      static_cast<float*>(p.out)[row * p.out_stride + col] = value;
    } else {
      static_cast<uint16_t*>(p.out)[row * p.out_stride + col] = bf16_bits(value);
    }
  });
}

// write_elements with a fragment's elements e and e + 1 (adjacent columns) as one store where the output's
// rows allow it: two bf16 in 32 bits or two floats in 64, half the store instructions; the same values.
template <class L>
__device__ __forceinline__ void write_pairs(const Params& p, const Accumulators<L>& total, int64_t m0,
                                            int64_t n0, int64_t split, int warp_m, int warp_n, int lane) {
  const bool to_partial = p.cross && p.splits > 1;
  const bool f32 = to_partial || p.out_f32;
  const int64_t stride = to_partial ? p.n : p.out_stride;
  char* base =
      to_partial ? reinterpret_cast<char*>(p.partial + split * p.rows * p.n) : static_cast<char*>(p.out);
  const int element_bytes = f32 ? 4 : 2;
  const bool paired = stride % 2 == 0 && reinterpret_cast<uintptr_t>(base) % (2 * element_bytes) == 0;
  const int64_t row0 = m0 + warp_m * L::kWarpRows + fragment_row(lane, 0);
  const int64_t col0 = n0 + warp_n * L::kWarpCols + fragment_col(lane, 0);  // even
  const auto store = [&](char* at, int j, float value) {
    if (f32)
      reinterpret_cast<float*>(at)[j] = value;
    else
      reinterpret_cast<uint16_t*>(at)[j] = bf16_bits(value);
  };
  each_fragment_element<L::kMTiles, L::kNTiles>([&](int mt, int nt, int e) {
    if (e % 2 == 1) return;  // goes out with element e - 1
    const int64_t row = row0 + mt * 16 + (fragment_row(lane, e) - fragment_row(lane, 0));
    const int64_t col = col0 + nt * 8;
    if (row >= p.rows || col >= p.n) return;
    const float low = total[mt][nt][e], high = total[mt][nt][e + 1];
    char* at = base + (row * stride + col) * element_bytes;
    if (paired && col + 1 < p.n) {
      if (f32)
        *reinterpret_cast<float2*>(at) = make_float2(low, high);
      else
        *reinterpret_cast<uint32_t*>(at) = bf16_bits(low) | static_cast<uint32_t>(bf16_bits(high)) << 16;
    } else {
      store(at, 0, low);
      if (col + 1 < p.n) store(at, 1, high);
    }
  });
}

template <class L>
__device__ __forceinline__ void write_tile(const Params& p, const Accumulators<L>& total, int64_t m0,
                                           int64_t n0, int64_t split, int warp_m, int warp_n, int lane) {
  if constexpr (L::kPairedStores)
    write_pairs<L>(p, total, m0, n0, split, warp_m, warp_n, lane);
  else
    write_elements<L>(p, total, m0, n0, split, warp_m, warp_n, lane);
}

}  // namespace plumb::cuda::matmul
