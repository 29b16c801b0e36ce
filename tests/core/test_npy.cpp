// NumPy .npy files: float32 round trips bit for bit, float64 is read and converted, malformed files are
// refused with messages that name the file.
#include <bit>
#include <cstring>

#include <gtest/gtest.h>

#include "core/npy.hpp"
#include "core/temp_dir.hpp"

namespace plumb {
namespace {

// An .npy file with a hand-written header dict (padded to 64 bytes) and raw data bytes.
std::string npy_file(std::string_view dict, std::string_view data, char major = 1) {
  std::string header(dict);
  const size_t length_bytes = major == 1 ? 2 : 4;
  header.append((64 - (6 + 2 + length_bytes + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY";
  bytes += major;
  bytes += '\0';
  for (size_t i = 0; i < length_bytes; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return bytes + header + std::string(data);
}

std::string read_error(const testing::TempDir& dir, std::string_view bytes) {
  testing::write_text(dir / "a.npy", bytes);
  auto array = read_npy((dir / "a.npy").string());
  return array.ok() ? std::string("(read)") : array.error().message;
}

TEST(Npy, Float32RoundTripsBitForBit) {
  testing::TempDir dir;
  const std::vector<float> values = {1.5f, -0.0f, 3e-39f, -7.25f, 65504.0f, 1e30f};
  const std::string path = (dir / "logits.npy").string();
  ASSERT_TRUE(write_npy(path, {2, 3}, values).ok());
  auto array = read_npy(path);
  ASSERT_TRUE(array.ok()) << array.error().message;
  EXPECT_EQ(array->shape, (Shape{2, 3}));
  ASSERT_EQ(array->values.size(), values.size());
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(array->values[i]), std::bit_cast<uint32_t>(values[i]))
        << "index " << i << " expected " << values[i] << " got " << array->values[i] << " (bound: same bits)";
  const std::string bytes = npy_bytes({3}, {1, 2, 3});
  EXPECT_NE(bytes.find("'shape': (3,)"), std::string::npos) << "a one-element tuple keeps its comma";
  EXPECT_EQ((bytes.size() - 3 * sizeof(float)) % 64, 0u) << "the data starts on a 64-byte boundary";
}

TEST(Npy, Float64IsReadAsFloat32) {
  testing::TempDir dir;
  const double data[2] = {0.1, -2.5};
  std::string raw(sizeof(data), '\0');
  std::memcpy(raw.data(), data, sizeof(data));
  for (char major : {'\x01', '\x02'}) {
    testing::write_text(dir / "d.npy",
                        npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", raw, major));
    auto array = read_npy((dir / "d.npy").string());
    ASSERT_TRUE(array.ok()) << "version " << int(major) << ": " << array.error().message;
    EXPECT_EQ(array->shape, (Shape{2}));
    EXPECT_EQ(array->values, (std::vector<float>{0.1f, -2.5f}));
  }
}

TEST(Npy, MalformedFilesAreRefusedByName) {
  testing::TempDir dir;
  const std::string path = (dir / "a.npy").string();
  const std::string four(4, '\0');
  EXPECT_EQ(read_error(dir, "not an npy file"),
            path + ": npy file '" + path +
                "' does not start with the npy magic; expected \\x93NUMPY, got other bytes");
  EXPECT_NE(read_error(dir, npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", four))
                .find("is not in C order"),
            std::string::npos);
  EXPECT_NE(read_error(dir, npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", four))
                .find("does not hold little-endian floats"),
            std::string::npos);
  EXPECT_NE(read_error(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", four))
                .find("holds the wrong number of bytes for its shape; expected 8, got 4"),
            std::string::npos);
  EXPECT_NE(read_error(dir, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }", four))
                .find("has no shape"),
            std::string::npos);
  const std::string whole = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four);
  EXPECT_NE(read_error(dir, whole.substr(0, 40)).find("has a header past its end"), std::string::npos);
  EXPECT_NE(read_npy((dir / "none.npy").string()).error().message.find("cannot be opened"),
            std::string::npos);
}

TEST(Npy, UnknownVersionsCutLengthsAndHugeShapesAreRefused) {
  testing::TempDir dir;
  const std::string four(4, '\0');
  const std::string version4 =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four, '\x04');
  EXPECT_NE(read_error(dir, version4).find("has an npy version that is not known; expected 1, 2 or 3, got 4"),
            std::string::npos)
      << read_error(dir, version4);
  // 2^40 x 2^40 x 2^40 elements would overflow a 64-bit count.
  const std::string huge = npy_file(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776, "
      "1099511627776), }",
      four);
  EXPECT_NE(read_error(dir, huge).find(
                "has a shape larger than its data; expected a shape within its 4 data bytes"),
            std::string::npos)
      << read_error(dir, huge);
  // Version 2 keeps its header length in 4 bytes: a 10-byte file ends inside them.
  const std::string version2 =
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", four, '\x02');
  EXPECT_NE(read_error(dir, version2.substr(0, 10)).find("has a header past its end"), std::string::npos)
      << read_error(dir, version2.substr(0, 10));
}

}  // namespace
}  // namespace plumb
