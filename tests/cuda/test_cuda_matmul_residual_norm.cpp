// matmul_residual_norm on CUDA equals its steps (matmul, then residual_norm) on the same backend bit for
// bit: o, h_out (in place over h, as the forward runs it) and next, whether residual_norm runs in the
// matmul's K-split reduce (bf16 at 1 to 32 rows on sm_90, a cluster a row) or after the matmul (33 rows and
// more).
#include <optional>
#include <string>
#include <vector>

#include "cuda_test_util.hpp"

namespace plumb::cuda {
namespace {

using testing::tiled_gpu;

struct Case {
  std::string label;
  int64_t in, dim;
  std::optional<float> factor;
};

struct Operands {
  testing::DeviceWeight weight;
  DeviceTensor x, post_weight, next_weight;
  ops::testing::Values h;
};

struct Outputs {
  DeviceTensor o, h, next;  // h starts as the operands' h and ends as h_out
};

Operands make_operands(ops::Backend& backend, const Case& c, int64_t rows) {
  return {
      testing::dense_weight(backend, ops::testing::random_bf16(70, c.dim * c.in, -0.05, 0.05), c.dim, c.in),
      ops::testing::device_bf16(backend, ops::testing::random_bf16(71 + rows, rows * c.in, -2, 2),
                                {rows, c.in}),
      ops::testing::device_bf16(backend, ops::testing::random_bf16(72, c.dim, 0.5, 1.5), {c.dim}),
      ops::testing::device_bf16(backend, ops::testing::random_bf16(73, c.dim, 0.5, 1.5), {c.dim}),
      ops::testing::random_bf16(74 + rows, rows * c.dim, -4, 4)};
}

// Runs the op (fused) or its steps, then returns o, h_out and next's bytes.
std::vector<uint8_t> run(ops::Backend& backend, const Case& c, const Operands& o, int64_t rows, bool fused) {
  Outputs out{ops::testing::device_zeros(backend, DType::bf16, {rows, c.dim}),
              ops::testing::device_bf16(backend, o.h, {rows, c.dim}),
              ops::testing::device_zeros(backend, DType::bf16, {rows, c.dim})};
  const ops::ResidualNormOperands norm{out.h.view,         out.o.view, o.post_weight.view, c.factor,
                                       o.next_weight.view, 1e-6f,      out.h.view,         out.next.view};
  Status status = fused ? ops::matmul_residual_norm(backend, o.x.view, o.weight.weight, norm)
                        : ops::matmul(backend, o.x.view, o.weight.weight, out.o.view);
  if (status.ok() && !fused)
    status = ops::residual_norm(backend, norm.h, norm.o, norm.post_weight, norm.factor, norm.next_weight,
                                norm.eps, norm.h_out, norm.next);
  EXPECT_TRUE(status.ok()) << status.error().message;
  const DeviceTensor* written[] = {&out.o, &out.h, &out.next};
  return testing::tensors_bytes(backend, written);
}

// Gemma 4 12B's o and down (with the layer scalar), 31B's hidden width (the widest rows' path), a width the
// cluster's blocks share unevenly, and a plan with one split (the matmul's stored rows are read).
TEST(CudaMatmulResidualNorm, EqualsItsStepsBitForBit) {
  PLUMB_GPU_OR_SKIP();
  ops::Backend& backend = *tiled_gpu();
  const std::vector<Case> cases = {
      {"12b o", 4096, 3840, std::nullopt},     {"12b down", 15360, 3840, 0.59765625f},
      {"31b hidden", 1024, 5376, 0.59765625f}, {"width 520", 512, 520, std::nullopt},
      {"one split", 256, 512, std::nullopt},
  };
  for (const Case& c : cases)
    for (int64_t rows : {1, 5, 16, 17, 32, 33}) {
      const Operands o = make_operands(backend, c, rows);
      testing::expect_same_bits(fmt::format("{} rows {}", c.label, rows), run(backend, c, o, rows, true),
                                run(backend, c, o, rows, false), 2);
      if (::testing::Test::HasFailure()) return;
    }
}

}  // namespace
}  // namespace plumb::cuda
