#pragma once
// Operand checks shared by the op entries: each names the op (`where`) and the tensor on failure.
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace plumb::ops {

inline constexpr int64_t kAny = -1;

// A "row tensor": dtype one of `dtypes`, on `device`, shape equal to `shape` (kAny matches any extent), every
// dim after the first contiguous, the first (row) stride at least the row's size; data present when
// non-empty.
Status check_rows(std::string_view where, std::string_view name, const TensorView& view,
                  std::initializer_list<DType> dtypes, std::initializer_list<int64_t> shape, Device device);

// A fully contiguous tensor (weights, caches).
Status check_contiguous(std::string_view where, std::string_view name, const TensorView& view, DType dtype,
                        std::initializer_list<int64_t> shape, Device device);

// Refuses an output whose bytes overlap an input's (for ops that read an input after writing the output).
Status check_disjoint(std::string_view where, std::string_view out_name, const TensorView& out,
                      std::string_view in_name, const TensorView& in);

// Allows out to be exactly `in` (same data and strides) or disjoint from it, nothing in between.
Status check_same_or_disjoint(std::string_view where, std::string_view out_name, const TensorView& out,
                              std::string_view in_name, const TensorView& in);

// The two sides of a copy between memories: same dtype and shape, both contiguous, data present when
// non-empty.
Status check_copy_pair(std::string_view where, const TensorView& from, const TensorView& to);

// Segment `index` of a segment list (kv_write, attention) starts where the previous one ended, at `next_row`,
// with rows >= 0.
Status check_segment_order(std::string_view where, size_t index, int64_t first_row, int64_t rows,
                           int64_t next_row);

// The segments' rows (`covered`) add up to the call's `rows` of `what` (e.g. "key rows").
Status check_segments_cover(std::string_view where, std::string_view what, int64_t covered, int64_t rows);

}  // namespace plumb::ops
