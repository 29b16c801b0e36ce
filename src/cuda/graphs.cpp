#include "cuda/graphs.hpp"

#include <memory>
#include <type_traits>

#include "core/least_recent.hpp"
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
  for (const auto& [key, kept] : kept_) (void)cudaGraphExecDestroy(kept.executable);
}

Status GraphCache::begin(cudaStream_t stream) {
  PLUMB_CUDA_TRY(kWhere, cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  return {};
}

void GraphCache::drop_least_recent() {
  const auto oldest = least_recent(kept_);
  (void)cudaGraphExecDestroy(oldest->second.executable);
  kept_.erase(oldest);
}

Result<cudaGraphExec_t> GraphCache::executable(int64_t key, cudaGraph_t graph, int64_t generation) {
  if (auto found = kept_.find(key); found != kept_.end()) {
    Kept& kept = found->second;
    cudaGraphExecUpdateResultInfo info{};
    if (cudaGraphExecUpdate(kept.executable, graph, &info) == cudaSuccess) {
      kept.generation = generation;
      kept.last_use = ++clock_;
      return kept.executable;
    }
    // Other launches (a new attention split, say): replaced below.
    (void)cudaGetLastError();
    (void)cudaGraphExecDestroy(kept.executable);
    kept_.erase(found);
  }
  cudaGraphExec_t created = nullptr;
  PLUMB_CUDA_TRY(kWhere, cudaGraphInstantiate(&created, graph, 0));
  ++instantiations_;
  if (kept_.size() >= kKeptGraphs) drop_least_recent();
  kept_[key] = Kept{created, generation, ++clock_};
  return created;
}

Status GraphCache::end(cudaStream_t stream, int64_t key, bool launch, int64_t generation) {
  cudaGraph_t recorded = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &recorded);
  const OwnedGraph graph(recorded);
  PLUMB_TRY(cuda_status(kWhere, "cudaStreamEndCapture", ended));
  if (!launch) return {};
  auto executable_graph = executable(key, graph.get(), generation);
  if (!executable_graph) return executable_graph.error();
  PLUMB_CUDA_TRY(kWhere, cudaGraphLaunch(*executable_graph, stream));
  ++launches_;
  return {};
}

Result<bool> GraphCache::replay(cudaStream_t stream, int64_t key, int64_t generation) {
  auto found = kept_.find(key);
  if (found == kept_.end() || found->second.generation != generation || generation < 0) return false;
  found->second.last_use = ++clock_;
  PLUMB_CUDA_TRY(kWhere, cudaGraphLaunch(found->second.executable, stream));
  ++launches_;
  ++replays_;
  return true;
}

}  // namespace plumb::cuda
