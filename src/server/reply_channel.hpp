#pragma once
// Hands one request's engine events to the HTTP thread that writes them. The engine's worker calls the sink
// (it must never block); the HTTP thread takes what has arrived, waiting a bounded time.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/engine.hpp"

namespace plumb::server {

class ReplyChannel {
 public:
  struct Batch {
    std::vector<int32_t> tokens;        // committed since the last take
    std::optional<engine::Reply> done;  // set once, with the whole reply
  };

  // A sink whose callbacks keep the channel alive until the engine is done with them; without `stream` only
  // the end is reported (the reply carries every token).
  static engine::Sink sink(const std::shared_ptr<ReplyChannel>& channel, bool stream);

  // Waits up to `timeout` for tokens or the end, then returns what arrived (possibly nothing).
  Batch take(std::chrono::milliseconds timeout);
  bool finished() const;

 private:
  void on_delta(const engine::Delta& delta);
  void on_done(const engine::Reply& reply);

  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<int32_t> tokens_;
  std::optional<engine::Reply> done_;
  bool done_taken_ = false;
};

}  // namespace plumb::server
