// The tiled matmuls' K-split walk (cuda/split_cursor.hpp) against the modulo rules it replaced, over every
// block range of small k and every split width: the same tiles start, end and fold first, so the same bits.
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/split_cursor.hpp"

namespace plumb::cuda::matmul {
namespace {

TEST(SplitCursor, WalksTheSplitsTheModuloRuleGives) {
  int checked = 0;
  for (int64_t per_split = 1; per_split <= 9; ++per_split) {
    for (int64_t kt0 = 0; kt0 <= 20; ++kt0) {
      for (int64_t kt1 = kt0 + 1; kt1 <= 24; ++kt1) {
        SplitCursor<int64_t> cursor(kt0, kt1, per_split);
        for (int64_t kt = kt0; kt < kt1; ++kt) {
          const bool starts = kt == kt0 || kt % per_split == 0;
          const bool ends = (kt + 1) % per_split == 0 || kt + 1 == kt1;
          const bool first = kt / per_split == kt0 / per_split;
          ASSERT_EQ(cursor.starts(kt), starts)
              << "kt " << kt << " of [" << kt0 << ", " << kt1 << ") by " << per_split;
          ASSERT_EQ(cursor.ends(kt), ends)
              << "kt " << kt << " of [" << kt0 << ", " << kt1 << ") by " << per_split;
          ASSERT_EQ(cursor.first(), first)
              << "kt " << kt << " of [" << kt0 << ", " << kt1 << ") by " << per_split;
          if (cursor.ends(kt)) cursor.next();
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(SplitCursor, CountsIn32BitsAsTheRingDoes) {
  SplitCursor<int> cursor(6, 13, 3);  // a cross-block split that starts mid-walk: [6, 9), [9, 12), [12, 13)
  const int ends[] = {8, 11, 12};
  int at = 0;
  for (int kt = 6; kt < 13; ++kt) {
    if (!cursor.ends(kt)) continue;
    ASSERT_LT(at, 3);
    EXPECT_EQ(kt, ends[at]) << "split " << at;
    EXPECT_EQ(cursor.first(), at == 0) << "split " << at;
    cursor.next();
    ++at;
  }
  EXPECT_EQ(at, 3);
}

}  // namespace
}  // namespace plumb::cuda::matmul
