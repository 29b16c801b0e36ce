// Op entries for matmul, the elementwise ops and argmax: check operands, then call the typed launcher.
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/half.hpp"
#include "ops/check.hpp"
#include "ops/launch.hpp"

namespace plumb::ops {

namespace {

Result<MatmulLaunch> matmul_launch(std::string_view where, Device device, const TensorView& x,
                                   const Weight& weight, const TensorView& out, std::string_view out_name) {
  PLUMB_TRY(check_weight(where, weight));
  PLUMB_TRY(check_weight_device(where, weight, device));
  PLUMB_TRY(check_rows(where, "x", x, {DType::bf16}, {kAny, weight.in}, device));
  PLUMB_TRY(check_rows(where, out_name, out, {DType::bf16, DType::f32}, {x.dim(0), weight.out}, device));
  PLUMB_TRY(check_disjoint(where, out_name, out, "x", x));
  return MatmulLaunch{bf16_data(x),    row_stride(x), weight_launch(weight), out.data, out.dtype,
                      row_stride(out), x.dim(0)};
}

}  // namespace

Status matmul(Backend& backend, const TensorView& x, const Weight& weight, const TensorView& out) {
  Result<MatmulLaunch> launch = matmul_launch("ops.matmul", backend.device(), x, weight, out, "out");
  if (!launch.ok()) return launch.error();
  backend.matmul(*launch);
  return {};
}

Result<std::vector<MatmulLaunch>> matmul_group_launches(std::string_view where, Device device,
                                                        const TensorView& x,
                                                        std::span<const MatmulMember> members) {
  if (members.empty() || members.size() > kMatmulGroupMembers)
    return error_at(where, "group", "members", "has a member count out of range",
                    fmt::format("1 to {}", kMatmulGroupMembers), std::to_string(members.size()));
  std::vector<MatmulLaunch> launches;
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string out_name = fmt::format("members[{}].out", i);
    if (members[i].weight == nullptr)
      return error_at(where, "weight", fmt::format("members[{}].weight", i), "is missing");
    Result<MatmulLaunch> launch =
        matmul_launch(where, device, x, *members[i].weight, members[i].out, out_name);
    if (!launch.ok()) return launch.error();
    for (size_t j = 0; j < i; ++j)
      PLUMB_TRY(
          check_disjoint(where, out_name, members[i].out, fmt::format("members[{}].out", j), members[j].out));
    launches.push_back(*launch);
  }
  return launches;
}

Status matmul_group(Backend& backend, const TensorView& x, std::span<const MatmulMember> members) {
  Result<std::vector<MatmulLaunch>> launches =
      matmul_group_launches("ops.matmul_group", backend.device(), x, members);
  if (!launches.ok()) return launches.error();
  backend.matmul_group({*launches});
  return {};
}

void Backend::matmul_group(const MatmulGroupLaunch& launch) {
  for (const MatmulLaunch& member : launch.members) matmul(member);
}

Status matmul_head_norms(Backend& backend, const TensorView& x, std::span<const MatmulMember> members,
                         const HeadNormsOperands& norms, std::span<const KvSegment> segments) {
  constexpr std::string_view where = "ops.matmul_head_norms";
  Result<std::vector<MatmulLaunch>> launches = matmul_group_launches(where, backend.device(), x, members);
  if (!launches.ok()) return launches.error();
  HeadNormsPlan plan;
  PLUMB_TRY(plan_head_norms(where, backend.device(), norms, &segments, plan));
  backend.matmul_head_norms({{*launches}, plan.launch});
  return {};
}

void Backend::matmul_head_norms(const MatmulHeadNormsLaunch& launch) {
  matmul_group(launch.group);
  head_norms(launch.norms);
}

namespace {

// a (and b when given) bf16 [rows, width]; out [rows, width] in one of out_dtypes, equal to or disjoint from
// each bf16 input of its dtype.
Result<RowsLaunch> rows_launch(std::string_view where, Device device, std::string_view a_name,
                               const TensorView& a, std::string_view b_name, const TensorView* b,
                               const TensorView& out, std::initializer_list<DType> out_dtypes, float factor) {
  PLUMB_TRY(check_rows(where, a_name, a, {DType::bf16}, {kAny, kAny}, device));
  const int64_t rows = a.dim(0), width = a.dim(1);
  if (b != nullptr) PLUMB_TRY(check_rows(where, b_name, *b, {DType::bf16}, {rows, width}, device));
  PLUMB_TRY(check_rows(where, "out", out, out_dtypes, {rows, width}, device));
  if (out.dtype == DType::bf16) {
    PLUMB_TRY(check_same_or_disjoint(where, "out", out, a_name, a));
    if (b != nullptr) PLUMB_TRY(check_same_or_disjoint(where, "out", out, b_name, *b));
  } else {
    PLUMB_TRY(check_disjoint(where, "out", out, a_name, a));
  }
  return RowsLaunch{bf16_data(a),
                    row_stride(a),
                    b != nullptr ? bf16_data(*b) : nullptr,
                    b != nullptr ? row_stride(*b) : 0,
                    out.data,
                    out.dtype,
                    row_stride(out),
                    rows,
                    width,
                    factor};
}

}  // namespace

