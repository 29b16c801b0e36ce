// The tiled and decode matmuls' plan (cuda/matmul_plan.hpp), on the host with no GPU: a weight's K splits
// come from its shape alone, so a row's sums never depend on how many rows share the call (I1); every split
// holds k tiles, and the row tiles cover the rows.
#include <gtest/gtest.h>

#include "cuda/matmul_plan.hpp"

namespace plumb::cuda::matmul {
namespace {

struct Shape {
  int64_t n, k;  // out, in
};

// Gemma 4 12B's and 31B's projections (q, k and v, o, gate and up, down, the head) and shapes off the tiles.
constexpr Shape kShapes[] = {
    {4096, 3840},  {2048, 3840},  {8192, 3840},   {512, 3840},   {3840, 4096},   {3840, 8192},
    {15360, 3840}, {3840, 15360}, {262144, 3840}, {8192, 5376},  {4096, 5376},   {2048, 5376},
    {5376, 8192},  {5376, 16384}, {21504, 5376},  {5376, 21504}, {262144, 5376}, {1, 1},
    {7, 100},      {129, 4104},   {1000, 33},     {64, 65536},
};
constexpr int64_t kRows[] = {1, 2, 15, 16, 17, 31, 32, 33, 64, 65, 127, 128, 129, 2048, 8192, 65536};

std::string where(const Shape& shape, int64_t rows) {
  return "plan_for: weight " + std::to_string(shape.n) + " x " + std::to_string(shape.k) + " at " +
         std::to_string(rows) + " rows";
}

TEST(CudaMatmulPlan, SplitsComeFromTheWeightShapeAlone) {
  for (const Shape& shape : kShapes) {
    const Plan one_row = plan_for(1, shape.n, shape.k);
    for (const int64_t rows : kRows) {
      const Plan plan = plan_for(rows, shape.n, shape.k);
      EXPECT_EQ(plan.k_tiles, one_row.k_tiles) << where(shape, rows) << ": k tiles";
      EXPECT_EQ(plan.splits, one_row.splits) << where(shape, rows) << ": splits, against 1 row's";
      EXPECT_EQ(plan.tiles_per_split, one_row.tiles_per_split)
          << where(shape, rows) << ": tiles a split, against 1 row's";
      EXPECT_EQ(plan.n_tiles, one_row.n_tiles) << where(shape, rows) << ": column tiles";
    }
  }
}

TEST(CudaMatmulPlan, EverySplitHoldsTilesAndTheRowTilesCoverTheRows) {
  for (const Shape& shape : kShapes) {
    for (const int64_t rows : kRows) {
      const Plan plan = plan_for(rows, shape.n, shape.k);
      ASSERT_GE(plan.splits, 1) << where(shape, rows);
      EXPECT_GE(plan.splits * plan.tiles_per_split, plan.k_tiles)
          << where(shape, rows) << ": k tiles left out";
      EXPECT_LT((plan.splits - 1) * plan.tiles_per_split, plan.k_tiles)
          << where(shape, rows) << ": the last split is empty";
      EXPECT_GE(plan.m_tiles * plan.rows_tile, rows) << where(shape, rows) << ": rows left out";
      EXPECT_LT((plan.m_tiles - 1) * plan.rows_tile, rows) << where(shape, rows) << ": a row tile is empty";
      EXPECT_TRUE(!plan.cross || plan.splits > 1)
          << where(shape, rows) << ": splits across blocks of one split";
    }
  }
}

}  // namespace
}  // namespace plumb::cuda::matmul
