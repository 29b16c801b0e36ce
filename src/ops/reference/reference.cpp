// Float64 references: plain loops over the defining expressions, one rounding helper per rounding point.
#include "ops/reference/reference.hpp"

#include <cmath>
#include <limits>

#include "core/half.hpp"

namespace plumb::ops::reference {

double round_bf16(double value) {
  if (std::isnan(value) || std::isinf(value) || value == 0.0) return value;
  int exponent = 0;
  std::frexp(value, &exponent);  // |value| in [2^(exponent-1), 2^exponent)
  // bf16 keeps 8 significant bits; below the normal range its spacing stays 2^-133.
  const double spacing = std::ldexp(1.0, std::max(exponent - 8, -133));
  const double rounded = std::nearbyint(value / spacing) * spacing;
  const double largest = std::ldexp(255.0 / 128.0, 127);
  if (std::abs(rounded) > largest) return std::copysign(std::numeric_limits<double>::infinity(), value);
  return rounded;
}

double round_f32(double value) {
  return static_cast<double>(static_cast<float>(value));
}

namespace {

double element(const TensorView& view, int64_t offset) {
  switch (view.dtype) {
    case DType::bf16:
      return bf16_to_f32(view.as<const uint16_t>()[offset]);
    case DType::f16:
      return f16_to_f32(view.as<const uint16_t>()[offset]);
    case DType::f32:
      return view.as<const float>()[offset];
    default:
      PLUMB_ASSERT(false, "a float tensor");
  }
  return 0.0;
}

// Bit t of element j lives at stream bit j * bits + t: word (bit / 32), bit (bit % 32) within it.
uint32_t code_bit_by_bit(const uint32_t* row, int64_t j, int bits) {
  uint32_t code = 0;
  for (int t = 0; t < bits; ++t) {
    const int64_t bit = j * bits + t;
    code |= ((row[bit / 32] >> (bit % 32)) & 1u) << t;
  }
  return code;
}

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

}  // namespace

Values bf16_values(const TensorView& view) {
  Values values(static_cast<size_t>(view.elements()));
  std::vector<int64_t> index(view.shape.size(), 0);
  for (size_t flat = 0; flat < values.size(); ++flat) {
    int64_t offset = 0;
    for (size_t axis = 0; axis < index.size(); ++axis) offset += index[axis] * view.strides[axis];
    values[flat] = element(view, offset);
    for (size_t axis = index.size(); axis-- > 0;) {
      if (++index[axis] < view.shape[axis]) break;
      index[axis] = 0;
    }
  }
  return values;
}

Values weight_values(const Weight& weight) {
  if (weight.format == Weight::Format::dense) return bf16_values(weight.dense);
  Values values(static_cast<size_t>(weight.out * weight.in));
  const int64_t words = weight.in * weight.bits / 32;
  const int64_t groups = weight.in / weight.group;
  for (int64_t o = 0; o < weight.out; ++o) {
    for (int64_t j = 0; j < weight.in; ++j) {
      const double q = code_bit_by_bit(weight.packed.as<const uint32_t>() + o * words, j, weight.bits);
      const double s = bf16_to_f32(weight.scales.as<const uint16_t>()[o * groups + j / weight.group]);
      const double b = bf16_to_f32(weight.biases.as<const uint16_t>()[o * groups + j / weight.group]);
      values[static_cast<size_t>(o * weight.in + j)] = round_bf16(round_f32(s * q + b));
    }
  }
  return values;
}

Values embed_rows(std::span<const int32_t> ids, const Values& table, int64_t hidden, double scale) {
  const double factor = round_bf16(scale);
  Values out;
  for (int32_t id : ids)
    for (int64_t k = 0; k < hidden; ++k) out.push_back(table[static_cast<size_t>(id * hidden + k)] * factor);
  return out;
}

Values rms_norm(const Values& x, const Values& weight, int64_t dim, double eps) {
  Values out(x.size());
  for (size_t first = 0; first < x.size(); first += static_cast<size_t>(dim)) {
    double squares = 0.0;
    for (int64_t k = 0; k < dim; ++k) squares += x[first + k] * x[first + k];
    const double inverse = 1.0 / std::sqrt(squares / static_cast<double>(dim) + eps);
    for (int64_t k = 0; k < dim; ++k)
      out[first + k] = x[first + k] * inverse * (weight.empty() ? 1.0 : weight[static_cast<size_t>(k)]);
  }
  return out;
}

Values norm_rope(const Values& x, const Values& weight, int64_t rows, int64_t heads, int64_t dim, double eps,
                 std::span<const int32_t> positions, std::span<const float> inv_freq) {
  Values normed = rms_norm(x, weight, dim, eps);
  for (double& value : normed) value = round_bf16(value);
  Values out(normed.size());
  const int64_t half = dim / 2;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < half; ++i) {
      const double theta = round_f32(static_cast<double>(static_cast<float>(positions[r])) * inv_freq[i]);
      const double c = round_bf16(std::cos(theta));
      const double s = round_bf16(std::sin(theta));
      for (int64_t h = 0; h < heads; ++h) {
        const size_t base = static_cast<size_t>((r * heads + h) * dim);
        const double first = normed[base + i], second = normed[base + i + half];
        out[base + i] = round_bf16(first * c) + round_bf16(-second * s);
        out[base + i + half] = round_bf16(second * c) + round_bf16(first * s);
      }
    }
  }
  return out;
}

