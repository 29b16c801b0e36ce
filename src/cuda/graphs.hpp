#pragma once
// Recorded forwards (E4 graph == eager): the backend's stream is captured between begin and end and the
// recording runs as one graph, kept under its key with the generation of the backend's scratch it was
// recorded against. replay runs a kept graph unchanged while that generation is current; a recording
// under a kept key updates its graph in place where the launches match, else replaces it. At most
// kKeptGraphs are kept, the least recently run dropped first.
#include <cstdint>
#include <map>

#include <cuda_runtime.h>

#include "core/error.hpp"

namespace plumb::cuda {

class GraphCache {
 public:
  static constexpr size_t kKeptGraphs = 32;

  GraphCache() = default;
  GraphCache(const GraphCache&) = delete;
  GraphCache& operator=(const GraphCache&) = delete;
  ~GraphCache();

  // Starts recording `stream`; relaxed, so that the arena may still allocate while it records.
  static Status begin(cudaStream_t stream);
  // Ends the recording; with `launch`, runs it and keeps it under `key`, replayable while `generation` is
  // current (a recording whose scratch moved while it ran passes -1: run once, never replayed).
  Status end(cudaStream_t stream, int64_t key, bool launch, int64_t generation);
  // Runs the graph kept under `key` if it was recorded at `generation`; false (nothing run) otherwise.
  Result<bool> replay(cudaStream_t stream, int64_t key, int64_t generation);

  int64_t launches() const { return launches_; }
  int64_t replays() const { return replays_; }
  int64_t instantiations() const { return instantiations_; }

 private:
  struct Kept {
    cudaGraphExec_t executable = nullptr;
    int64_t generation = -1;
    uint64_t last_use = 0;
  };
  // The executable for `key`, updated from `graph` where the launches match, else instantiated anew.
  Result<cudaGraphExec_t> executable(int64_t key, cudaGraph_t graph, int64_t generation);
  void drop_least_recent();

  std::map<int64_t, Kept> kept_;
  uint64_t clock_ = 0;
  int64_t launches_ = 0;
  int64_t replays_ = 0;
  int64_t instantiations_ = 0;
};

}  // namespace plumb::cuda
