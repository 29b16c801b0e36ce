// Malformed operands are refused with the op and the tensor named; strided row slices are accepted.
#include "cpu/cpu_backend.hpp"
#include "ops/affine.hpp"
#include "ops_test_util.hpp"

namespace plumb::ops {
namespace {

using testing::Values;

class Validation : public ::testing::Test {
 protected:
  void expect_error(const Status& status, const std::string& message) {
    ASSERT_FALSE(status.ok()) << "expected the error: " << message;
    EXPECT_EQ(status.error().message, message);
  }
  std::unique_ptr<Backend> backend = cpu::make_cpu_backend(2);
};

TEST_F(Validation, MatmulNamesTheWrongInput) {
  DeviceTensor w = testing::device_bf16(*backend, Values(8 * 64, 0.5), {8, 64});
  const Weight weight = Weight::make_dense("q_proj", w.view);
  DeviceTensor x_f32 = testing::device_zeros(*backend, DType::f32, {3, 64});
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {3, 8});
  expect_error(matmul(*backend, x_f32.view, weight, out.view),
               "ops.matmul: tensor 'x' has the wrong dtype; expected bf16, got f32");
  DeviceTensor x_narrow = testing::device_zeros(*backend, DType::bf16, {3, 32});
  expect_error(matmul(*backend, x_narrow.view, weight, out.view),
               "ops.matmul: tensor 'x' has the wrong shape; expected [*, 64], got [3, 32]");
  DeviceTensor x = testing::device_zeros(*backend, DType::bf16, {3, 64});
  DeviceTensor out_wide = testing::device_zeros(*backend, DType::bf16, {3, 9});
  expect_error(matmul(*backend, x.view, weight, out_wide.view),
               "ops.matmul: tensor 'out' has the wrong shape; expected [3, 8], got [3, 9]");
}

TEST_F(Validation, MatmulGroupNamesTheWrongMember) {
  DeviceTensor wq = testing::device_bf16(*backend, Values(8 * 64, 0.5), {8, 64});
  DeviceTensor wk = testing::device_bf16(*backend, Values(4 * 64, 0.5), {4, 64});
  DeviceTensor wide = testing::device_bf16(*backend, Values(4 * 32, 0.5), {4, 32});
  const Weight q = Weight::make_dense("q_proj", wq.view), k = Weight::make_dense("k_proj", wk.view);
  const Weight narrow = Weight::make_dense("k_proj", wide.view);
  DeviceTensor x = testing::device_zeros(*backend, DType::bf16, {3, 64});
  DeviceTensor q_out = testing::device_zeros(*backend, DType::bf16, {3, 8});
  DeviceTensor k_out = testing::device_zeros(*backend, DType::bf16, {3, 4});
  const MatmulMember fine[] = {{&q, q_out.view}, {&k, k_out.view}};
  expect_error(matmul_group(*backend, x.view, std::span(fine, 0)),
               "ops.matmul_group: group 'members' has a member count out of range; expected 1 to 3, got 0");
  const MatmulMember four[] = {{&q, q_out.view}, {&k, k_out.view}, {&q, q_out.view}, {&k, k_out.view}};
  expect_error(matmul_group(*backend, x.view, four),
               "ops.matmul_group: group 'members' has a member count out of range; expected 1 to 3, got 4");
  const MatmulMember wrong_width[] = {{&q, q_out.view}, {&narrow, k_out.view}};
  expect_error(matmul_group(*backend, x.view, wrong_width),
               "ops.matmul_group: tensor 'x' has the wrong shape; expected [*, 32], got [3, 64]");
  const MatmulMember wrong_out[] = {{&q, q_out.view}, {&k, q_out.view}};
  expect_error(matmul_group(*backend, x.view, wrong_out),
               "ops.matmul_group: tensor 'members[1].out' has the wrong shape; expected [3, 4], got [3, 8]");
  // k's output on the first bytes of q's
  const TensorView k_on_q = TensorView::contiguous(q_out.view.data, DType::bf16, {3, 4}, q_out.view.device);
  const MatmulMember overlapping[] = {{&q, q_out.view}, {&k, k_on_q}};
  expect_error(matmul_group(*backend, x.view, overlapping),
               "ops.matmul_group: tensor 'members[1].out' overlaps an input; expected no bytes shared with "
               "'members[0].out', got shared bytes");
  const MatmulMember missing[] = {{&q, q_out.view}, {nullptr, k_out.view}};
  expect_error(matmul_group(*backend, x.view, missing),
               "ops.matmul_group: weight 'members[1].weight' is missing");
  EXPECT_TRUE(matmul_group(*backend, x.view, fine).ok());
}

TEST_F(Validation, MatmulGegluNamesTheWrongOutputAndEqualsItsSteps) {
  DeviceTensor wg = testing::device_bf16(*backend, testing::random_bf16(1, 8 * 64, -1, 1), {8, 64});
  DeviceTensor wu = testing::device_bf16(*backend, testing::random_bf16(2, 8 * 64, -1, 1), {8, 64});
  DeviceTensor wn = testing::device_bf16(*backend, Values(4 * 64, 0.5), {4, 64});
  const Weight gate_w = Weight::make_dense("gate_proj", wg.view),
               up_w = Weight::make_dense("up_proj", wu.view);
  const Weight narrow = Weight::make_dense("up_proj", wn.view);
  DeviceTensor x = testing::device_bf16(*backend, testing::random_bf16(3, 3 * 64, -1, 1), {3, 64});
  const auto zeros = [&] { return testing::device_zeros(*backend, DType::bf16, {3, 8}); };
  DeviceTensor gate = zeros(), up = zeros(), out = zeros(), step_gate = zeros(), step_up = zeros();
  expect_error(matmul_geglu(*backend, x.view, gate_w, narrow, gate.view, up.view, out.view),
               "ops.matmul_geglu: tensor 'up' has the wrong shape; expected [3, 4], got [3, 8]");
  expect_error(
      matmul_geglu(*backend, x.view, gate_w, up_w, gate.view, gate.view, out.view),
      "ops.matmul_geglu: tensor 'up' overlaps an input; expected no bytes shared with 'gate', got shared "
      "bytes");
  ASSERT_TRUE(matmul_geglu(*backend, x.view, gate_w, up_w, gate.view, up.view, out.view).ok());
  ASSERT_TRUE(matmul(*backend, x.view, gate_w, step_gate.view).ok());
  ASSERT_TRUE(matmul(*backend, x.view, up_w, step_up.view).ok());
  ASSERT_TRUE(geglu(*backend, step_gate.view, step_up.view, step_up.view).ok());
  EXPECT_EQ(testing::download_bytes(*backend, gate.view), testing::download_bytes(*backend, step_gate.view));
  EXPECT_EQ(testing::download_bytes(*backend, out.view), testing::download_bytes(*backend, step_up.view));
}

TEST_F(Validation, AffineWeightsWithTheWrongPackingAreRefusedByName) {
  std::vector<uint32_t> packed(8 * 16);
  std::vector<uint16_t> groups(8 * 2);
  const auto make = [&](int64_t words, int bits, int group, int64_t group_count) {
    return Weight::make_affine(
        "layers.0.mlp.down_proj", 128, TensorView::contiguous(packed.data(), DType::u32, {8, words}),
        TensorView::contiguous(groups.data(), DType::bf16, {8, group_count}),
        TensorView::contiguous(groups.data(), DType::bf16, {8, group_count}), bits, group);
  };
  EXPECT_TRUE(check_weight("load", make(16, 4, 64, 2)).ok());
  expect_error(
      check_weight("load", make(16, 3, 64, 2)),
      "load: tensor 'layers.0.mlp.down_proj.weight' disagrees with the declared bits and input width; "
      "expected [8, 12] for 3 bits over 128 inputs, got [8, 16]");
  expect_error(check_weight("load", make(16, 7, 64, 2)),
               "load: weight 'layers.0.mlp.down_proj' has unsupported affine bits; expected 2, 3, 4, 5, 6 or "
               "8, got 7");
  expect_error(check_weight("load", make(16, 4, 48, 2)),
               "load: weight 'layers.0.mlp.down_proj' has an unsupported affine group; expected 32, 64 or "
               "128, got 48");
  expect_error(
      check_weight("load", make(16, 4, 32, 2)),
      "load: tensor 'layers.0.mlp.down_proj.scales' has the wrong shape; expected [8, 4], got [8, 2]");
}

// A weight whose tensors say they live on another device than the backend's is refused by name (it passes
// check_weight, which looks at the weight alone).
TEST_F(Validation, WeightsOnAnotherDeviceAreRefusedByName) {
  const Device gpu{DeviceKind::cuda, 0};
  std::vector<uint16_t> dense(8 * 64, 0);
  TensorView elsewhere = TensorView::contiguous(dense.data(), DType::bf16, {8, 64}, gpu);
  const Weight weight = Weight::make_dense("q_proj", elsewhere);
  ASSERT_TRUE(check_weight("load", weight).ok());
  DeviceTensor x = testing::device_zeros(*backend, DType::bf16, {3, 64});
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {3, 8});
  expect_error(matmul(*backend, x.view, weight, out.view),
               "ops.matmul: tensor 'q_proj.weight' is on the wrong device; expected cpu, got cuda:0");
  std::vector<uint32_t> packed(8 * 16);
  std::vector<uint16_t> groups(8 * 2);
  const Weight affine =
      Weight::make_affine("embed_tokens", 128, TensorView::contiguous(packed.data(), DType::u32, {8, 16}),
                          TensorView::contiguous(groups.data(), DType::bf16, {8, 2}),
                          TensorView::contiguous(groups.data(), DType::bf16, {8, 2}, gpu), 4, 64);
  DeviceTensor ids = testing::device_i32(*backend, {1});
  DeviceTensor rows = testing::device_zeros(*backend, DType::bf16, {1, 128});
  expect_error(
      embed_rows(*backend, ids.view, affine, 1.0f, rows.view),
      "ops.embed_rows: tensor 'embed_tokens.biases' is on the wrong device; expected cpu, got cuda:0");
}

