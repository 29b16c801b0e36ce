#pragma once
// What a backend's attention launches may depend on instead of their segments' largest end: the end rounded
// up to a multiple of kAttentionEndQuantum keys, a multiple of every backend's key partition (the CUDA
// launcher's partitions are 64 keys, so its spans are functions of the bucket already). A recorded decode
// step's launches stay valid while the end grows within its bucket. Rows never look past their own keys.
#include <algorithm>
#include <cstdint>

namespace plumb::ops {

inline constexpr int64_t kAttentionEndQuantum = 64;

inline int64_t attention_end_bucket(int64_t end) {
  const int64_t positive = std::max<int64_t>(end, 1);
  return (positive + kAttentionEndQuantum - 1) / kAttentionEndQuantum * kAttentionEndQuantum;
}

}  // namespace plumb::ops
