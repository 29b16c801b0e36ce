#include <algorithm>

#include "engine/engine.hpp"

namespace plumb::engine {

void Histogram::observe(double value) {
  for (size_t i = 0; i < bounds.size(); ++i)
    if (value <= bounds[i]) ++counts[i];
  sum += value;
  ++count;
}

std::string_view openai_finish_reason(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop_token:
    case FinishReason::stop_string:
      return "stop";
    case FinishReason::length:
    case FinishReason::context:
      return "length";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      return "error";
  }
  return "error";
}

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::stop_token:
      return "stop_token";
    case FinishReason::stop_string:
      return "stop_string";
    case FinishReason::length:
      return "length";
    case FinishReason::context:
      return "context";
    case FinishReason::cancelled:
      return "cancelled";
    case FinishReason::error:
      return "error";
  }
  return "error";
}

std::string_view refusal_kind_name(Refusal::Kind kind) {
  switch (kind) {
    case Refusal::Kind::invalid_request:
      return "invalid_request";
    case Refusal::Kind::context_length_exceeded:
      return "context_length_exceeded";
    case Refusal::Kind::over_memory:
      return "over_memory";
    case Refusal::Kind::queue_full:
      return "queue_full";
    case Refusal::Kind::shutting_down:
      return "shutting_down";
  }
  return "invalid_request";
}

Result<DraftMode> parse_draft_mode(std::string_view text) {
  if (text == "none") return DraftMode::none;
  if (text == "copies") return DraftMode::copies;
  return error_at("engine", "draft mode", text, "is not known", "none or copies", text);
}

// Latency buckets in seconds, from a fast GPU step to a slow CPU prompt.
Histogram latency_histogram() {
  Histogram histogram;
  histogram.bounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                      0.5,   1.0,    2.5,   5.0,  10.0,  30.0, 60.0};
  histogram.counts.assign(histogram.bounds.size(), 0);
  return histogram;
}

}  // namespace plumb::engine
