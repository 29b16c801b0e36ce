#include "server/load.hpp"

#include <filesystem>

#include "core/hf_cache.hpp"
#include "cpu/cpu_backend.hpp"
#include "engine/gemma4_lane.hpp"
#include "models/gemma4/model.hpp"
#ifdef PLUMB_WITH_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace plumb::server {

namespace {

Result<std::unique_ptr<ops::Backend>> make_backend(const LoadOptions& options) {
  if (options.backend == "cpu") return cpu::make_cpu_backend(options.threads);
  if (options.backend == "cuda") {
#ifdef PLUMB_WITH_CUDA
    return cuda::make_cuda_backend(options.device);
#else
    return error_at("server.load", "option", "--backend", "names a backend this build lacks", "cpu",
                    "cuda (rebuild with nvcc present)");
#endif
  }
  return error_at("server.load", "option", "--backend", "is not a backend", "cpu or cuda", options.backend);
}

int64_t safetensors_bytes(const std::filesystem::path& dir) {
  int64_t bytes = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error))
    if (entry.path().extension() == ".safetensors") bytes += static_cast<int64_t>(entry.file_size(error));
  return bytes;
}

}  // namespace

Result<Loaded> load_served_model(const LoadOptions& options) {
  auto resolved = resolve_model(options.model);
  if (!resolved.ok()) return resolved.error();
  const std::string dir = resolved->path.string();
  auto tokenizer = text::Tokenizer::load(dir);
  if (!tokenizer.ok()) return tokenizer.error();
  auto prompt = ChatPrompt::load(dir);
  if (!prompt.ok()) return prompt.error();
  auto backend = make_backend(options);
  if (!backend.ok()) return backend.error();
  auto model = gemma4::load_model(dir, **backend);
  if (!model.ok()) return model.error();
  auto lane = engine::make_gemma4_lane(std::move(*backend), std::move(*model));
  auto engine = engine::Engine::create(std::move(lane), *tokenizer, options.engine);
  if (!engine.ok()) return engine.error();
  ServedModel served{options.served_name.empty() ? options.model : options.served_name, std::move(*tokenizer),
                     std::move(*prompt), std::move(*engine)};
  return Loaded{std::move(served), dir, safetensors_bytes(dir)};
}

}  // namespace plumb::server