Values attention(const Values& q, int64_t rows, int64_t heads, int64_t kv_heads, int64_t dim,
                 std::span<const int32_t> positions, const Values& keys, const Values& values, int64_t window,
                 double scale) {
  Values out(static_cast<size_t>(rows * heads * dim), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t position = positions[r];
    const int64_t first = window > 0 ? std::max<int64_t>(0, position - window + 1) : 0;
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t kv_head = h / (heads / kv_heads);
      const double* query = &q[static_cast<size_t>((r * heads + h) * dim)];
      Values scores;
      for (int64_t j = first; j <= position; ++j) {
        const double* key = &keys[static_cast<size_t>((j * kv_heads + kv_head) * dim)];
        double dot = 0.0;
        for (int64_t d = 0; d < dim; ++d) dot += query[d] * key[d];
        scores.push_back(scale * dot);
      }
      double top = -std::numeric_limits<double>::infinity();
      for (double score : scores) top = std::max(top, score);
      double total = 0.0;
      for (double score : scores) total += std::exp(score - top);
      double* result = &out[static_cast<size_t>((r * heads + h) * dim)];
      for (int64_t j = first; j <= position; ++j) {
        const double weight = round_bf16(std::exp(scores[static_cast<size_t>(j - first)] - top) / total);
        const double* value = &values[static_cast<size_t>((j * kv_heads + kv_head) * dim)];
        for (int64_t d = 0; d < dim; ++d) result[d] += weight * value[d];
      }
    }
  }
  return out;
}

Values matmul(const Values& x, const Values& w, int64_t rows, int64_t in, int64_t out) {
  Values result(static_cast<size_t>(rows * out), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o)
      for (int64_t k = 0; k < in; ++k)
        result[static_cast<size_t>(r * out + o)] +=
            x[static_cast<size_t>(r * in + k)] * w[static_cast<size_t>(o * in + k)];
  return result;
}

Values geglu(const Values& gate, const Values& up) {
  Values out(gate.size());
  for (size_t k = 0; k < gate.size(); ++k) out[k] = round_bf16(gelu_tanh(gate[k])) * up[k];
  return out;
}

Values add(const Values& a, const Values& b) {
  Values out(a.size());
  for (size_t k = 0; k < a.size(); ++k) out[k] = a[k] + b[k];
  return out;
}

Values scale(const Values& x, double factor) {
  Values out(x.size());
  for (size_t k = 0; k < x.size(); ++k) out[k] = x[k] * round_bf16(factor);
  return out;
}

Values soft_cap(const Values& x, double cap) {
  Values out(x.size());
  for (size_t k = 0; k < x.size(); ++k) out[k] = round_bf16(std::tanh(round_bf16(x[k] / cap))) * cap;
  return out;
}

std::vector<int32_t> argmax(const Values& x, int64_t rows, int64_t width) {
  std::vector<int32_t> out(static_cast<size_t>(rows), 0);
  for (int64_t r = 0; r < rows; ++r) {
    double best = std::numeric_limits<double>::quiet_NaN();
    for (int64_t k = 0; k < width; ++k) {
      const double value = x[static_cast<size_t>(r * width + k)];
      if (!std::isnan(value) && (std::isnan(best) || value > best)) {
        best = value;
        out[static_cast<size_t>(r)] = static_cast<int32_t>(k);
      }
    }
  }
  return out;
}

}  // namespace plumb::ops::reference
