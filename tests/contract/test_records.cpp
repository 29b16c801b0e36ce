// Gate 5 on real compiler reports (fixtures from nvcc 13.0): parsing, comparison with records, spills,
// updates.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "contract/records.hpp"
#include "contract/runner.hpp"

namespace plumb::contract {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream file(std::string(PLUMB_SOURCE_DIR) + "/tests/contract/fixtures/" + name);
  std::ostringstream text;
  text << file.rdbuf();
  EXPECT_FALSE(text.str().empty()) << "fixture " << name;
  return text.str();
}

const KernelResources* find(const std::vector<KernelResources>& kernels, const std::string& kernel,
                            const std::string& target) {
  for (const KernelResources& k : kernels)
    if (k.kernel == kernel && k.target == target) return &k;
  return nullptr;
}

TEST(Records, ParsesThePtxasReportPerTarget) {
  auto report = parse_compiler_report(fixture("resources_ptxas.txt"));
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->size(), 8u);  // four kernels on sm_80 and sm_90
  const KernelResources* tile = find(*report, "_Z8tile_sumPfPKfi", "sm_90");
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->registers, 22);
  EXPECT_EQ(tile->shared, 1024);
  EXPECT_EQ(tile->stack, 0);
  EXPECT_EQ(tile->spill_stores, 0);
  const KernelResources* scale80 = find(*report, "_Z10scale_rowsPfPKfi", "sm_80");
  ASSERT_NE(scale80, nullptr);
  EXPECT_EQ(scale80->registers, 10);
}

TEST(Records, ParsesSpillsAndStack) {
  auto report = parse_compiler_report(fixture("resources_spills.txt"));
  ASSERT_TRUE(report.ok()) << report.error().message;
  const KernelResources* heavy = find(*report, "_Z9heavy_sumPfPKfPKi", "sm_90");
  ASSERT_NE(heavy, nullptr);
  EXPECT_EQ(heavy->stack, 832);
  EXPECT_EQ(heavy->spill_stores, 756);
  EXPECT_EQ(heavy->spill_loads, 844);
  EXPECT_EQ(heavy->registers, 24);
}

TEST(Records, ParsesCuobjdumpResourceUsage) {
  auto report = parse_compiler_report(fixture("resources_cuobjdump.txt"));
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->size(), 2u);
  const KernelResources* tile = find(*report, "_Z8tile_sumPfPKfi", "sm_90");
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->registers, 22);
  EXPECT_EQ(tile->shared, 1024);
  EXPECT_EQ(tile->spill_stores, -1);
}

TEST(Records, MatchingRecordsHaveNoProblems) {
  auto report = parse_compiler_report(fixture("resources_ptxas.txt"));
  auto records = parse_records(fixture("resources_records.txt"), "resources_records.txt");
  ASSERT_TRUE(report.ok() && records.ok());
  const auto problems = compare_records(*records, *report);
  EXPECT_TRUE(problems.empty()) << problems.front();
}

TEST(Records, ChangedMissingAndStaleRecordsAreProblems) {
  auto report = parse_compiler_report(fixture("resources_ptxas.txt"));
  ASSERT_TRUE(report.ok());
  std::string text = fixture("resources_records.txt");
  // One kernel's registers change, one record goes missing, one names a kernel that is gone.
  const std::string changed = "sm_90 _Z8tile_sumPfPKfi op add registers 22";
  ASSERT_NE(text.find(changed), std::string::npos);
  text.replace(text.find(changed), changed.size(), "sm_90 _Z8tile_sumPfPKfi op add registers 21");
  const std::string dropped = text.substr(text.find("sm_80 _Z10scale_rows"));
  text.erase(text.find("sm_80 _Z10scale_rows"), dropped.find('\n') + 1);
  text += "sm_90 _Z4gonePf op add registers 8 stack 0 spill_stores 0 spill_loads 0 shared 0\n";
  auto records = parse_records(text, "edited");
  ASSERT_TRUE(records.ok()) << records.error().message;
  const auto problems = compare_records(*records, *report);
  ASSERT_EQ(problems.size(), 3u);
  const std::string all = problems[0] + "\n" + problems[1] + "\n" + problems[2];
  EXPECT_NE(all.find("_Z8tile_sumPfPKfi on sm_90 changed; expected registers 21"), std::string::npos) << all;
  EXPECT_NE(all.find("_Z10scale_rowsPfPKfi on sm_80 has no record"), std::string::npos) << all;
  EXPECT_NE(all.find("_Z4gonePf on sm_90 names no kernel"), std::string::npos) << all;
}

TEST(Records, SpillsAreProblemsEvenWhenRecorded) {
  auto report = parse_compiler_report(fixture("resources_spills.txt"));
  ASSERT_TRUE(report.ok());
  const auto records = updated_records({}, *report);
  const auto problems = compare_records(records, *report);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("spills"), std::string::npos) << problems[0];
}

