#pragma once
// Many streams' keys and values written as a forward's step writes them: one kv_write over the segment list,
// or one kv_write per segment. Caches start with seeded bits, so a write to a wrong slot or cache shows.
#include <cstring>
#include <vector>

#include "ops_test_util.hpp"

namespace plumb::ops::testing {

struct KvStream {
  int64_t rows = 0;
  int64_t capacity = 1;
  int32_t first_position = 0;
};

struct KvStreamsCase {
  int64_t kv_heads = 2;
  int64_t dim = 24;
  std::vector<KvStream> streams;
  int64_t rows() const {
    int64_t total = 0;
    for (const KvStream& stream : streams) total += stream.rows;
    return total;
  }
};

// Decode rows, prompt chunks that wrap their ring, an empty stream and a full one; with `decode_streams`
// single-row streams after them (past 64, a CUDA kernel's segment table, the launch is split).
inline KvStreamsCase kv_streams_case(int64_t decode_streams) {
  KvStreamsCase c;
  c.streams = {{1, 16, 40}, {5, 7, 12}, {0, 5, 3}, {3, 3, 2147483645}, {1, 1, 9}, {4, 12, 0}};
  for (int64_t s = 0; s < decode_streams; ++s)
    c.streams.push_back({1, 3 + s % 5, static_cast<int32_t>(100 + 37 * s)});
  return c;
}

struct KvStreamsInputs {
  std::vector<uint16_t> keys;    // [rows, kv_heads, dim]
  std::vector<uint16_t> values;  // [rows, kv_heads, dim]
  std::vector<int32_t> positions;
  std::vector<std::vector<uint16_t>> cache_keys;  // per stream [capacity, kv_heads, dim]: the starting bits
  std::vector<std::vector<uint16_t>> cache_values;
};

inline std::vector<uint16_t> random_bits(uint64_t seed, int64_t count) {
  return to_bf16_bits(random_bf16(seed, static_cast<size_t>(count), -4, 4));
}

inline KvStreamsInputs kv_streams_inputs(const KvStreamsCase& c, uint64_t seed) {
  const int64_t width = c.kv_heads * c.dim;
  KvStreamsInputs in{
      random_bits(seed, c.rows() * width), random_bits(seed + 1, c.rows() * width), {}, {}, {}};
  for (size_t s = 0; s < c.streams.size(); ++s) {
    const KvStream& stream = c.streams[s];
    for (int64_t r = 0; r < stream.rows; ++r)
      in.positions.push_back(static_cast<int32_t>(stream.first_position + r));
    in.cache_keys.push_back(random_bits(seed + 2 + 2 * s, stream.capacity * width));
    in.cache_values.push_back(random_bits(seed + 3 + 2 * s, stream.capacity * width));
  }
  return in;
}

// The caches after the writes, computed on the host: every stream's caches, keys then values, concatenated.
inline std::vector<uint16_t> kv_streams_expected(const KvStreamsCase& c, const KvStreamsInputs& in) {
  const int64_t width = c.kv_heads * c.dim;
  std::vector<uint16_t> all;
  int64_t first_row = 0;
  for (size_t s = 0; s < c.streams.size(); ++s) {
    std::vector<uint16_t> keys = in.cache_keys[s], values = in.cache_values[s];
    for (int64_t r = first_row; r < first_row + c.streams[s].rows; ++r) {
      const int64_t slot = in.positions[static_cast<size_t>(r)] % c.streams[s].capacity;
      std::memcpy(&keys[static_cast<size_t>(slot * width)], &in.keys[static_cast<size_t>(r * width)],
                  width * 2);
      std::memcpy(&values[static_cast<size_t>(slot * width)], &in.values[static_cast<size_t>(r * width)],
                  width * 2);
    }
    all.insert(all.end(), keys.begin(), keys.end());
    all.insert(all.end(), values.begin(), values.end());
    first_row += c.streams[s].rows;
  }
  return all;
}

// Rows [first, first + count) of a row tensor.
inline TensorView rows_of(const TensorView& view, int64_t first, int64_t count) {
  TensorView slice = view;
  slice.data =
      static_cast<char*>(view.data) + first * view.strides[0] * static_cast<int64_t>(dtype_size(view.dtype));
  slice.shape[0] = count;
  return slice;
}

// Writes the case on `backend` in one call (`one_call`) or one call per stream; returns the caches' bits as
// kv_streams_expected orders them.
inline std::vector<uint16_t> run_kv_streams(Backend& backend, const KvStreamsCase& c,
                                            const KvStreamsInputs& in, bool one_call) {
  const Shape rows{c.rows(), c.kv_heads, c.dim};
  DeviceTensor keys = device_tensor(backend, DType::bf16, rows, in.keys.data());
  DeviceTensor values = device_tensor(backend, DType::bf16, rows, in.values.data());
  DeviceTensor positions = device_i32(backend, in.positions);
  std::vector<DeviceTensor> caches;
  std::vector<KvSegment> segments;
  int64_t first_row = 0;
  for (size_t s = 0; s < c.streams.size(); ++s) {
    const KvStream& stream = c.streams[s];
    const Shape slots{stream.capacity, c.kv_heads, c.dim};
    caches.push_back(device_tensor(backend, DType::bf16, slots, in.cache_keys[s].data()));
    caches.push_back(device_tensor(backend, DType::bf16, slots, in.cache_values[s].data()));
    const KvView kv{caches[2 * s].view, caches[2 * s + 1].view, stream.first_position + stream.rows};
    segments.push_back({first_row, stream.rows, kv});
    first_row += stream.rows;
  }
  if (one_call) {
    const Status status = kv_write(backend, segments, positions.view, keys.view, values.view);
    EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
  } else {
    for (const KvSegment& segment : segments) {
      const Status status =
          kv_write(backend, segment.kv, rows_of(positions.view, segment.first_row, segment.rows),
                   rows_of(keys.view, segment.first_row, segment.rows),
                   rows_of(values.view, segment.first_row, segment.rows));
      EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
    }
  }
  std::vector<uint16_t> all;
  for (const DeviceTensor& cache : caches) {
    const std::vector<uint8_t> bytes = download_bytes(backend, cache.view);
    const size_t at = all.size();
    all.resize(at + bytes.size() / 2);
    std::memcpy(all.data() + at, bytes.data(), bytes.size());
  }
  return all;
}

// Bit for bit; prints the first differences with their index.
inline void expect_same_cache_bits(const std::string& what, const std::vector<uint16_t>& got,
                                   const std::vector<uint16_t>& want) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t failures = 0;
  for (size_t k = 0; k < got.size(); ++k)
    if (got[k] != want[k] && failures++ < 8)
      ADD_FAILURE() << fmt::format("{}: index {} expected 0x{:04x}, got 0x{:04x}, bound exact", what, k,
                                   want[k], got[k]);
  EXPECT_EQ(failures, 0u) << what;
}

}  // namespace plumb::ops::testing
