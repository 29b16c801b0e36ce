#pragma once
// /metrics in Prometheus text format (version 0.0.4): the server's HTTP counters and the engine's metrics
// (requests, tokens, time to first token, inter-token latency, draft acceptance, prompt-cache hits).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/engine.hpp"

namespace plumb::server {

class HttpMetrics {
 public:
  // One finished HTTP request: its route pattern (not the raw path, which a client controls) and status.
  void count(const std::string& route, int status);
  // A reply (streamed or whole) whose client went away before the end.
  void count_disconnect();

  // The whole exposition text.
  std::string prometheus(const engine::Metrics& engine, int64_t in_flight, int64_t resident_bytes) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t disconnects_ = 0;
};

// This process's resident set size in bytes (from /proc/self/statm); 0 when unknown.
int64_t resident_bytes();

}  // namespace plumb::server
