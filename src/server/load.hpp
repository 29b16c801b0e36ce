#pragma once
// Loads what `plumb serve` serves: MODEL resolved (a directory or org/name[@revision] in the HF hub cache),
// the backend, the Gemma 4 model as an engine lane, the tokenizer and the chat template.
#include <string>

#include "core/error.hpp"
#include "engine/engine.hpp"
#include "server/server.hpp"

namespace plumb::server {

struct LoadOptions {
  std::string model;             // as given on the command line
  std::string served_name;       // empty: `model`
  std::string backend = "cpu";   // cpu | cuda
  int threads = 0;               // CPU backend threads (0: one per hardware thread)
  int device = 0;                // CUDA device
  engine::EngineOptions engine;  // parallel, context, drafts, budgets
};

struct Loaded {
  ServedModel served;
  std::string dir;           // the resolved checkpoint directory
  int64_t weight_bytes = 0;  // bytes of the checkpoint's tensors
};

Result<Loaded> load_served_model(const LoadOptions& options);

}  // namespace plumb::server
