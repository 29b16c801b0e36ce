#include "core/hf_cache.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/printable.hpp"

namespace plumb {

namespace fs = std::filesystem;

namespace {

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool is_name_letter(char letter) {
  return std::isalnum(static_cast<unsigned char>(letter)) || letter == '-' || letter == '_' || letter == '.';
}

// Hub names: letters, digits, '-', '_', '.', with no "--" or ".." (the cache folder name joins parts with
// "--").
bool is_hub_name_part(std::string_view part) {
  return !part.empty() && part.size() <= 96 && std::all_of(part.begin(), part.end(), is_name_letter) &&
         part.find("--") == std::string_view::npos && part.find("..") == std::string_view::npos &&
         part.front() != '-' && part.front() != '.';
}

bool is_revision(std::string_view revision) {
  auto allowed = [](char letter) { return is_name_letter(letter) || letter == '/'; };
  return !revision.empty() && revision.size() <= 256 &&
         std::all_of(revision.begin(), revision.end(), allowed) &&
         revision.find("..") == std::string_view::npos && revision.front() != '/' && revision.back() != '/';
}

bool is_commit(std::string_view text) {
  return !text.empty() && text.size() <= 64 && std::all_of(text.begin(), text.end(), [](char letter) {
    return std::isxdigit(static_cast<unsigned char>(letter));
  });
}

bool is_dir(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

// The commit a refs/ file holds, or nothing when the file is missing or does not hold a commit.
std::optional<std::string> read_ref(const fs::path& ref_file) {
  std::error_code error;
  if (!fs::is_regular_file(ref_file, error) || fs::file_size(ref_file, error) > 256) return std::nullopt;
  std::ifstream in(ref_file);
  std::string commit;
  in >> commit;
  if (!is_commit(commit)) return std::nullopt;
  return commit;
}

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
  std::string replaced;
  for (size_t at = text.find(from); at != std::string_view::npos; at = text.find(from)) {
    replaced.append(text.substr(0, at)).append(to);
    text.remove_prefix(at + from.size());
  }
  return replaced.append(text);
}

fs::path repo_folder(const fs::path& cache_dir, std::string_view repo) {
  return cache_dir / fmt::format("models--{}", replace_all(repo, "/", "--"));
}

uint64_t snapshot_bytes(const fs::path& snapshot) {
  uint64_t total = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(snapshot, error), end; !error && it != end; it.increment(error)) {
    std::error_code entry_error;
    if (!fs::is_regular_file(it->path(), entry_error))
      continue;  // follows the blob symlink; broken links skipped
    uint64_t size = fs::file_size(it->path(), entry_error);
    if (!entry_error) total += size;
  }
  return total;
}

}  // namespace

HubCache hf_hub_cache() {
  if (auto dir = environment("HF_HUB_CACHE")) return {*dir, "HF_HUB_CACHE"};
  if (auto home = environment("HF_HOME")) return {fs::path(*home) / "hub", "HF_HOME"};
  if (auto xdg = environment("XDG_CACHE_HOME"))
    return {fs::path(*xdg) / "huggingface" / "hub", "XDG_CACHE_HOME"};
  return {fs::path(environment("HOME").value_or("/")) / ".cache" / "huggingface" / "hub", "HOME"};
}

std::optional<ModelRef> parse_model_ref(std::string_view text) {
  size_t at = text.find('@');
  std::string_view repo = text.substr(0, at);
  std::string_view revision = at == std::string_view::npos ? std::string_view("main") : text.substr(at + 1);
  size_t slash = repo.find('/');
  if (slash == std::string_view::npos || !is_hub_name_part(repo.substr(0, slash)) ||
      !is_hub_name_part(repo.substr(slash + 1)) || !is_revision(revision))
    return std::nullopt;
  return ModelRef{std::string(repo), std::string(revision)};
}

Result<ResolvedModel> resolve_model(std::string_view model, const HubCache& cache) {
  std::error_code error;
  fs::path local(model);
  if (!model.empty() && fs::exists(local, error)) return ResolvedModel{local, "", "", ""};
  std::string shown = printable(model, 200);
  auto ref = parse_model_ref(model);
  std::string cache_text = fmt::format("{} (from {})", printable(cache.dir.string(), 400), cache.source);
  if (!ref)
    return error_at(shown, "model", shown, "is neither a local path nor a hub name",
                    fmt::format("a directory, a file or org/name[@revision] in the cache at {}", cache_text),
                    fmt::format("nothing at {}", printable(fs::absolute(local, error).string(), 400)));
  std::vector<std::string> looked = {printable(fs::absolute(local, error).string(), 400)};
  fs::path folder = repo_folder(cache.dir, ref->repo);
  fs::path ref_file = folder / "refs" / ref->revision;
  if (auto commit = read_ref(ref_file)) {
    fs::path snapshot = folder / "snapshots" / *commit;
    if (is_dir(snapshot)) return ResolvedModel{snapshot, ref->repo, ref->revision, *commit};
    looked.push_back(fmt::format("{} -> {} (missing)", printable(ref_file.string(), 400),
                                 printable(snapshot.string(), 400)));
  } else {
    looked.push_back(printable(ref_file.string(), 400));
  }
  if (is_commit(ref->revision)) {
    fs::path snapshot = folder / "snapshots" / ref->revision;
    if (is_dir(snapshot)) return ResolvedModel{snapshot, ref->repo, ref->revision, ref->revision};
    looked.push_back(printable(snapshot.string(), 400));
  }
  return error_at(shown, "model", shown, "was not found",
                  fmt::format("a local path or a snapshot in the Hugging Face cache at {}", cache_text),
                  fmt::format("nothing at {}", fmt::join(looked, ", ")));
}

Result<ResolvedModel> resolve_model(std::string_view model) {
  return resolve_model(model, hf_hub_cache());
}

std::vector<CachedModel> list_cached_models(const fs::path& cache_dir) {
  std::vector<CachedModel> models;
  std::error_code error;
  for (fs::directory_iterator it(cache_dir, error), end; !error && it != end; it.increment(error)) {
    std::string folder = it->path().filename().string();
    if (folder.rfind("models--", 0) != 0 || !is_dir(it->path())) continue;
    std::string repo = replace_all(folder.substr(8), "--", "/");
    std::set<std::string> referenced;
    std::error_code refs_error;
    for (fs::recursive_directory_iterator ref(it->path() / "refs", refs_error), refs_end;
         !refs_error && ref != refs_end; ref.increment(refs_error)) {
      auto commit = read_ref(ref->path());
      fs::path snapshot = it->path() / "snapshots" / commit.value_or("");
      if (!commit || !is_dir(snapshot)) continue;
      std::string revision = fs::relative(ref->path(), it->path() / "refs", error).generic_string();
      models.push_back({repo, revision, *commit, snapshot, snapshot_bytes(snapshot)});
      referenced.insert(*commit);
    }
    std::error_code snapshots_error;
    for (fs::directory_iterator snapshot(it->path() / "snapshots", snapshots_error), snapshots_end;
         !snapshots_error && snapshot != snapshots_end; snapshot.increment(snapshots_error)) {
      std::string commit = snapshot->path().filename().string();
      if (referenced.contains(commit) || !is_dir(snapshot->path())) continue;
      models.push_back({repo, commit, commit, snapshot->path(), snapshot_bytes(snapshot->path())});
    }
  }
  std::sort(models.begin(), models.end(), [](const CachedModel& a, const CachedModel& b) {
    return std::tie(a.repo, a.revision) < std::tie(b.repo, b.revision);
  });
  return models;
}

}  // namespace plumb
