#include "contract/records.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace plumb::contract {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

// The text between `head` and the next `tail` after it, or empty.
std::string_view between(std::string_view line, std::string_view head, std::string_view tail) {
  const size_t begin = line.find(head);
  if (begin == std::string_view::npos) return {};
  const size_t from = begin + head.size();
  const size_t end = line.find(tail, from);
  return end == std::string_view::npos ? std::string_view() : line.substr(from, end - from);
}

// The integer right before `suffix` ("152 bytes stack frame"), or 0 when the suffix is absent.
int number_before(std::string_view line, std::string_view suffix) {
  size_t at = line.find(suffix);
  if (at == std::string_view::npos) return 0;
  while (at > 0 && line[at - 1] == ' ') --at;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  return begin == at ? 0 : std::stoi(std::string(line.substr(begin, at - begin)));
}

// The integer right after `prefix` ("REG:17"), or 0.
int number_after(std::string_view line, std::string_view prefix) {
  const size_t at = line.find(prefix);
  if (at == std::string_view::npos) return 0;
  size_t end = at + prefix.size();
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  return end == at + prefix.size()
             ? 0
             : std::stoi(std::string(line.substr(at + prefix.size(), end - at - prefix.size())));
}

// nvcc names an anonymous namespace _GLOBAL__N__<hash>_<length>_<file>_<hash>, with hashes that depend on
// the build; the records keep _GLOBAL__N__<file> so they compare across machines.
std::string stable_name(std::string name) {
  constexpr std::string_view kAnonymous = "_GLOBAL__N__";
  for (size_t at = name.find(kAnonymous); at != std::string::npos; at = name.find(kAnonymous, at + 1)) {
    size_t i = at + kAnonymous.size();
    while (i < name.size() && std::isxdigit(static_cast<unsigned char>(name[i]))) ++i;
    if (i >= name.size() || name[i] != '_') continue;
    size_t digits_end = ++i;
    while (digits_end < name.size() && std::isdigit(static_cast<unsigned char>(name[digits_end])))
      ++digits_end;
    if (digits_end == i || digits_end >= name.size() || name[digits_end] != '_') continue;
    const size_t length = std::stoul(name.substr(i, digits_end - i));
    const size_t file_begin = digits_end + 1;
    size_t end = file_begin + length;
    if (end >= name.size() || name[end] != '_') continue;
    ++end;
    // The trailing hash has eight hex digits; the entity's length prefix follows at once.
    for (int digit = 0;
         digit < 8 && end < name.size() && std::isxdigit(static_cast<unsigned char>(name[end])); ++digit)
      ++end;
    name.replace(at, end - at, std::string(kAnonymous) + name.substr(file_begin, length));
  }
  return name;
}

std::string key_of(const KernelResources& kernel) {
  return kernel.kernel + " " + kernel.target;
}

bool same_resources(const KernelResources& a, const KernelResources& b) {
  const bool spills_known = a.spill_stores >= 0 && b.spill_stores >= 0;
  return a.registers == b.registers && a.stack == b.stack && a.shared == b.shared &&
         (!spills_known || (a.spill_stores == b.spill_stores && a.spill_loads == b.spill_loads));
}

std::string resources_text(const KernelResources& kernel) {
  return fmt::format("registers {} stack {} spill_stores {} spill_loads {} shared {}", kernel.registers,
                     kernel.stack, kernel.spill_stores, kernel.spill_loads, kernel.shared);
}

std::string record_line(const KernelResources& kernel) {
  return fmt::format("{} {} op {} {}", kernel.target, kernel.kernel, kernel.op.empty() ? "-" : kernel.op,
                     resources_text(kernel));
}

Result<std::vector<KernelResources>> sorted_unique(std::vector<KernelResources> kernels) {
  std::map<std::string, KernelResources> unique;
  for (KernelResources& kernel : kernels) {
    auto [it, inserted] = unique.emplace(key_of(kernel), kernel);
    if (!inserted && !same_resources(it->second, kernel))
      return error_at("contract.records", "kernel", key_of(kernel), "appears twice with different resources",
                      resources_text(it->second), resources_text(kernel));
  }
  std::vector<KernelResources> out;
  for (auto& [key, kernel] : unique) out.push_back(std::move(kernel));
  return out;
}

}  // namespace

