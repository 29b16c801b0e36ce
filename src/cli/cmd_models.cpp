// `plumb models`: the snapshots in the Hugging Face hub cache, with revision, commit and size on disk.
#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "cli/command.hpp"
#include "core/hf_cache.hpp"
#include "core/printable.hpp"

namespace plumb::cli {
namespace {

int run_models(const std::string& cache_override) {
  try {
    HubCache cache = cache_override.empty() ? hf_hub_cache() : HubCache{cache_override, "--cache"};
    std::vector<CachedModel> models = list_cached_models(cache.dir);
    fmt::print("cache {} (from {})\n", printable(cache.dir.string(), 400), cache.source);
    if (models.empty()) {
      fmt::print("no models\n");
      return kExitOk;
    }
    size_t repo_width = 5, revision_width = 8;
    for (const CachedModel& model : models) {
      repo_width = std::max(repo_width, printable(model.repo).size());
      revision_width = std::max(revision_width, printable(model.revision).size());
    }
    fmt::print("{:<{}}  {:<{}}  {:<12}  {}\n", "MODEL", repo_width, "REVISION", revision_width, "COMMIT",
               "SIZE");
    for (const CachedModel& model : models)
      fmt::print("{:<{}}  {:<{}}  {:<12}  {}\n", printable(model.repo), repo_width, printable(model.revision),
                 revision_width, model.commit.substr(0, 12), human_bytes(model.bytes));
    return kExitOk;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "plumb models: internal error: %s\n", printable(error.what()).c_str());
    return kExitFailure;
  }
}

const RegisterCommand kModels{
    {"models", "List the models in the Hugging Face hub cache", [](CLI::App& command) -> CommandRun {
       auto cache = std::make_shared<std::string>();
       command.add_option("--cache", *cache,
                          "hub cache folder (default: HF_HUB_CACHE, HF_HOME/hub, "
                          "~/.cache/huggingface/hub)");
       return [cache] { return run_models(*cache); };
     }}};

}  // namespace
}  // namespace plumb::cli
