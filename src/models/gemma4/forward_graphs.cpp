#include "models/gemma4/forward_graphs.hpp"

#include <algorithm>

#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

namespace {

// Erases the entry of `map` with the smallest last_use.
template <class Map>
void drop_least_recent(Map& map) {
  auto oldest = std::min_element(map.begin(), map.end(), [](const auto& a, const auto& b) {
    return a.second.last_use < b.second.last_use;
  });
  if (oldest != map.end()) map.erase(oldest);
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
  if (sets_.size() >= kKeptTensorSets) drop_least_recent(sets_);
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
  if (signatures_.size() >= kKeptSignatures) drop_least_recent(signatures_);
  const int64_t key = next_key_++;
  signatures_[signature] = Known{key, ++clock_};
  return {key, false};
}

}  // namespace plumb::gemma4
