// matmul_head_norms on CUDA equals its steps (matmul_group, then head_norms with the caches) on the same
// backend bit for bit: q, k, v and every stream's cache, whether head_norms runs in the members' K-split
// reduce (bf16 at 1 to 32 rows: the members' tiled launches to 16, the grouped tile's above) or after the
// group (33 rows and more).
#include <cstring>
#include <random>
#include <span>

#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

using testing::tiled_gpu;

struct Case {
  std::string label;
  int64_t in, heads, kv_heads;
  ops::RopeSpec rope;
  bool values_from_keys;  // two members (q and k), the values the raw keys' norm
};

struct Operands {
  std::vector<testing::DeviceWeight> weights;  // q, k[, v]
  DeviceTensor x, q_norm, k_norm, positions;
};

struct Outputs {
  DeviceTensor q, k, v;
  std::vector<DeviceTensor> caches;  // keys, values for each row's stream
  std::vector<ops::KvSegment> segments;
};

constexpr int64_t kSlots = 8;

Operands make_operands(ops::Backend& backend, const Case& c, int64_t rows) {
  const int64_t dim = c.rope.head_dim;
  Operands o;
  const int64_t widths[] = {c.heads * dim, c.kv_heads * dim, c.kv_heads * dim};
  for (int i = 0; i < (c.values_from_keys ? 2 : 3); ++i)
    o.weights.push_back(testing::dense_weight(
        backend, ops::testing::random_bf16(40 + i, widths[i] * c.in, -0.05, 0.05), widths[i], c.in));
  o.x = ops::testing::device_bf16(backend, ops::testing::random_bf16(50 + rows, rows * c.in, -2, 2),
                                  {rows, c.in});
  o.q_norm = ops::testing::device_bf16(backend, ops::testing::random_bf16(60, dim, -2, 2), {dim});
  o.k_norm = ops::testing::device_bf16(backend, ops::testing::random_bf16(61, dim, -2, 2), {dim});
  std::vector<int32_t> positions(static_cast<size_t>(rows));
  std::mt19937 engine(static_cast<uint32_t>(rows));
  for (int32_t& p : positions) p = static_cast<int32_t>(engine() % 200000);
  o.positions = ops::testing::device_i32(backend, positions);
  return o;
}

// Zeroed q, k, v and one stream's cache per row.
Outputs make_outputs(ops::Backend& backend, const Case& c, int64_t rows, std::span<const int32_t> positions) {
  const int64_t dim = c.rope.head_dim;
  Outputs out;
  out.q = ops::testing::device_zeros(backend, DType::bf16, {rows, c.heads, dim});
  out.k = ops::testing::device_zeros(backend, DType::bf16, {rows, c.kv_heads, dim});
  out.v = ops::testing::device_zeros(backend, DType::bf16, {rows, c.kv_heads, dim});
  for (int64_t r = 0; r < rows; ++r)
    for (int half = 0; half < 2; ++half)
      out.caches.push_back(ops::testing::device_zeros(backend, DType::bf16, {kSlots, c.kv_heads, dim}));
  for (int64_t r = 0; r < rows; ++r)
    out.segments.push_back(
        {r, 1, {out.caches[2 * r].view, out.caches[2 * r + 1].view, positions[r] + int64_t{1}}});
  return out;
}

// [rows, heads, dim] as the matmul's [rows, heads * dim].
TensorView flat(const DeviceTensor& t) {
  const TensorView& view = t.view;
  return TensorView::contiguous(view.data, view.dtype, {view.dim(0), view.dim(1) * view.dim(2)}, view.device);
}

// Runs the op (fused) or its steps into `out`, then returns q, k, v and the caches' bytes.
std::vector<uint8_t> run(ops::Backend& backend, const Case& c, const Operands& o, Outputs& out, bool fused) {
  std::vector<ops::MatmulMember> members = {{&o.weights[0].weight, flat(out.q)},
                                            {&o.weights[1].weight, flat(out.k)}};
  if (!c.values_from_keys) members.push_back({&o.weights[2].weight, flat(out.v)});
  const TensorView& values = c.values_from_keys ? out.k.view : out.v.view;
  const ops::HeadNormsOperands norms{out.q.view, o.q_norm.view,    out.k.view, o.k_norm.view,
                                     values,     o.positions.view, c.rope,     1e-6f,
                                     out.q.view, out.k.view,       out.v.view};
  Status status = fused ? ops::matmul_head_norms(backend, o.x.view, members, norms, out.segments)
                        : ops::matmul_group(backend, o.x.view, members);
  if (status.ok() && !fused)
    status = ops::head_norms(backend, norms.q, norms.q_weight, norms.k, norms.k_weight, norms.v_source,
                             norms.positions, norms.rope, norms.eps, norms.q_out, norms.k_out, norms.v_out,
                             out.segments);
  EXPECT_TRUE(status.ok()) << status.error().message;
  return testing::head_norms_bytes(backend, out.q, out.k, out.v, out.caches);
}

// Gemma 4 12B's sliding and global layers (their K splits run across blocks at these rows), a head_dim the
// register kernel does not take, and a width whose plan has one split (the members' stored rows are read).
TEST(CudaMatmulHeadNorms, EqualsItsStepsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  ops::Backend& backend = *tiled_gpu();
  const std::vector<Case> cases = {
      {"12b sliding", 3840, 16, 8, {10000.0, 256, 1.0, 1.0}, false},
      {"12b global", 3840, 16, 1, {1000000.0, 512, 0.25, 1.0}, true},
      {"head_dim 40", 520, 4, 2, {10000.0, 40, 1.0, 2.0}, false},
      {"one split", 256, 8, 4, {10000.0, 128, 1.0, 1.0}, false},
  };
  for (const Case& c : cases)
    for (int64_t rows : {1, 5, 16, 17, 32, 33}) {
      const Operands o = make_operands(backend, c, rows);
      const std::vector<uint8_t> at = ops::testing::download_bytes(backend, o.positions.view);
      std::vector<int32_t> positions(static_cast<size_t>(rows));
      std::memcpy(positions.data(), at.data(), at.size());
      Outputs fused = make_outputs(backend, c, rows, positions),
              steps = make_outputs(backend, c, rows, positions);
      testing::expect_same_bits(fmt::format("{} rows {}", c.label, rows), run(backend, c, o, fused, true),
                                run(backend, c, o, steps, false), 2);
      if (::testing::Test::HasFailure()) return;
    }
}

}  // namespace
}  // namespace plumb::cuda
