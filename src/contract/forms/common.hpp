#pragma once
// Helpers the op forms share: host tensors from generated values, and activations per input kind.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "contract/call.hpp"
#include "contract/form.hpp"
#include "contract/inputs.hpp"
#include "contract/span.hpp"
#include "ops/ops.hpp"

namespace plumb::contract::forms {

HostData bf16_data(std::string name, Shape shape, std::span<const uint16_t> values, bool per_row);
HostData i32_data(std::string name, Shape shape, std::span<const int32_t> values, bool per_row);
Span exact_at(const HostData& data, int64_t i);
// PyTorch's gelu(approximate="tanh") in fp32 steps, and geglu's bf16(bf16(gelu_tanh(gate)) * up), over values
// each known to lie in its span.
Span gelu_tanh_span(const Span& x);
Span geglu_span(const Span& gate, const Span& up);
// The same values as f32 (a bf16 row of logits as the soft cap's f32 output holds them).
HostData widen_to_f32(const HostData& bf16_values);

// Logits "x" [rows, width] in `dtype` (bf16, or f32 holding bf16 values) for argmax and sample: for `ties`,
// integers in [-3, 3] (thousands of equal maxima) edited by `plant`, the last of several rows all NaN;
// otherwise the kind's activations at scale 8.
HostData logit_rows(Inputs inputs, Rng& rng, int64_t rows, int64_t width, DType dtype,
                    const std::function<void(Rng&, std::vector<uint16_t>&)>& plant);
float f32_at(const HostData& data, int64_t i);

// bf16 activations [rows, width] for an input kind: Gaussian of `scale`, zero-sum integer rows, +-2^20
// pairs among small integers, or values spread over bf16's range (with an all-zero row first).
std::vector<uint16_t> activations(Inputs inputs, Rng& rng, int64_t rows, int64_t width, double scale);

// The ops' cache segments for a call's segments, whose keys and values are caches[cache] and
// caches[cache + 1].
std::vector<ops::KvSegment> kv_segments(std::span<const Segment> segments,
                                        std::span<const TensorView> caches);

// The Gemma 4 model shapes (reference/gemma4.md §1.1).
struct ModelShape {
  const char* name;  // "12b", "31b"
  int64_t hidden;
  int64_t intermediate;
  int64_t heads;
  int64_t sliding_kv_heads;
  int64_t global_kv_heads;
  int64_t sliding_head_dim;
  int64_t global_head_dim;
};
inline constexpr ModelShape kGemma12b{"12b", 3840, 15360, 16, 8, 1, 256, 512};
inline constexpr ModelShape kGemma31b{"31b", 5376, 21504, 32, 16, 4, 256, 512};
inline constexpr int64_t kVocab = 262144;
inline constexpr int64_t kContext = 262144;  // max_position_embeddings
inline constexpr int64_t kSlidingWindow = 1024;
inline constexpr float kRmsEps = 1e-6f;

// HF Gemma4RMSNorm: (x * rsqrt(mean(x^2) + eps)) * w in fp32, before the final rounding, over fp32 values
// each known to lie in its span (one value each where x is a tensor; a range where x is an earlier step's
// rounded result); rms_norm_vector takes the dim values of x from offset (norms.cpp).
std::vector<Span> rms_norm_spans(std::span<const Span> x, const HostData* weight, float eps);
std::vector<Span> rms_norm_vector(const HostData& x, int64_t offset, int64_t dim, const HostData* weight,
                                  float eps);
// norm_rope's output over x [rows, heads, dim]: n = bf16(norm), c/s = bf16(cos/sin(f32(pos * inv_freq))),
// bf16(bf16(n1 c) + bf16(-n2 s)) and bf16(bf16(n2 c) + bf16(n1 s)).
std::vector<Span> norm_rope_spans(const HostData& x, int64_t heads, int64_t dim, const HostData* weight,
                                  const HostData& positions, std::span<const float> inv_freq);
// The same for one vector x of values each known to lie in its span, at `position`.
std::vector<Span> norm_rope_vector(std::span<const Span> x, const HostData* weight, const Span& position,
                                   std::span<const float> inv_freq);
// bf16 norm weights around 1 (Gemma 4's norms hold w, not 1 + w).
std::vector<uint16_t> norm_weight(Rng& rng, int64_t dim);
// A call's rope positions over the whole context (for extremes, its far end, where angles are largest).
std::vector<int32_t> rope_positions(const CallRequest& request);

}  // namespace plumb::contract::forms
