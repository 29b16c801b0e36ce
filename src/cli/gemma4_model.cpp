#include "cli/gemma4_model.hpp"

#include <charconv>
#include <cstdio>

#include <fmt/format.h>

#include "core/hf_cache.hpp"
#include "cpu/cpu_backend.hpp"
#ifdef PLUMB_HAVE_CUDA_BACKEND
#include "cuda/cuda_backend.hpp"
#endif

namespace plumb::cli {

Result<std::unique_ptr<ops::Backend>> make_backend(const std::string& backend, int threads,
                                                   const std::string& command) {
  if (backend == "cpu") return cpu::make_cpu_backend(threads);
  if (backend == "cuda") {
#ifdef PLUMB_HAVE_CUDA_BACKEND
    return cuda::make_cuda_backend(0);
#else
    return error_at(command, "option", "--backend", "names a backend this build lacks", "cpu",
                    "cuda (build with PLUMB_CUDA=ON)");
#endif
  }
  return error_at(command, "option", "--backend", "is not a backend", "cpu or cuda", backend);
}

Result<LoadedGemma4> load_gemma4(const std::string& model, const std::string& backend, int threads,
                                 const std::string& command) {
  auto made = make_backend(backend, threads, command);
  if (!made.ok()) return made.error();
  auto resolved = resolve_model(model);
  if (!resolved.ok()) return resolved.error();
  LoadedGemma4 loaded;
  loaded.dir = resolved->path.string();
  loaded.backend = std::move(*made);
  auto gemma = gemma4::load_model(loaded.dir, *loaded.backend);
  if (!gemma.ok()) return gemma.error();
  loaded.model = std::move(*gemma);
  const std::vector<std::string>& unused = loaded.model.weights.unused;
  if (!unused.empty())
    std::fprintf(stderr,
                 "plumb %s: note: %zu checkpoint tensors are not read by the text model (first: %s)\n",
                 command.c_str(), unused.size(), unused.front().c_str());
  return loaded;
}

Result<std::vector<int32_t>> parse_token_list(const std::string& text) {
  std::vector<int32_t> ids;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    int32_t id = 0;
    const auto [stop, problem] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || problem != std::errc() || stop != item.data() + item.size() || id < 0)
      return error_at("--tokens", "item", fmt::format("{}", ids.size()), "is not a token id",
                      "a non-negative integer", item.empty() ? "nothing" : item);
    ids.push_back(id);
    start = end + 1;
  }
  return ids;
}

}  // namespace plumb::cli
