// The gates on a small add form with the CPU backend: the real op passes 1-4, and each planted fault turns
// exactly the gate it breaks red, with the index, range, value and seed in the failure.
#include <bit>
#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "contract/check.hpp"
#include "contract/forms/common.hpp"
#include "contract/forwarding_backend.hpp"
#include "contract/gates.hpp"
#include "core/half.hpp"
#include "cpu/cpu_backend.hpp"
#include "ops/ops.hpp"

namespace plumb::contract {
namespace {

constexpr int64_t kWidth = 24;

class SmallAdd final : public Form {
 public:
  SmallAdd() : Form("add", "add/test", "[rows, 24]") { stresses = {Inputs::extremes}; }
  Call make_call(const CallRequest& request) const override {
    Rng rng(request.seed);
    Call call = empty_call(request);
    for (const char* name : {"a", "b"})
      call.inputs.push_back(
          forms::bf16_data(name, {request.rows, kWidth},
                           forms::activations(request.inputs, rng, request.rows, kWidth, 2.0), true));
    call.outputs.push_back(HostData::zeros("out", DType::bf16, {request.rows, kWidth}, true));
    return call;
  }
  Status launch(ops::Backend& backend, const Call&, std::span<const TensorView> in,
                std::span<const TensorView> out) const override {
    return ops::add(backend, in[0], in[1], out[0]);
  }
  std::vector<std::vector<Span>> expected(const Call& call) const override {
    std::vector<Span> out;
    for (int64_t i = 0; i < call.inputs[0].elements(); ++i)
      out.push_back(bf16(f32_add(forms::exact_at(call.inputs[0], i), forms::exact_at(call.inputs[1], i))));
    return {out};
  }
};

enum class Fault { none, skip_element, past_end, change_input, by_rows, truncate, flush_to_zero };

class FaultyAdd final : public ForwardingBackend {
 public:
  FaultyAdd(ops::Backend& real, Fault fault) : ForwardingBackend(real), fault_(fault) {}
  void add(const ops::RowsLaunch& launch) override {
    auto* out = static_cast<uint16_t*>(launch.out);
    for (int64_t r = 0; r < launch.rows; ++r)
      for (int64_t k = 0; k < launch.width; ++k) {
        if (fault_ == Fault::skip_element && r == 0 && k == 3) continue;
        float sum =
            bf16_to_f32(launch.a[r * launch.a_stride + k]) + bf16_to_f32(launch.b[r * launch.b_stride + k]);
        if (fault_ == Fault::by_rows && launch.rows > 1) sum *= 1.01f;
        if (fault_ == Fault::flush_to_zero && std::fpclassify(sum) == FP_SUBNORMAL) sum = 0.0f;
        uint16_t bits = f32_to_bf16(sum);
        if (fault_ == Fault::truncate) bits = static_cast<uint16_t>(std::bit_cast<uint32_t>(sum) >> 16);
        out[r * launch.out_stride + k] = bits;
      }
    if (fault_ == Fault::past_end) out[launch.rows * launch.out_stride] = 0;
    if (fault_ == Fault::change_input) const_cast<uint16_t*>(launch.a)[0] ^= 1;
  }

 private:
  Fault fault_;
};

std::vector<GateResult> run(Fault fault) {
  const auto real = cpu::make_cpu_backend(2);
  FaultyAdd backend(*real, fault);
  return run_gates(SmallAdd(), backend, GateOptions{});
}

std::vector<bool> passed(const std::vector<GateResult>& results) {
  std::vector<bool> flags;
  for (const GateResult& result : results) flags.push_back(result.passed);
  return flags;
}

TEST(Gates, CorrectOpPassesEveryGate) {
  const auto results = run(Fault::none);
  ASSERT_EQ(results.size(), 4u);
  for (const GateResult& result : results) EXPECT_TRUE(result.passed) << result.failure;
  EXPECT_GT(results[2].checked, 0);
}

TEST(Gates, UnwrittenElementIsRedAtGateOne) {
  const auto results = run(Fault::skip_element);
  EXPECT_FALSE(results[0].passed);
  EXPECT_NE(results[0].failure.find("index 3 was not written"), std::string::npos) << results[0].failure;
  EXPECT_NE(results[0].failure.find("seed 0x"), std::string::npos) << results[0].failure;
}

TEST(Gates, WriteAfterTheOutputIsRedAtGateOne) {
  const auto results = run(Fault::past_end);
  EXPECT_FALSE(results[0].passed);
  EXPECT_NE(results[0].failure.find("guard bytes of output 'out' changed"), std::string::npos)
      << results[0].failure;
}

TEST(Gates, ChangedInputIsRedAtGateOne) {
  const auto results = run(Fault::change_input);
  EXPECT_FALSE(results[0].passed);
  EXPECT_NE(results[0].failure.find("input 'a' changed"), std::string::npos) << results[0].failure;
}

TEST(Gates, RowCountDependenceIsRedAtGateTwoOnly) {
  const auto results = run(Fault::by_rows);
  EXPECT_EQ(passed(results), (std::vector<bool>{true, false, false, false}));
  EXPECT_NE(results[1].failure.find("differs as row"), std::string::npos) << results[1].failure;
}

TEST(Gates, WrongRoundingIsRedAtGateThree) {
  const auto results = run(Fault::truncate);
  EXPECT_TRUE(results[0].passed && results[1].passed);
  EXPECT_FALSE(results[2].passed);
  EXPECT_NE(results[2].failure.find("expected range ["), std::string::npos) << results[2].failure;
}

TEST(Gates, FlushedSubnormalsAreRedAtGateFourOnly) {
  const auto results = run(Fault::flush_to_zero);
  EXPECT_EQ(passed(results), (std::vector<bool>{true, true, true, false})) << results[3].failure;
}

TEST(Gates, StopsAfterTheLastGateAsked) {
  const auto real = cpu::make_cpu_backend(1);
  const auto results = run_gates(SmallAdd(), *real, GateOptions{1, Gate::invariant});
  EXPECT_EQ(results.size(), 2u);
}

}  // namespace
}  // namespace plumb::contract
