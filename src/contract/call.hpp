#pragma once
// One launch of a form, held on the host: its inputs, its outputs' shapes (and after a run, their bytes), the
// seed and generator the inputs came from, and for attention the segments that map rows to caches.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/tensor.hpp"

namespace plumb::contract {

struct HostData {
  std::string name;
  DType dtype = DType::bf16;
  Shape shape;
  std::vector<uint8_t> bytes;
  bool per_row = false;  // axis 0 indexes the call's rows; otherwise shared by every row (weights, caches)

  static HostData zeros(std::string name, DType dtype, Shape shape, bool per_row);
  int64_t elements() const { return shape_elements(shape); }
  size_t element_bytes() const { return dtype_size(dtype); }
  size_t row_bytes() const;  // bytes of one index along axis 0
  template <class T>
  T* as() {
    return reinterpret_cast<T*>(bytes.data());
  }
  template <class T>
  const T* as() const {
    return reinterpret_cast<const T*>(bytes.data());
  }
  // Element i as a double (bf16, f16, f32, i32 or u32).
  double value(int64_t i) const;
  // Element i's raw bits, zero-extended.
  uint32_t bits(int64_t i) const;
};

// Attention rows [first_row, first_row + rows) read the cache whose keys are input `cache` and whose values
// are input `cache + 1`, with positions [.., end) present.
struct Segment {
  int64_t first_row = 0;
  int64_t rows = 0;
  int cache = 0;
  int64_t end = 0;
};

struct Call {
  std::string inputs_kind;  // the generator's name, printed with failures
  uint64_t seed = 0;
  int64_t rows = 0;
  std::vector<HostData> inputs;
  std::vector<HostData> outputs;
  std::vector<Segment> segments;
  std::vector<uint64_t> row_seeds;  // where each row came from, for failure lines (empty: all `seed`)

  uint64_t seed_of_row(int64_t row) const;
};

// Row `row` of call `call`: the unit gate 2 moves between batches.
struct RowRef {
  const Call* call = nullptr;
  int64_t row = 0;
};

// A run of bytes in one output that belongs to one row (gate 2 compares these bit for bit).
struct OutputBytes {
  int output = 0;
  size_t offset = 0;
  size_t count = 0;
};

// The default row model: per-row tensors are concatenated along axis 0, shared ones taken from the first
// source (every source must share them), outputs sized for the new row count.
Call concat_rows(std::span<const RowRef> rows);
// Each output's row `row` along axis 0.
std::vector<OutputBytes> row_output_bytes(const Call& call, int64_t row);

}  // namespace plumb::contract
