#include "server/metrics.hpp"

#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <fstream>

#include <fmt/format.h>

namespace plumb::server {

namespace {

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <class T>
void single(std::string& out, const char* name, const char* type, const char* help, T value) {
  header(out, name, type, help);
  out += fmt::format("{} {}\n", name, value);
}

void histogram(std::string& out, const char* name, const char* help, const engine::Histogram& h) {
  header(out, name, "histogram", help);
  for (size_t i = 0; i < h.bounds.size() && i < h.counts.size(); ++i)
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], h.counts[i]);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, h.count, name, h.sum,
                     name, h.count);
}

void engine_section(std::string& out, const engine::Metrics& m) {
  header(out, "plumb_engine_requests_total", "counter", "Engine requests by outcome.");
  for (auto [outcome, value] : {std::pair{"submitted", m.requests_submitted},
                                {"refused", m.requests_refused},
                                {"finished", m.requests_finished},
                                {"cancelled", m.requests_cancelled},
                                {"failed", m.requests_failed}})
    out += fmt::format("plumb_engine_requests_total{{outcome=\"{}\"}} {}\n", outcome, value);
  single(out, "plumb_prompt_tokens_total", "counter", "Prompt tokens of requests.", m.prompt_tokens);
  single(out, "plumb_prompt_cached_tokens_total", "counter", "Prompt tokens resumed from the prompt cache.",
         m.cached_prompt_tokens);
  single(out, "plumb_prompt_rows_computed_total", "counter", "Prompt rows computed.", m.prompt_rows_computed);
  single(out, "plumb_generated_tokens_total", "counter", "Generated tokens.", m.generated_tokens);
  single(out, "plumb_drafts_proposed_total", "counter", "Draft tokens proposed.", m.drafts_proposed);
  single(out, "plumb_drafts_accepted_total", "counter", "Draft tokens accepted.", m.drafts_accepted);
  const double acceptance = m.drafts_proposed ? double(m.drafts_accepted) / double(m.drafts_proposed) : 0.0;
  single(out, "plumb_draft_acceptance_ratio", "gauge", "Accepted over proposed drafts.", acceptance);
  single(out, "plumb_rounds_total", "counter", "Engine rounds run.", m.rounds);
  single(out, "plumb_round_rows_total", "counter", "Rows computed over all rounds.", m.round_rows);
  single(out, "plumb_prompt_cache_lookups_total", "counter", "Prompt-cache lookups.", m.cache_lookups);
  single(out, "plumb_prompt_cache_hits_total", "counter", "Prompt-cache lookups that resumed a kept state.",
         m.cache_hits);
  single(out, "plumb_prompt_cache_evictions_total", "counter", "Kept states evicted.", m.cache_evictions);
  single(out, "plumb_prompt_cache_entries", "gauge", "Kept states.", m.cache_entries);
  single(out, "plumb_prompt_cache_bytes", "gauge", "Bytes of kept states.", m.cache_bytes);
  single(out, "plumb_live_streams", "gauge", "Streams running.", m.live_streams);
  single(out, "plumb_waiting_requests", "gauge", "Requests waiting for admission.", m.waiting_requests);
  single(out, "plumb_kv_reserved_bytes", "gauge", "KV bytes reserved by live streams.", m.kv_reserved_bytes);
  single(out, "plumb_kv_budget_bytes", "gauge", "KV byte budget for live streams.", m.kv_budget_bytes);
  histogram(out, "plumb_time_to_first_token_seconds", "Submit to first committed token.",
            m.time_to_first_token);
  histogram(out, "plumb_inter_token_latency_seconds", "Time between committed tokens.",
            m.inter_token_latency);
}

}  // namespace

void HttpMetrics::count(const std::string& route, int status) {
  std::lock_guard lock(mutex_);
  ++requests_[{route, status}];
}

void HttpMetrics::count_disconnect() {
  std::lock_guard lock(mutex_);
  ++disconnects_;
}

std::string HttpMetrics::prometheus(const engine::Metrics& engine, int64_t in_flight,
                                    const ProcessMemory& memory) const {
  std::string out;
  {
    std::lock_guard lock(mutex_);
    header(out, "plumb_http_requests_total", "counter", "HTTP requests by route and status.");
    for (const auto& [key, value] : requests_)
      out += fmt::format("plumb_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first,
                         key.second, value);
    single(out, "plumb_http_client_disconnects_total", "counter", "Replies whose client left before the end.",
           disconnects_);
  }
  single(out, "plumb_http_requests_in_flight", "gauge", "HTTP requests being handled.", in_flight);
  single(out, "plumb_process_resident_bytes", "gauge", "Resident set size of the server process.",
         memory.resident_bytes);
  single(out, "plumb_process_heap_bytes", "gauge",
         "Heap bytes the server process holds (allocated, not freed).", memory.heap_bytes);
  engine_section(out, engine);
  return out;
}

int64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages_total = 0, pages_resident = 0;
  if (!(statm >> pages_total >> pages_resident)) return 0;
  return pages_resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

ProcessMemory process_memory() {
  ProcessMemory memory{.resident_bytes = resident_bytes()};
#if defined(__GLIBC__)
  const struct mallinfo2 info = mallinfo2();
  memory.heap_bytes = static_cast<int64_t>(info.uordblks + info.hblkhd);
#endif
  return memory;
}

}  // namespace plumb::server