std::string compiler_of(std::string_view text) {
  for (std::string_view line : split_lines(text))
    if (line.rfind("compiler: ", 0) == 0) return std::string(line.substr(10));
  return {};
}

Result<std::vector<KernelResources>> parse_compiler_report(std::string_view text) {
  std::vector<KernelResources> kernels;
  KernelResources entry;
  std::string properties_for, cuobjdump_target;
  for (std::string_view line : split_lines(text)) {
    if (line.find("Compiling entry function '") != std::string_view::npos) {
      entry = KernelResources{};
      entry.kernel = stable_name(std::string(between(line, "entry function '", "'")));
      entry.target = std::string(between(line, "' for '", "'"));
    } else if (line.find("Function properties for ") != std::string_view::npos) {
      const size_t at = line.find("Function properties for ") + 24;
      properties_for = stable_name(std::string(line.substr(at)));
    } else if (line.find("bytes stack frame") != std::string_view::npos && properties_for == entry.kernel) {
      entry.stack = number_before(line, "bytes stack frame");
      entry.spill_stores = number_before(line, "bytes spill stores");
      entry.spill_loads = number_before(line, "bytes spill loads");
    } else if (line.find("Used ") != std::string_view::npos &&
               line.find(" registers") != std::string_view::npos && !entry.kernel.empty()) {
      entry.registers = number_before(line, "registers");
      entry.shared = number_before(line, "bytes smem");
      kernels.push_back(entry);
      entry = KernelResources{};
    } else if (line.find("arch = ") != std::string_view::npos) {
      cuobjdump_target = std::string(line.substr(line.find("arch = ") + 7));
    } else if (line.find(" Function ") != std::string_view::npos && !line.empty() && line.back() == ':') {
      entry = KernelResources{};
      entry.kernel = stable_name(std::string(between(line, " Function ", ":")));
      entry.target = cuobjdump_target;
    } else if (line.find("REG:") != std::string_view::npos && !entry.kernel.empty()) {
      entry.registers = number_after(line, "REG:");
      entry.stack = number_after(line, "STACK:");
      entry.shared = number_after(line, "SHARED:");
      kernels.push_back(entry);
      entry = KernelResources{};
    }
  }
  return sorted_unique(std::move(kernels));
}

Result<std::vector<KernelResources>> parse_records(std::string_view text, std::string_view file_name) {
  std::vector<KernelResources> records;
  int line_number = 0;
  for (std::string_view line : split_lines(text)) {
    ++line_number;
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] == '#' || line.rfind("compiler: ", 0) == 0) continue;
    std::istringstream fields{std::string(line)};
    KernelResources record;
    std::string op_word, registers_word, stack_word, stores_word, loads_word, shared_word;
    fields >> record.target >> record.kernel >> op_word >> record.op >> registers_word >> record.registers >>
        stack_word >> record.stack >> stores_word >> record.spill_stores >> loads_word >>
        record.spill_loads >> shared_word >> record.shared;
    const bool words_right = op_word == "op" && registers_word == "registers" && stack_word == "stack" &&
                             stores_word == "spill_stores" && loads_word == "spill_loads" &&
                             shared_word == "shared";
    if (fields.fail() || !words_right)
      return error_at(
          "contract.records", "line", fmt::format("{}:{}", file_name, line_number), "is malformed",
          "TARGET KERNEL op OP registers N stack N spill_stores N spill_loads N shared N", std::string(line));
    records.push_back(std::move(record));
  }
  return sorted_unique(std::move(records));
}

std::string format_records(const std::vector<KernelResources>& records, std::string_view compiler) {
  std::string text =
      "# Kernel contract gate 5: each CUDA kernel's resources per target, from the compiler's report.\n"
      "# Regenerate with `plumb contract --records-only --update-records` after a deliberate change.\n";
  if (!compiler.empty()) text += fmt::format("compiler: {}\n", compiler);
  for (const KernelResources& record : records) text += record_line(record) + "\n";
  return text;
}

