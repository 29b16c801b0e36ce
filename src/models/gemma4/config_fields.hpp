#pragma once
// Typed reads of config.json fields with transformers' defaults for missing ones; a field of the wrong type
// or range is an error naming it (with its path inside the document, e.g. text_config.hidden_size).
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "models/gemma4/try_assign.hpp"

namespace plumb::gemma4 {

class FieldReader {
 public:
  FieldReader(const nlohmann::json& object, std::string where, std::string prefix = {})
      : object_(&object), where_(std::move(where)), prefix_(std::move(prefix)) {}

  const std::string& where() const { return where_; }
  // The field's name as errors print it: its path inside the document.
  std::string name(std::string_view key) const { return prefix_ + std::string(key); }
  bool has(std::string_view key) const { return object_->contains(key); }
  bool is_null(std::string_view key) const { return has(key) && object_->at(std::string(key)).is_null(); }
  std::vector<std::string> keys() const;

  Result<int64_t> integer(std::string_view key, int64_t fallback) const;
  Result<int64_t> positive(std::string_view key, int64_t fallback) const;
  Result<std::optional<int64_t>> optional_integer(std::string_view key) const;
  Result<double> number(std::string_view key, double fallback) const;
  Result<std::optional<double>> optional_number(std::string_view key) const;
  Result<bool> boolean(std::string_view key, bool fallback) const;
  Result<std::string> string(std::string_view key, std::string fallback) const;
  Result<std::optional<std::string>> optional_string(std::string_view key) const;
  Result<std::vector<std::string>> string_list(std::string_view key) const;
  Result<std::vector<int64_t>> integer_list_or_one(std::string_view key, std::vector<int64_t> fallback) const;
  Result<FieldReader> object(std::string_view key) const;
  // Refuses any key outside `allowed`, by name.
  Status only_keys(std::initializer_list<std::string_view> allowed) const;

 private:
  Error wrong_type(std::string_view key, std::string_view expected) const;
  const nlohmann::json* object_;
  std::string where_;
  std::string prefix_;
};

// A per_layer_config key: a decimal layer index below `layer_count`.
Result<int64_t> parse_layer_index(std::string_view where, const std::string& key, int64_t layer_count);

}  // namespace plumb::gemma4
