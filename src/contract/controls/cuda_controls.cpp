// Controls as CUDA kernels: faults inside device code and a write past a buffer in device memory, run by the
// contract on the CUDA backend (the CPU controls prove the same gates on host memory).
#include <optional>
#include <string>
#include <utility>

#include "contract/controls/common.hpp"
#include "contract/controls/cuda_kernels.hpp"
#include "contract/registry.hpp"
#include "cuda/cuda_backend.hpp"
#include "cuda/launch_args.hpp"
#include "cuda/launchers.hpp"

namespace plumb::contract::controls {
namespace {

// Queues its kernels on the CUDA backend's stream; a failed launch is returned by the next synchronize.
class CudaControl : public ForwardingBackend {
 public:
  explicit CudaControl(ops::Backend& real)
      : ForwardingBackend(real), stream_(dynamic_cast<cuda::CudaBackend&>(real).stream()) {}
  Status synchronize() override {
    if (failure_) return Error{*failure_};
    return ForwardingBackend::synchronize();
  }

 protected:
  cudaStream_t stream() const { return stream_; }
  void check(const char* what, cudaError_t code) {
    if (code != cudaSuccess && !failure_)
      failure_ = std::string("contract control ") + what + ": " + cudaGetErrorString(code);
  }

 private:
  cudaStream_t stream_;
  std::optional<std::string> failure_;
};

// The real add, then one element written just past the output.
class AddPastEnd final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void add(const ops::RowsLaunch& launch) override {
    ForwardingBackend::add(launch);
    check("write_one",
          cuda_write_one(static_cast<uint16_t*>(launch.out) + launch.rows * launch.out_stride, stream()));
  }
};

class SoftCapTanhUnrounded final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void soft_cap(const ops::RowsLaunch& launch) override {
    check("soft_cap", cuda_soft_cap_tanh_unrounded(launch.a, launch.a_stride, launch.out,
                                                   launch.out_dtype == DType::f32, launch.out_stride,
                                                   launch.rows, launch.width, launch.factor, stream()));
  }
};

class GegluGeluUnrounded final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void geglu(const ops::RowsLaunch& launch) override {
    check("geglu", cuda_geglu_gelu_unrounded(launch.a, launch.a_stride, launch.b, launch.b_stride,
                                             static_cast<uint16_t*>(launch.out), launch.out_stride,
                                             launch.rows, launch.width, stream()));
  }
};

class ScaleTruncating final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void scale(const ops::RowsLaunch& launch) override {
    check("scale",
          cuda_scale_truncating(launch.a, launch.a_stride, static_cast<uint16_t*>(launch.out),
                                launch.out_stride, launch.rows, launch.width, launch.factor, stream()));
  }
};

class RmsNormRoundNormalized final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void rms_norm(const ops::RmsNormLaunch& launch) override {
    check("rms_norm", cuda_rms_norm_round_normalized(launch.x, launch.x_stride, launch.weight, launch.out,
                                                     launch.out_stride, launch.rows, launch.heads, launch.dim,
                                                     launch.eps, stream()));
  }
};

// The real device residual_norm without its layer scalar, then the real scale of h_out: the next norm is
// taken before the scalar (a fused kernel that normalizes, then scales). The norm hides most of it: only
// roundings.
class ResidualNormBeforeScalar final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void residual_norm(const ops::ResidualNormLaunch& launch) override {
    ops::ResidualNormLaunch unscaled = launch;
    unscaled.scaled = false;
    ForwardingBackend::residual_norm(unscaled);
    const int64_t rows = launch.post.rows, dim = launch.post.dim;
    ForwardingBackend::scale({launch.h_out, launch.h_out_stride, nullptr, 0, launch.h_out, DType::bf16,
                              launch.h_out_stride, rows, dim, launch.factor});
  }
};

