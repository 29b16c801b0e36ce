// Op entries for the row-wise ops: check operands, then call the backend's typed launcher.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/half.hpp"
#include "ops/check.hpp"
#include "ops/launch.hpp"

namespace plumb::ops {

Status embed_rows(Backend& backend, const TensorView& ids, const Weight& table, float scale,
                  const TensorView& out) {
  constexpr std::string_view where = "ops.embed_rows";
  const Device device = backend.device();
  PLUMB_TRY(check_weight(where, table));
  PLUMB_TRY(check_weight_device(where, table, device));
  if (table.format == Weight::Format::dense && table.dense.dtype != DType::bf16)
    return error_at(where, "weight", table.name, "is not a bf16 or affine table", "bf16 or affine",
                    dtype_name(table.dense.dtype));
  PLUMB_TRY(check_contiguous(where, "ids", ids, DType::i32, {kAny}, device));
  const int64_t rows = ids.dim(0);
  PLUMB_TRY(check_rows(where, "out", out, {DType::bf16}, {rows, table.in}, device));
  if (host_readable(ids)) {
    for (int64_t r = 0; r < rows; ++r) {
      const int32_t id = ids.as<const int32_t>()[r];
      if (id < 0 || id >= table.out)
        return error_at(where, "tensor", "ids", fmt::format("holds an id out of range at row {}", r),
                        fmt::format("0 <= id < {}", table.out), std::to_string(id));
    }
  }
  backend.embed_rows({ids.as<const int32_t>(), weight_launch(table), round_bf16(scale), bf16_out(out),
                      row_stride(out), rows});
  return {};
}

namespace {

Status check_eps(std::string_view where, float eps) {
  if (eps >= 0.0f) return {};
  return error_at(where, "parameter", "eps", "is negative or NaN", "eps >= 0", fmt::format("{}", eps));
}

// The launch of checked operands: x and out [rows, heads, dim] (heads 1 for [rows, dim]).
RmsNormLaunch rms_norm_launch(const TensorView& x, const TensorView* weight, const TensorView& out,
                              int64_t rows, int64_t heads, int64_t dim, float eps) {
  return RmsNormLaunch{bf16_data(x),
                       row_stride(x),
                       weight != nullptr ? bf16_data(*weight) : nullptr,
                       bf16_out(out),
                       row_stride(out),
                       rows,
                       heads,
                       dim,
                       eps};
}

// x, out: [rows, dim] or [rows, heads, dim]; weight: bf16 [dim] or nullptr.
Result<RmsNormLaunch> norm_launch(std::string_view where, Device device, const TensorView& x,
                                  const TensorView* weight, float eps, const TensorView& out) {
  if (x.rank() != 2 && x.rank() != 3)
    return error_at(where, "tensor", "x", "has the wrong rank", "[rows, dim] or [rows, heads, dim]",
                    shape_string(x.shape));
  const int64_t rows = x.dim(0);
  const int64_t heads = x.rank() == 3 ? x.dim(1) : 1;
  const int64_t dim = x.dim(-1);
  if (x.rank() == 3) {
    PLUMB_TRY(check_rows(where, "x", x, {DType::bf16}, {kAny, kAny, kAny}, device));
    PLUMB_TRY(check_rows(where, "out", out, {DType::bf16}, {rows, heads, dim}, device));
  } else {
    PLUMB_TRY(check_rows(where, "x", x, {DType::bf16}, {kAny, kAny}, device));
    PLUMB_TRY(check_rows(where, "out", out, {DType::bf16}, {rows, dim}, device));
  }
  PLUMB_TRY(check_same_or_disjoint(where, "out", out, "x", x));
  if (weight != nullptr) PLUMB_TRY(check_contiguous(where, "weight", *weight, DType::bf16, {dim}, device));
  PLUMB_TRY(check_eps(where, eps));
  return rms_norm_launch(x, weight, out, rows, heads, dim, eps);
}

Status check_positions(std::string_view where, Device device, const TensorView& positions, int64_t rows) {
  PLUMB_TRY(check_contiguous(where, "positions", positions, DType::i32, {rows}, device));
  if (host_readable(positions)) {
    for (int64_t r = 0; r < rows; ++r) {
      if (positions.as<const int32_t>()[r] < 0)
        return error_at(where, "tensor", "positions", fmt::format("holds a negative position at row {}", r),
                        "position >= 0", std::to_string(positions.as<const int32_t>()[r]));
    }
  }
  return {};
}

}  // namespace

Status rms_norm(Backend& backend, const TensorView& x, const TensorView* weight, float eps,
                const TensorView& out) {
  auto launch = norm_launch("ops.rms_norm", backend.device(), x, weight, eps, out);
  if (!launch) return launch.error();
  backend.rms_norm(*launch);
  return {};
}

Status residual_norm(Backend& backend, const TensorView& h, const TensorView& o,
                     const TensorView& post_weight, std::optional<float> factor,
                     const TensorView& next_weight, float eps, const TensorView& h_out,
                     const TensorView& next) {
  constexpr std::string_view where = "ops.residual_norm";
  const Device device = backend.device();
  PLUMB_TRY(check_rows(where, "h", h, {DType::bf16}, {kAny, kAny}, device));
  const int64_t rows = h.dim(0), dim = h.dim(1);
  for (const auto& [name, view] : {std::pair{"o", &o}, std::pair{"h_out", &h_out}, std::pair{"next", &next}})
    PLUMB_TRY(check_rows(where, name, *view, {DType::bf16}, {rows, dim}, device));
  PLUMB_TRY(check_contiguous(where, "post_weight", post_weight, DType::bf16, {dim}, device));
  PLUMB_TRY(check_contiguous(where, "next_weight", next_weight, DType::bf16, {dim}, device));
  PLUMB_TRY(check_same_or_disjoint(where, "h_out", h_out, "h", h));
  PLUMB_TRY(check_disjoint(where, "h_out", h_out, "o", o));
  for (const auto& [name, view] : {std::pair{"h", &h}, std::pair{"o", &o}, std::pair{"h_out", &h_out}})
    PLUMB_TRY(check_disjoint(where, "next", next, name, *view));
  PLUMB_TRY(check_eps(where, eps));
  if (factor && !std::isfinite(*factor))
    return error_at(where, "parameter", "factor", "is not finite", "a finite number",
                    fmt::format("{}", *factor));
  // Both launches write next: the post norm uses it as scratch before the next norm overwrites it.
  const auto norm = [&](const TensorView& x, const TensorView& weight) {
    return rms_norm_launch(x, &weight, next, rows, 1, dim, eps);
  };
  backend.residual_norm({norm(o, post_weight), bf16_data(h), row_stride(h), bf16_out(h_out),
                         row_stride(h_out), factor.has_value(), factor ? round_bf16(*factor) : 1.0f,
                         norm(h_out, next_weight)});
  return {};
}

void Backend::residual_norm(const ResidualNormLaunch& launch) {
  const RmsNormLaunch& post = launch.post;
  rms_norm(post);  // into `next`, free until the last step
  add({launch.h, launch.h_stride, post.out, post.out_stride, launch.h_out, DType::bf16, launch.h_out_stride,
       post.rows, post.dim, 0.0f});
  if (launch.scaled)
    scale({launch.h_out, launch.h_out_stride, nullptr, 0, launch.h_out, DType::bf16, launch.h_out_stride,
           post.rows, post.dim, launch.factor});
  rms_norm(launch.next_norm);
}

namespace {

Status check_rope(std::string_view where, const RopeSpec& rope, int64_t head_dim, std::string_view x_name) {
  if (rope.head_dim != head_dim || rope.head_dim % 2 != 0)
    return error_at(where, "parameter", "rope.head_dim", fmt::format("disagrees with {}", x_name),
                    fmt::format("an even {}", head_dim), std::to_string(rope.head_dim));
  if (!(rope.theta > 0.0) || !(rope.factor > 0.0) ||
      !(rope.partial_rotary_factor >= 0.0 && rope.partial_rotary_factor <= 1.0))
    return error_at(where, "parameter", "rope", "has an invalid theta, factor or partial_rotary_factor",
                    "theta > 0, factor > 0, 0 <= partial <= 1",
                    fmt::format("{}, {}, {}", rope.theta, rope.factor, rope.partial_rotary_factor));
  return {};
}

}  // namespace

Status norm_rope(Backend& backend, const TensorView& x, const TensorView* weight, float eps,
                 const TensorView& positions, const RopeSpec& rope, const TensorView& out) {
  constexpr std::string_view where = "ops.norm_rope";
  if (x.rank() != 3)
    return error_at(where, "tensor", "x", "has the wrong rank", "[rows, heads, head_dim]",
                    shape_string(x.shape));
  auto launch = norm_launch(where, backend.device(), x, weight, eps, out);
  if (!launch) return launch.error();
  PLUMB_TRY(check_rope(where, rope, x.dim(2), "x"));
  PLUMB_TRY(check_positions(where, backend.device(), positions, x.dim(0)));
  const std::vector<float> inv_freq = rope_inv_freq(rope);
  backend.norm_rope({*launch, positions.as<const int32_t>(), inv_freq.data()});
  return {};
}

void Backend::head_norms(const HeadNormsLaunch& launch) {
  rms_norm(launch.v);  // first: its source may be k's raw rows
  norm_rope(launch.q);
  norm_rope(launch.k);
  if (launch.cache != nullptr) kv_write(*launch.cache);
}

namespace {

// The single-cache entry names its cache "kv", the segment list "segments[i].kv"; the name is built only for
// an error, so a launch of many segments formats nothing.
struct CacheNames {
  bool single;
  std::string_view keys = "keys",
                   values = "values";  // the rows written: kv_write's inputs, head_norms' outputs
  std::string cache(size_t index, std::string_view field) const {
    return single ? fmt::format("kv.{}", field) : fmt::format("segments[{}].kv.{}", index, field);
  }
};

template <class Check>
Status named(const CacheNames& names, size_t index, std::string_view field, const Check& check) {
  if (check(field).ok()) return {};
  return check(names.cache(index, field));
}

Status check_kv_segment(std::string_view where, Device device, const KvSegment& segment, size_t index,
                        const TensorView& keys, const TensorView& values, const CacheNames& names) {
  const int64_t kv_heads = keys.dim(1), head_dim = keys.dim(2);
  const TensorView& cache_keys = segment.kv.keys;
  const TensorView& cache_values = segment.kv.values;
  PLUMB_TRY(named(names, index, "keys", [&](std::string_view name) {
    return check_contiguous(where, name, cache_keys, DType::bf16, {kAny, kv_heads, head_dim}, device);
  }));
  const int64_t capacity = cache_keys.dim(0);
  PLUMB_TRY(named(names, index, "values", [&](std::string_view name) {
    return check_contiguous(where, name, cache_values, DType::bf16, {capacity, kv_heads, head_dim}, device);
  }));
  if (segment.rows > capacity)
    return names.single ? error_at(where, "tensor", "keys", "has more rows than the cache has slots",
                                   fmt::format("at most {} rows", capacity), std::to_string(segment.rows))
                        : error_at(where, "parameter", fmt::format("segments[{}]", index),
                                   "has more rows than its cache has slots",
                                   fmt::format("at most {} rows", capacity), std::to_string(segment.rows));
  for (const auto& [input, view] : {std::pair{names.keys, &keys}, std::pair{names.values, &values}}) {
    PLUMB_TRY(named(names, index, "keys", [&](std::string_view name) {
      return check_disjoint(where, name, cache_keys, input, *view);
    }));
    PLUMB_TRY(named(names, index, "values", [&](std::string_view name) {
      return check_disjoint(where, name, cache_values, input, *view);
    }));
  }
  return {};
}

// Every cache tensor of every segment is written by one launch: none may share a byte with another.
Status check_caches_disjoint(std::string_view where, std::span<const KvSegment> segments,
                             const CacheNames& names) {
  struct Range {
    uintptr_t first;
    uintptr_t last;  // one past
    size_t index;
    bool values;
  };
  std::vector<Range> ranges;
  for (size_t index = 0; index < segments.size(); ++index)
    for (const bool values : {false, true}) {
      const TensorView& view = values ? segments[index].kv.values : segments[index].kv.keys;
      const auto first = reinterpret_cast<uintptr_t>(view.data);
      if (view.bytes() > 0) ranges.push_back({first, first + view.bytes(), index, values});
    }
  std::sort(ranges.begin(), ranges.end(), [](const Range& a, const Range& b) {
    return std::tie(a.first, a.index, a.values) < std::tie(b.first, b.index, b.values);
  });
  const auto name = [&](const Range& range) {
    return names.cache(range.index, range.values ? "values" : "keys");
  };
  // Of the overlaps the sweep finds, the one of the first segment (keys before values) is named, so the error
  // does not depend on where the allocator put the tensors.
  std::optional<std::pair<size_t, size_t>> reported;  // (range, the range it overlaps)
  const auto before = [&](size_t a, size_t b) {
    return std::tie(ranges[a].index, ranges[a].values) < std::tie(ranges[b].index, ranges[b].values);
  };
  for (size_t k = 1, reach = 0; k < ranges.size(); ++k) {
    if (ranges[k].first < ranges[reach].last && (!reported || before(k, reported->first)))
      reported = {k, reach};
    if (ranges[k].last > ranges[reach].last) reach = k;
  }
  if (!reported) return {};
  return error_at(where, "tensor", name(ranges[reported->first]), "shares bytes with another cache",
                  fmt::format("no bytes shared with '{}'", name(ranges[reported->second])), "shared bytes");
}

// Checks a write of keys and values rows into the segments' caches and makes its launch in `plan`.
Status plan_kv_write(std::string_view where, Device device, std::span<const KvSegment> segments,
                     const TensorView& positions, const TensorView& keys, const TensorView& values,
                     const CacheNames& names, KvWritePlan& plan) {
  PLUMB_TRY(check_rows(where, names.keys, keys, {DType::bf16}, {kAny, kAny, kAny}, device));
  const int64_t rows = keys.dim(0), kv_heads = keys.dim(1), head_dim = keys.dim(2);
  PLUMB_TRY(check_rows(where, names.values, values, {DType::bf16}, {rows, kv_heads, head_dim}, device));
  PLUMB_TRY(check_positions(where, device, positions, rows));
  plan.segments.clear();
  plan.segments.reserve(segments.size());
  int64_t next_row = 0;
  for (size_t index = 0; index < segments.size(); ++index) {
    const KvSegment& segment = segments[index];
    PLUMB_TRY(check_segment_order(where, index, segment.first_row, segment.rows, next_row));
    PLUMB_TRY(check_kv_segment(where, device, segment, index, keys, values, names));
    if (segment.rows > 0)
      plan.segments.push_back({segment.first_row, segment.rows, bf16_out(segment.kv.keys),
                               bf16_out(segment.kv.values), segment.kv.keys.dim(0)});
    next_row += segment.rows;
  }
  PLUMB_TRY(check_segments_cover(where, "key rows", next_row, rows));
  PLUMB_TRY(check_caches_disjoint(where, segments, names));
  plan.launch = {plan.segments.data(),
                 static_cast<int64_t>(plan.segments.size()),
                 positions.as<const int32_t>(),
                 bf16_data(keys),
                 row_stride(keys),
                 bf16_data(values),
                 row_stride(values),
                 rows,
                 kv_heads,
                 head_dim};
  return {};
}

Status write_segments(Backend& backend, std::span<const KvSegment> segments, const TensorView& positions,
                      const TensorView& keys, const TensorView& values, const CacheNames& names) {
  KvWritePlan plan;
  PLUMB_TRY(plan_kv_write("ops.kv_write", backend.device(), segments, positions, keys, values, names, plan));
  backend.kv_write(plan.launch);
  return {};
}

}  // namespace

Status kv_write(Backend& backend, const KvView& kv, const TensorView& positions, const TensorView& keys,
                const TensorView& values) {
  const KvSegment segment{0, keys.rank() == 3 ? keys.dim(0) : 0, kv};
  return write_segments(backend, std::span(&segment, 1), positions, keys, values, CacheNames{true});
}

Status kv_write(Backend& backend, std::span<const KvSegment> segments, const TensorView& positions,
                const TensorView& keys, const TensorView& values) {
  return write_segments(backend, segments, positions, keys, values, CacheNames{false});
}

// With `segments`, also kv_write's checks of k_out and v_out into their caches (which no operand may overlap:
// they are written while the others are read).
Status plan_head_norms(std::string_view where, Device device, const HeadNormsOperands& operands,
                       const std::span<const KvSegment>* segments, HeadNormsPlan& plan) {
  const auto& [q, q_weight, k, k_weight, v_source, positions, rope, eps, q_out, k_out, v_out] = operands;
  PLUMB_TRY(check_rows(where, "q", q, {DType::bf16}, {kAny, kAny, kAny}, device));
  const int64_t rows = q.dim(0), heads = q.dim(1), dim = q.dim(2);
  PLUMB_TRY(check_rows(where, "k", k, {DType::bf16}, {rows, kAny, dim}, device));
  const int64_t kv_heads = k.dim(1);
  if (heads == 0 || kv_heads == 0)
    return error_at(where, "tensor", heads == 0 ? "q" : "k", "has no heads", "at least 1 head", "0");
  PLUMB_TRY(check_rows(where, "v_source", v_source, {DType::bf16}, {rows, kv_heads, dim}, device));
  PLUMB_TRY(check_rows(where, "q_out", q_out, {DType::bf16}, {rows, heads, dim}, device));
  PLUMB_TRY(check_rows(where, "k_out", k_out, {DType::bf16}, {rows, kv_heads, dim}, device));
  PLUMB_TRY(check_rows(where, "v_out", v_out, {DType::bf16}, {rows, kv_heads, dim}, device));
  PLUMB_TRY(check_contiguous(where, "q_weight", q_weight, DType::bf16, {dim}, device));
  PLUMB_TRY(check_contiguous(where, "k_weight", k_weight, DType::bf16, {dim}, device));
  PLUMB_TRY(check_same_or_disjoint(where, "q_out", q_out, "q", q));
  PLUMB_TRY(check_same_or_disjoint(where, "k_out", k_out, "k", k));
  PLUMB_TRY(check_same_or_disjoint(where, "v_source", v_source, "k", k));
  const bool values_from_keys = v_source.data == k.data;  // then exactly k (checked above)
  if (!values_from_keys) PLUMB_TRY(check_same_or_disjoint(where, "v_out", v_out, "v_source", v_source));
  // Each output is its own input (in place) or shares no byte with any other operand.
  const auto disjoint =
      [&](std::string_view out_name, const TensorView& out,
          std::initializer_list<std::pair<std::string_view, const TensorView*>> others) -> Status {
    for (const auto& [name, view] : others) PLUMB_TRY(check_disjoint(where, out_name, out, name, *view));
    return {};
  };
  PLUMB_TRY(
      disjoint("q_out", q_out, {{"k", &k}, {"v_source", &v_source}, {"k_out", &k_out}, {"v_out", &v_out}}));
  PLUMB_TRY(disjoint("v_out", v_out, {{"q", &q}, {"k", &k}, {"k_out", &k_out}}));
  PLUMB_TRY(disjoint("k_out", k_out, {{"q", &q}}));
  if (!values_from_keys) PLUMB_TRY(disjoint("k_out", k_out, {{"v_source", &v_source}}));
  PLUMB_TRY(check_eps(where, eps));
  PLUMB_TRY(check_rope(where, rope, dim, "q"));
  PLUMB_TRY(check_positions(where, device, positions, rows));
  plan.inv_freq = rope_inv_freq(rope);
  const auto norm = [&](const TensorView& x, const TensorView* weight, const TensorView& out) {
    return rms_norm_launch(x, weight, out, rows, x.dim(1), dim, eps);
  };
  KvWritePlan& cache = plan.cache;
  if (segments != nullptr) {
    const CacheNames names{false, "k_out", "v_out"};
    PLUMB_TRY(plan_kv_write(where, device, *segments, positions, k_out, v_out, names, cache));
    for (size_t index = 0; index < segments->size(); ++index)
      for (const std::string_view field : {"keys", "values"}) {
        const KvView& kv = (*segments)[index].kv;
        const TensorView& written = field == "keys" ? kv.keys : kv.values;
        for (const auto& [name, view] : {std::pair{"q", &q}, std::pair{"q_out", &q_out}, std::pair{"k", &k},
                                         std::pair{"v_source", &v_source}})
          PLUMB_TRY(named(names, index, field, [&](std::string_view cache_name) {
            return check_disjoint(where, cache_name, written, name, *view);
          }));
      }
  }
  const int32_t* at = positions.as<const int32_t>();
  plan.launch = {norm(v_source, nullptr, v_out),
                 {norm(q, &q_weight, q_out), at, plan.inv_freq.data()},
                 {norm(k, &k_weight, k_out), at, plan.inv_freq.data()}};
  if (segments != nullptr) plan.launch.cache = &cache.launch;
  return {};
}

namespace {

Status run_head_norms(Backend& backend, const HeadNormsOperands& operands,
                      const std::span<const KvSegment>* segments) {
  HeadNormsPlan plan;
  PLUMB_TRY(plan_head_norms("ops.head_norms", backend.device(), operands, segments, plan));
  backend.head_norms(plan.launch);
  return {};
}

}  // namespace

Status head_norms(Backend& backend, const TensorView& q, const TensorView& q_weight, const TensorView& k,
                  const TensorView& k_weight, const TensorView& v_source, const TensorView& positions,
                  const RopeSpec& rope, float eps, const TensorView& q_out, const TensorView& k_out,
                  const TensorView& v_out) {
  return run_head_norms(
      backend, {q, q_weight, k, k_weight, v_source, positions, rope, eps, q_out, k_out, v_out}, nullptr);
}

Status head_norms(Backend& backend, const TensorView& q, const TensorView& q_weight, const TensorView& k,
                  const TensorView& k_weight, const TensorView& v_source, const TensorView& positions,
                  const RopeSpec& rope, float eps, const TensorView& q_out, const TensorView& k_out,
                  const TensorView& v_out, std::span<const KvSegment> segments) {
  return run_head_norms(
      backend, {q, q_weight, k, k_weight, v_source, positions, rope, eps, q_out, k_out, v_out}, &segments);
}

}  // namespace plumb::ops
