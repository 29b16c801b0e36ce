// Controls for attention and kv_write.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "contract/controls/common.hpp"
#include "contract/registry.hpp"

namespace plumb::contract::controls {
namespace {

enum class AttentionFault {
  scores_bf16,
  probabilities_unrounded,
  window_off_by_one,
  order_by_rows,
  bf16_exp_sum
};

template <AttentionFault fault>
class AttentionFaulty final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void attention(const ops::AttentionLaunch& launch) override {
    for (int64_t s = 0; s < launch.segment_count; ++s) {
      const ops::AttentionSegmentLaunch& segment = launch.segments[s];
      for (int64_t r = segment.first_row; r < segment.first_row + segment.rows; ++r)
        for (int64_t h = 0; h < launch.heads; ++h) attend(launch, segment, r, h);
    }
  }

 private:
  static void attend(const ops::AttentionLaunch& launch, const ops::AttentionSegmentLaunch& segment,
                     int64_t r, int64_t h) {
    const int64_t dim = launch.head_dim, kv_head = h / (launch.heads / launch.kv_heads);
    const int64_t position = launch.positions[r];
    int64_t first = launch.window > 0 ? std::max<int64_t>(0, position - launch.window + 1) : 0;
    if (fault == AttentionFault::window_off_by_one && launch.window > 0)
      first = std::max<int64_t>(0, first - 1);
    const auto row_of = [&](const uint16_t* cache, int64_t p) {
      return cache + ((p % segment.capacity) * launch.kv_heads + kv_head) * dim;
    };
    const uint16_t* q = launch.q + r * launch.q_stride + h * dim;
    std::vector<float> scores;
    float top = -INFINITY;
    for (int64_t p = first; p <= position; ++p) {
      const uint16_t* key = row_of(segment.keys, p);
      float score = 0.0f;
      for (int64_t d = 0; d < dim; ++d) score += bf16_to_f32(q[d]) * bf16_to_f32(key[d]);
      score *= launch.scale;
      if (fault == AttentionFault::scores_bf16) score = round_bf16(score);
      scores.push_back(score);
      top = std::max(top, score);
    }
    float total = 0.0f;
    for (float score : scores) {
      total += std::exp(score - top);
      if (fault == AttentionFault::bf16_exp_sum) total = round_bf16(total);
    }
    std::vector<float> out(static_cast<size_t>(dim), 0.0f);
    const auto n = static_cast<int64_t>(scores.size());
    for (int64_t i = 0; i < n; ++i) {
      // A batch visits the keys backwards; a single row forwards.
      const int64_t j = fault == AttentionFault::order_by_rows && launch.rows > 1 ? n - 1 - i : i;
      float weight = std::exp(scores[static_cast<size_t>(j)] - top) / total;
      if (fault != AttentionFault::probabilities_unrounded) weight = round_bf16(weight);
      const uint16_t* value = row_of(segment.values, first + j);
      for (int64_t d = 0; d < dim; ++d) out[static_cast<size_t>(d)] += weight * bf16_to_f32(value[d]);
    }
    uint16_t* target = launch.out + r * launch.out_stride + h * dim;
    for (int64_t d = 0; d < dim; ++d) target[d] = f32_to_bf16(out[static_cast<size_t>(d)]);
  }
};

enum class KvFault { copy_spills, int32_slot, segment_late };

template <KvFault fault>
class KvWriteFaulty final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void kv_write(const ops::KvWriteLaunch& launch) override {
    for (int64_t s = 0; s < launch.segment_count; ++s)
      for (int64_t r = launch.segments[s].first_row;
           r < launch.segments[s].first_row + launch.segments[s].rows; ++r) {
        // A segment looked up by first_row < r instead of <=: a segment's first row goes to the one before.
        const bool late = fault == KvFault::segment_late && s > 0 && r == launch.segments[s].first_row;
        write_row(launch, launch.segments[late ? s - 1 : s], r);
      }
  }

 private:
  static void write_row(const ops::KvWriteLaunch& launch, const ops::KvWriteSegmentLaunch& segment,
                        int64_t r) {
    const int64_t row = launch.kv_heads * launch.head_dim;
    int64_t slot = launch.positions[r] % segment.capacity;
    // Position arithmetic in i32: doubling a position past 2^30 wraps.
    if (fault == KvFault::int32_slot)
      slot = static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(launch.positions[r]) * 2u) / 2) %
             segment.capacity;
    if (slot < 0) slot += segment.capacity;
    // One element too many: the next slot's first element (or the guard after the last slot).
    const int64_t count = fault == KvFault::copy_spills ? row + 1 : row;
    const int64_t limit = (segment.capacity - slot) * row;
    const auto bytes = static_cast<size_t>(std::min(count, limit + 1)) * sizeof(uint16_t);
    std::memcpy(segment.cache_keys + slot * row, launch.keys + r * launch.keys_stride, bytes);
    std::memcpy(segment.cache_values + slot * row, launch.values + r * launch.values_stride, bytes);
  }
};

}  // namespace

void register_attention_controls(Registry& registry) {
  auto& list = registry.controls;
  list.push_back(planted<AttentionFaulty<AttentionFault::scores_bf16>>(
      "attention/scores-bf16", "attention/12b-global", Gate::shapes,
      "rounds the scores to bf16 (HF eager's matmul)"));
  list.push_back(planted<AttentionFaulty<AttentionFault::probabilities_unrounded>>(
      "attention/probabilities-unrounded", "attention/12b-sliding", Gate::stress,
      "keeps the softmax weights in fp32 instead of rounding them to bf16"));
  list.push_back(planted<AttentionFaulty<AttentionFault::window_off_by_one>>(
      "attention/window-off-by-one", "attention/31b-sliding", Gate::stress,
      "lets a sliding row see one key more than its window"));
  list.push_back(planted<AttentionFaulty<AttentionFault::order_by_rows>>(
      "attention/order-by-rows", "attention/31b-global", Gate::invariant,
      "visits the keys in another order when a call has more than one row"));
  list.push_back(planted<AttentionFaulty<AttentionFault::bf16_exp_sum>>(
      "attention/bf16-exp-sum", "attention/12b-global", Gate::stress,
      "accumulates the softmax denominator in bf16"));
  list.push_back(planted<KvWriteFaulty<KvFault::copy_spills>>(
      "kv_write/copy-spills", "kv_write/12b-sliding", Gate::runs, "copies one element past each row"));
  list.push_back(planted<KvWriteFaulty<KvFault::int32_slot>>(
      "kv_write/int32-slot", "kv_write/31b-sliding", Gate::stress, "computes the slot in i32, which wraps"));
  list.push_back(planted<KvWriteFaulty<KvFault::segment_late>>(
      "kv_write/segment-late", "kv_write/12b-sliding-streams", Gate::runs,
      "writes each segment's first row into the cache of the segment before it"));
}

}  // namespace plumb::contract::controls
