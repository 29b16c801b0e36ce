#include "contract/runner.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "contract/gates.hpp"
#include "contract/records.hpp"
#include "cpu/cpu_backend.hpp"
#ifdef PLUMB_HAVE_CUDA
#include "cuda/cuda_backend.hpp"
#endif

namespace plumb::contract {
namespace {

namespace fs = std::filesystem;

#ifdef PLUMB_HAVE_CUDA
constexpr bool kBuildHasCuda = true;
#else
constexpr bool kBuildHasCuda = false;
#endif

Result<std::unique_ptr<ops::Backend>> make_backend(const RunnerOptions& options) {
  if (options.backend == "cpu") return cpu::make_cpu_backend(options.threads);
#ifdef PLUMB_HAVE_CUDA
  if (options.backend == "cuda") return cuda::make_cuda_backend(0);
#else
  if (options.backend == "cuda")
    return error_at("plumb contract", "backend", "cuda", "is not in this build", "a build with PLUMB_CUDA on",
                    "a CPU-only build");
#endif
  return error_at("plumb contract", "backend", options.backend, "is unknown", "cpu or cuda", options.backend);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string read_text(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// A report file, or every *.resources file under a directory, in path order.
std::optional<std::string> read_report(const std::string& location) {
  std::error_code error;
  if (location.empty() || !fs::exists(location, error)) return std::nullopt;
  if (fs::is_regular_file(location, error)) return read_text(location);
  std::vector<fs::path> parts;
  for (const auto& entry : fs::recursive_directory_iterator(location, error))
    if (entry.is_regular_file() && entry.path().extension() == ".resources") parts.push_back(entry.path());
  if (parts.empty()) return std::nullopt;
  std::sort(parts.begin(), parts.end());
  std::string text;
  for (const fs::path& part : parts) text += read_text(part);
  return text;
}

void print_list(const Registry& registry, const RunnerOptions& options, std::FILE* out) {
  for (const auto& form : registry.forms) {
    if (!selects(options.only, form->name(), form->op())) continue;
    std::vector<std::string> stresses;
    for (Inputs inputs : form->stresses) stresses.emplace_back(inputs_name(inputs));
    fmt::print(out, "FORM     {}  op {}  {}  rows {}  shape rows {}  stress {}\n", form->name(), form->op(),
               form->dims(), fmt::join(form->batch_rows, ","), form->shape_rows, fmt::join(stresses, ","));
  }
  for (const Control& control : registry.controls) {
    const Form* form = registry.find_form(control.form);
    if (!selects(options.only, control.name, form ? form->op() : "") &&
        !selects(options.only, control.form, form ? form->op() : ""))
      continue;
    fmt::print(out, "CONTROL  {}  form {}  gate {} ({})  {}\n", control.name, control.form,
               static_cast<int>(control.planted), gate_name(control.planted), control.wrong);
  }
}

void run_form(const Form& form, ops::Backend& backend, const RunnerOptions& options, std::FILE* out,
              Tally& tally) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<GateResult> results = run_gates(form, backend, {options.seed, Gate::stress});
  int64_t launches = 0, checked = 0;
  bool passed = true;
  for (const GateResult& result : results) {
    launches += result.launches;
    checked += result.checked;
    if (result.passed) continue;
    passed = false;
    fmt::print(out, "FAIL     {}  gate {} ({}): {}\n", form.name(), static_cast<int>(result.gate),
               gate_name(result.gate), result.failure);
  }
  ++tally.kernels;
  if (passed) {
    ++tally.kernels_passed;
    fmt::print(out, "PASS     {}  gates 1-4  launches {}  checked {}  {:.1f} s\n", form.name(), launches,
               checked, seconds_since(start));
  }
  std::fflush(out);
}

// A control runs on the backend of its own device kind: CPU controls launch on host memory, so a run on
// another backend gives them a CPU backend of their own (they prove the gates and ranges can go red).
void run_control(const Control& control, const Registry& registry, ops::Backend& real, ops::Backend* host,
                 const RunnerOptions& options, std::FILE* out, Tally& tally) {
  ++tally.controls;
  const Form* form = registry.find_form(control.form);
  ops::Backend* base = control.device == real.device().kind ? &real
                       : control.device == DeviceKind::cpu  ? host
                                                            : nullptr;
  if (form == nullptr || base == nullptr) {
    fmt::print(out, "MISS     {}  cannot run: {}\n", control.name,
               form == nullptr ? fmt::format("no form '{}'", control.form)
                               : fmt::format("no {} backend here", device_name(Device{control.device, 0})));
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const auto backend = control.make_backend(*base);
  const std::vector<GateResult> results = run_gates(*form, *backend, {options.seed, control.planted});
  std::vector<int> red;
  for (const GateResult& result : results)
    if (!result.passed) red.push_back(static_cast<int>(result.gate));
  const GateResult& planted = results.back();
  const std::string where = base == &real ? "" : fmt::format(" (on {})", base->name());
  if (!planted.passed) {
    ++tally.controls_red;
    fmt::print(out, "RED      {}{}  at gate {} ({}) as planted; red at {}  {:.1f} s: {}\n", control.name,
               where, static_cast<int>(control.planted), gate_name(control.planted), fmt::join(red, ","),
               seconds_since(start), planted.failure);
  } else {
    fmt::print(out, "MISS     {}{}  passed gate {} ({}) it is planted for: a blind gate ({})\n", control.name,
               where, static_cast<int>(control.planted), gate_name(control.planted), control.wrong);
  }
  std::fflush(out);
}

}  // namespace

int Tally::exit_code() const {
  const bool green = kernels_passed == kernels && controls_red == controls && record_problems == 0;
  return green ? 0 : 1;
}

std::string summary_line(const Tally& tally) {
  return fmt::format(
      "SUMMARY {} kernels: {} pass gates 1-4, {} fail; {} controls: {} red as planted, {} missed; {} record "
      "problems",
      tally.kernels, tally.kernels_passed, tally.kernels - tally.kernels_passed, tally.controls,
      tally.controls_red, tally.controls - tally.controls_red, tally.record_problems);
}

bool selects(const std::string& only, const std::string& name, const std::string& op) {
  if (only.empty() || only == name || only == op) return true;
  return name.size() > only.size() && name.compare(0, only.size(), only) == 0 &&
         (only.back() == '/' || name[only.size()] == '/');
}

int check_records(const RunnerOptions& options, std::FILE* out, Tally& tally) {
  const std::string records_path =
      options.records_file.empty() ? PLUMB_CONTRACT_RECORDS : options.records_file;
  const std::string report_path = options.report.empty() ? PLUMB_CONTRACT_REPORT_DIR : options.report;
  const std::optional<std::string> report_text = read_report(report_path);
  if (!report_text && !kBuildHasCuda && options.report.empty()) {
    fmt::print(out,
               "RECORDS  this build compiles no CUDA: 0 kernels checked (a CUDA build checks the records)\n");
    return 0;
  }
  auto report = parse_compiler_report(report_text.value_or(""));
  if (!report.ok()) return fmt::print(stderr, "plumb contract: {}\n", report.error().message), 2;
  std::error_code error;
  const std::string records_text = fs::exists(records_path, error) ? read_text(records_path) : "";
  auto records = parse_records(records_text, records_path);
  if (!records.ok()) return fmt::print(stderr, "plumb contract: {}\n", records.error().message), 2;
  const std::string report_compiler = compiler_of(report_text.value_or(""));
  if (options.update_records) {
    std::ofstream(records_path, std::ios::binary)
        << format_records(updated_records(*records, *report), report_compiler);
    fmt::print(out, "RECORDS  wrote {} records to {}\n", report->size(), records_path);
    return 0;
  }
  // Another compiler allocates differently: one problem says so instead of one per kernel.
  const std::string records_compiler = compiler_of(records_text);
  std::vector<std::string> problems;
  if (!records_compiler.empty() && !report_compiler.empty() && records_compiler != report_compiler)
    problems.push_back(
        fmt::format("the records were made by '{}' and this build's report by '{}'; make records for "
                    "this compiler with --update-records, or build with the recorded one",
                    records_compiler, report_compiler));
  else
    problems = compare_records(*records, *report);
  for (const std::string& problem : problems) fmt::print(out, "RECORD   {}\n", problem);
  tally.record_problems += static_cast<int>(problems.size());
  fmt::print(out, "RECORDS  {} kernel targets in the compiler's report, {} records, {} problems\n",
             report->size(), records->size(), problems.size());
  return 0;
}

int run_contract(const RunnerOptions& options, std::FILE* out) {
  const Registry registry = build_registry();
  if (options.list) return print_list(registry, options, out), 0;
  Tally tally;
  if (!options.records_only) {
    auto backend = make_backend(options);
    if (!backend.ok()) return fmt::print(stderr, "{}\n", backend.error().message), 2;
    for (const auto& form : registry.forms)
      if (selects(options.only, form->name(), form->op())) run_form(*form, **backend, options, out, tally);
    std::unique_ptr<ops::Backend> host;
    if ((*backend)->device().kind != DeviceKind::cpu) host = cpu::make_cpu_backend(options.threads);
    for (const Control& control : registry.controls) {
      const Form* form = registry.find_form(control.form);
      const std::string op = form ? form->op() : "";
      if (!selects(options.only, control.name, op) && !selects(options.only, control.form, op)) continue;
      // A device control (a CUDA kernel) runs only when the contract checks that device; it is not counted
      // here.
      if (control.device != DeviceKind::cpu && control.device != (*backend)->device().kind) {
        fmt::print(out, "SKIP     {}  a {} control; this run checks {}\n", control.name,
                   device_name(Device{control.device, 0}), (*backend)->name());
        continue;
      }
      run_control(control, registry, **backend, host ? host.get() : backend->get(), options, out, tally);
    }
  }
  if (const int bad = check_records(options, out, tally); bad != 0) return bad;
  if (options.update_records) return 0;
  fmt::print(out, "{}\n", summary_line(tally));
  return tally.exit_code();
}

}  // namespace plumb::contract
