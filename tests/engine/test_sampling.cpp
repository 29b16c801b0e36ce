// Keyed sampling: pure in (logits, options, seed, position), greedy ties to the lowest id, filters as
// documented, and draws distributed as the filtered softmax.
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "engine/sampling.hpp"
#include "ops/sampling.hpp"

namespace plumb::engine {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingOptions at_temperature(float temperature) {
  SamplingOptions options;
  options.temperature = temperature;
  return options;
}

// Counts the draws over positions [0, draws) for one seed.
std::map<int32_t, int> histogram(const std::vector<float>& logits, const SamplingOptions& options,
                                 int draws) {
  std::map<int32_t, int> counts;
  for (int position = 0; position < draws; ++position) ++counts[sample_keyed(logits, options, 7, position)];
  return counts;
}

TEST(Sampling, ArgmaxTiesGoToTheLowestIdAndNaNNeverWins) {
  EXPECT_EQ(ops::greedy_id(std::vector<float>{1, 3, 3, 2}), 1);
  EXPECT_EQ(ops::greedy_id(std::vector<float>{kNaN, -1, kNaN, -1}), 1);
  EXPECT_EQ(ops::greedy_id(std::vector<float>{-kInf, -kInf}), 0);
  EXPECT_EQ(ops::greedy_id(std::vector<float>{kNaN}), -1);
  EXPECT_EQ(ops::greedy_id(std::vector<float>{}), -1);
}

TEST(Sampling, TemperatureZeroIsGreedyWhateverTheSeedAndPosition) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, 1.0f};
  for (int position = 0; position < 50; ++position)
    EXPECT_EQ(sample_keyed(logits, at_temperature(0), static_cast<uint64_t>(position) * 31, position), 1)
        << "position " << position;
}

TEST(Sampling, KeyedBitsArePureInSeedAndPositionAndUniform) {
  EXPECT_EQ(keyed_bits(5, 9), keyed_bits(5, 9));
  EXPECT_NE(keyed_bits(5, 9), keyed_bits(5, 10));
  EXPECT_NE(keyed_bits(5, 9), keyed_bits(6, 9));
  double sum = 0;
  const int count = 200000;
  for (int position = 0; position < count; ++position) {
    const double u = static_cast<double>(keyed_bits(123, position) >> 11) * 0x1.0p-53;  // the draw's b / 2^53
    ASSERT_GE(u, 0.0) << "position " << position;
    ASSERT_LT(u, 1.0) << "position " << position;
    sum += u;
  }
  // The mean of n uniforms has standard deviation 1/sqrt(12 n); 6 of them is far outside chance.
  const double bound = 6.0 / std::sqrt(12.0 * count);
  EXPECT_NEAR(sum / count, 0.5, bound);
}

TEST(Sampling, DrawAtAPositionDoesNotDependOnEarlierDraws) {
  const std::vector<float> logits = {0.1f, 0.3f, -0.2f, 0.4f, 0.0f};
  const SamplingOptions options = at_temperature(1.0f);
  std::vector<int32_t> forward, backward(40);
  for (int position = 0; position < 40; ++position)
    forward.push_back(sample_keyed(logits, options, 99, position));
  for (int position = 39; position >= 0; --position)
    backward[position] = sample_keyed(logits, options, 99, position);
  EXPECT_EQ(forward, backward);
}

TEST(Sampling, DrawsFollowTheSoftmaxAtTemperature) {
  const std::vector<float> logits = {1.0f, 0.0f, -1.0f, 2.0f};
  const float temperature = 1.5f;
  const int draws = 60000;
  const auto counts = histogram(logits, at_temperature(temperature), draws);
  double total = 0;
  for (float logit : logits) total += std::exp(logit / temperature);
  for (int32_t id = 0; id < 4; ++id) {
    const double p = std::exp(logits[id] / temperature) / total;
    const double expected = p * draws;
    const double bound = 6.0 * std::sqrt(draws * p * (1 - p));  // 6 standard deviations of a binomial count
    const int got = counts.count(id) ? counts.at(id) : 0;
    EXPECT_NEAR(got, expected, bound) << "id " << id;
  }
}

