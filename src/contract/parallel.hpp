#pragma once
// Spreads independent reference work (rows, heads) over the machine's threads; each index is computed by one
// thread in full, so the result does not depend on the thread count.
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace plumb::contract {

template <class Work>
void parallel_indices(int64_t count, Work work) {
  const int64_t threads = std::min<int64_t>(
      count, std::max<int64_t>(1, static_cast<int64_t>(std::thread::hardware_concurrency())));
  if (threads <= 1) {
    for (int64_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < count; i += threads) work(i);
    });
  for (std::thread& thread : pool) thread.join();
}

}  // namespace plumb::contract