class MatmulBf16Accumulator final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void matmul(const ops::MatmulLaunch& launch) override {
    PLUMB_ASSERT(
        !launch.weight.affine && launch.weight.dense_dtype == DType::f16 && launch.out_dtype == DType::bf16,
        "this control is planted on a dense f16 matmul with a bf16 output");
    check("matmul", cuda_matmul_f16_bf16_accumulator(
                        launch.x, launch.x_stride, static_cast<const uint16_t*>(launch.weight.dense),
                        static_cast<uint16_t*>(launch.out), launch.out_stride, launch.rows, launch.weight.out,
                        launch.weight.in, stream()));
  }
};

// The real device matmuls of gate and up into fp32 sums, then a device kernel that takes GeGLU of the gate
// sum before its bf16 rounding (a fused reduce that feeds its register to gelu). Planted at gate 4: with
// Gaussian inputs the unrounded sum lies inside the range an fp32 sum in any order may take (it passed gate 3
// on the H200); the stress gate's exact sums of small integers leave it no room. The sums live in device
// memory the backend allocates, until the next call.
class MatmulGegluGateUnrounded final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void matmul_geglu(const ops::MatmulGegluLaunch& launch) override {
    const int64_t rows = launch.gate.rows, width = launch.gate.weight.out;
    auto made = allocate(DType::f32, {2, rows, width});
    if (!made) return check("allocate", cudaErrorMemoryAllocation);
    sums_ = std::move(*made);
    auto* gate = static_cast<float*>(sums_.view.data);
    float* up = gate + rows * width;
    for (auto [member, sums] : {std::pair{launch.gate, gate}, std::pair{launch.up, up}}) {
      member.out = sums;
      member.out_dtype = DType::f32;
      member.out_stride = width;
      ForwardingBackend::matmul(member);
    }
    check("geglu_f32_gate",
          cuda_geglu_f32_gate(gate, up, width, static_cast<uint16_t*>(launch.gate.out),
                              launch.gate.out_stride, static_cast<uint16_t*>(launch.up.out),
                              launch.up.out_stride, static_cast<uint16_t*>(launch.geglu.out),
                              launch.geglu.out_stride, rows, width, stream()));
  }

 private:
  ops::DeviceTensor sums_;
};

// The real device draw with each row's options keyed one position lower: the row's own position instead of
// the drawn token's. The shifted options live in device memory the backend allocates, until the next call.
class SampleOwnPosition final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void sample(const ops::SampleLaunch& launch) override {
    auto shifted = allocate(DType::u8, {launch.rows, static_cast<int64_t>(sizeof(ops::SampleParams))});
    if (!shifted) return check("allocate", cudaErrorMemoryAllocation);
    auto* params = static_cast<ops::SampleParams*>(shifted->view.data);
    check("shift_draw_positions",
          cuda_shift_draw_positions(launch.params, params, launch.rows, -1, stream()));
    ops::SampleLaunch moved = launch;
    moved.params = params;
    ForwardingBackend::sample(moved);
    shifted_ = std::move(*shifted);
  }

 private:
  ops::DeviceTensor shifted_;
};

// The real device attention, with the score scale off by 2^-8 in calls whose segments average 8 rows or more,
// those that take the tiled kernels (k_attention_tiles.cu): a tiled path that scales its scores otherwise
// than the per-row path. Gate 2 compares those rows with the same rows alone.
class AttentionTiledScale final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void attention(const ops::AttentionLaunch& launch) override {
    ops::AttentionLaunch moved = launch;
    if (launch.rows >= 8 * launch.segment_count) moved.scale = launch.scale * (1.0f + 0x1p-8f);
    ForwardingBackend::attention(moved);
  }
};

// The real device matmul_head_norms, with q normed by k's norm weight in calls of up to 32 rows, those whose
// norms run in the members' K-split reduce (k_head_norms_reduce.cu): a fused reduce that reads another
// weight than head_norms after the group. Gate 2 compares rows alone with the same rows in batches of 80.
class MatmulHeadNormsDecodeWeight final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void matmul_head_norms(const ops::MatmulHeadNormsLaunch& launch) override {
    ops::MatmulHeadNormsLaunch moved = launch;
    if (launch.norms.q.norm.rows <= 32) moved.norms.q.norm.weight = launch.norms.k.norm.weight;
    ForwardingBackend::matmul_head_norms(moved);
  }
};