TEST_F(Validation, EmbeddingIdsOutOfRangeAreRefusedByRow) {
  DeviceTensor table = testing::device_bf16(*backend, Values(10 * 32, 1.0), {10, 32});
  DeviceTensor ids = testing::device_i32(*backend, {1, 9, 10});
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {3, 32});
  expect_error(
      embed_rows(*backend, ids.view, Weight::make_dense("embed_tokens", table.view), 62.0f, out.view),
      "ops.embed_rows: tensor 'ids' holds an id out of range at row 2; expected 0 <= id < 10, got 10");
}

TEST_F(Validation, AttentionRefusesRowsWhoseKeysLeftTheRing) {
  DeviceTensor keys = testing::device_zeros(*backend, DType::bf16, {4, 1, 16});
  DeviceTensor values = testing::device_zeros(*backend, DType::bf16, {4, 1, 16});
  DeviceTensor q = testing::device_zeros(*backend, DType::bf16, {2, 2, 16});
  DeviceTensor positions = testing::device_i32(*backend, {8, 9});
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {2, 2, 16});
  const KvSegment segment{0, 2, {keys.view, values.view, 10}};
  // Cached positions are 6..9; a window of 4 lets row 1 (position 9) see 6..9 but row 0 needs 5..8.
  expect_error(
      attention(*backend, q.view, positions.view, {&segment, 1}, {4, 1.0f}, out.view),
      "ops.attention: tensor 'positions' needs keys missing from segment 0's cache at row 0; expected keys "
      "5..8 within the cached 6..9, got position 8");
  EXPECT_TRUE(attention(*backend, q.view, positions.view, {&segment, 1}, {3, 1.0f}, out.view).ok());
  const KvSegment short_segment{0, 1, {keys.view, values.view, 10}};
  expect_error(attention(*backend, q.view, positions.view, {&short_segment, 1}, {3, 1.0f}, out.view),
               "ops.attention: parameter 'segments' do not cover the query rows; expected 2, got 1");
}