std::vector<std::string> compare_records(const std::vector<KernelResources>& records,
                                         const std::vector<KernelResources>& report) {
  // Records of targets this build did not compile (sm_80 in a sm_90-only build) are not compared.
  std::set<std::string> targets;
  for (const KernelResources& kernel : report) targets.insert(kernel.target);
  std::map<std::string, const KernelResources*> recorded;
  for (const KernelResources& record : records)
    if (targets.count(record.target)) recorded[key_of(record)] = &record;
  std::vector<std::string> problems;
  for (const KernelResources& kernel : report) {
    if (kernel.spill_stores > 0 || kernel.spill_loads > 0)
      problems.push_back(
          fmt::format("kernel {} on {} spills {} bytes (stores) and {} bytes (loads); no spills allowed",
                      kernel.kernel, kernel.target, kernel.spill_stores, kernel.spill_loads));
    const auto it = recorded.find(key_of(kernel));
    if (it == recorded.end()) {
      problems.push_back(fmt::format("kernel {} on {} has no record; expected a line like '{}'",
                                     kernel.kernel, kernel.target, record_line(kernel)));
      continue;
    }
    if (!same_resources(*it->second, kernel))
      problems.push_back(fmt::format("kernel {} on {} changed; expected {}, got {}", kernel.kernel,
                                     kernel.target, resources_text(*it->second), resources_text(kernel)));
    recorded.erase(it);
  }
  for (const auto& [key, record] : recorded)
    problems.push_back(fmt::format("record for kernel {} on {} names no kernel in the compiler's report",
                                   record->kernel, record->target));
  return problems;
}

std::vector<KernelResources> updated_records(const std::vector<KernelResources>& old_records,
                                             const std::vector<KernelResources>& report) {
  std::map<std::string, std::string> op_of;
  for (const KernelResources& record : old_records) op_of[record.kernel] = record.op;
  std::vector<KernelResources> records = report;
  for (KernelResources& record : records) {
    const auto it = op_of.find(record.kernel);
    record.op = it == op_of.end() ? "-" : it->second;
  }
  // Records of targets this build did not compile stay as they were (an sm_90a build updating its records
  // keeps those an all-targets build made for sm_80, sm_89 and sm_120).
  std::set<std::string> compiled;
  for (const KernelResources& kernel : report) compiled.insert(kernel.target);
  for (const KernelResources& record : old_records)
    if (!compiled.count(record.target)) records.push_back(record);
  return records;
}

std::vector<std::string> global_kernel_names(std::string_view source) {
  std::vector<std::string> names;
  constexpr std::string_view kGlobal = "__global__";
  for (size_t at = source.find(kGlobal); at != std::string_view::npos; at = source.find(kGlobal, at + 1)) {
    std::string last;
    size_t i = at + kGlobal.size();
    while (i < source.size() && source[i] != '(' && source[i] != ';') {
      if (std::isalpha(static_cast<unsigned char>(source[i])) || source[i] == '_') {
        const size_t begin = i;
        while (i < source.size() && (std::isalnum(static_cast<unsigned char>(source[i])) || source[i] == '_'))
          ++i;
        last = std::string(source.substr(begin, i - begin));
        // __launch_bounds__(...) and __cluster_dims__(...) come before the name: skip their arguments.
        const bool attribute = last == "__launch_bounds__" || last == "__cluster_dims__";
        if (attribute && (i = source.find(')', i)) != std::string_view::npos) ++i;
        continue;
      }
      ++i;
    }
    if (!last.empty() && last != "__launch_bounds__" && last != "__cluster_dims__") names.push_back(last);
  }
  return names;
}

bool mangled_names(std::string_view mangled, std::string_view name) {
  return mangled == name ||
         mangled.find(std::to_string(name.size()) + std::string(name)) != std::string_view::npos;
}

}  // namespace plumb::contract
