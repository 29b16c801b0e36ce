#include "models/gemma4/forward_graphs.hpp"

#include <atomic>

#include "core/least_recent.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

namespace {

// Graph keys unique in the process: a backend's graph cache is shared by every model on it, so a key per
// model would replay one model's graph for another's forward.
int64_t new_graph_key() {
  static std::atomic<int64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

Result<ForwardGraphs::Kept*> ForwardGraphs::tensors(ops::Backend& backend, const Config& config, int64_t rows,
                                                    int64_t logit_rows, int64_t draw_rows) {
  const Shape shape{rows, logit_rows, draw_rows};
  if (auto found = sets_.find(shape); found != sets_.end()) {
    found->second.last_use = ++clock_;
    return found->second.kept.get();
  }
  // The dropped set's memory goes back to the backend's allocator, behind its last use on the stream.
  if (sets_.size() >= kKeptTensorSets) sets_.erase(least_recent(sets_));
  PLUMB_TRY_ASSIGN(allocated, allocate_forward(backend, config, rows, logit_rows, draw_rows));
  auto kept = std::make_unique<Kept>(Kept{std::move(allocated), next_generation_++});
  Kept* pointer = kept.get();
  sets_[shape] = KeptSet{std::move(kept), ++clock_};
  return pointer;
}

ForwardGraphs::Plan ForwardGraphs::plan(const std::vector<int64_t>& signature) {
  if (auto found = signatures_.find(signature); found != signatures_.end()) {
    found->second.last_use = ++clock_;
    return {found->second.key, true};
  }
  if (signatures_.size() >= kKeptSignatures) signatures_.erase(least_recent(signatures_));
  const int64_t key = new_graph_key();
  signatures_[signature] = Known{key, ++clock_};
  return {key, false};
}

}  // namespace plumb::gemma4
