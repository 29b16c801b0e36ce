// Controls for rms_norm, residual_norm, head_norms and norm_rope.
#include <cmath>
#include <vector>

#include "contract/controls/common.hpp"
#include "contract/registry.hpp"

namespace plumb::contract::controls {
namespace {

enum class NormFault { none, round_normalized, no_eps, batch_path, bf16_sum };

// One vector's HF RMSNorm in fp32 (before the final rounding), with the planted fault.
void norm_vector(const uint16_t* x, const uint16_t* weight, int64_t dim, float eps, NormFault fault,
                 int64_t rows, float* out) {
  float sum = 0.0f;
  for (int64_t k = 0; k < dim; ++k) {
    sum += bf16_to_f32(x[k]) * bf16_to_f32(x[k]);
    if (fault == NormFault::bf16_sum) sum = round_bf16(sum);
  }
  const float mean = sum / static_cast<float>(dim);
  const float inverse = 1.0f / std::sqrt(fault == NormFault::no_eps ? mean : mean + eps);
  for (int64_t k = 0; k < dim; ++k) {
    float normed = bf16_to_f32(x[k]) * inverse;
    // A separate path for batches of four rows or more, with MLX's extra rounding point.
    if (fault == NormFault::round_normalized || (fault == NormFault::batch_path && rows >= 4))
      normed = round_bf16(normed);
    out[k] = weight != nullptr ? normed * bf16_to_f32(weight[k]) : normed;
  }
}

template <NormFault fault>
class RmsNormFault final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void rms_norm(const ops::RmsNormLaunch& launch) override {
    std::vector<float> normed(static_cast<size_t>(launch.dim));
    for (int64_t r = 0; r < launch.rows; ++r)
      for (int64_t h = 0; h < launch.heads; ++h) {
        norm_vector(launch.x + r * launch.x_stride + h * launch.dim, launch.weight, launch.dim, launch.eps,
                    fault, launch.rows, normed.data());
        uint16_t* out = launch.out + r * launch.out_stride + h * launch.dim;
        for (int64_t k = 0; k < launch.dim; ++k) out[k] = f32_to_bf16(normed[static_cast<size_t>(k)]);
      }
  }
};

// residual_norm with the next norm taken over the fp32 sums before their bf16 roundings (a fused kernel that
// keeps h in registers); h_out itself is right.
class ResidualNormUnroundedSum final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void residual_norm(const ops::ResidualNormLaunch& launch) override {
    const ops::RmsNormLaunch& post = launch.post;
    const ops::RmsNormLaunch& next = launch.next_norm;
    std::vector<float> normed(static_cast<size_t>(post.dim)), sums(normed.size());
    for (int64_t r = 0; r < post.rows; ++r) {
      norm_vector(post.x + r * post.x_stride, post.weight, post.dim, post.eps, NormFault::none, post.rows,
                  normed.data());
      const uint16_t* h = launch.h + r * launch.h_stride;
      uint16_t* h_out = launch.h_out + r * launch.h_out_stride;
      float sum_squares = 0.0f;
      for (int64_t k = 0; k < post.dim; ++k) {
        const float sum = bf16_to_f32(h[k]) + round_bf16(normed[static_cast<size_t>(k)]);
        const float factor = launch.scaled ? launch.factor : 1.0f;
        h_out[k] = f32_to_bf16(round_bf16(sum) * factor);
        sums[static_cast<size_t>(k)] = sum * factor;
        sum_squares += sums[static_cast<size_t>(k)] * sums[static_cast<size_t>(k)];
      }
      const float inverse = 1.0f / std::sqrt(sum_squares / static_cast<float>(post.dim) + next.eps);
      for (int64_t k = 0; k < post.dim; ++k)
        next.out[r * next.out_stride + k] =
            f32_to_bf16(sums[static_cast<size_t>(k)] * inverse * bf16_to_f32(next.weight[k]));
    }
  }
};

// head_norms with the values normed after the keys' rotation, from the rotated keys (a fused kernel that
// rotates first): the real launchers otherwise.
class HeadNormsValuesAfterRotation final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void head_norms(const ops::HeadNormsLaunch& launch) override {
    ForwardingBackend::norm_rope(launch.q);
    ForwardingBackend::norm_rope(launch.k);
    ops::RmsNormLaunch values = launch.v;
    values.x = launch.k.norm.out;
    values.x_stride = launch.k.norm.out_stride;
    ForwardingBackend::rms_norm(values);
  }
};

// head_norms whose caches take the keys before their rotation (a fused kernel that writes a cache from its
// input rows): the real launchers otherwise.
class HeadNormsCacheBeforeRotation final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void head_norms(const ops::HeadNormsLaunch& launch) override {
    ops::HeadNormsLaunch norms = launch;
    norms.cache = nullptr;
    ForwardingBackend::head_norms(norms);
    if (launch.cache == nullptr) return;
    ops::KvWriteLaunch raw = *launch.cache;
    raw.keys = launch.k.norm.x;
    raw.keys_stride = launch.k.norm.x_stride;
    ForwardingBackend::kv_write(raw);
  }
};

