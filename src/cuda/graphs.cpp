#include "cuda/graphs.hpp"

#include <memory>
#include <type_traits>

#include "cuda/check.hpp"

namespace plumb::cuda {

namespace {

constexpr std::string_view kWhere = "cuda.graph";

struct GraphDeleter {
  void operator()(cudaGraph_t graph) const { (void)cudaGraphDestroy(graph); }
};
using OwnedGraph = std::unique_ptr<std::remove_pointer_t<cudaGraph_t>, GraphDeleter>;

}  // namespace

GraphCache::~GraphCache() {
  for (const auto& [key, executable] : executables_) (void)cudaGraphExecDestroy(executable);
}

Status GraphCache::begin(cudaStream_t stream) {
  PLUMB_CUDA_TRY(kWhere, cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  return {};
}

Result<cudaGraphExec_t> GraphCache::executable(int64_t key, cudaGraph_t graph) {
  if (auto found = executables_.find(key); found != executables_.end()) {
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(found->second, graph, &info) == cudaSuccess) return found->second;
    // Other launches (a new attention split, say): replaced below.
    (void)cudaGetLastError();
    (void)cudaGraphExecDestroy(found->second);
    executables_.erase(found);
  }
  cudaGraphExec_t created = nullptr;
  PLUMB_CUDA_TRY(kWhere, cudaGraphInstantiate(&created, graph, 0));
  ++instantiations_;
  executables_[key] = created;
  return created;
}

Status GraphCache::end(cudaStream_t stream, int64_t key, bool launch) {
  cudaGraph_t recorded = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &recorded);
  const OwnedGraph graph(recorded);
  PLUMB_TRY(cuda_status(kWhere, "cudaStreamEndCapture", ended));
  if (!launch) return {};
  auto executable_graph = executable(key, graph.get());
  if (!executable_graph) return executable_graph.error();
  PLUMB_CUDA_TRY(kWhere, cudaGraphLaunch(*executable_graph, stream));
  ++launches_;
  return {};
}

}  // namespace plumb::cuda