TEST_F(Validation, NormsNameTheirWeightAndRopeShape) {
  DeviceTensor x = testing::device_zeros(*backend, DType::bf16, {2, 3, 16});
  DeviceTensor w = testing::device_zeros(*backend, DType::bf16, {15});
  DeviceTensor positions = testing::device_i32(*backend, {0, 1});
  expect_error(rms_norm(*backend, x.view, &w.view, 1e-6f, x.view),
               "ops.rms_norm: tensor 'weight' has the wrong shape; expected [16], got [15]");
  expect_error(norm_rope(*backend, x.view, nullptr, 1e-6f, positions.view, {10000.0, 32, 1.0, 1.0}, x.view),
               "ops.norm_rope: parameter 'rope.head_dim' disagrees with x; expected an even 16, got 32");
}

TEST_F(Validation, PartlyOverlappingOutputsAndStridedInnerDimsAreRefused) {
  DeviceTensor a = testing::device_zeros(*backend, DType::bf16, {4, 8});
  TensorView shifted = a.view;
  shifted.data = a.view.as<uint16_t>() + 1;
  shifted.shape = {3, 8};
  TensorView first_rows = a.view;
  first_rows.shape = {3, 8};
  expect_error(
      add(*backend, first_rows, first_rows, shifted),
      "ops.add: tensor 'out' partly overlaps an input; expected exactly 'a' or no bytes shared with it, got "
      "a partial overlap");
  TensorView columns = a.view;
  columns.shape = {4, 4};
  columns.strides = {8, 2};
  DeviceTensor out = testing::device_zeros(*backend, DType::bf16, {4, 4});
  expect_error(scale(*backend, columns, 2.0f, out.view),
               "ops.scale: tensor 'x' has non-contiguous rows; expected strides ending [1], got [8, 2]");
}

