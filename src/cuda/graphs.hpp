#pragma once
// Recorded forwards (E4 graph == eager): the backend's stream is captured between begin and end and the
// recording runs as one graph. Each key keeps one executable graph: a recording with the same launches in
// the same order (only arguments and grid sizes changed) updates it in place; any other replaces it.
#include <cstdint>
#include <map>

#include <cuda_runtime.h>

#include "core/error.hpp"

namespace plumb::cuda {

class GraphCache {
 public:
  GraphCache() = default;
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache();

  // Starts recording `stream`; relaxed, so that the arena may still allocate while it records.
  static Status begin(cudaStream_t stream);
  // Ends the recording; with `launch`, runs it as the graph kept under `key`.
  Status end(cudaStream_t stream, int64_t key, bool launch);

  int64_t launches() const { return launches_; }
  int64_t instantiations() const { return instantiations_; }

 private:
  // The executable for `key`, updated from `graph` where the launches match, else instantiated anew.
  Result<cudaGraphExec_t> executable(int64_t key, cudaGraph_t graph);

  std::map<int64_t, cudaGraphExec_t> executables_;
  int64_t launches_ = 0;
  int64_t instantiations_ = 0;
};

}  // namespace plumb::cuda
