#pragma once
// A small fixed pool: parallel_for splits [0, count) into one contiguous block per thread. Kernels compute
// each output element the same way whichever block holds it, so the split never changes a bit.
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace plumb::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Runs body(begin, end) over blocks covering [0, count); returns when all are done. Not reentrant.
  void parallel_for(int64_t count, const std::function<void(int64_t, int64_t)>& body);

 private:
  void work(int index);
  void run_block(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(int64_t, int64_t)>* body_ = nullptr;
  int64_t count_ = 0;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
};

}  // namespace plumb::cpu
