#include "ops/check.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace plumb::ops {

namespace {

std::string dtypes_text(std::initializer_list<DType> dtypes) {
  std::vector<std::string_view> names;
  for (DType dtype : dtypes) names.push_back(dtype_name(dtype));
  return fmt::format("{}", fmt::join(names, " or "));
}

std::string pattern_text(std::initializer_list<int64_t> shape) {
  std::vector<std::string> dims;
  for (int64_t extent : shape) dims.push_back(extent == kAny ? std::string("*") : std::to_string(extent));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

Status check_common(std::string_view where, std::string_view name, const TensorView& view,
                    std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape,
                    Device device) {
  bool dtype_ok = false;
  for (DType dtype : dtypes) dtype_ok = dtype_ok || dtype == view.dtype;
  if (!dtype_ok)
    return error_at(where, "tensor", name, "has the wrong dtype", dtypes_text(dtypes),
                    dtype_name(view.dtype));
  if (view.device != device)
    return error_at(where, "tensor", name, "is on the wrong device", device_name(device),
                    device_name(view.device));
  bool shape_ok = view.shape.size() == shape.size() && view.strides.size() == view.shape.size();
  size_t axis = 0;
  for (int64_t extent : shape) {
    if (!shape_ok) break;
    shape_ok = view.shape[axis] >= 0 && (extent == kAny || view.shape[axis] == extent);
    ++axis;
  }
  if (!shape_ok)
    return error_at(where, "tensor", name, "has the wrong shape", pattern_text(shape),
                    shape_string(view.shape));
  if (view.elements() > 0 && view.data == nullptr)
    return error_at(where, "tensor", name, "has no data", "a pointer", "null");
  return {};
}

// Byte range [first, last) a view can touch.
std::pair<uintptr_t, uintptr_t> byte_span(const TensorView& view) {
  const auto first = reinterpret_cast<uintptr_t>(view.data);
  if (view.elements() == 0) return {first, first};
  int64_t last_element = 0;
  for (size_t axis = 0; axis < view.shape.size(); ++axis)
    last_element += (view.shape[axis] - 1) * view.strides[axis];
  return {first, first + static_cast<uintptr_t>(last_element + 1) * dtype_size(view.dtype)};
}

bool overlap(const TensorView& a, const TensorView& b) {
  const auto [a_first, a_last] = byte_span(a);
  const auto [b_first, b_last] = byte_span(b);
  return a_first < b_last && b_first < a_last;
}

}  // namespace

Status check_rows(std::string_view where, std::string_view name, const TensorView& view,
                  std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape, Device device) {
  PLUMB_TRY(check_common(where, name, view, dtypes, shape, device));
  const Shape expected = contiguous_strides(view.shape);
  for (size_t axis = 1; axis < view.shape.size(); ++axis) {
    if (view.strides[axis] != expected[axis] && view.shape[axis] > 1)
      return error_at(where, "tensor", name, "has non-contiguous rows",
                      fmt::format("strides ending {}", shape_string(std::span(expected).subspan(1))),
                      shape_string(view.strides));
  }
  const int64_t row_size = view.shape.size() > 1 ? expected[0] : 1;
  if (view.shape[0] > 1 && view.strides[0] < row_size)
    return error_at(where, "tensor", name, "has overlapping rows", fmt::format("row stride >= {}", row_size),
                    std::to_string(view.strides[0]));
  return {};
}

Status check_contiguous(std::string_view where, std::string_view name, const TensorView& view, DType dtype,
                        std::initializer_list<int64_t> shape, Device device) {
  PLUMB_TRY(check_common(where, name, view, {dtype}, shape, device));
  if (!view.is_contiguous())
    return error_at(where, "tensor", name, "is not contiguous", shape_string(contiguous_strides(view.shape)),
                    shape_string(view.strides));
  return {};
}

Status check_disjoint(std::string_view where, std::string_view out_name, const TensorView& out,
                      std::string_view in_name, const TensorView& in) {
  if (overlap(out, in))
    return error_at(where, "tensor", out_name, "overlaps an input",
                    fmt::format("no bytes shared with '{}'", in_name), "shared bytes");
  return {};
}

Status check_same_or_disjoint(std::string_view where, std::string_view out_name, const TensorView& out,
                              std::string_view in_name, const TensorView& in) {
  const bool same = out.data == in.data && out.strides == in.strides && out.shape == in.shape;
  if (!same && overlap(out, in))
    return error_at(where, "tensor", out_name, "partly overlaps an input",
                    fmt::format("exactly '{}' or no bytes shared with it", in_name), "a partial overlap");
  return {};
}

Status check_copy_pair(std::string_view where, const TensorView& from, const TensorView& to) {
  if (from.dtype != to.dtype || from.shape != to.shape)
    return error_at(where, "tensor", "to", "differs from the source",
                    fmt::format("{} {}", dtype_name(from.dtype), shape_string(from.shape)),
                    fmt::format("{} {}", dtype_name(to.dtype), shape_string(to.shape)));
  if (!from.is_contiguous() || !to.is_contiguous())
    return error_at(where, "tensor", from.is_contiguous() ? "to" : "from", "is not contiguous", "contiguous",
                    "strided");
  if (from.elements() > 0 && (from.data == nullptr || to.data == nullptr))
    return error_at(where, "tensor", from.data == nullptr ? "from" : "to", "has no data", "a pointer",
                    "null");
  return {};
}

Status check_segment_order(std::string_view where, size_t index, int64_t first_row, int64_t rows,
                           int64_t next_row) {
  if (first_row == next_row && rows >= 0) return {};
  return error_at(where, "parameter", fmt::format("segments[{}]", index), "does not continue the rows",
                  fmt::format("first_row {} and rows >= 0", next_row),
                  fmt::format("first_row {}, rows {}", first_row, rows));
}

Status check_segments_cover(std::string_view where, std::string_view what, int64_t covered, int64_t rows) {
  if (covered == rows) return {};
  return error_at(where, "parameter", "segments", fmt::format("do not cover the {}", what),
                  std::to_string(rows), std::to_string(covered));
}

}  // namespace plumb::ops
