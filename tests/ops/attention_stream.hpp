#pragma once
// Drives one stream's tokens through kv_write + attention in chunks, as a family's forward does, so tests can
// compare prompt, decode and chunked runs bit for bit.
#include <ostream>
#include <vector>

#include "ops_test_util.hpp"

namespace plumb::ops::testing {

struct AttentionCase {
  int64_t heads = 4;
  int64_t kv_heads = 2;
  int64_t dim = 32;
  int64_t window = 0;  // 0: global
  int64_t tokens = 40;
  float scale = 1.0f;
};

inline void PrintTo(const AttentionCase& c, std::ostream* out) {
  *out << "heads " << c.heads << "/" << c.kv_heads << " dim " << c.dim << " window " << c.window << " tokens "
       << c.tokens << " scale " << c.scale;
}

struct StreamInputs {
  Values q;       // [tokens, heads, dim]
  Values keys;    // [tokens, kv_heads, dim]
  Values values;  // [tokens, kv_heads, dim]
};

inline StreamInputs stream_inputs(const AttentionCase& c, uint64_t seed) {
  return {random_bf16(seed, c.tokens * c.heads * c.dim, -1.5, 1.5),
          random_bf16(seed + 1, c.tokens * c.kv_heads * c.dim, -1.5, 1.5),
          random_bf16(seed + 2, c.tokens * c.kv_heads * c.dim, -2, 2)};
}

// The cache slots a chunked run needs: all tokens for a global layer, window - 1 + chunk for a sliding one.
inline int64_t stream_capacity(const AttentionCase& c, int64_t chunk) {
  return c.window > 0 ? kv_capacity(c.window, chunk) : c.tokens;
}

// Returns the attention output bytes for every token [tokens, heads, dim], computed chunk by chunk.
inline std::vector<uint8_t> run_stream(Backend& backend, const AttentionCase& c, const StreamInputs& in,
                                       int64_t chunk) {
  const int64_t capacity = stream_capacity(c, chunk);
  DeviceTensor cache_keys = device_zeros(backend, DType::bf16, {capacity, c.kv_heads, c.dim});
  DeviceTensor cache_values = device_zeros(backend, DType::bf16, {capacity, c.kv_heads, c.dim});
  std::vector<uint8_t> all;
  for (int64_t first = 0; first < c.tokens; first += chunk) {
    const int64_t rows = std::min(chunk, c.tokens - first);
    const auto slice = [&](const Values& v, int64_t width) {
      return Values(v.begin() + first * width, v.begin() + (first + rows) * width);
    };
    std::vector<int32_t> positions(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) positions[static_cast<size_t>(r)] = static_cast<int32_t>(first + r);
    DeviceTensor position_tensor = device_i32(backend, positions);
    DeviceTensor q = device_bf16(backend, slice(in.q, c.heads * c.dim), {rows, c.heads, c.dim});
    DeviceTensor k = device_bf16(backend, slice(in.keys, c.kv_heads * c.dim), {rows, c.kv_heads, c.dim});
    DeviceTensor v = device_bf16(backend, slice(in.values, c.kv_heads * c.dim), {rows, c.kv_heads, c.dim});
    const KvView kv{cache_keys.view, cache_values.view, first + rows};
    EXPECT_TRUE(kv_write(backend, kv, position_tensor.view, k.view, v.view).ok());
    DeviceTensor out = device_zeros(backend, DType::bf16, {rows, c.heads, c.dim});
    const KvSegment segment{0, rows, kv};
    const Status status =
        attention(backend, q.view, position_tensor.view, {&segment, 1}, {c.window, c.scale}, out.view);
    EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
    const std::vector<uint8_t> bytes = download_bytes(backend, out.view);
    all.insert(all.end(), bytes.begin(), bytes.end());
  }
  return all;
}

inline Values bytes_to_values(const std::vector<uint8_t>& bytes) {
  Values values(bytes.size() / 2);
  for (size_t k = 0; k < values.size(); ++k)
    values[k] = bf16_to_f32(static_cast<uint16_t>(bytes[2 * k] | (bytes[2 * k + 1] << 8)));
  return values;
}

}  // namespace plumb::ops::testing