enum class RopeFault { trig_unrounded, angle_in_double, products_unrounded };

template <RopeFault fault>
class NormRopeFault final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  void norm_rope(const ops::NormRopeLaunch& launch) override {
    const ops::RmsNormLaunch& norm = launch.norm;
    const int64_t half = norm.dim / 2;
    std::vector<float> normed(static_cast<size_t>(norm.dim));
    for (int64_t r = 0; r < norm.rows; ++r)
      for (int64_t h = 0; h < norm.heads; ++h) {
        norm_vector(norm.x + r * norm.x_stride + h * norm.dim, norm.weight, norm.dim, norm.eps,
                    NormFault::none, norm.rows, normed.data());
        uint16_t* out = norm.out + r * norm.out_stride + h * norm.dim;
        for (int64_t i = 0; i < half; ++i) {
          const auto [cosine, sine] = trig(launch.positions[r], launch.inv_freq[i]);
          const float first = round_bf16(normed[static_cast<size_t>(i)]);
          const float second = round_bf16(normed[static_cast<size_t>(i + half)]);
          out[i] = f32_to_bf16(combine(first * cosine, -second * sine));
          out[i + half] = f32_to_bf16(combine(second * cosine, first * sine));
        }
      }
  }

 private:
  static std::pair<float, float> trig(int32_t position, float inv_freq) {
    if (fault == RopeFault::angle_in_double) {
      const double theta = static_cast<double>(position) * static_cast<double>(inv_freq);
      return {round_bf16(static_cast<float>(std::cos(theta))),
              round_bf16(static_cast<float>(std::sin(theta)))};
    }
    const float theta = static_cast<float>(position) * inv_freq;
    if (fault == RopeFault::trig_unrounded) return {std::cos(theta), std::sin(theta)};
    return {round_bf16(std::cos(theta)), round_bf16(std::sin(theta))};
  }

  static float combine(float a, float b) {
    return fault == RopeFault::products_unrounded ? a + b : round_bf16(a) + round_bf16(b);
  }
};

}  // namespace

void register_norm_controls(Registry& registry) {
  auto& list = registry.controls;
  list.push_back(planted<RmsNormFault<NormFault::round_normalized>>(
      "rms_norm/round-normalized", "rms_norm/12b-hidden", Gate::shapes,
      "adds MLX's rounding point: bf16(bf16(x * inv) * w)"));
  list.push_back(planted<RmsNormFault<NormFault::no_eps>>("rms_norm/no-eps", "rms_norm/31b-hidden",
                                                          Gate::stress, "leaves eps out of the root"));
  list.push_back(planted<RmsNormFault<NormFault::batch_path>>(
      "rms_norm/batch-path", "rms_norm/12b-hidden", Gate::invariant,
      "takes another path for four rows or more, which rounds x * inv to bf16 before the weight"));
  list.push_back(planted<RmsNormFault<NormFault::bf16_sum>>("rms_norm/bf16-sum", "rms_norm/12b-v-global",
                                                            Gate::stress, "accumulates the squares in bf16"));
  list.push_back(planted<ResidualNormUnroundedSum>(
      "residual_norm/unrounded-sum", "residual_norm/12b-attention", Gate::shapes,
      "takes the next norm over h + norm(o) before its bf16 rounding"));
  list.push_back(planted<HeadNormsValuesAfterRotation>(
      "head_norms/values-from-rotated-keys", "head_norms/12b-global", Gate::shapes,
      "norms the values after rotating the keys they come from"));
  list.push_back(planted<HeadNormsCacheBeforeRotation>(
      "head_norms/cache-keys-before-rotation", "head_norms/12b-sliding-streams", Gate::shapes,
      "writes the keys to the caches before their norm and rotation"));
  list.push_back(planted<NormRopeFault<RopeFault::trig_unrounded>>(
      "norm_rope/trig-unrounded", "norm_rope/12b-q-sliding", Gate::shapes,
      "keeps cos and sin in fp32 (MLX's rotation) instead of HF's bf16 tables"));
  list.push_back(planted<NormRopeFault<RopeFault::angle_in_double>>(
      "norm_rope/angle-in-double", "norm_rope/31b-k-global", Gate::stress,
      "computes the angle in float64 where HF rounds pos * inv_freq to fp32"));
  list.push_back(planted<NormRopeFault<RopeFault::products_unrounded>>(
      "norm_rope/products-unrounded", "norm_rope/12b-k-global", Gate::shapes,
      "adds the rotated products before rounding each to bf16"));
}

}  // namespace plumb::contract::controls
