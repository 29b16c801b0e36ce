#pragma once
// What `plumb score`, `plumb run` and `plumb bench` share: resolving MODEL (a directory or
// org/name[@revision] in the HF hub cache), loading Gemma 4 on the chosen backend (cpu or cuda), and reading
// "--tokens 2,10,11".
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

// The backend named by --backend: "cpu" (with `threads`, 0 for one per hardware thread) or "cuda" (GPU 0, in
// a build with the CUDA backend).
Result<std::unique_ptr<ops::Backend>> make_backend(const std::string& backend, int threads,
                                                   const std::string& command);

// Loads the model; prints one note to stderr naming checkpoint tensors the text model does not read.
Result<LoadedGemma4> load_gemma4(const std::string& model, const std::string& backend, int threads,
                                 const std::string& command);
// The same on the CPU backend.
inline Result<LoadedGemma4> load_gemma4(const std::string& model, int threads, const std::string& command) {
  return load_gemma4(model, "cpu", threads, command);
}

// "2,10,11" -> {2, 10, 11}; spaces around ids are allowed; anything else is an error naming the bad item.
Result<std::vector<int32_t>> parse_token_list(const std::string& text);

}  // namespace plumb::cli