// The real device attention, with the score scale off by 2^-8 in calls of up to 8 rows, those whose whole
// rows take one launch of clusters on sm_90 (k_attention_cluster.cu): a cluster path that scales its scores
// otherwise than the two launches. Gate 2 compares rows alone with the same rows in batches of 16.
class AttentionClusterScale final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void attention(const ops::AttentionLaunch& launch) override {
    ops::AttentionLaunch moved = launch;
    if (launch.rows <= 8) moved.scale = launch.scale * (1.0f + 0x1p-8f);
    ForwardingBackend::attention(moved);
  }
};

// The real device matmul, except that calls of more than 64 rows (the prompt path: the 128-row tile, on
// wgmma where the build has it) sum each output in descending k: a prompt tile whose bits differ from the
// decode tiles'. Gate 2 compares the 130-row call's rows with the same rows alone.
class MatmulPromptOrder final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  void matmul(const ops::MatmulLaunch& launch) override {
    if (launch.rows <= 64) return ForwardingBackend::matmul(launch);
    PLUMB_ASSERT(
        !launch.weight.affine && launch.weight.dense_dtype == DType::bf16 && launch.out_dtype == DType::bf16,
        "this control is planted on a dense bf16 matmul with a bf16 output");
    check("matmul", cuda_matmul_bf16_descending(launch.x, launch.x_stride,
                                                static_cast<const uint16_t*>(launch.weight.dense),
                                                static_cast<uint16_t*>(launch.out), launch.out_stride,
                                                launch.rows, launch.weight.out, launch.weight.in, stream()));
  }
};

// The real decode layout of a 4-bit weight with one fault planted in it (Fault::plant): a layout that the
// decode kernel reads otherwise than it was written. Rows of up to 32 take it (a weight with a decode layout
// takes it whatever the backend's options, so the control makes one where the backend does not).
template <class Fault>
class MatmulLayoutFault final : public CudaControl {
 public:
  using CudaControl::CudaControl;
  Result<std::optional<ops::DeviceTensor>> prepare_weight(const ops::WeightLaunch& weight) override {
    auto copy = ForwardingBackend::prepare_weight(weight);
    const int64_t bytes = cuda::decode_layout_bytes(cuda::weight_args(weight));
    if (!copy.ok() || bytes == 0) return copy;
    if (!copy->has_value()) {  // the backend keeps none (PLUMB_CUDA_DECODE_LAYOUT=0): the control makes it
      auto made = allocate(DType::u8, {bytes});
      if (!made.ok()) return made.error();
      check("launch_decode_layout",
            cuda::launch_decode_layout(cuda::weight_args(weight), made->view.data, stream()));
      *copy = std::move(*made);
    }
    check(Fault::kName, Fault::plant((*copy)->view.data, weight.out, weight.in, weight.group, stream()));
    check("synchronize", cudaStreamSynchronize(stream()));  // whole before the next launch, as the real one
    return copy;
  }
};

// Each lane's codes of a k16 step's two halves swapped.
struct HalvesSwapped {
  static constexpr const char* kName = "swap_layout_code_pairs";
  static constexpr auto plant = cuda_swap_layout_code_pairs;
};

// Every record's run of subnormal tiles reaching the end of k (lane_marks_kernel's runs unbroken by tiles of
// other forms); the weights of the shapes gate are subnormal throughout, so only the stress gate's scales of
// about 1 (packed tiles) see it.
struct RunsUnbroken {
  static constexpr const char* kName = "unbreak_subnormal_runs";
  static constexpr auto plant = cuda_unbreak_subnormal_runs;
};

template <class Variant>
Control on_cuda(std::string name, std::string form, Gate gate, std::string wrong) {
  Control control = planted<Variant>(std::move(name), std::move(form), gate, std::move(wrong));
  control.device = DeviceKind::cuda;
  return control;
}

}  // namespace