TEST_F(Validation, ARowSliceOfAWiderTensorGivesTheSameRowsAsAContiguousCopy) {
  const Values wide = testing::random_bf16(5, 4 * 24, -3, 3);
  DeviceTensor wide_tensor = testing::device_bf16(*backend, wide, {4, 24});
  TensorView right = wide_tensor.view;
  right.data = wide_tensor.view.as<uint16_t>() + 8;
  right.shape = {4, 16};
  Values copy;
  for (int r = 0; r < 4; ++r) copy.insert(copy.end(), wide.begin() + r * 24 + 8, wide.begin() + r * 24 + 24);
  DeviceTensor copy_tensor = testing::device_bf16(*backend, copy, {4, 16});
  DeviceTensor from_slice = testing::device_zeros(*backend, DType::bf16, {4, 16});
  DeviceTensor from_copy = testing::device_zeros(*backend, DType::bf16, {4, 16});
  ASSERT_TRUE(rms_norm(*backend, right, nullptr, 1e-6f, from_slice.view).ok());
  ASSERT_TRUE(rms_norm(*backend, copy_tensor.view, nullptr, 1e-6f, from_copy.view).ok());
  EXPECT_EQ(testing::download_bytes(*backend, from_slice.view),
            testing::download_bytes(*backend, from_copy.view));
}

TEST_F(Validation, ResidualNormNamesTheWrongOperand) {
  DeviceTensor h = testing::device_zeros(*backend, DType::bf16, {2, 16});
  DeviceTensor o = testing::device_zeros(*backend, DType::bf16, {2, 16});
  DeviceTensor next = testing::device_zeros(*backend, DType::bf16, {2, 16});
  DeviceTensor w = testing::device_bf16(*backend, Values(16, 1.0), {16});
  DeviceTensor o_short = testing::device_zeros(*backend, DType::bf16, {1, 16});
  expect_error(residual_norm(*backend, h.view, o_short.view, w.view, 0.5f, w.view, 1e-6f, h.view, next.view),
               "ops.residual_norm: tensor 'o' has the wrong shape; expected [2, 16], got [1, 16]");
  expect_error(residual_norm(*backend, h.view, o.view, w.view, 0.5f, w.view, 1e-6f, h.view, h.view),
               "ops.residual_norm: tensor 'next' overlaps an input; expected no bytes shared with 'h', got "
               "shared bytes");
  expect_error(
      residual_norm(*backend, h.view, o.view, w.view, std::nullopt, w.view, 1e-6f, o.view, next.view),
      "ops.residual_norm: tensor 'h_out' overlaps an input; expected no bytes shared with 'o', got "
      "shared bytes");
  DeviceTensor w_short = testing::device_bf16(*backend, Values(8, 1.0), {8});
  expect_error(residual_norm(*backend, h.view, o.view, w.view, 0.5f, w_short.view, 1e-6f, h.view, next.view),
               "ops.residual_norm: tensor 'next_weight' has the wrong shape; expected [16], got [8]");
  EXPECT_TRUE(residual_norm(*backend, h.view, o.view, w.view, 0.5f, w.view, 1e-6f, h.view, next.view).ok());
}

