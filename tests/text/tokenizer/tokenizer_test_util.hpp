#pragma once
// Small hand-written tokenizer.json documents for the component tests.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "text/tokenizer/tokenizer.hpp"

namespace plumb::text::testing {

using Json = nlohmann::json;

// A BPE model over `tokens` (ids in list order) with `merges` given as "a b" strings.
inline Json bpe_model(const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
  Json vocab = Json::object();
  for (size_t i = 0; i < tokens.size(); ++i) vocab[tokens[i]] = i;
  return Json{
      {"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"vocab", vocab}, {"merges", merges}};
}

inline Json document(Json model) {
  return Json{{"version", "1.0"},          {"truncation", nullptr},
              {"padding", nullptr},        {"added_tokens", Json::array()},
              {"normalizer", nullptr},     {"pre_tokenizer", nullptr},
              {"post_processor", nullptr}, {"decoder", nullptr},
              {"model", std::move(model)}};
}

inline Tokenizer load_ok(const Json& root) {
  auto tokenizer = Tokenizer::from_json(root.dump(), "test.json");
  EXPECT_TRUE(tokenizer.ok()) << (tokenizer.ok() ? "" : tokenizer.error().message);
  if (!tokenizer.ok()) throw std::runtime_error(tokenizer.error().message);
  return *tokenizer;
}

inline std::string load_error(const Json& root) {
  auto tokenizer = Tokenizer::from_json(root.dump(), "test.json");
  return tokenizer.ok() ? std::string("loaded") : tokenizer.error().message;
}

// The token strings that `text` encodes to.
inline std::vector<std::string> pieces(const Tokenizer& tokenizer, const std::string& text,
                                       bool add_special = false) {
  auto ids = tokenizer.encode(text, add_special);
  EXPECT_TRUE(ids.ok()) << (ids.ok() ? "" : ids.error().message);
  std::vector<std::string> out;
  if (!ids.ok()) return out;
  for (int32_t id : *ids) out.emplace_back(tokenizer.id_to_token(id).value_or("<no token>"));
  return out;
}

using Strings = std::vector<std::string>;

}  // namespace plumb::text::testing
