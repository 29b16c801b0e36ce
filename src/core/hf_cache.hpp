#pragma once
// Model resolution: MODEL is a local path, or `org/name[@revision]` in the Hugging Face hub cache, laid out
// as <cache>/models--org--name/refs/<revision> (a file holding a commit hash) -> snapshots/<commit>/...; a
// revision may also be a commit hash naming a snapshot directly.
//
//   HubCache cache = hf_hub_cache();                  // HF_HUB_CACHE, else HF_HOME/hub, else
//                                                     // XDG_CACHE_HOME/huggingface/hub, else
//                                                     ~/.cache/huggingface/hub
//   Result<ResolvedModel> model = resolve_model("google/gemma-4-e2b-it@main");   // error lists every place
//   looked std::vector<CachedModel> models = list_cached_models(cache.dir);
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace plumb {

struct HubCache {
  std::filesystem::path dir;
  std::string source;  // how dir was chosen: "HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME" or "HOME"
};

HubCache hf_hub_cache();

struct ModelRef {
  std::string repo;      // "org/name"
  std::string revision;  // "main" when the text has no "@revision"
};

// Parses "org/name[@revision]"; nothing when the text is not shaped like a hub name.
std::optional<ModelRef> parse_model_ref(std::string_view text);

struct ResolvedModel {
  std::filesystem::path path;  // the local path as given, or the snapshot directory
  std::string repo;            // empty for a local path
  std::string revision;
  std::string commit;
};

// A path that exists wins over a hub name of the same spelling.
Result<ResolvedModel> resolve_model(std::string_view model, const HubCache& cache);
Result<ResolvedModel> resolve_model(std::string_view model);

struct CachedModel {
  std::string repo;
  std::string revision;  // a ref name, or the commit for a snapshot no ref points at
  std::string commit;
  std::filesystem::path path;
  uint64_t bytes = 0;  // regular files in the snapshot, symlinks followed
};

// Every snapshot in the cache, sorted by repo then revision; unreadable parts are skipped, never thrown.
std::vector<CachedModel> list_cached_models(const std::filesystem::path& cache_dir);

}  // namespace plumb
