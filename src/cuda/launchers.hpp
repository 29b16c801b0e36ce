#pragma once
// The CUDA kernels' host launchers. Each takes the validated launch struct of ops/backend.hpp, queues its
// kernels on `stream` and returns the launch's cudaError_t (cudaGetLastError), which the backend turns into a
// Status.
#include <cstddef>
#include <span>

#include <cuda_runtime.h>

#include "cuda/kernel_args.hpp"

namespace plumb::cuda {

// A fast path's environment switch: on unless the variable is "0" (PLUMB_CUDA_GRAPHS=0 and the like turn a
// path off for comparisons; none changes a bit). Callers read it once and keep the answer.
bool env_switch_on(const char* variable);

// Loads a trivial kernel: fails when the driver has no image of this build for the current device.
cudaError_t probe_kernel_image();

// The current device's index for caches kept per device (below kCachedDevices), or -1 where there is none
// or it is beyond them (the error cleared).
inline constexpr int kCachedDevices = 64;
int current_device_slot();

// The current device as the launchers choose by it, read once per device (device.cpp's current_device_info):
// compute capability as major * 10 + minor, multiprocessors, and the shared memory a block may opt into; 0
// when there is no device.
int current_compute_capability();
int current_multiprocessors();
size_t current_shared_optin();

cudaError_t launch_embed_rows(const EmbedArgs& launch, cudaStream_t stream);
cudaError_t launch_rms_norm(const RmsNormArgs& launch, cudaStream_t stream);
// residual_norm as one kernel (a block a row, or from 64 rows a warp a row, the same bits): for rows of up to
// 12288 columns, unless PLUMB_CUDA_FUSED_NORM is 0 (residual_norm_fused says which; the backend launches the
// four steps otherwise).
bool residual_norm_fused(int64_t dim);
cudaError_t launch_residual_norm(const ResidualNormArgs& launch, cudaStream_t stream);
cudaError_t launch_norm_rope(const NormRopeArgs& launch, cudaStream_t stream);
// head_norms as one launch: q and k share rows, head_dim, positions and inv_freq.
// With `cache`, the k and v rows also go to their caches as launch_kv_write(*cache) writes them: in the same
// launch for up to 48 streams, else by that launch after it.
cudaError_t launch_head_norms(const HeadNormsArgs& launch, const KvWriteArgs* cache, cudaStream_t stream);
cudaError_t launch_kv_write(const KvWriteArgs& launch, cudaStream_t stream);
cudaError_t launch_geglu(const RowsArgs& launch, cudaStream_t stream);
cudaError_t launch_add(const RowsArgs& launch, cudaStream_t stream);
cudaError_t launch_scale(const RowsArgs& launch, cudaStream_t stream);
cudaError_t launch_soft_cap(const RowsArgs& launch, cudaStream_t stream);
cudaError_t launch_argmax(const ArgmaxArgs& launch, cudaStream_t stream);
// The keyed draw needs a weight per logit on the device (`weights`, sample_scratch_bytes). With `clusters`
// (sm_90 and later) a row takes kSampleClusterBlocks blocks, else one.
inline constexpr int kSampleClusterBlocks = 8;
size_t sample_scratch_bytes(const SampleArgs& launch);
cudaError_t launch_sample(const SampleArgs& launch, bool clusters, cudaStream_t stream);

// Scratch the op needs on the device (0 when none); the backend passes at least this many bytes, and
// kMatmulCounters zeroed counters that every launch leaves zeroed (the decode kernel's last block of each
// output strip adds the K splits; a launch with several splits has fewer strips than the splits' target
// blocks, 256 unless PLUMB_CUDA_TARGET_BLOCKS raises it; the decode launch refuses more strips with
// cudaErrorInvalidValue).
size_t matmul_scratch_bytes(const MatmulArgs& launch);
inline constexpr size_t kMatmulCounters = 256;
// The most matmuls one grouped launch takes (ops::kMatmulGroupMembers).
inline constexpr int kMatmulGroupMembers = 3;
// `decode` sends up to 32 rows of the weights it supports to the decode kernel (the same bits).
cudaError_t launch_matmul(const MatmulArgs& launch, void* scratch, unsigned* counters, bool decode,
                          cudaStream_t stream);
// The decode kernel's own copy of a 4-bit affine weight it takes (k_matmul_decode_lanes.cu): its bytes (0
// for weights it does not take that way), and the launch that writes it from the weight's codes, scales and
// biases into `layout` (at least that many bytes, 16-byte aligned). Weights with a copy then take it at up to
// 32 rows, with the same bits.
int64_t decode_layout_bytes(const WeightArgs& weight);
cudaError_t launch_decode_layout(const WeightArgs& weight, void* layout, cudaStream_t stream);
// Matmuls of one x (rows, x and its stride the same) as one launch where they all take the decode kernel or
// all are bf16 at 17 to 32 rows (each member its own plan, so each the bits launch_matmul gives), else one
// after another, bf16 members' split partials added by one reduce launch (one a member with
// PLUMB_CUDA_MATMUL_GROUP=0). Each member gets its own part of the scratch.
size_t matmul_group_scratch_bytes(std::span<const MatmulArgs> members);
cudaError_t launch_matmul_group(std::span<const MatmulArgs> members, void* scratch, unsigned* counters,
                                bool decode, cudaStream_t stream);
// matmul_head_norms: q, k and v (or q and k; members, launch_matmul_group's scratch), then head_norms
// (launch_head_norms' cache writes) of their outputs in place, run by the members' K-split reduce at bf16
// decode rows (one launch instead of two), else by launch_head_norms after the group; the same bits either
// way. PLUMB_CUDA_HEAD_NORMS_REDUCE=0 always takes the second.
cudaError_t launch_matmul_head_norms(std::span<const MatmulArgs> members, const HeadNormsArgs& norms,
                                     const KvWriteArgs* cache, void* scratch, unsigned* counters, bool decode,
                                     cudaStream_t stream);
// matmul_geglu: gate and up (members, launch_matmul_group's scratch), then geglu of their outputs, added by
// the matmuls' K-split reduce where both split into several at decode rows (the decode kernel, or the tiled
// kernel's reduce launch), else by launch_geglu after them; the same bits either way.
// PLUMB_CUDA_FUSED_GEGLU=0 always takes the second.
cudaError_t launch_matmul_geglu(std::span<const MatmulArgs> members, const RowsArgs& geglu, void* scratch,
                                unsigned* counters, bool decode, cudaStream_t stream);

// Attention processes its rows in chunks whose partials fit `scratch_bytes`; attention_scratch_bytes is the
// most it can use for this launch (capped), attention_scratch_minimum the least it needs.
size_t attention_scratch_bytes(const AttentionArgs& launch);
size_t attention_scratch_minimum(const AttentionArgs& launch);
cudaError_t launch_attention(const AttentionArgs& launch, void* scratch, size_t scratch_bytes,
                             cudaStream_t stream);

}  // namespace plumb::cuda
