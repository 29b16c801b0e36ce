#pragma once
// NumPy .npy files (format version 1.0) holding a little-endian float32 C-order array: what `plumb score`
// writes and what the reference fixtures hold. Header: "\x93NUMPY", version 1.0, a u16 header length, then a
// Python dict literal padded with spaces to a 64-byte boundary and ended by "\n".
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace plumb {

struct NpyArray {
  Shape shape;
  std::vector<float> values;
};

std::string npy_bytes(const Shape& shape, const std::vector<float>& values);
Status write_npy(const std::string& path, const Shape& shape, const std::vector<float>& values);
// Reads a '<f4' (or '<f8', converted) C-order array; errors name the file.
Result<NpyArray> read_npy(const std::string& path);

}  // namespace plumb
