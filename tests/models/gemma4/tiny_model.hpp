#pragma once
// A tiny Gemma 4 checkpoint written by make-tiny into a temporary directory, loaded on the CPU backend.
#include <bit>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.hpp"
#include "models/gemma4/model.hpp"
#include "models/gemma4/tiny.hpp"

namespace plumb::gemma4::testing {

// A fresh directory under the system temp dir, removed with the object.
class TempDir {
 public:
  explicit TempDir(const std::string& name) {
    path_ = std::filesystem::temp_directory_path() /
            (name + "-" + std::to_string(std::random_device{}()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct LoadedTiny {
  std::unique_ptr<TempDir> dir;
  std::unique_ptr<ops::Backend> backend;
  Model model;
};

inline std::unique_ptr<LoadedTiny> load_tiny(const TinyOptions& options, int threads = 2) {
  auto tiny = std::make_unique<LoadedTiny>();
  tiny->dir = std::make_unique<TempDir>("plumb-gemma4-tiny");
  const Status written = write_tiny_checkpoint(tiny->dir->path().string(), options);
  EXPECT_TRUE(written.ok()) << (written.ok() ? "" : written.error().message);
  tiny->backend = cpu::make_cpu_backend(threads);
  auto model = load_model(tiny->dir->path().string(), *tiny->backend);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return nullptr;
  tiny->model = std::move(*model);
  return tiny;
}

// A deterministic token sequence over the tiny vocabulary (ids from 107 up: ordinary pieces and bytes).
inline std::vector<int32_t> test_tokens(size_t count, uint32_t seed = 1) {
  std::mt19937 random(seed);
  std::vector<int32_t> tokens = {2};
  while (tokens.size() < count)
    tokens.push_back(static_cast<int32_t>(107 + random() % (tiny_vocab_size() - 107)));
  return tokens;
}

// Expects two logits rows to be equal bit for bit; reports the first differing index.
inline void expect_same_bits(std::span<const float> expected, std::span<const float> got,
                             const std::string& what) {
  ASSERT_EQ(expected.size(), got.size()) << what;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (std::bit_cast<uint32_t>(expected[i]) != std::bit_cast<uint32_t>(got[i])) {
      FAIL() << what << ": index " << i << " expected " << expected[i] << " got " << got[i]
             << " (bound: same bits)";
    }
  }
}

}  // namespace plumb::gemma4::testing
