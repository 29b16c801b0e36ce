#pragma once
// Device time per launched op, for finding where a forward's time goes (plumb bench --profile): an event pair
// around every launch on the backend's stream, read back after the next synchronize and summed by label.
// Off unless asked for, since the events themselves cost a little host time per launch.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/error.hpp"

namespace plumb::cuda {

struct OpTime {
  std::string label;
  int64_t launches = 0;
  double milliseconds = 0;
};

class OpProfile {
 public:
  OpProfile() = default;
  OpProfile(const OpProfile&) = delete;
  OpProfile& operator=(const OpProfile&) = delete;
  ~OpProfile();

  // Records the start event of the next launch on `stream`.
  void begin(cudaStream_t stream);
  // Records its stop event and files the launch under `label`.
  void end(std::string label, cudaStream_t stream);
  // Adds the finished launches' times to the totals; call after the stream is synchronized.
  Status collect();
  // Totals by label, largest first, and clears them.
  std::vector<OpTime> take();

 private:
  struct Pending {
    std::string label;
    size_t pair;  // index of the start event; the stop event is pair + 1
  };
  cudaEvent_t event(size_t index);

  std::vector<cudaEvent_t> events_;  // reused between collects
  size_t used_ = 0;
  std::vector<Pending> pending_;
  std::map<std::string, OpTime> totals_;
};

}  // namespace plumb::cuda