TEST(Sampling, TopKKeepsOnlyTheKLargest) {
  const std::vector<float> logits = {0.0f, 3.0f, 1.0f, 2.9f, -kInf, kNaN};
  SamplingOptions options = at_temperature(1.0f);
  options.top_k = 2;
  const auto counts = histogram(logits, options, 5000);
  for (const auto& [id, count] : counts) EXPECT_TRUE(id == 1 || id == 3) << "id " << id << " drawn " << count;
  EXPECT_GT(counts.at(1), 0);
  EXPECT_GT(counts.at(3), 0);
}

TEST(Sampling, TopPKeepsTheShortestPrefixReachingP) {
  // Probabilities 0.5, 0.3, 0.2 (as logits of their logs).
  const std::vector<float> logits = {std::log(0.2f), std::log(0.5f), std::log(0.3f)};
  SamplingOptions options = at_temperature(1.0f);
  options.top_p = 0.75f;
  const auto counts = histogram(logits, options, 8000);
  EXPECT_EQ(counts.count(0), 0u) << "id 0 (p 0.2) is past the 0.75 prefix";
  const double share = static_cast<double>(counts.at(1)) / 8000;  // 0.5 / 0.8 after renormalising
  EXPECT_NEAR(share, 0.625, 6.0 * std::sqrt(0.625 * 0.375 / 8000));
  options.top_p = 0.5f;  // the first candidate alone reaches 0.5
  EXPECT_EQ(histogram(logits, options, 200).size(), 1u);
}

TEST(Sampling, MinPDropsCandidatesBelowItsShareOfTheTop) {
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplingOptions options = at_temperature(1.0f);
  options.min_p = 0.5f;  // keeps p >= 0.25: ids 0 and 1
  const auto counts = histogram(logits, options, 5000);
  EXPECT_EQ(counts.count(2), 0u);
  EXPECT_GT(counts.at(0), 0);
  EXPECT_GT(counts.at(1), 0);
}

TEST(Sampling, EqualLogitsAreOrderedById) {
  // Three equal top logits and top_k = 2: the two lowest ids are kept, id 3 never drawn.
  const std::vector<float> logits = {1.0f, 5.0f, 5.0f, 5.0f};
  SamplingOptions options = at_temperature(0.7f);
  options.top_k = 2;
  const auto counts = histogram(logits, options, 3000);
  EXPECT_EQ(counts.count(3), 0u);
  EXPECT_EQ(counts.size(), 2u);
}

TEST(Sampling, PromptSeedDependsOnEveryIdAndItsOrder) {
  const std::vector<int32_t> a = {2, 10, 11}, b = {2, 11, 10}, c = {2, 10, 12};
  EXPECT_EQ(prompt_seed(a), prompt_seed(std::vector<int32_t>{2, 10, 11}));
  EXPECT_NE(prompt_seed(a), prompt_seed(b));
  EXPECT_NE(prompt_seed(a), prompt_seed(c));
}

TEST(Sampling, ValidateNamesTheOptionOutOfRange) {
  SamplingOptions options;
  options.top_p = 0.0f;
  const Status status = validate(options);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("'top_p'"), std::string::npos) << status.error().message;
  options.top_p = 1.0f;
  options.temperature = -1.0f;
  EXPECT_FALSE(validate(options).ok());
  EXPECT_TRUE(validate(SamplingOptions{}).ok());
}

TEST(Sampling, TokenShaIsSha256OfLittleEndianInt32) {
  EXPECT_EQ(token_sha(std::vector<int32_t>{}),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(token_sha(std::vector<int32_t>{2, 10, -1}),
            "43fabe004103074ec10e86ea77cc0675a3d2c7f88091e73b8421fa53c9fdc721");
}

}  // namespace
}  // namespace plumb::engine
