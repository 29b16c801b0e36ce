#pragma once
// A kernel's table of per-stream caches (kv_write, and head_norms with caches): row r of the launch goes to
// the cache of the last segment whose first row is at most r, at slot positions[r] % capacity. The table
// rides in the kernel's parameters.
#include <cstdint>

namespace plumb::cuda {

struct KvSegmentEntry {
  int64_t first_row;  // relative to the launch
  uint16_t* cache_keys;
  uint16_t* cache_values;
  int64_t capacity;
};

// Row r's segment, by bisection over the table's first rows (ascending): the last whose first row is at most
// r (any entry with a first_row; attention's tables too).
template <class Entry>
__device__ __forceinline__ const Entry& segment_of_row(const Entry* segments, int count, int64_t r) {
  int low = 0, high = count - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (segments[middle].first_row <= r)
      low = middle;
    else
      high = middle - 1;
  }
  return segments[low];
}

}  // namespace plumb::cuda
