// Every malformed fixture gives exactly its expected error line; edge cases the format allows still parse.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "core/safetensors.hpp"

namespace plumb {
namespace {

const std::filesystem::path kFixtures = std::filesystem::path(PLUMB_SOURCE_DIR) / "tests/fixtures/malformed";

struct MalformedCase {
  std::string fixture;
  std::string message;
};

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::vector<MalformedCase> load_cases() {
  std::vector<MalformedCase> cases;
  std::ifstream in(kFixtures / "expected.txt");
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string path = (kFixtures / line.substr(0, tab)).string();
    cases.push_back({line.substr(0, tab), replace_all(line.substr(tab + 1), "{path}", path)});
  }
  return cases;
}

TEST(SafetensorsMalformed, EveryFixtureGivesItsExactErrorLine) {
  std::vector<MalformedCase> cases = load_cases();
  ASSERT_GE(cases.size(), 20u) << "expected.txt was not found or is short: " << (kFixtures / "expected.txt");
  for (size_t index = 0; index < cases.size(); ++index) {
    const MalformedCase& expected = cases[index];
    auto checkpoint = Checkpoint::open(kFixtures / expected.fixture);
    ASSERT_FALSE(checkpoint.ok()) << "case " << index << " '" << expected.fixture
                                  << "' opened without an error";
    EXPECT_EQ(checkpoint.error().message, expected.message)
        << "case " << index << " '" << expected.fixture << "'";
    EXPECT_EQ(checkpoint.error().message.find('\n'), std::string::npos) << "case " << index;
  }
}

TEST(SafetensorsMalformed, EveryFixtureOnDiskIsListed) {
  std::vector<MalformedCase> cases = load_cases();
  std::set<std::string> listed;
  for (const MalformedCase& entry : cases) listed.insert(entry.fixture);
  for (const auto& entry : std::filesystem::directory_iterator(kFixtures)) {
    std::string name = entry.path().filename().string();
    if (name == "expected.txt" || name == "generate.py") continue;
    EXPECT_TRUE(listed.contains(name)) << "fixture '" << name << "' has no line in expected.txt";
  }
}

std::vector<std::byte> file_bytes(std::string_view header, size_t data_bytes) {
  std::vector<std::byte> bytes(8);
  for (size_t index = 0; index < 8; ++index)
    bytes[index] = static_cast<std::byte>((uint64_t{header.size()} >> (8 * index)) & 0xff);
  for (char letter : header) bytes.push_back(static_cast<std::byte>(letter));
  bytes.resize(bytes.size() + data_bytes);
  return bytes;
}

TEST(SafetensorsHeader, AllowsGapsEmptySpansScalarsAndPadding) {
  std::string header =
      R"({"gap":{"dtype":"U8","shape":[2],"data_offsets":[6,8]},"s":{"dtype":"I32","shape":[],"data_offsets":[0,4]},)"
      R"("z":{"dtype":"F32","shape":[3,0],"data_offsets":[2,2]},"__metadata__":{}}     )";
  auto parsed = parse_safetensors("memory", file_bytes(header, 8));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->tensors.size(), 3u);
  EXPECT_EQ(parsed->tensors[0].name, "gap");
  EXPECT_EQ(parsed->tensors[1].shape, Shape{});
  EXPECT_EQ(parsed->tensors[2].shape, (Shape{3, 0}));
  EXPECT_EQ(parsed->data_start, 8 + header.size());
}

TEST(SafetensorsHeader, RejectsASpanThatEndsOneBytePastTheData) {
  std::string header = R"({"w":{"dtype":"U8","shape":[5],"data_offsets":[0,5]}})";
  EXPECT_TRUE(parse_safetensors("memory", file_bytes(header, 5)).ok());
  auto parsed = parse_safetensors("memory", file_bytes(header, 4));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message,
            "memory: tensor 'w' runs past the end of the file; expected data_offsets end <= 4 (the data "
            "area), got 5");
}

TEST(SafetensorsHeader, ReportsTheOverlapNearestInOrderOfBegin) {
  std::string header =
      R"({"a":{"dtype":"U8","shape":[10],"data_offsets":[0,10]},"b":{"dtype":"U8","shape":[2],"data_offsets":[10,12]},)"
      R"("c":{"dtype":"U8","shape":[3],"data_offsets":[2,5]}})";
  auto parsed = parse_safetensors("memory", file_bytes(header, 12));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message, "memory: tensor 'c' overlaps tensor 'a'; expected begin >= 10, got 2");
}

// Every proper prefix of a valid file is refused with one line; only the whole file parses.
TEST(SafetensorsHeader, EveryTruncationIsRefusedCleanly) {
  std::string header =
      R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[1],)"
      R"("data_offsets":[8,9]}})";
  std::vector<std::byte> whole = file_bytes(header, 9);
  ASSERT_TRUE(parse_safetensors("memory", whole).ok());
  for (size_t size = 0; size < whole.size(); ++size) {
    auto parsed = parse_safetensors("memory", std::span(whole).first(size));
    ASSERT_FALSE(parsed.ok()) << "prefix of " << size << " bytes parsed; bound " << whole.size();
    EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos) << "prefix " << size;
  }
}

}  // namespace
}  // namespace plumb
