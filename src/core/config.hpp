#pragma once
// config.json reading: nested sub-configs (text_config, vision_config, quantization) and typed field getters
// whose errors name the file and the dotted field, e.g.
//   "<dir>/config.json: field 'text_config.hidden_size' has the wrong type; expected an integer, got a string
//   "x"".
//
//   auto config = Config::load(dir / "config.json");          // the file must hold a JSON object
//   auto text = config->has_object("text_config") ? config->sub("text_config") : *config;
//   auto hidden = text->integer("hidden_size");                // Result<int64_t>
//   auto window = text->integer_or("sliding_window", 512);     // absent or null gives the fallback
//
// Integers may be written as floats that hold them exactly (some exporters write 1024.0).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace plumb {

class Config {
 public:
  // Config files above this size are refused rather than read.
  static constexpr uint64_t kMaxBytes = uint64_t{64} << 20;

  static Result<Config> load(const std::filesystem::path& path);
  // `where` names the source in errors (usually the file path).
  static Result<Config> parse(std::string where, std::string_view text);
  // A document already parsed; it must be a JSON object.
  static Result<Config> from_json(std::string where, nlohmann::json document);

  const std::string& where() const { return where_; }
  // The dotted path of this sub-config with a trailing dot ("text_config."), empty at the top.
  const std::string& prefix() const { return prefix_; }
  const nlohmann::json& json() const { return *node_; }
  // A field as errors name it: its dotted path, escaped ("text_config.hidden_size").
  std::string field_name(std::string_view field) const;

  // Present and not null.
  bool has(std::string_view field) const;
  bool has_object(std::string_view field) const;
  Result<Config> sub(std::string_view field) const;

  Result<int64_t> integer(std::string_view field) const;
  Result<int64_t> integer_or(std::string_view field, int64_t fallback) const;
  // Accepts integers and floating-point numbers.
  Result<double> number(std::string_view field) const;
  Result<double> number_or(std::string_view field, double fallback) const;
  Result<bool> boolean(std::string_view field) const;
  Result<bool> boolean_or(std::string_view field, bool fallback) const;
  Result<std::string> string(std::string_view field) const;
  Result<std::string> string_or(std::string_view field, std::string fallback) const;
  Result<std::vector<int64_t>> integers(std::string_view field) const;
  // One integer or an array of them (as eos_token_id is written); one gives a list of one.
  Result<std::vector<int64_t>> integer_or_integers(std::string_view field) const;
  Result<std::vector<std::string>> strings(std::string_view field) const;

 private:
  Config(std::shared_ptr<const nlohmann::json> root, const nlohmann::json* node, std::string where,
         std::string prefix);
  // The field's value, or an error saying it is missing (null counts as present here).
  Result<const nlohmann::json*> field_value(std::string_view field, std::string_view expected) const;
  Error wrong_type(std::string_view field, std::string_view expected, const nlohmann::json& got) const;

  std::shared_ptr<const nlohmann::json> root_;  // keeps `node_` alive
  const nlohmann::json* node_ = nullptr;
  std::string where_;
  std::string prefix_;
};

}  // namespace plumb
