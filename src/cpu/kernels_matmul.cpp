// out = x · Wᵀ (HF nn.Linear in bf16): each output is one dot_f32 over the input width, an order fixed by the
// weight shape alone, rounded once to bf16 (or kept f32). Affine weights enter as bf16(scale * q + bias).
#include <algorithm>
#include <vector>

#include "core/half.hpp"
#include "cpu/kernels.hpp"

namespace plumb::cpu {

namespace {

constexpr int64_t kColumnBlock = 16;
constexpr int64_t kRowTile = 64;

void store(const ops::MatmulLaunch& launch, int64_t r, int64_t o, float value) {
  if (launch.out_dtype == DType::f32) {
    static_cast<float*>(launch.out)[r * launch.out_stride + o] = value;
  } else {
    static_cast<uint16_t*>(launch.out)[r * launch.out_stride + o] = f32_to_bf16(value);
  }
}

}  // namespace

void matmul(ThreadPool& pool, const ops::MatmulLaunch& launch) {
  const int64_t in = launch.weight.in;
  const int64_t outs = launch.weight.out;
  std::vector<float> x(static_cast<size_t>(launch.rows * in));
  pool.parallel_for(launch.rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      bf16_row_to_f32(launch.x + r * launch.x_stride, in, x.data() + r * in);
  });
  const int64_t column_blocks = (outs + kColumnBlock - 1) / kColumnBlock;
  const int64_t row_tiles = (launch.rows + kRowTile - 1) / kRowTile;
  pool.parallel_for(column_blocks * row_tiles, [&](int64_t begin, int64_t end) {
    std::vector<float> weights(static_cast<size_t>(kColumnBlock * in));
    int64_t loaded_block = -1;
    for (int64_t task = begin; task < end; ++task) {
      const int64_t block = task / row_tiles, tile = task % row_tiles;
      const int64_t first_column = block * kColumnBlock;
      const int64_t columns = std::min(kColumnBlock, outs - first_column);
      if (block != loaded_block) {
        for (int64_t c = 0; c < columns; ++c)
          weight_row_f32(launch.weight, first_column + c, weights.data() + c * in);
        loaded_block = block;
      }
      const int64_t last_row = std::min(launch.rows, (tile + 1) * kRowTile);
      for (int64_t r = tile * kRowTile; r < last_row; ++r)
        for (int64_t c = 0; c < columns; ++c)
          store(launch, r, first_column + c, dot_f32(x.data() + r * in, weights.data() + c * in, in));
    }
  });
}

}  // namespace plumb::cpu
