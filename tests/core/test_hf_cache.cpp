// Model resolution against a fake hub cache in a temp dir: refs, commit hashes, local paths, and the error
// that lists every place looked.
#include <gtest/gtest.h>

#include <cstdlib>

#include "core/hf_cache.hpp"
#include "core/temp_dir.hpp"

namespace plumb {
namespace {

using testing::TempDir;
using testing::write_text;

constexpr std::string_view kCommit = "0123456789abcdef0123456789abcdef01234567";
constexpr std::string_view kOldCommit = "fedcba9876543210fedcba9876543210fedcba98";

// models--org--name with refs/main -> kCommit (a 10-byte file through a symlink to a blob, as the hub writes
// it), refs/pr/1 -> kOldCommit, and an unreferenced snapshot.
namespace fs = std::filesystem;

fs::path make_cache(const TempDir& dir) {
  fs::path repo = dir / "hub/models--org--name";
  write_text(repo / "refs/main", std::string(kCommit));
  write_text(repo / "refs/pr/1", std::string(kOldCommit) + "\n");
  write_text(repo / "blobs/aaaa", "0123456789");
  fs::create_directories(repo / "snapshots" / kCommit);
  fs::create_symlink("../../blobs/aaaa", repo / "snapshots" / kCommit / "config.json");
  write_text(repo / "snapshots" / kOldCommit / "config.json", "{}");
  write_text(repo / "snapshots/1111111111111111111111111111111111111111/model.safetensors", "12345");
  write_text(dir / "hub/models--solo/refs/main", std::string(kOldCommit));
  write_text(dir / "hub/models--solo/snapshots" / kOldCommit / "x", "1");
  return dir / "hub";
}

TEST(HubCache, ParsesModelReferences) {
  auto plain = parse_model_ref("google/gemma-4-e2b-it");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->repo, "google/gemma-4-e2b-it");
  EXPECT_EQ(plain->revision, "main");
  auto pinned = parse_model_ref("org/name@refs/pr/1");
  ASSERT_TRUE(pinned.has_value());
  EXPECT_EQ(pinned->revision, "refs/pr/1");
  for (std::string_view bad :
       {"name", "a/b/c", "org/na--me", "../x", "org/name@", "org/name@../main", "/abs/path"})
    EXPECT_FALSE(parse_model_ref(bad).has_value()) << bad;
}

TEST(HubCache, ResolvesRefsAndCommitHashes) {
  TempDir dir;
  HubCache cache{make_cache(dir), "HF_HUB_CACHE"};
  fs::path repo = cache.dir / "models--org--name";
  auto main = resolve_model("org/name", cache);
  ASSERT_TRUE(main.ok()) << main.error().message;
  EXPECT_EQ(main->path, repo / "snapshots" / kCommit);
  EXPECT_EQ(main->commit, kCommit);
  EXPECT_EQ(main->revision, "main");
  auto pr = resolve_model("org/name@pr/1", cache);
  ASSERT_TRUE(pr.ok()) << pr.error().message;
  EXPECT_EQ(pr->path, repo / "snapshots" / kOldCommit);
  auto by_hash = resolve_model(fmt::format("org/name@{}", kOldCommit), cache);
  ASSERT_TRUE(by_hash.ok()) << by_hash.error().message;
  EXPECT_EQ(by_hash->commit, kOldCommit);
}

TEST(HubCache, PrefersAnExistingLocalPath) {
  TempDir dir;
  HubCache cache{make_cache(dir), "HF_HUB_CACHE"};
  auto local = resolve_model((dir / "hub").string(), cache);
  ASSERT_TRUE(local.ok()) << local.error().message;
  EXPECT_EQ(local->path, dir / "hub");
  EXPECT_TRUE(local->repo.empty());
}

TEST(HubCache, ErrorListsEveryPlaceLooked) {
  TempDir dir;
  HubCache cache{make_cache(dir), "HF_HOME"};
  std::string hub = cache.dir.string();
  std::string here = fs::current_path().string();
  auto missing = resolve_model("org/other@0123456789abcdef0123456789abcdef01234567", cache);
  ASSERT_FALSE(missing.ok());
  std::string model = "org/other@0123456789abcdef0123456789abcdef01234567";
  EXPECT_EQ(
      missing.error().message,
      fmt::format("{0}: model '{0}' was not found; expected a local path or a snapshot in the Hugging Face "
                  "cache at {1} (from HF_HOME), got nothing at {2}/{0}, {1}/models--org--other/refs/{3}, "
                  "{1}/models--org--other/snapshots/{3}",
                  model, hub, here, kCommit));
  write_text(cache.dir / "models--org--name/refs/dangling", std::string(kOldCommit).replace(0, 4, "9999"));
  auto dangling = resolve_model("org/name@dangling", cache);
  ASSERT_FALSE(dangling.ok());
  EXPECT_NE(dangling.error().message.find("refs/dangling -> " + hub + "/models--org--name/snapshots/9999"),
            std::string::npos)
      << dangling.error().message;
  auto nonsense = resolve_model("not a model", cache);
  ASSERT_FALSE(nonsense.ok());
  EXPECT_EQ(nonsense.error().message.rfind(
                "not a model: model 'not a model' is neither a local path nor a hub name", 0),
            0u)
      << nonsense.error().message;
}

TEST(HubCache, ListsEverySnapshotWithItsSize) {
  TempDir dir;
  fs::path hub = make_cache(dir);
  std::vector<CachedModel> models = list_cached_models(hub);
  ASSERT_EQ(models.size(), 4u);
  EXPECT_EQ(models[0].repo, "org/name");
  EXPECT_EQ(models[0].revision, "1111111111111111111111111111111111111111");
  EXPECT_EQ(models[0].bytes, 5u);
  EXPECT_EQ(models[1].revision, "main");
  EXPECT_EQ(models[1].commit, kCommit);
  EXPECT_EQ(models[1].bytes, 10u);
  EXPECT_EQ(models[2].revision, "pr/1");
  EXPECT_EQ(models[2].bytes, 2u);
  EXPECT_EQ(models[3].repo, "solo");
  EXPECT_TRUE(list_cached_models(dir / "absent").empty());
}

TEST(HubCache, ChoosesTheCacheFromTheEnvironment) {
  const char* saved[] = {std::getenv("HF_HUB_CACHE"), std::getenv("HF_HOME"), std::getenv("XDG_CACHE_HOME")};
  std::string kept[3];
  for (int index = 0; index < 3; ++index) kept[index] = saved[index] ? saved[index] : "";
  ::setenv("HF_HUB_CACHE", "/a/hub", 1);
  ::setenv("HF_HOME", "/b", 1);
  EXPECT_EQ(hf_hub_cache().dir, fs::path("/a/hub"));
  ::unsetenv("HF_HUB_CACHE");
  EXPECT_EQ(hf_hub_cache().dir, fs::path("/b/hub"));
  EXPECT_EQ(hf_hub_cache().source, "HF_HOME");
  ::unsetenv("HF_HOME");
  ::setenv("XDG_CACHE_HOME", "/c", 1);
  EXPECT_EQ(hf_hub_cache().dir, fs::path("/c/huggingface/hub"));
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(hf_hub_cache().source, "HOME");
  const char* names[] = {"HF_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"};
  for (int index = 0; index < 3; ++index)
    if (saved[index]) ::setenv(names[index], kept[index].c_str(), 1);
}

}  // namespace
}  // namespace plumb
