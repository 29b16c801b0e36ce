#include "cuda/op_profile.hpp"

#include <algorithm>

#include "cuda/check.hpp"

namespace plumb::cuda {

OpProfile::~OpProfile() {
  for (cudaEvent_t event : events_) cudaEventDestroy(event);
}

cudaEvent_t OpProfile::event(size_t index) {
  while (events_.size() <= index) {
    cudaEvent_t created = nullptr;
    if (cudaEventCreate(&created) != cudaSuccess) return nullptr;
    events_.push_back(created);
  }
  return events_[index];
}

void OpProfile::begin(cudaStream_t stream) {
  if (cudaEvent_t start = event(used_); start != nullptr) cudaEventRecord(start, stream);
}

void OpProfile::end(std::string label, cudaStream_t stream) {
  cudaEvent_t stop = event(used_ + 1);
  if (stop == nullptr || events_[used_] == nullptr) return;
  cudaEventRecord(stop, stream);
  pending_.push_back({std::move(label), used_});
  used_ += 2;
}

Status OpProfile::collect() {
  for (const Pending& launch : pending_) {
    float milliseconds = 0;
    PLUMB_CUDA_TRY("cuda.profile",
                   cudaEventElapsedTime(&milliseconds, events_[launch.pair], events_[launch.pair + 1]));
    OpTime& total = totals_[launch.label];
    total.label = launch.label;
    total.launches += 1;
    total.milliseconds += milliseconds;
  }
  pending_.clear();
  used_ = 0;
  return {};
}

std::vector<OpTime> OpProfile::take() {
  std::vector<OpTime> times;
  for (auto& [label, time] : totals_) times.push_back(std::move(time));
  totals_.clear();
  std::sort(times.begin(), times.end(),
            [](const OpTime& a, const OpTime& b) { return a.milliseconds > b.milliseconds; });
  return times;
}

}  // namespace plumb::cuda
