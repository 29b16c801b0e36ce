#include "cpu/thread_pool.hpp"

#include <algorithm>

namespace plumb::cpu {

ThreadPool::ThreadPool(int threads) {
  const int count = std::max(1, threads);
  for (int index = 1; index < count; ++index) workers_.emplace_back([this, index] { work(index); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::run_block(int index) {
  const int64_t blocks = threads();
  const int64_t begin = count_ * index / blocks;
  const int64_t end = count_ * (index + 1) / blocks;
  if (begin < end) (*body_)(begin, end);
}

void ThreadPool::work(int index) {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    run_block(index);
    std::lock_guard lock(mutex_);
    if (--pending_ == 0) done_.notify_one();
  }
}

void ThreadPool::parallel_for(int64_t count, const std::function<void(int64_t, int64_t)>& body) {
  if (count <= 0) return;
  if (workers_.empty() || count == 1) {
    body(0, count);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    body_ = &body;
    count_ = count;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  start_.notify_all();
  run_block(0);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [&] { return pending_ == 0; });
  body_ = nullptr;
}

}  // namespace plumb::cpu