TEST_F(Validation, HeadNormsNamesTheWrongOperand) {
  const RopeSpec rope{10000.0, 16, 1.0, 1.0};
  DeviceTensor q = testing::device_zeros(*backend, DType::bf16, {2, 4, 16});
  DeviceTensor k = testing::device_zeros(*backend, DType::bf16, {2, 2, 16});
  DeviceTensor v = testing::device_zeros(*backend, DType::bf16, {2, 2, 16});
  DeviceTensor w = testing::device_bf16(*backend, Values(16, 1.0), {16});
  DeviceTensor positions = testing::device_i32(*backend, {3, 4});
  DeviceTensor k_wide = testing::device_zeros(*backend, DType::bf16, {2, 2, 32});
  expect_error(head_norms(*backend, q.view, w.view, k_wide.view, w.view, v.view, positions.view, rope, 1e-6f,
                          q.view, k_wide.view, v.view),
               "ops.head_norms: tensor 'k' has the wrong shape; expected [2, *, 16], got [2, 2, 32]");
  expect_error(
      head_norms(*backend, q.view, w.view, k.view, w.view, k.view, positions.view, rope, 1e-6f, q.view,
                 k.view, k.view),
      "ops.head_norms: tensor 'v_out' overlaps an input; expected no bytes shared with 'k', got shared "
      "bytes");
  expect_error(head_norms(*backend, q.view, w.view, k.view, w.view, v.view, positions.view, rope, 1e-6f,
                          q.view, v.view, v.view),
               "ops.head_norms: tensor 'v_out' overlaps an input; expected no bytes shared with 'k_out', got "
               "shared bytes");
  const RopeSpec other{10000.0, 8, 1.0, 1.0};
  expect_error(head_norms(*backend, q.view, w.view, k.view, w.view, v.view, positions.view, other, 1e-6f,
                          q.view, k.view, v.view),
               "ops.head_norms: parameter 'rope.head_dim' disagrees with q; expected an even 16, got 8");
  EXPECT_TRUE(head_norms(*backend, q.view, w.view, k.view, w.view, v.view, positions.view, rope, 1e-6f,
                         q.view, k.view, v.view)
                  .ok());
  EXPECT_TRUE(head_norms(*backend, q.view, w.view, k.view, w.view, k.view, positions.view, rope, 1e-6f,
                         q.view, k.view, v.view)
                  .ok());
  // With caches, kv_write's checks name the cache, and no cache may overlap an operand the launch reads.
  DeviceTensor keys = testing::device_zeros(*backend, DType::bf16, {8, 2, 16});
  DeviceTensor values = testing::device_zeros(*backend, DType::bf16, {8, 2, 16});
  const auto run = [&](const KvSegment& segment) {
    return head_norms(*backend, q.view, w.view, k.view, w.view, v.view, positions.view, rope, 1e-6f, q.view,
                      k.view, v.view, std::span(&segment, 1));
  };
  expect_error(run({0, 2, {keys.view, k.view, 8}}),
               "ops.head_norms: tensor 'segments[0].kv.values' has the wrong shape; expected [8, 2, 16], got "
               "[2, 2, 16]");
  const TensorView q_as_cache = TensorView::contiguous(q.view.data, DType::bf16, {4, 2, 16}, q.view.device);
  DeviceTensor values4 = testing::device_zeros(*backend, DType::bf16, {4, 2, 16});
  expect_error(
      run({0, 2, {q_as_cache, values4.view, 8}}),
      "ops.head_norms: tensor 'segments[0].kv.keys' overlaps an input; expected no bytes shared with "
      "'q', got shared bytes");
  expect_error(run({0, 1, {keys.view, values.view, 8}}),
               "ops.head_norms: parameter 'segments' do not cover the key rows; expected 2, got 1");
  EXPECT_TRUE(run({0, 2, {keys.view, values.view, 8}}).ok());
}

}  // namespace
}  // namespace plumb::ops