TEST(Records, UpdateKeepsOpsAndRoundTrips) {
  auto report = parse_compiler_report(fixture("resources_ptxas.txt"));
  auto old_records = parse_records(fixture("resources_records.txt"), "resources_records.txt");
  ASSERT_TRUE(report.ok() && old_records.ok());
  const auto updated = updated_records(*old_records, *report);
  const std::string formatted = format_records(updated, "Build cuda_13.0.r13.0/compiler.36424714_0");
  EXPECT_EQ(compiler_of(formatted), "Build cuda_13.0.r13.0/compiler.36424714_0");
  auto reread = parse_records(formatted, "formatted");
  ASSERT_TRUE(reread.ok()) << reread.error().message;
  ASSERT_EQ(reread->size(), updated.size());
  EXPECT_EQ(find(*reread, "_Z8tile_sumPfPKfi", "sm_80")->op, "add");
  EXPECT_TRUE(compare_records(*reread, *report).empty());
}

TEST(Records, UpdateKeepsTheRecordsOfTargetsNotCompiled) {
  auto report = parse_compiler_report(fixture("resources_ptxas.txt"));
  ASSERT_TRUE(report.ok());
  KernelResources other{};
  other.target = "sm_120";
  other.kernel = "_Z8tile_sumPfPKfi";
  other.op = "add";
  other.registers = 40;
  const auto updated = updated_records({other}, *report);
  ASSERT_EQ(updated.size(), report->size() + 1);
  const KernelResources* kept = find(updated, "_Z8tile_sumPfPKfi", "sm_120");
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(kept->registers, 40);
  EXPECT_EQ(find(updated, "_Z8tile_sumPfPKfi", "sm_80")->op, "add");  // the kernel's op, from another target
  EXPECT_TRUE(compare_records(updated, *report).empty());
}

TEST(Records, AnonymousNamespaceHashesAreDropped) {
  auto report = parse_compiler_report(
      "ptxas info    : Compiling entry function "
      "'_ZN5plumb4cuda41_GLOBAL__N__19a6c30e_9_k_norm_cu_11d1420915rms_norm_kernelENS0_11RmsNormArgsE' for "
      "'sm_90'\nptxas info    : Used 30 registers, used 0 barriers\n");
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->size(), 1u);
  EXPECT_EQ((*report)[0].kernel, "_ZN5plumb4cuda41_GLOBAL__N__k_norm_cu15rms_norm_kernelENS0_11RmsNormArgsE");
  EXPECT_TRUE(mangled_names((*report)[0].kernel, "rms_norm_kernel"));
}

TEST(Records, RecordsOfTargetsNotBuiltAreNotCompared) {
  auto report = parse_compiler_report(fixture("resources_cuobjdump.txt"));  // sm_90 only
  auto records = parse_records(fixture("resources_records.txt"), "resources_records.txt");
  ASSERT_TRUE(report.ok() && records.ok());
  const auto problems = compare_records(*records, *report);
  // Two sm_90 records name kernels this report lacks; the four sm_80 records are not compared.
  ASSERT_EQ(problems.size(), 2u) << problems.front();
  for (const std::string& problem : problems)
    EXPECT_NE(problem.find("on sm_90 names no kernel"), std::string::npos);
}

TEST(Records, AnotherCompilerIsOneProblem) {
  const std::string dir = std::string(PLUMB_BINARY_DIR) + "/tests/contract";
  const std::string records = dir + "/records_other_compiler.txt";
  const std::string report = dir + "/report_this_compiler.resources";
  std::ofstream(records) << "compiler: Build cuda_12.8\n" << fixture("resources_records.txt");
  std::ofstream(report) << "compiler: Build cuda_13.0\n" << fixture("resources_ptxas.txt");
  RunnerOptions options;
  options.records_file = records;
  options.report = report;
  Tally tally;
  std::FILE* sink = std::tmpfile();
  EXPECT_EQ(check_records(options, sink, tally), 0);
  std::fclose(sink);
  EXPECT_EQ(tally.record_problems, 1);
  std::ofstream(records) << "compiler: Build cuda_13.0\n" << fixture("resources_records.txt");
  Tally same;
  sink = std::tmpfile();
  EXPECT_EQ(check_records(options, sink, same), 0);
  std::fclose(sink);
  EXPECT_EQ(same.record_problems, 0);
}

TEST(Records, MalformedRecordLineIsNamed) {
  auto records = parse_records("sm_90 k op add registers x\n", "bad.txt");
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.error().message.find("line 'bad.txt:1' is malformed"), std::string::npos)
      << records.error().message;
}

TEST(Records, FindsGlobalKernelsInSource) {
  const auto names = global_kernel_names(fixture("resources_kernels.cu"));
  ASSERT_EQ(names.size(), 5u);  // four definitions and one explicit instantiation
  EXPECT_EQ(names[0], "scale_rows");
  EXPECT_EQ(names[3], "templ");
  const auto bounded = global_kernel_names("__global__ void __launch_bounds__(256, 2) rms_rows(float* x) {}");
  ASSERT_EQ(bounded.size(), 1u);
  EXPECT_EQ(bounded[0], "rms_rows");
  const auto clustered = global_kernel_names(
      "__global__ void __cluster_dims__(8, 1, 1) __launch_bounds__(512, 2) pick(int* x) {}");
  ASSERT_EQ(clustered.size(), 1u);
  EXPECT_EQ(clustered[0], "pick");
  EXPECT_TRUE(mangled_names("_Z8tile_sumPfPKfi", "tile_sum"));
  EXPECT_FALSE(mangled_names("_Z8tile_sumPfPKfi", "tile_su"));
}

}  // namespace
}  // namespace plumb::contract
