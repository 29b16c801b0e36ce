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

// This process's memory. The resident size is what the system sees and includes allocator caches that settle
// slowly under load; the heap bytes in use are what the program holds, so a leak shows there first.
struct ProcessMemory {
  int64_t resident_bytes = 0;  // from /proc/self/statm; 0 when unknown
  int64_t heap_bytes = 0;  // malloc'd and not yet freed, every arena and mapped chunk (glibc); 0 when unknown
};
ProcessMemory process_memory();

class HttpMetrics {
 public:
  // One finished HTTP request: its route pattern (not the raw path, which a client controls) and status.
  void count(const std::string& route, int status);
  // A reply (streamed or whole) whose client went away before the end.
  void count_disconnect();

  // The whole exposition text.
  std::string prometheus(const engine::Metrics& engine, int64_t in_flight, const ProcessMemory& memory) const;

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t disconnects_ = 0;
};

// This process's resident set size in bytes; 0 when unknown.
int64_t resident_bytes();

}  // namespace plumb::server