void register_cuda_controls(Registry& registry) {
  auto& list = registry.controls;
  list.push_back(on_cuda<AddPastEnd>("add/past-end-cuda", "add/12b-residual", Gate::runs,
                                     "writes one element past the output in device memory"));
  list.push_back(on_cuda<SoftCapTanhUnrounded>("soft_cap/tanh-unrounded-cuda", "soft_cap/logits-f32",
                                               Gate::shapes,
                                               "a device kernel that drops the bf16 rounding of tanh"));
  list.push_back(on_cuda<GegluGeluUnrounded>(
      "geglu/gelu-unrounded-cuda", "geglu/12b-mlp", Gate::shapes,
      "a device kernel that drops the bf16 rounding of gelu(gate) before the product"));
  list.push_back(on_cuda<ScaleTruncating>("scale/truncating-bf16-cuda", "scale/31b-layer-scalar",
                                          Gate::shapes,
                                          "a device kernel that cuts x * factor to bf16 toward zero"));
  list.push_back(
      on_cuda<RmsNormRoundNormalized>("rms_norm/round-normalized-cuda", "rms_norm/31b-hidden", Gate::shapes,
                                      "a device kernel that rounds x * inv to bf16 before the weight"));
  list.push_back(on_cuda<ResidualNormBeforeScalar>(
      "residual_norm/norm-before-scalar-cuda", "residual_norm/31b-mlp", Gate::shapes,
      "takes the next norm of h before the layer scalar, then scales h"));
  list.push_back(
      on_cuda<SampleOwnPosition>("sample/own-position-cuda", "sample/logits-f32", Gate::shapes,
                                 "the device draw keyed by the row's position, not the drawn token's"));
  list.push_back(on_cuda<AttentionTiledScale>("attention/tiled-scale-cuda", "attention/12b-sliding",
                                              Gate::invariant,
                                              "scales the scores of prompt-sized calls, which take the tiled "
                                              "kernels, by 1 + 2^-8"));
  list.push_back(on_cuda<AttentionClusterScale>("attention/cluster-scale-cuda", "attention/12b-sliding",
                                                Gate::invariant,
                                                "scales the scores of calls of up to 8 rows, which take the "
                                                "clusters on sm_90, by 1 + 2^-8"));
  list.push_back(on_cuda<MatmulGegluGateUnrounded>(
      "matmul_geglu/gate-unrounded-cuda", "matmul_geglu/12b-mlp-slice-4bit-g64", Gate::stress,
      "takes GeGLU of the fp32 gate sum, before its bf16 rounding"));
  list.push_back(on_cuda<MatmulHeadNormsDecodeWeight>(
      "matmul_head_norms/decode-rows-k-weight-cuda", "matmul_head_norms/12b-sliding-slice", Gate::invariant,
      "norms q with k's weight in calls of up to 32 rows, whose norms run in the K-split reduce"));
  list.push_back(on_cuda<MatmulPromptOrder>("matmul/prompt-order-cuda", "matmul/12b-q-sliding",
                                            Gate::invariant,
                                            "sums the rows of calls over 64 rows in descending k"));
  // Only where rows of up to 32 take the decode kernel (PLUMB_CUDA_DECODE_MATMUL=0 gives them to the tiled
  // kernel, which never reads the layout).
  if (cuda::CudaOptions::from_environment().decode_matmul) {
    list.push_back(on_cuda<MatmulLayoutFault<HalvesSwapped>>(
        "matmul/layout-halves-swapped-cuda", "matmul/12b-q-global-4bit-g64", Gate::shapes,
        "a decode layout with each lane's codes of a k16 step's two halves swapped"));
    list.push_back(on_cuda<MatmulLayoutFault<RunsUnbroken>>(
        "matmul/layout-runs-unbroken-cuda", "matmul/12b-q-global-4bit-g64", Gate::stress,
        "a decode layout whose runs of subnormal tiles reach the end of k over tiles of other forms"));
  }
  list.push_back(on_cuda<MatmulBf16Accumulator>("matmul/bf16-accumulator-cuda", "matmul/12b-k-global-f16",
                                                Gate::stress,
                                                "a device kernel that rounds the running sum to bf16"));
}

}  // namespace plumb::contract::controls
