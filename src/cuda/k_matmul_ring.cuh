#pragma once
// The ring's plan for k_matmul_tma.cu alone (included once, so its anonymous namespace is that file's): the
// block's threads and registers, a stage's layout and barriers, and the call's tiles and K splits as work
// items that resident blocks (and pairs of blocks) walk in turn.
#include <cuda_runtime.h>

#include "cuda/k_matmul_blocks.cuh"
#include "cuda/tma.cuh"

namespace plumb::cuda::matmul {

namespace {

constexpr int kTileBytes = 128 * kTileK * 2;  // a bf16 [128, 64] tile: x, or a dequantized weight tile
constexpr int kRingStages = 6;
constexpr int kConsumerThreads = 256;                 // two warpgroups of 64 rows each
constexpr int kRingThreads = kConsumerThreads + 128;  // then a producer warpgroup, one thread of it copying
constexpr int kConsumerWarps = kConsumerThreads / 32;
// Registers a thread once the warpgroups have traded them (setmaxnreg): the launch gives each of the 12 warps
// 168 (the whole register file); the producer needs few, the bf16 consumers hold three sets of sums.
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;

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
  __device__ char* dequantized(int t) const {
    return base + kRingStages * R::kStageBytes + t % 3 * kTileBytes;
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

// The tiles and splits of the call as work items, in tile order (place_tile) within each split; a block
// takes items blockIdx.x, + gridDim.x, ..., so a stage of the next item is copied while this one finishes.
// Pairs of blocks (a cluster, kPairs) take items of two row tiles side by side, m_tiles counting the pairs:
// each copies half of the weight tile into both (multicast), so L2 feeds 24 KiB a stage a block, not 32.
struct RingWork {
  int n_tiles, m_tiles, items;  // within 32 bits (ring_tile_fits)
};

template <bool kPairs>
constexpr int kClusterBlocks = kPairs ? 2 : 1;

struct RingItem {
  int m0, n0, split, kt0, kt1;
};

// Item `item` of a block of cluster rank `rank` (a pair's row tiles are 2 m and 2 m + 1).
template <bool kPairs>
__device__ RingItem ring_item(const Params& p, const RingWork& work, int item, int rank) {
  const int tiles = work.n_tiles * work.m_tiles, split = item / tiles;
  const TilePlace place = place_tile<int64_t>(item % tiles, work.n_tiles, work.m_tiles);
  const int tiles_per_split = static_cast<int>(p.tiles_per_split), k_tiles = static_cast<int>(p.k_tiles);
  const int kt0 = p.cross ? split * tiles_per_split : 0;
  const int kt1 = p.cross ? min(kt0 + tiles_per_split, k_tiles) : k_tiles;
  const int m_tile = static_cast<int>(place.m_tile) * kClusterBlocks<kPairs> + rank;
  return {m_tile * 128, static_cast<int>(place.n_tile) * kTileN, split, kt0, kt1};
}

// Blocks of bf16 tiles stay resident and walk the items (consume_rotating); affine tiles take one item a
// block (consume: the rotating sums were made and measured for bf16 only).
template <int kBits>
constexpr bool kResident = kBits == 0;

// The first item of this block's cluster and the step to its next.
template <bool kPairs>
__device__ __forceinline__ int first_item() {
  return static_cast<int>(blockIdx.x) / kClusterBlocks<kPairs>;
}
template <bool kPairs>
__device__ __forceinline__ int item_step() {
  return static_cast<int>(gridDim.x) / kClusterBlocks<kPairs>;
}

template <int kBits, bool kPairs, class F>
__device__ __forceinline__ void each_item(const RingWork& work, F&& f) {
  if constexpr (kResident<kBits>) {
    for (int item = first_item<kPairs>(); item < work.items; item += item_step<kPairs>()) f(item);
  } else {
    f(static_cast<int>(blockIdx.x));
  }
}

// A resident block's items as a sequence of K splits, in the order the producer copies their k tiles.
struct RingSplit {
  int m0, n0, split, kt0, kt1;
  bool first, last;  // the item's first split (its sums start the total) and last (the total goes out)
};

template <bool kPairs>
class SplitWalk {
 public:
  __device__ SplitWalk(const Params& p, const RingWork& work, int rank)
      : p_(p), work_(work), rank_(rank), item_(first_item<kPairs>()) {
    if (item_ < work_.items) it_ = ring_item<kPairs>(p_, work_, item_, rank_);
    next_kt_ = it_.kt0;
  }

  // The next split into s; false after the block's last. Splits start at multiples of tiles_per_split.
  __device__ bool next(RingSplit& s) {
    if (item_ >= work_.items) return false;
    if (next_kt_ >= it_.kt1) {
      item_ += item_step<kPairs>();
      if (item_ >= work_.items) return false;
      it_ = ring_item<kPairs>(p_, work_, item_, rank_);
      next_kt_ = it_.kt0;
    }
    const int kt1 = min(next_kt_ + static_cast<int>(p_.tiles_per_split), it_.kt1);
    s = {it_.m0, it_.n0, it_.split, next_kt_, kt1, next_kt_ == it_.kt0, kt1 == it_.kt1};
    next_kt_ = kt1;
    return true;
  }

 private:
  const Params& p_;
  const RingWork& work_;
  int rank_, item_;
  RingItem it_{};
  int next_kt_;
};

}  // namespace

}  // namespace plumb::cuda::matmul
