#pragma once
// Programmatic dependent launch (sm_90): a kernel queued with launch_dependent may start before the kernel
// ahead of it in the stream has finished. Every kernel calls wait_for_previous_kernel() before it reads
// anything an earlier launch wrote or writes anything an earlier launch may still read; before that it may
// only read what no launch writes (weights). The wait returns once the kernel ahead has finished and its
// writes are visible (and that one waited for its own predecessor first), so every result is that of plain
// stream order: no sum changes, graph == eager holds. After the wait the kernel lets the next one's blocks
// start on whatever the SMs have free, where they queue their first weights and wait in turn.
#include <cuda_runtime.h>

#include <utility>

#include "cuda/launch_order.hpp"

namespace plumb::cuda {

__device__ __forceinline__ void wait_for_previous_kernel() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// A launch that may start while the kernel ahead of it finishes (where dependent_launch_on()), its blocks in
// clusters of `cluster` (sm_90; more than 8 blocks a cluster needs the kernel's
// cudaFuncAttributeNonPortableClusterSizeAllowed), or in none where `cluster` holds no block.
template <class... Params, class... Args>
cudaError_t launch_dependent_clusters(void (*kernel)(Params...), dim3 grid, dim3 cluster, dim3 block,
                                      size_t shared_bytes, cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attributes[2]{};
  unsigned count = 0;
  if (cluster.x * cluster.y * cluster.z > 0) {
    attributes[count].id = cudaLaunchAttributeClusterDimension;
    attributes[count++].val.clusterDim = {cluster.x, cluster.y, cluster.z};
  }
  if (dependent_launch_on()) {
    attributes[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attributes[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  config.attrs = attributes;
  config.numAttrs = count;
  return cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...);
}

template <class... Params, class... Args>
cudaError_t launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                             cudaStream_t stream, Args&&... args) {
  return launch_dependent_clusters(kernel, grid, dim3(0, 0, 0), block, shared_bytes, stream,
                                   std::forward<Args>(args)...);
}

}  // namespace plumb::cuda
