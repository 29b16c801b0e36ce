#pragma once
// What `plumb score` and `plumb run` share: resolving MODEL (a directory or org/name[@revision] in the HF hub
// cache), loading Gemma 4 on the CPU backend, and reading "--tokens 2,10,11".
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "models/gemma4/model.hpp"
#include "ops/backend.hpp"

namespace plumb::cli {

struct LoadedGemma4 {
  std::string dir;  // the resolved model directory
  std::unique_ptr<ops::Backend> backend;
  gemma4::Model model;
};

// Loads the model; prints one note to stderr naming checkpoint tensors the text model does not read.
Result<LoadedGemma4> load_gemma4(const std::string& model, int threads, const std::string& command);

// "2,10,11" -> {2, 10, 11}; spaces around ids are allowed; anything else is an error naming the bad item.
Result<std::vector<int32_t>> parse_token_list(const std::string& text);

}  // namespace plumb::cli