Status geglu(Backend& backend, const TensorView& gate, const TensorView& up, const TensorView& out) {
  auto launch = rows_launch("ops.geglu", backend.device(), "gate", gate, "up", &up, out, {DType::bf16}, 0.0f);
  if (!launch) return launch.error();
  backend.geglu(*launch);
  return {};
}

Status matmul_geglu(Backend& backend, const TensorView& x, const Weight& gate_weight, const Weight& up_weight,
                    const TensorView& gate, const TensorView& up, const TensorView& out) {
  constexpr std::string_view where = "ops.matmul_geglu";
  Result<MatmulLaunch> gate_launch = matmul_launch(where, backend.device(), x, gate_weight, gate, "gate");
  if (!gate_launch.ok()) return gate_launch.error();
  Result<MatmulLaunch> up_launch = matmul_launch(where, backend.device(), x, up_weight, up, "up");
  if (!up_launch.ok()) return up_launch.error();
  PLUMB_TRY(check_disjoint(where, "up", up, "gate", gate));
  auto geglu_launch = rows_launch(where, backend.device(), "gate", gate, "up", &up, out, {DType::bf16}, 0.0f);
  if (!geglu_launch) return geglu_launch.error();
  backend.matmul_geglu({*gate_launch, *up_launch, *geglu_launch});
  return {};
}

void Backend::matmul_geglu(const MatmulGegluLaunch& launch) {
  const MatmulLaunch members[] = {launch.gate, launch.up};
  matmul_group({members});
  geglu(launch.geglu);
}

Status add(Backend& backend, const TensorView& a, const TensorView& b, const TensorView& out) {
  auto launch = rows_launch("ops.add", backend.device(), "a", a, "b", &b, out, {DType::bf16}, 0.0f);
  if (!launch) return launch.error();
  backend.add(*launch);
  return {};
}

Status scale(Backend& backend, const TensorView& x, float factor, const TensorView& out) {
  constexpr std::string_view where = "ops.scale";
  if (!std::isfinite(factor))
    return error_at(where, "parameter", "factor", "is not finite", "a finite number",
                    fmt::format("{}", factor));
  auto launch =
      rows_launch(where, backend.device(), "x", x, "", nullptr, out, {DType::bf16}, round_bf16(factor));
  if (!launch) return launch.error();
  backend.scale(*launch);
  return {};
}

Status soft_cap(Backend& backend, const TensorView& x, float cap, const TensorView& out) {
  constexpr std::string_view where = "ops.soft_cap";
  if (!(cap > 0.0f) || !std::isfinite(cap))
    return error_at(where, "parameter", "cap", "is not a positive finite number", "cap > 0",
                    fmt::format("{}", cap));
  auto launch =
      rows_launch(where, backend.device(), "x", x, "", nullptr, out, {DType::bf16, DType::f32}, cap);
  if (!launch) return launch.error();
  backend.soft_cap(*launch);
  return {};
}

Status argmax(Backend& backend, const TensorView& x, const TensorView& out) {
  constexpr std::string_view where = "ops.argmax";
  const Device device = backend.device();
  PLUMB_TRY(check_rows(where, "x", x, {DType::bf16, DType::f32}, {kAny, kAny}, device));
  if (x.dim(1) < 1 || x.dim(1) > INT32_MAX)
    return error_at(where, "tensor", "x", "has a width no i32 index covers", "1 to 2^31 - 1 columns",
                    std::to_string(x.dim(1)));
  PLUMB_TRY(check_contiguous(where, "out", out, DType::i32, {x.dim(0)}, device));
  PLUMB_TRY(check_disjoint(where, "out", out, "x", x));
  backend.argmax({x.data, x.dtype, row_stride(x), out.as<int32_t>(), x.dim(0), x.dim(1)});
  return {};
}

Status sample(Backend& backend, const TensorView& x, const TensorView& params, const TensorView& out) {
  constexpr std::string_view where = "ops.sample";
  const Device device = backend.device();
  PLUMB_TRY(check_rows(where, "x", x, {DType::bf16, DType::f32}, {kAny, kAny}, device));
  if (x.dim(1) < 1 || x.dim(1) > keyed::kMaxWidth)
    return error_at(where, "tensor", "x", "has a width the keyed weights cannot sum", "1 to 2^20 columns",
                    std::to_string(x.dim(1)));
  const auto param_bytes = static_cast<int64_t>(sizeof(SampleParams));
  PLUMB_TRY(check_contiguous(where, "params", params, DType::u8, {x.dim(0), param_bytes}, device));
  if (reinterpret_cast<uintptr_t>(params.data) % alignof(SampleParams) != 0)
    return error_at(where, "tensor", "params", "is misaligned", "8-byte alignment",
                    fmt::format("address % 8 == {}", reinterpret_cast<uintptr_t>(params.data) % 8));
  PLUMB_TRY(check_contiguous(where, "out", out, DType::i32, {x.dim(0)}, device));
  PLUMB_TRY(check_disjoint(where, "out", out, "x", x));
  PLUMB_TRY(check_disjoint(where, "out", out, "params", params));
  backend.sample({x.data, x.dtype, row_stride(x), static_cast<const SampleParams*>(params.data),
                  out.as<int32_t>(), x.dim(0), x.dim(1)});
  return {};
}

}  // namespace plumb::ops
