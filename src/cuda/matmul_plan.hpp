#pragma once
// The tiled matmul's plan (its K splits from the weight shape alone) and the host pieces shared by
// k_matmul.cu (one matmul), k_matmul_tiled_group.cu (the tiled kernels' launches of a group) and
// k_matmul_group.cu (which kernel takes a group of matmuls of one x, and matmul_geglu's pair).
#include <cstddef>
#include <cstdint>
#include <span>

#include <cuda_runtime.h>

#include "cuda/kernel_args.hpp"

namespace plumb::cuda::matmul {

struct Plan {
  int64_t k_tiles, tiles_per_split, n_tiles, m_tiles;
  int splits, rows_tile;
  bool cross;
};

// Splits from the weight shape (n, k) alone; the row tile and cross-block choice only place work.
Plan plan_for(int64_t rows, int64_t n, int64_t k);
// The blocks the splits aim at: kDefaultSplitBlocks unless PLUMB_CUDA_TARGET_BLOCKS sets another count.
inline constexpr int64_t kDefaultSplitBlocks = 256;
int64_t split_target_blocks();

// k_matmul.cu: whether the backend's decode option sends the call to the decode kernel (up to 32 rows of the
// weights it supports).
bool decode_takes(const MatmulArgs& launch, bool decode);
// Scratch of one member of a group, rounded up so that the next member's starts 256-byte aligned.
size_t member_scratch_bytes(const MatmulArgs& launch);
// The grouped tiled kernel's members: bf16 weights at 17 to 32 rows whose blocks each run one split.
bool tiled_group_fits(std::span<const MatmulArgs> members);
// Where a member's sums are once its tiled launch is done: fp32 partials [splits, rows, n] to add in split
// order (cross), or the bf16 rows the kernel stored.
struct MemberSums {
  const float* partial;
  const uint16_t* out;
  int64_t out_stride, rows, n;
  int splits;
  bool cross;
};
// With reduce false the members' partials are left for the caller's reduce launch, and with `sums`
// ([members]) where each one's sums are.
cudaError_t launch_tiled_group(std::span<const MatmulArgs> members, std::span<void* const> areas,
                               cudaStream_t stream, bool reduce = true, MemberSums* sums = nullptr);
// bf16 members the grouped kernel does not take, each on its own tiled launch as launch_matmul runs it; the
// partials of those whose K splits run across blocks (decode rows) are added by one reduce launch, not one a
// member. With `sums` ([members]) the members' launches alone, and where each one's sums are left.
bool tiled_members_fit(std::span<const MatmulArgs> members);
cudaError_t launch_tiled_members(std::span<const MatmulArgs> members, std::span<void* const> areas,
                                 cudaStream_t stream, MemberSums* sums = nullptr);
// Whether gate and up both take the tiled kernel split across blocks (bf16 at decode rows).
bool tiled_geglu_fits(std::span<const MatmulArgs> members);
// Gate and up on the tiled kernel (grouped where `grouped` and tiled_group_fits), their partials added by
// one reduce_geglu_kernel launch instead of two reduce launches and geglu's.
cudaError_t launch_tiled_geglu(std::span<const MatmulArgs> members, std::span<void* const> areas,
                               const RowsArgs& geglu, bool grouped, cudaStream_t stream);

// k_head_norms_reduce.cu: whether head_norms reads and writes the members' outputs in place (q, k and v, or
// q and k with the values from the raw keys) at decode rows (1 to 32), with bf16 outputs, head_dim up to 512;
// then its launch after launch_tiled_members' or launch_tiled_group's (with `sums`): the members' split sums
// added as its elements are read, the same bits as the group's reduce and launch_head_norms.
bool head_norms_reduce_fits(std::span<const MatmulArgs> members, const HeadNormsArgs& norms);
cudaError_t launch_head_norms_reduce(std::span<const MemberSums> sums, const HeadNormsArgs& norms,
                                     const KvWriteArgs* cache, cudaStream_t stream);

// k_matmul_decode.cu: the members (up to 32 rows of affine weights it supports, one code width) on the decode
// kernel as one launch, each with its scratch area and its column strips' counters; with `geglu`,
// matmul_geglu's gate and up, whose reduce adds geglu.
cudaError_t launch_decode_group(std::span<const MatmulArgs> members, std::span<void* const> areas,
                                unsigned* counters, cudaStream_t stream, const RowsArgs* geglu = nullptr);

}  // namespace plumb::cuda::matmul
