#pragma once
// A block's walk over its k tiles [kt0, kt1) with K splits every `per_split` tiles from 0, kept as the
// current split's bounds so the walk tests its tiles with compares: the per-tile `%` and `/` by per_split it
// replaces were 64-bit divisions, a subroutine call each, in the consumers' loop. Plain C++ for the CPU test.
#include <cstdint>

#if defined(__CUDACC__)
#define PLUMB_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define PLUMB_HOST_DEVICE inline
#endif

namespace plumb::cuda::matmul {

template <class Index>
class SplitCursor {
 public:
  PLUMB_HOST_DEVICE SplitCursor(Index kt0, Index kt1, Index per_split)
      : kt0_(kt0),
        kt1_(kt1),
        per_split_(per_split),
        start_(kt0),
        end_(clamp(kt0 - kt0 % per_split + per_split)) {}

  // Tile kt starts a split: kt % per_split == 0, or kt == kt0.
  PLUMB_HOST_DEVICE bool starts(Index kt) const { return kt == start_; }
  // Tile kt ends a split: (kt + 1) % per_split == 0, or kt + 1 == kt1.
  PLUMB_HOST_DEVICE bool ends(Index kt) const { return kt + 1 == end_; }
  // The current split is the block's first: kt / per_split == kt0 / per_split.
  PLUMB_HOST_DEVICE bool first() const { return start_ == kt0_; }
  // After the tile that ends the current split.
  PLUMB_HOST_DEVICE void next() {
    start_ = end_;
    end_ = clamp(end_ + per_split_);
  }

 private:
  PLUMB_HOST_DEVICE Index clamp(Index end) const { return end < kt1_ ? end : kt1_; }

  Index kt0_, kt1_, per_split_;
  Index start_, end_;  // the current split's first tile and one past its last
};

}  // namespace plumb::cuda::matmul

#undef PLUMB_HOST_DEVICE
