// Two independent float64 readings of each op's expression must agree: the ops layer's references
// (src/ops/reference), rounded to the output dtype, lie inside the contract's ranges for the same inputs.
#include <algorithm>
#include <bit>
#include <string>

#include <gtest/gtest.h>

#include "contract/check.hpp"
#include "contract/registry.hpp"
#include "ops/ops.hpp"
#include "ops/reference/reference.hpp"

namespace plumb::contract {
namespace {

namespace reference = ops::reference;

const Registry& registry() {
  static const Registry built = build_registry();
  return built;
}

struct Case {
  const Form* form;
  Call call;
  std::vector<std::vector<Span>> expected;
};

Case make_case(const std::string& name, Inputs inputs = Inputs::gaussian, int64_t rows = 2) {
  const Form* form = registry().find_form(name);
  EXPECT_NE(form, nullptr) << name;
  Call call = form->make_call({rows, inputs, 17, 23});
  auto expected = form->expected(call);
  return {form, std::move(call), std::move(expected)};
}

reference::Values values_of(const HostData& data) {
  reference::Values values(static_cast<size_t>(data.elements()));
  for (int64_t i = 0; i < data.elements(); ++i) values[static_cast<size_t>(i)] = data.value(i);
  return values;
}

TensorView host_view(const HostData& data) {
  return TensorView::contiguous(const_cast<uint8_t*>(data.bytes.data()), data.dtype, data.shape);
}

// Every reference value, rounded once to bf16 (or f32), inside its range.
void expect_inside(const Case& c, const reference::Values& values, DType dtype = DType::bf16) {
  const std::vector<Span>& ranges = c.expected[0];
  ASSERT_EQ(ranges.size(), values.size()) << c.form->name();
  int failures = 0;
  for (size_t i = 0; i < values.size() && failures < 3; ++i) {
    const uint32_t bits =
        dtype == DType::bf16 ? round_to_bf16_bits(values[i]) : std::bit_cast<uint32_t>(round_f32(values[i]));
    if (element_passes(dtype, bits, ranges[i], 0)) continue;
    ++failures;
    ADD_FAILURE() << c.form->name() << " index " << i << ": reference " << format_value(values[i])
                  << " outside [" << format_value(ranges[i].lo) << ", " << format_value(ranges[i].hi) << "]";
  }
}

TEST(ReferenceAgreement, RowOps) {
  for (Inputs inputs : {Inputs::gaussian, Inputs::extremes}) {
    const Case geglu = make_case("geglu/12b-mlp", inputs);
    expect_inside(geglu, reference::geglu(values_of(geglu.call.inputs[0]), values_of(geglu.call.inputs[1])));
    const Case add = make_case("add/31b-residual", inputs);
    expect_inside(add, reference::add(values_of(add.call.inputs[0]), values_of(add.call.inputs[1])));
    const Case scale = make_case("scale/12b-layer-scalar", inputs);
    expect_inside(scale, reference::scale(values_of(scale.call.inputs[0]), 0.0869140625));
    const Case cap = make_case("soft_cap/logits-bf16", inputs, 1);
    expect_inside(cap, reference::soft_cap(values_of(cap.call.inputs[0]), 30.0));
  }
}

TEST(ReferenceAgreement, Norms) {
  for (Inputs inputs : {Inputs::gaussian, Inputs::zero_sum, Inputs::extremes}) {
    const Case norm = make_case("rms_norm/12b-hidden", inputs);
    expect_inside(norm, reference::rms_norm(values_of(norm.call.inputs[0]), values_of(norm.call.inputs[1]),
                                            3840, 1e-6f));
    const Case v_norm = make_case("rms_norm/31b-v-global", inputs);
    expect_inside(v_norm, reference::rms_norm(values_of(v_norm.call.inputs[0]), {}, 512, 1e-6f));
    for (const char* name : {"norm_rope/12b-q-sliding", "norm_rope/31b-k-global"}) {
      const Case rope = make_case(name, inputs);
      const HostData& x = rope.call.inputs[0];
      const auto* positions = rope.call.inputs[2].as<int32_t>();
      const bool global = std::string(name).find("global") != std::string::npos;
      const auto inv_freq = ops::rope_inv_freq({global ? 1e6 : 1e4, x.shape[2], global ? 0.25 : 1.0, 1.0});
      expect_inside(rope, reference::norm_rope(values_of(x), values_of(rope.call.inputs[1]), x.shape[0],
                                               x.shape[1], x.shape[2], 1e-6f,
                                               {positions, static_cast<size_t>(x.shape[0])}, inv_freq));
    }
  }
}

TEST(ReferenceAgreement, MatmulAndEmbedding) {
  for (const char* name :
       {"matmul/12b-k-global-8bit-g128", "matmul/12b-k-global-f32", "matmul/12b-head-slice-f32"}) {
    const Case c = make_case(name);
    const auto& in = c.call.inputs;
    const bool affine = in.size() == 4;
    const ops::Weight weight = affine ? ops::Weight::make_affine("w", in[0].shape[1], host_view(in[1]),
                                                                 host_view(in[2]), host_view(in[3]), 8, 128)
                                      : ops::Weight::make_dense("w", host_view(in[1]));
    const int64_t out = c.call.outputs[0].shape[1];
    expect_inside(c,
                  reference::matmul(values_of(in[0]), reference::weight_values(weight), c.call.rows,
                                    in[0].shape[1], out),
                  c.call.outputs[0].dtype);
  }
  const Case embed = make_case("embed_rows/12b-affine-8bit-g32", Inputs::gaussian, 3);
  const auto& in = embed.call.inputs;
  const ops::Weight table =
      ops::Weight::make_affine("table", 3840, host_view(in[1]), host_view(in[2]), host_view(in[3]), 8, 32);
  expect_inside(embed,
                reference::embed_rows({in[0].as<int32_t>(), 3}, reference::weight_values(table), 3840, 62.0));
}

TEST(ReferenceAgreement, Attention) {
  for (Inputs inputs : {Inputs::gaussian, Inputs::equal_scores}) {
    for (const char* name : {"attention/12b-sliding", "attention/31b-global"}) {
      const Case c = make_case(name, inputs);
      const HostData& q = c.call.inputs[0];
      const HostData& keys = c.call.inputs[2];
      const HostData& values = c.call.inputs[3];
      const auto* positions = c.call.inputs[1].as<int32_t>();
      const int64_t capacity = keys.shape[0], row = keys.shape[1] * keys.shape[2];
      const int64_t end = c.call.segments[0].end;
      // The reference reads keys by absolute position: unroll the ring.
      reference::Values by_position_keys(static_cast<size_t>(end * row)),
          by_position_values(by_position_keys.size());
      for (int64_t p = std::max<int64_t>(0, end - capacity); p < end; ++p)
        for (int64_t k = 0; k < row; ++k) {
          by_position_keys[static_cast<size_t>(p * row + k)] = keys.value((p % capacity) * row + k);
          by_position_values[static_cast<size_t>(p * row + k)] = values.value((p % capacity) * row + k);
        }
      const int64_t window = std::string(name).find("sliding") != std::string::npos ? 1024 : 0;
      expect_inside(c, reference::attention(values_of(q), q.shape[0], q.shape[1], keys.shape[1], q.shape[2],
                                            {positions, static_cast<size_t>(q.shape[0])}, by_position_keys,
                                            by_position_values, window, 1.0));
    }
  }
}

}  // namespace
}  // namespace plumb::contract
