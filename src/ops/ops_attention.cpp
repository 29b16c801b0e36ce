// Op entry for attention over per-stream caches: checks the query rows, the segments and (when the positions
// are host-readable) that every key a row needs is still in its cache.
#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "ops/check.hpp"
#include "ops/launch.hpp"

namespace plumb::ops {

namespace {

Status check_segment(std::string_view where, Device device, const KvSegment& segment, size_t index,
                     int64_t kv_heads, int64_t head_dim, const TensorView& out) {
  const std::string keys_name = fmt::format("segments[{}].kv.keys", index);
  const std::string values_name = fmt::format("segments[{}].kv.values", index);
  PLUMB_TRY(
      check_contiguous(where, keys_name, segment.kv.keys, DType::bf16, {kAny, kv_heads, head_dim}, device));
  const int64_t capacity = segment.kv.keys.dim(0);
  PLUMB_TRY(check_contiguous(where, values_name, segment.kv.values, DType::bf16,
                             {capacity, kv_heads, head_dim}, device));
  if (capacity < 1) return error_at(where, "tensor", keys_name, "has no slots", "capacity >= 1", "0");
  if (segment.kv.end < 0)
    return error_at(where, "parameter", fmt::format("segments[{}].kv.end", index), "is negative", "end >= 0",
                    std::to_string(segment.kv.end));
  PLUMB_TRY(check_disjoint(where, "out", out, keys_name, segment.kv.keys));
  PLUMB_TRY(check_disjoint(where, "out", out, values_name, segment.kv.values));
  return {};
}

// Row r at position p needs keys [first, p]; all must lie in [begin, end) of its segment's cache.
Status check_keys_present(std::string_view where, const KvSegment& segment, size_t index,
                          const int32_t* positions, int64_t window) {
  const int64_t capacity = segment.kv.keys.dim(0);
  const int64_t begin = std::max<int64_t>(0, segment.kv.end - capacity);
  for (int64_t r = segment.first_row; r < segment.first_row + segment.rows; ++r) {
    const int64_t position = positions[r];
    const int64_t first = window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
    if (position < 0 || position >= segment.kv.end || first < begin)
      return error_at(
          where, "tensor", "positions",
          fmt::format("needs keys missing from segment {}'s cache at row {}", index, r),
          fmt::format("keys {}..{} within the cached {}..{}", first, position, begin, segment.kv.end - 1),
          fmt::format("position {}", position));
  }
  return {};
}

}  // namespace

Status attention(Backend& backend, const TensorView& q, const TensorView& positions,
                 std::span<const KvSegment> segments, const AttentionSpec& spec, const TensorView& out) {
  constexpr std::string_view where = "ops.attention";
  const Device device = backend.device();
  PLUMB_TRY(check_rows(where, "q", q, {DType::bf16}, {kAny, kAny, kAny}, device));
  const int64_t rows = q.dim(0), heads = q.dim(1), head_dim = q.dim(2);
  PLUMB_TRY(check_rows(where, "out", out, {DType::bf16}, {rows, heads, head_dim}, device));
  PLUMB_TRY(check_disjoint(where, "out", out, "q", q));
  PLUMB_TRY(check_contiguous(where, "positions", positions, DType::i32, {rows}, device));
  if (spec.window < 0)
    return error_at(where, "parameter", "window", "is negative", "0 (global) or a window > 0",
                    std::to_string(spec.window));
  if (segments.empty() && rows > 0)
    return error_at(where, "parameter", "segments", "is empty", "segments covering every row", "none");
  const int64_t kv_heads = segments.empty() ? 1 : segments[0].kv.keys.dim(1);
  if (kv_heads < 1 || heads % kv_heads != 0)
    return error_at(where, "tensor", "q", "has a head count that is not a multiple of the kv heads",
                    fmt::format("a multiple of {}", kv_heads), std::to_string(heads));
  std::vector<AttentionSegmentLaunch> launches;
  int64_t next_row = 0;
  for (size_t index = 0; index < segments.size(); ++index) {
    const KvSegment& segment = segments[index];
    PLUMB_TRY(check_segment_order(where, index, segment.first_row, segment.rows, next_row));
    PLUMB_TRY(check_segment(where, device, segment, index, kv_heads, head_dim, out));
    if (host_readable(positions))
      PLUMB_TRY(check_keys_present(where, segment, index, positions.as<const int32_t>(), spec.window));
    launches.push_back({segment.first_row, segment.rows, bf16_data(segment.kv.keys),
                        bf16_data(segment.kv.values), segment.kv.keys.dim(0), segment.kv.end});
    next_row += segment.rows;
  }
  PLUMB_TRY(check_segments_cover(where, "query rows", next_row, rows));
  backend.attention({bf16_data(q), row_stride(q), positions.as<const int32_t>(), launches.data(),
                     static_cast<int64_t>(launches.size()), bf16_out(out), row_stride(out), rows, heads,
                     kv_heads, head_dim, spec.window, spec.scale});
  return {};
}

}  // namespace plumb::ops
