// Attention over a cache, HF eager's rounding without its bf16 score rounding: s_j = scale * (q · k_j) in
// fp32, p_j = bf16(exp(s_j - max s) / sum exp(s - max s)), out = bf16(sum p_j v_j). Keys are visited one by
// one in absolute-position order, so a row's bits depend only on its position, its window and the cached
// keys.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/half.hpp"
#include "cpu/kernels.hpp"

namespace plumb::cpu {

namespace {

float dot_bf16(const float* q, const uint16_t* key, int64_t n) {
  float lanes[kLanes] = {};
  int64_t k = 0;
  for (; k + kLanes <= n; k += kLanes)
    for (int lane = 0; lane < kLanes; ++lane) lanes[lane] += q[k + lane] * bf16_to_f32(key[k + lane]);
  for (int lane = 0; k < n; ++k, ++lane) lanes[lane] += q[k] * bf16_to_f32(key[k]);
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int lane = 0; lane < width; ++lane) lanes[lane] += lanes[lane + width];
  return lanes[0];
}

struct HeadWork {
  std::vector<float> q;
  std::vector<float> scores;
  std::vector<float> out;
};

void attend_one(const ops::AttentionLaunch& launch, const ops::AttentionSegmentLaunch& segment, int64_t r,
                int64_t h, HeadWork& work) {
  const int64_t dim = launch.head_dim;
  const int64_t kv_head = h / (launch.heads / launch.kv_heads);
  const int64_t position = launch.positions[r];
  const int64_t first = launch.window > 0 ? std::max<int64_t>(0, position - launch.window + 1) : 0;
  const int64_t keys = position - first + 1;
  const auto row_of = [&](const uint16_t* cache, int64_t key_position) {
    return cache + ((key_position % segment.capacity) * launch.kv_heads + kv_head) * dim;
  };
  bf16_row_to_f32(launch.q + r * launch.q_stride + h * dim, dim, work.q.data());
  work.scores.resize(static_cast<size_t>(keys));
  float top = -INFINITY;
  for (int64_t j = 0; j < keys; ++j) {
    work.scores[j] = launch.scale * dot_bf16(work.q.data(), row_of(segment.keys, first + j), dim);
    top = std::max(top, work.scores[j]);
  }
  float total = 0.0f;
  for (int64_t j = 0; j < keys; ++j) total += std::exp(work.scores[j] - top);
  std::fill(work.out.begin(), work.out.end(), 0.0f);
  for (int64_t j = 0; j < keys; ++j) {
    const float weight = round_bf16(std::exp(work.scores[j] - top) / total);
    const uint16_t* value = row_of(segment.values, first + j);
    for (int64_t d = 0; d < dim; ++d) work.out[d] += weight * bf16_to_f32(value[d]);
  }
  uint16_t* out = launch.out + r * launch.out_stride + h * dim;
  for (int64_t d = 0; d < dim; ++d) out[d] = f32_to_bf16(work.out[d]);
}

}  // namespace

void attention(ThreadPool& pool, const ops::AttentionLaunch& launch) {
  std::vector<int64_t> segment_of(static_cast<size_t>(launch.rows));
  for (int64_t s = 0; s < launch.segment_count; ++s) {
    const ops::AttentionSegmentLaunch& segment = launch.segments[s];
    for (int64_t r = segment.first_row; r < segment.first_row + segment.rows; ++r) segment_of[r] = s;
  }
  pool.parallel_for(launch.rows * launch.heads, [&](int64_t begin, int64_t end) {
    HeadWork work{std::vector<float>(static_cast<size_t>(launch.head_dim)),
                  {},
                  std::vector<float>(static_cast<size_t>(launch.head_dim))};
    for (int64_t item = begin; item < end; ++item) {
      const int64_t r = item / launch.heads, h = item % launch.heads;
      attend_one(launch, launch.segments[segment_of[r]], r, h, work);
    }
  });
}

}  // namespace plumb::cpu
