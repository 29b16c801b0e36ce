// Elementwise kernels and argmax, each at HF's bf16 rounding points.
#include <cmath>
#include <vector>

#include "core/half.hpp"
#include "cpu/kernels.hpp"
#include "ops/sampling.hpp"

namespace plumb::cpu {

namespace {

template <class Element>
void for_each_row(ThreadPool& pool, const ops::RowsLaunch& launch, Element element) {
  pool.parallel_for(launch.rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const uint16_t* a = launch.a + r * launch.a_stride;
      const uint16_t* b = launch.b != nullptr ? launch.b + r * launch.b_stride : nullptr;
      for (int64_t k = 0; k < launch.width; ++k) {
        const float value = element(bf16_to_f32(a[k]), b != nullptr ? bf16_to_f32(b[k]) : 0.0f);
        if (launch.out_dtype == DType::f32) {
          static_cast<float*>(launch.out)[r * launch.out_stride + k] = round_bf16(value);
        } else {
          static_cast<uint16_t*>(launch.out)[r * launch.out_stride + k] = f32_to_bf16(value);
        }
      }
    }
  });
}

// PyTorch's gelu(approximate="tanh") in fp32: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
float gelu_tanh(float x) {
  constexpr float kBeta = static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5);
  constexpr float kKappa = 0.044715f;
  const float cube = x * x * x;
  const float inner = kBeta * (x + kKappa * cube);
  return 0.5f * x * (1.0f + std::tanh(inner));
}

}  // namespace

// HF Gemma4TextMLP: act_fn(gate) * up, each a bf16 tensor op: bf16(bf16(gelu_tanh(gate)) * up).
void geglu(ThreadPool& pool, const ops::RowsLaunch& launch) {
  for_each_row(pool, launch, [](float gate, float up) { return round_bf16(gelu_tanh(gate)) * up; });
}

// The residual add: bf16(a + b).
void add(ThreadPool& pool, const ops::RowsLaunch& launch) {
  for_each_row(pool, launch, [](float a, float b) { return a + b; });
}

// hidden_states *= layer_scalar: bf16(x * s), s already bf16.
void scale(ThreadPool& pool, const ops::RowsLaunch& launch) {
  const float factor = launch.factor;
  for_each_row(pool, launch, [factor](float x, float) { return x * factor; });
}

// HF's final soft cap in three bf16 ops: bf16(bf16(tanh(bf16(x / cap))) * cap).
void soft_cap(ThreadPool& pool, const ops::RowsLaunch& launch) {
  const float cap = launch.factor;
  for_each_row(pool, launch,
               [cap](float x, float) { return round_bf16(std::tanh(round_bf16(x / cap))) * cap; });
}

// The lowest index of the row's largest value; NaN is skipped, an all-NaN row gives 0.
void argmax(ThreadPool& pool, const ops::ArgmaxLaunch& launch) {
  pool.parallel_for(launch.rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int32_t best = 0;
      float best_value = NAN;
      for (int64_t k = 0; k < launch.width; ++k) {
        const float value = ops::logit_value(launch.x, launch.x_dtype, r * launch.x_stride + k);
        if (std::isnan(value)) continue;
        if (std::isnan(best_value) || value > best_value) {
          best_value = value;
          best = static_cast<int32_t>(k);
        }
      }
      launch.out[r] = best;
    }
  });
}

// The keyed draw of each row by selection (ops/sampling.hpp), rows in parallel.
void sample(ThreadPool& pool, const ops::SampleLaunch& launch) {
  pool.parallel_for(launch.rows, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(launch.width));
    for (int64_t r = begin; r < end; ++r) {
      ops::read_logits_row(launch.x, launch.x_dtype, launch.x_stride, r, row);
      launch.out[r] = ops::draw_keyed_by_selection(row, launch.params[r]);
    }
  });
}

}  // namespace plumb::cpu
