// `plumb tokenize` and `plumb detokenize`: JSON lines in, JSON lines out, through a tokenizer.json.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::cli {

namespace {

struct LinesOptions {
  std::string tokenizer;
  std::string lines;
  bool add_special = false;
  bool skip_special = false;
};

// Reads every line of `path` ("-" for standard input); a final empty line (the file's last newline) is
// dropped.
bool read_lines(const std::string& path, std::vector<std::string>& lines) {
  std::ifstream file;
  std::istream* stream = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) return false;
    stream = &file;
  }
  std::string line;
  while (std::getline(*stream, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  return true;
}

// Runs `convert` on each line; stops at the first bad one with "line N: ..." and exit code 2.
template <class Convert>
int convert_lines(const std::string& name, const LinesOptions& options, Convert&& convert) {
  auto tokenizer = text::Tokenizer::load(options.tokenizer);
  if (!tokenizer.ok()) return report_bad_input(name, tokenizer.error().message);
  std::vector<std::string> lines;
  if (!read_lines(options.lines, lines))
    return report_bad_input(name, "input file '" + options.lines + "' cannot be read");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string problem;
    if (!convert(*tokenizer, lines[i], out, problem))
      return report_bad_input(name, "line " + std::to_string(i + 1) + ": " + problem);
    out.push_back('\n');
    if (out.size() > (1 << 20)) {
      std::fwrite(out.data(), 1, out.size(), stdout);
      out.clear();
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

bool tokenize_line(const text::Tokenizer& tokenizer, const std::string& line, bool add_special,
                   std::string& out, std::string& problem) {
  nlohmann::json value = nlohmann::json::parse(line, nullptr, false);
  if (!value.is_string()) {
    problem = "expected a JSON string, got " +
              (value.is_discarded() ? std::string("invalid JSON") : value.dump().substr(0, 60));
    return false;
  }
  auto ids = tokenizer.encode(value.get_ref<const std::string&>(), add_special);
  if (!ids.ok()) {
    problem = ids.error().message;
    return false;
  }
  out.push_back('[');
  for (size_t i = 0; i < ids->size(); ++i) {
    if (i > 0) out.push_back(',');
    out += std::to_string((*ids)[i]);
  }
  out.push_back(']');
  return true;
}

bool detokenize_line(const text::Tokenizer& tokenizer, const std::string& line, bool skip_special,
                     std::string& out, std::string& problem) {
  nlohmann::json value = nlohmann::json::parse(line, nullptr, false);
  std::vector<int32_t> ids;
  bool ok = value.is_array();
  for (const auto& id : ok ? value : nlohmann::json::array()) {
    ok = ok && id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= INT32_MAX;
    if (ok) ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  if (!ok) {
    problem = "expected a JSON array of token ids, got " +
              (value.is_discarded() ? std::string("invalid JSON") : value.dump().substr(0, 60));
    return false;
  }
  auto decoded = tokenizer.decode(ids, skip_special);
  if (!decoded.ok()) {
    problem = decoded.error().message;
    return false;
  }
  out += nlohmann::json(*decoded).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

void add_common_options(CLI::App& command, LinesOptions& options) {
  command
      .add_option("tokenizer", options.tokenizer,
                  "A model directory holding tokenizer.json, or the file itself")
      ->required();
  command.add_option("--lines", options.lines, "JSON lines input file ('-' for standard input)")->required();
}

const RegisterCommand kTokenize(
    {"tokenize", "Encode JSON-string lines to JSON arrays of token ids", [](CLI::App& command) {
       auto options = std::make_shared<LinesOptions>();
       add_common_options(command, *options);
       command.add_flag("--add-special", options->add_special,
                        "Add the post-processor's special tokens (e.g. <bos>)");
       return CommandRun([options] {
         return convert_lines("tokenize", *options,
                              [&](const auto& tokenizer, const auto& line, auto& out, auto& problem) {
                                return tokenize_line(tokenizer, line, options->add_special, out, problem);
                              });
       });
     }});

const RegisterCommand kDetokenize(
    {"detokenize", "Decode JSON arrays of token ids to JSON-string lines", [](CLI::App& command) {
       auto options = std::make_shared<LinesOptions>();
       add_common_options(command, *options);
       command.add_flag("--skip-special", options->skip_special, "Leave special tokens out of the text");
       return CommandRun([options] {
         return convert_lines("detokenize", *options,
                              [&](const auto& tokenizer, const auto& line, auto& out, auto& problem) {
                                return detokenize_line(tokenizer, line, options->skip_special, out, problem);
                              });
       });
     }});

}  // namespace

}  // namespace plumb::cli
