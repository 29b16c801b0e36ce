// Coverage: every launcher of ops::Backend has registered forms and at least one control, every control runs
// through a registered form, and every CUDA kernel in the sources has a record tied to a registered op.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "contract/records.hpp"
#include "contract/registry.hpp"

namespace plumb::contract {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& path) {
  std::ifstream file(path);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

const Registry& registry() {
  static const Registry built = build_registry();
  return built;
}

TEST(Coverage, ReadsTheBackendsLaunchers) {
  const auto launchers = backend_launchers(
      "virtual Status synchronize() = 0;\n  virtual void rms_norm(const RmsNormLaunch& launch) = 0;\n");
  EXPECT_EQ(launchers, std::vector<std::string>{"rms_norm"});
}

TEST(Coverage, EveryBackendLauncherHasFormsAndControls) {
  const auto launchers = backend_launchers(read_text(fs::path(PLUMB_SOURCE_DIR) / "src/ops/backend.hpp"));
  ASSERT_GE(launchers.size(), 11u);
  const auto covered = registry().covered_ops();
  std::set<std::string> controlled;
  for (const Control& control : registry().controls)
    if (const Form* form = registry().find_form(control.form)) controlled.insert(form->op());
  for (const std::string& launcher : launchers) {
    EXPECT_TRUE(std::count(covered.begin(), covered.end(), launcher))
        << "op '" << launcher << "' has no form";
    EXPECT_TRUE(controlled.count(launcher)) << "op '" << launcher << "' has no control";
  }
  for (const std::string& op : covered)
    EXPECT_TRUE(std::count(launchers.begin(), launchers.end(), op))
        << "form op '" << op << "' is no launcher";
}

TEST(Coverage, ControlsRunThroughRegisteredFormsAtGatesOneToFour) {
  std::set<std::string> names;
  for (const Control& control : registry().controls) {
    EXPECT_NE(registry().find_form(control.form), nullptr) << control.name << " names form " << control.form;
    EXPECT_GE(static_cast<int>(control.planted), 1) << control.name;
    EXPECT_LE(static_cast<int>(control.planted), 4) << control.name;
    EXPECT_TRUE(names.insert(control.name).second) << "duplicate control " << control.name;
  }
  std::set<std::string> forms;
  for (const auto& form : registry().forms) EXPECT_TRUE(forms.insert(form->name()).second) << form->name();
}

TEST(Coverage, EveryCudaKernelHasARecordForARegisteredOp) {
  auto records =
      parse_records(read_text(fs::path(PLUMB_SOURCE_DIR) / "src/contract/records/cuda_resources.txt"),
                    "cuda_resources.txt");
  ASSERT_TRUE(records.ok()) << records.error().message;
  const auto covered = registry().covered_ops();
  for (const KernelResources& record : *records)
    // A kernel belongs to an op whose forms run it, to a control ("control:NAME"), or to the runtime itself
    // ("runtime": it computes nothing an op returns, like a device probe).
    EXPECT_TRUE(std::count(covered.begin(), covered.end(), record.op) ||
                record.op.rfind("control:", 0) == 0 || record.op == "runtime")
        << "record " << record.kernel << " on " << record.target << " names op '" << record.op
        << "', which no form covers";
  int kernels = 0;
  for (const char* folder : {"src/cuda", "src/contract/controls"}) {
    const fs::path root = fs::path(PLUMB_SOURCE_DIR) / folder;
    if (!fs::exists(root)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
      const auto extension = entry.path().extension();
      if (extension != ".cu" && extension != ".cuh") continue;
      for (const std::string& name : global_kernel_names(read_text(entry.path()))) {
        ++kernels;
        bool recorded = false;
        for (const KernelResources& record : *records)
          recorded = recorded || mangled_names(record.kernel, name);
        EXPECT_TRUE(recorded) << "CUDA kernel '" << name << "' in " << entry.path().string()
                              << " has no record in src/contract/records/cuda_resources.txt";
      }
    }
  }
  RecordProperty("cuda_kernels", kernels);
}

}  // namespace
}  // namespace plumb::contract
