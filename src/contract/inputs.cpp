#include "contract/inputs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "core/error.hpp"
#include "core/half.hpp"

namespace plumb::contract {

std::string_view inputs_name(Inputs inputs) {
  switch (inputs) {
    case Inputs::gaussian:
      return "gaussian";
    case Inputs::zero_sum:
      return "zero-sum";
    case Inputs::cancel_pairs:
      return "cancel-pairs";
    case Inputs::extremes:
      return "extremes";
    case Inputs::equal_scores:
      return "equal-scores";
    case Inputs::long_keys:
      return "long-keys";
    case Inputs::ties:
      return "ties";
    case Inputs::fractions:
      return "fractions";
  }
  return "?";
}

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double Rng::uniform() {
  return static_cast<double>(next() >> 11) * 0x1p-53;
}

double Rng::normal() {
  const double u1 = 1.0 - uniform();  // (0, 1]: the log stays finite
  const double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int64_t Rng::integer(int64_t lo, int64_t hi) {
  const auto span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(next() % span);
}

uint64_t mix_seed(uint64_t seed, uint64_t salt) {
  Rng rng(seed ^ (salt * 0x9e3779b97f4a7c15ull));
  return rng.next();
}

uint64_t name_seed(std::string_view name) {
  uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : name) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return hash;
}

std::vector<uint16_t> gaussian_bf16(Rng& rng, int64_t count, double scale) {
  std::vector<uint16_t> values(static_cast<size_t>(count));
  for (auto& value : values) value = f32_to_bf16(static_cast<float>(rng.normal() * scale));
  return values;
}

std::vector<uint16_t> spread_bf16(Rng& rng, int64_t count, double scale) {
  std::vector<uint16_t> values(static_cast<size_t>(count));
  for (size_t i = 0; i < values.size(); i += 4) {
    uint64_t draw = rng.next();
    for (size_t k = i; k < std::min(i + 4, values.size()); ++k, draw >>= 16) {
      const double unit = (static_cast<double>(draw & 0xffffu) + 0.5) / 32768.0 - 1.0;
      values[k] = f32_to_bf16(static_cast<float>(unit * scale));
    }
  }
  return values;
}

std::vector<uint16_t> integers_bf16(Rng& rng, int64_t count, int lo, int hi) {
  std::vector<uint16_t> values(static_cast<size_t>(count));
  for (auto& value : values) value = f32_to_bf16(static_cast<float>(rng.integer(lo, hi)));
  return values;
}

std::vector<uint16_t> zero_sum_bf16(Rng& rng, int64_t rows, int64_t width, int limit) {
  PLUMB_ASSERT(width >= 2 && limit <= 256, "zero-sum rows need two entries and bf16-exact integers");
  std::vector<uint16_t> values(static_cast<size_t>(rows * width));
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> row(static_cast<size_t>(width));
    int64_t sum = 0;
    for (auto& v : row) sum += (v = rng.integer(-limit, limit));
    // Walk the sum back to zero one unit at a time, never leaving [-limit, limit].
    for (int64_t i = 0; sum != 0; i = (i + 1) % width) {
      const int64_t step = sum > 0 ? -1 : 1;
      if (std::abs(row[i] + step) <= limit) {
        row[i] += step;
        sum += step;
      }
    }
    for (int64_t i = 0; i < width; ++i) values[r * width + i] = f32_to_bf16(static_cast<float>(row[i]));
  }
  return values;
}

std::vector<uint16_t> cancel_pairs_bf16(Rng& rng, int64_t rows, int64_t width, int pairs, int limit) {
  PLUMB_ASSERT(width >= 2 * pairs, "the pairs must fit in a row");
  std::vector<uint16_t> values = integers_bf16(rng, rows * width, -limit, limit);
  std::vector<int64_t> slots(static_cast<size_t>(width));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < width; ++i) slots[i] = i;
    for (int64_t i = width - 1; i > 0; --i) std::swap(slots[i], slots[rng.integer(0, i)]);
    for (int p = 0; p < pairs; ++p) {
      values[r * width + slots[2 * p]] = f32_to_bf16(0x1p20f);
      values[r * width + slots[2 * p + 1]] = f32_to_bf16(-0x1p20f);
    }
  }
  return values;
}

std::vector<uint16_t> extremes_bf16(Rng& rng, int64_t count, double max_magnitude) {
  const int top = std::ilogb(max_magnitude);
  std::vector<uint16_t> values(static_cast<size_t>(count));
  for (auto& value : values) {
    const uint16_t sign = (rng.next() & 1) ? 0x8000 : 0;
    const int64_t kind = rng.integer(0, 5);
    uint16_t magnitude = 0;
    if (kind == 0) magnitude = 0;                                           // a signed zero
    if (kind == 1) magnitude = static_cast<uint16_t>(rng.integer(1, 127));  // a subnormal
    if (kind == 2) magnitude = 0x0080;                                      // the smallest normal
    if (kind >= 3) {
      const int exponent = static_cast<int>(rng.integer(-126, top));
      const int mantissa = static_cast<int>(rng.integer(0, 127));
      magnitude = static_cast<uint16_t>(((exponent + 127) << 7) | mantissa);
    }
    value = static_cast<uint16_t>(sign | magnitude);
  }
  return values;
}

void store_bf16(std::span<const uint16_t> values, std::vector<uint8_t>& bytes) {
  bytes.resize(values.size() * sizeof(uint16_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
}

}  // namespace plumb::contract
