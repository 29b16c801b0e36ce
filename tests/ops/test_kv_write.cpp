// kv_write over many streams' caches in one call equals one call per stream bit for bit, and both equal the
// rows copied to their slots with every other slot kept; malformed segment lists are refused by segment
// index.
#include "cpu/cpu_backend.hpp"
#include "kv_streams.hpp"

namespace plumb::ops {
namespace {

class KvWrite : public ::testing::Test {
 protected:
  void expect_error(const Status& status, const std::string& message) {
    ASSERT_FALSE(status.ok()) << "expected the error: " << message;
    EXPECT_EQ(status.error().message, message);
  }
  std::unique_ptr<Backend> backend = cpu::make_cpu_backend(4);
};

TEST_F(KvWrite, OneCallOverSegmentsEqualsOneCallPerSegment) {
  for (int64_t decode_streams : {0, 3, 70}) {
    const testing::KvStreamsCase c = testing::kv_streams_case(decode_streams);
    const testing::KvStreamsInputs in =
        testing::kv_streams_inputs(c, 50 + static_cast<uint64_t>(decode_streams));
    const std::vector<uint16_t> expected = testing::kv_streams_expected(c, in);
    const std::string what = fmt::format("{} streams", c.streams.size());
    testing::expect_same_cache_bits(what + ", one call", testing::run_kv_streams(*backend, c, in, true),
                                    expected);
    testing::expect_same_cache_bits(what + ", a call per stream",
                                    testing::run_kv_streams(*backend, c, in, false), expected);
  }
}

class KvWriteSegments : public KvWrite {
 protected:
  KvWriteSegments() {
    keys = testing::device_zeros(*backend, DType::bf16, {6, 2, 8});
    values = testing::device_zeros(*backend, DType::bf16, {6, 2, 8});
    positions = testing::device_i32(*backend, {0, 1, 2, 3, 4, 5});
    for (int64_t capacity : {4, 4, 4}) {
      caches.push_back(testing::device_zeros(*backend, DType::bf16, {capacity, 2, 8}));
      caches.push_back(testing::device_zeros(*backend, DType::bf16, {capacity, 2, 8}));
    }
    segments = {{0, 2, kv(0)}, {2, 1, kv(1)}, {3, 3, kv(2)}};
  }
  KvView kv(size_t stream) const { return {caches[2 * stream].view, caches[2 * stream + 1].view, 6}; }
  Status write() { return kv_write(*backend, segments, positions.view, keys.view, values.view); }

  DeviceTensor keys, values, positions;
  std::vector<DeviceTensor> caches;
  std::vector<KvSegment> segments;
};

TEST_F(KvWriteSegments, AWellFormedListIsAccepted) {
  const Status status = write();
  EXPECT_TRUE(status.ok()) << (status.ok() ? "" : status.error().message);
}

TEST_F(KvWriteSegments, ACacheOfTheWrongShapeIsNamedByItsSegment) {
  DeviceTensor narrow = testing::device_zeros(*backend, DType::bf16, {4, 2, 6});
  segments[1].kv.keys = narrow.view;
  expect_error(write(),
               "ops.kv_write: tensor 'segments[1].kv.keys' has the wrong shape; expected [*, 2, 8], got "
               "[4, 2, 6]");
  segments[1].kv = kv(1);
  DeviceTensor short_values = testing::device_zeros(*backend, DType::bf16, {3, 2, 8});
  segments[2].kv.values = short_values.view;
  expect_error(write(),
               "ops.kv_write: tensor 'segments[2].kv.values' has the wrong shape; expected [4, 2, 8], "
               "got [3, 2, 8]");
}

TEST_F(KvWriteSegments, RowsOutsideTheSegmentsAreRefused) {
  segments[1].first_row = 3;
  expect_error(write(),
               "ops.kv_write: parameter 'segments[1]' does not continue the rows; expected first_row 2 "
               "and rows >= 0, got first_row 3, rows 1");
  segments[1].first_row = 2;
  segments[2].rows = 2;
  expect_error(write(), "ops.kv_write: parameter 'segments' do not cover the key rows; expected 6, got 5");
  segments[2].rows = 5;
  expect_error(write(),
               "ops.kv_write: parameter 'segments[2]' has more rows than its cache has slots; expected "
               "at most 4 rows, got 5");
}

TEST_F(KvWriteSegments, SharedOrAliasedCachesAreRefused) {
  segments[2].kv = kv(0);
  expect_error(write(),
               "ops.kv_write: tensor 'segments[2].kv.keys' shares bytes with another cache; expected no "
               "bytes shared with 'segments[0].kv.keys', got shared bytes");
  segments[2].kv = {caches[4].view, caches[4].view, 6};
  expect_error(write(),
               "ops.kv_write: tensor 'segments[2].kv.values' shares bytes with another cache; expected "
               "no bytes shared with 'segments[2].kv.keys', got shared bytes");
  DeviceTensor wide = testing::device_zeros(*backend, DType::bf16, {10, 2, 8});
  segments[1].kv.values = testing::rows_of(wide.view, 0, 4);
  segments[2].kv = {caches[4].view, testing::rows_of(wide.view, 3, 4), 6};
  expect_error(write(),
               "ops.kv_write: tensor 'segments[2].kv.values' shares bytes with another cache; expected "
               "no bytes shared with 'segments[1].kv.values', got shared bytes");
}

TEST_F(KvWriteSegments, ACacheOverlappingTheRowsIsRefused) {
  segments[0].kv.values = testing::rows_of(keys.view, 0, 4);
  expect_error(write(),
               "ops.kv_write: tensor 'segments[0].kv.values' overlaps an input; expected no bytes shared "
               "with 'keys', got shared bytes");
}

// The single-cache entry keeps its names: the cache is 'kv', a too-long chunk is 'keys'.
TEST_F(KvWriteSegments, TheSingleCacheEntryNamesItsCacheKv) {
  DeviceTensor small = testing::device_zeros(*backend, DType::bf16, {4, 2, 8});
  DeviceTensor small_values = testing::device_zeros(*backend, DType::bf16, {4, 2, 8});
  expect_error(
      kv_write(*backend, {small.view, small_values.view, 6}, positions.view, keys.view, values.view),
      "ops.kv_write: tensor 'keys' has more rows than the cache has slots; expected at most 4 rows, got 6");
  DeviceTensor narrow = testing::device_zeros(*backend, DType::bf16, {8, 2, 6});
  expect_error(
      kv_write(*backend, {narrow.view, small_values.view, 6}, positions.view, keys.view, values.view),
      "ops.kv_write: tensor 'kv.keys' has the wrong shape; expected [*, 2, 8], got [8, 2, 6]");
}

}  // namespace
}  // namespace plumb::ops
