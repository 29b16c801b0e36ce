// Controls for the keyed draw: each replaces the sample launcher with the host's draw carrying one fault.
#include <algorithm>
#include <vector>

#include "contract/controls/common.hpp"
#include "contract/parallel.hpp"
#include "contract/registry.hpp"
#include "ops/sampling.hpp"

namespace plumb::contract::controls {

namespace {

enum class DrawFault { ties_to_highest_id, own_position, ignores_top_k };

template <DrawFault fault>
class SampleFault final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void sample(const ops::SampleLaunch& launch) override {
    parallel_indices(launch.rows, [&](int64_t r) {  // each row's draw by one thread
      thread_local std::vector<float> row;
      row.resize(static_cast<size_t>(launch.width));
      // Reversed, equal logits rank by id descending; the id is mapped back after the draw.
      const bool reverse = fault == DrawFault::ties_to_highest_id;
      ops::read_logits_row(launch.x, launch.x_dtype, launch.x_stride, r, row);
      if (reverse) std::reverse(row.begin(), row.end());
      ops::SampleParams params = launch.params[r];
      if (fault == DrawFault::own_position) --params.position;
      if (fault == DrawFault::ignores_top_k) params.top_k = 0;
      const int32_t id = ops::draw_keyed(row, params);
      launch.out[r] = reverse && id >= 0 ? static_cast<int32_t>(launch.width - 1 - id) : id;
    });
  }
};

}  // namespace

void register_sample_controls(Registry& registry) {
  auto& list = registry.controls;
  list.push_back(planted<SampleFault<DrawFault::ties_to_highest_id>>("sample/ties-to-highest-id",
                                                                     "sample/logits-bf16", Gate::stress,
                                                                     "ranks equal logits by id descending"));
  list.push_back(planted<SampleFault<DrawFault::own_position>>(
      "sample/own-position", "sample/logits-f32", Gate::shapes,
      "keys the draw by the row's position instead of the drawn token's"));
  list.push_back(planted<SampleFault<DrawFault::ignores_top_k>>("sample/ignores-top-k", "sample/logits-bf16",
                                                                Gate::shapes, "drops the top-k filter"));
}

}  // namespace plumb::contract::controls
