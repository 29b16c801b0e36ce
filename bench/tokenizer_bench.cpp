// Single-thread encode throughput of plumb's tokenizer on a corpus repeated to a few MB.
// Usage: bench_tokenizer TOKENIZER_JSON CORPUS_JSONL [MIN_MB] [REPEATS]; prints one JSON line with the
// median.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.hpp"

namespace {

std::vector<std::string> repeated_corpus(const std::string& path, double min_mb, size_t* bytes) {
  std::vector<std::string> lines;
  std::ifstream file(path);
  for (std::string line; std::getline(file, line);)
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line).get<std::string>());
  std::vector<std::string> out;
  *bytes = 0;
  while (!lines.empty() && *bytes < min_mb * 1e6)
    for (const std::string& line : lines) {
      out.push_back(line);
      *bytes += line.size();
    }
  return out;
}

// FNV-1a over every id and line end, so runs of different implementations can be checked for equal tokens.
uint64_t fold(uint64_t hash, uint64_t value) {
  return (hash ^ value) * 0x100000001b3ull;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_tokenizer TOKENIZER_JSON CORPUS_JSONL [MIN_MB] [REPEATS]\n");
    return 2;
  }
  const double min_mb = argc > 3 ? std::stod(argv[3]) : 4.0;
  const int repeats = argc > 4 ? std::stoi(argv[4]) : 5;
  auto tokenizer = plumb::text::Tokenizer::load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", tokenizer.error().message.c_str());
    return 2;
  }
  size_t bytes = 0;
  const std::vector<std::string> lines = repeated_corpus(argv[2], min_mb, &bytes);
  std::vector<double> rates;
  uint64_t hash = 0, tokens = 0;
  for (int run = 0; run <= repeats; ++run) {  // run 0 warms the word cache and is not counted
    hash = 0xcbf29ce484222325ull;
    tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& line : lines) {
      auto ids = tokenizer->encode(line);
      if (!ids.ok()) {
        std::fprintf(stderr, "%s\n", ids.error().message.c_str());
        return 1;
      }
      for (int32_t id : *ids) hash = fold(hash, static_cast<uint32_t>(id));
      hash = fold(hash, 0xFFFFFFFFull);
      tokens += ids->size();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (run > 0) rates.push_back(bytes / 1e6 / seconds);
  }
  std::vector<double> sorted = rates;
  std::sort(sorted.begin(), sorted.end());
  nlohmann::json report{{"impl", "plumb"},
                        {"mb", bytes / 1e6},
                        {"lines", lines.size()},
                        {"tokens", tokens},
                        {"hash", std::to_string(hash)},
                        {"runs_mbps", rates},
                        {"median_mbps", sorted[sorted.size() / 2]}};
  std::printf("%s\n", report.dump().c_str());
  return 0;
}
