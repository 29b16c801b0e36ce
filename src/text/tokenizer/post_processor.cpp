#include "text/tokenizer/post_processor.hpp"

namespace plumb::text {

namespace {

class Template final : public PostProcessor {
 public:
  struct Item {
    bool is_sequence = false;
    std::vector<int32_t> special_ids;
  };
  explicit Template(std::vector<Item> single) : single_(std::move(single)) {}
  void add_special(std::vector<int32_t>& ids) const override {
    std::vector<int32_t> out;
    for (const Item& item : single_) {
      if (item.is_sequence) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), item.special_ids.begin(), item.special_ids.end());
      }
    }
    ids.swap(out);
  }

 private:
  std::vector<Item> single_;
};

class PassThrough final : public PostProcessor {
 public:
  void add_special(std::vector<int32_t>&) const override {}
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> steps) : steps_(std::move(steps)) {}
  void add_special(std::vector<int32_t>& ids) const override {
    for (const auto& step : steps_) step->add_special(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

Result<std::vector<int32_t>> special_token_ids(const Json& special_tokens, const std::string& name,
                                               std::string_view where) {
  auto found = special_tokens.find(name);
  if (found == special_tokens.end() || !found->is_object() || !found->contains("ids") ||
      !(*found)["ids"].is_array())
    return error_at(where, "template special token", name, "is not declared in special_tokens",
                    "an entry with an ids list", found == special_tokens.end() ? "nothing" : found->dump());
  std::vector<int32_t> ids;
  for (const Json& id : (*found)["ids"]) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      return error_at(where, "template special token", name, "has an invalid id", "an integer in [0, 2^31)",
                      id.dump());
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

Result<std::unique_ptr<PostProcessor>> parse_template(const Json& node, std::string_view where) {
  auto single = node.find("single");
  if (single == node.end() || !single->is_array())
    return error_at(where, "field", "single", "is missing or not a list", "a list of template pieces",
                    single == node.end() ? "nothing" : json_type_name(*single));
  const Json special_tokens = node.value("special_tokens", Json::object());
  if (!special_tokens.is_object())
    return error_at(where, "field", "special_tokens", "is not an object", "an object",
                    json_type_name(special_tokens));
  std::vector<Template::Item> items;
  for (const Json& piece : *single) {
    Template::Item item;
    if (piece.is_object() && piece.contains("Sequence") && piece["Sequence"].is_object()) {
      const Json& sequence = piece["Sequence"];
      if (sequence.value("id", Json()) != "A")
        return error_at(where, "single template piece", sequence.dump(), "does not name sequence A",
                        "\"id\": \"A\"", sequence.value("id", Json()).dump());
      item.is_sequence = true;
    } else if (piece.is_object() && piece.contains("SpecialToken") && piece["SpecialToken"].is_object() &&
               piece["SpecialToken"].value("id", Json()).is_string()) {
      auto ids = special_token_ids(special_tokens, piece["SpecialToken"]["id"].get<std::string>(), where);
      if (!ids.ok()) return ids.error();
      item.special_ids = std::move(*ids);
    } else {
      return error_at(where, "template piece", piece.dump().substr(0, 80), "is not understood",
                      "{\"Sequence\": {...}} or {\"SpecialToken\": {...}}", "other");
    }
    items.push_back(std::move(item));
  }
  return std::unique_ptr<PostProcessor>(std::make_unique<Template>(std::move(items)));
}

}  // namespace

Result<std::unique_ptr<PostProcessor>> parse_post_processor(const Json& node, std::string_view where) {
  if (node.is_null()) return std::unique_ptr<PostProcessor>();
  auto type = component_type(node, where, "post_processor");
  if (!type.ok()) return type.error();
  const std::string& name = *type;
  if (name == "TemplateProcessing") return parse_template(node, where);
  if (name == "ByteLevel") return std::unique_ptr<PostProcessor>(std::make_unique<PassThrough>());
  if (name == "Sequence") {
    auto list = node.find("processors");
    if (list == node.end() || !list->is_array())
      return error_at(where, "field", "processors", "is missing or not a list", "a list of post-processors",
                      "other");
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (const Json& item : *list) {
      auto step = parse_post_processor(item, where);
      if (!step.ok()) return step.error();
      if (*step) steps.push_back(std::move(*step));
    }
    return std::unique_ptr<PostProcessor>(std::make_unique<Sequence>(std::move(steps)));
  }
  return error_at(where, "post_processor", name, "is not supported",
                  "TemplateProcessing, ByteLevel or Sequence", name);
}

}  // namespace plumb::text
