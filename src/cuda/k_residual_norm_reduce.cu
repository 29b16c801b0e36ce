// matmul_residual_norm's last launch at bf16 decode rows, on sm_90: a cluster of kClusterBlocks blocks a row.
// Each block takes a share of o's columns: o = its K-split partials added in split order and rounded to bf16
// once (member_sums.cuh: reduce_column's bits), stored, and written into the first block's row, staged
// lane-major, across the cluster. After a cluster barrier the first block runs residual_norm's steps on that
// row (residual_norm_row.cuh): h_out = bf16(h + bf16(o * inv_o * w_post)), bf16(h_out * factor) when scaled,
// next = bf16(h_out * inv_h * w_next), in norm_order.cuh's order. So the bits of the matmul's reduce launch
// and residual_norm after it, in one launch; the split sums stay spread over the cluster's blocks, where one
// block adding them all waited on its loads (docs/benchmarks.md, "the splits added by their consumers").
#include <string_view>

#include "cuda/dependent_launch.cuh"
#include "cuda/launchers.hpp"
#include "cuda/matmul_plan.hpp"
#include "cuda/member_sums.cuh"
#include "cuda/residual_norm_row.cuh"
#include "cuda/tma.cuh"

namespace plumb::cuda::matmul {

namespace {

constexpr int kClusterBlocks = 8;  // the portable cluster size: 480 columns a block for a 3840-wide row
constexpr int kMaxPerThread = 24;  // residual_norm's widest rows (k_norm.cu): 12288 columns
// Decode rows: the tiled kernel's 16- and 32-row tiles, whose K splits run across blocks.
constexpr int64_t kMaxRows = 32;

// PLUMB_CUDA_RESIDUAL_NORM_REDUCE=0 keeps the matmul's reduce and residual_norm as two launches (A/B in one
// build).
bool reduce_switch_on() {
  static const bool on = env_switch_on("PLUMB_CUDA_RESIDUAL_NORM_REDUCE");
  return on;
}

struct ReduceResidualParams {
  MemberSums o;
  uint16_t* o_out;  // o's rows, stored where its splits ran across blocks
  ResidualNormArgs norm;
};

template <int kPerThread>
__global__ void __launch_bounds__(kResidualThreads)
    reduce_residual_norm_kernel(const __grid_constant__ ReduceResidualParams params) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const ResidualNormArgs& launch = params.norm;
  const int dim = static_cast<int>(launch.post.dim);
  cluster_arrive_relaxed();  // this block runs: peers may store into its shared memory once all have
  const uint32_t rank = cluster_rank();
  const int64_t r = blockIdx.y;
  ResidualNormRow<kPerThread> row;
  if (rank == 0) row.load_weights(launch, dim);
  wait_for_previous_kernel();
  extern __shared__ __align__(16) float staged[];  // every block's, the first block's read
  const LaneMajorRow values(staged, dim);
  if (rank == 0) row.load_h(launch, r, dim);
  const int share = (dim + kClusterBlocks - 1) / kClusterBlocks;
  const int end = min(dim, static_cast<int>(rank + 1) * share);
  cluster_wait();  // the first block has started, so its staged row exists
  for (int k = static_cast<int>(rank) * share + static_cast<int>(threadIdx.x); k < end;
       k += kResidualThreads) {
    const uint16_t bits = member_bits(params.o, r, k);
    if (params.o.cross) params.o_out[r * params.o.out_stride + k] = bits;
    store_to_cta(&values[k], 0, bf16_value(bits));
  }
  cluster_sync();  // the row of o is in the first block; the others' work is done
  if (rank != 0) return;
  row.finish(launch, r, values, dim);
#else
  (void)params;
#endif
}

template <int kPerThread>
cudaError_t launch_reduce(const ReduceResidualParams& params, cudaStream_t stream) {
  const auto kernel = reduce_residual_norm_kernel<kPerThread>;
  const size_t shared = lane_major_bytes(params.norm.post.dim);
  if (shared > 48 * 1024)
    if (const cudaError_t code = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                      static_cast<int>(shared));
        code != cudaSuccess)
      return code;
  if (const cudaError_t code = launch_dependent_clusters(
          kernel, dim3(kClusterBlocks, static_cast<unsigned>(params.norm.post.rows)),
          dim3(kClusterBlocks, 1, 1), dim3(kResidualThreads), shared, stream, params);
      code != cudaSuccess)
    return code;
  return cudaGetLastError();
}

}  // namespace

bool residual_norm_reduce_fits(const MatmulArgs& matmul, const ResidualNormArgs& norm) {
  const RmsNormArgs& post = norm.post;
  return unchecked_paths_on() && reduce_switch_on() && post.rows == matmul.rows && post.rows <= kMaxRows &&
         post.heads == 1 && post.x == matmul.out && post.x_stride == matmul.out_stride &&
         post.dim == matmul.weight.out && !matmul.out_f32 &&
         post.dim <= int64_t{kMaxPerThread} * kResidualThreads &&
         std::string_view(PLUMB_CUDA_TARGETS).find("90") != std::string_view::npos &&
         current_compute_capability() >= 90;
}

cudaError_t launch_residual_norm_reduce(const MemberSums& o, uint16_t* o_out, const ResidualNormArgs& norm,
                                        cudaStream_t stream) {
  if (norm.post.rows == 0) return cudaSuccess;
  const ReduceResidualParams params{o, o_out, norm};
  return norm.post.dim <= 8 * kResidualThreads ? launch_reduce<8>(params, stream)
                                               : launch_reduce<kMaxPerThread>(params, stream);
}

}  // namespace plumb::cuda::matmul
