#include "server/messages.hpp"

#include <fmt/format.h>

#include "server/json_fields.hpp"

namespace plumb::server {

namespace {

bool known_role(const std::string& role) {
  return role == "system" || role == "developer" || role == "user" || role == "assistant" || role == "tool";
}

std::string at(const std::string& param, size_t index) {
  return fmt::format("{}[{}]", param, index);
}

// A content part list holds text parts only (this server takes no images or audio yet).
CheckedStatus check_parts(const json& parts, const std::string& param) {
  for (size_t i = 0; i < parts.size(); ++i) {
    const json& part = parts[i];
    const std::string where = at(param, i);
    if (!part.is_object()) return wrong_type(where, "a content part object", part);
    auto type = optional_string(part, "type");
    if (!type.ok()) return wrong_type(where + ".type", "a string", part["type"]);
    if (type->value_or("") != "text")
      return invalid_field(
          where + ".type",
          fmt::format("request: content part '{}' has an unsupported type; expected \"text\", "
                      "got {}",
                      where, part.value("type", json()).dump()),
          "unsupported_content");
    if (!part.contains("text") || !part["text"].is_string())
      return wrong_type(where + ".text", "a string", part.value("text", json()));
  }
  return {};
}

// Tool-call arguments arrive as JSON text; templates format an object, so text holding an object becomes one.
CheckedStatus read_tool_calls(json& calls, const std::string& param) {
  if (!calls.is_array()) return wrong_type(param, "an array", calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    json& call = calls[i];
    const std::string where = at(param, i);
    if (!call.is_object()) return wrong_type(where, "a tool call object", call);
    json* function = call.contains("function") ? &call["function"] : nullptr;
    if (!function || !function->is_object())
      return wrong_type(where + ".function", "an object", function ? *function : json());
    if (!function->contains("name") || !(*function)["name"].is_string())
      return wrong_type(where + ".function.name", "a string", function->value("name", json()));
    json& arguments = (*function)["arguments"];
    if (arguments.is_string()) {
      json parsed = json::parse(arguments.get<std::string>(), nullptr, false);
      if (parsed.is_object()) arguments = std::move(parsed);
    } else if (!arguments.is_object() && !arguments.is_null()) {
      return wrong_type(where + ".function.arguments", "a JSON string", arguments);
    }
  }
  return {};
}

CheckedStatus read_message(json& message, const std::string& param) {
  if (!message.is_object()) return wrong_type(param, "a message object", message);
  const json* role = field(message, "role");
  if (!role) return missing_field(param + ".role");
  if (!role->is_string()) return wrong_type(param + ".role", "a string", *role);
  if (!known_role(role->get<std::string>()))
    return invalid_field(param + ".role",
                         fmt::format("request: message '{}' has an unknown role; expected system, developer, "
                                     "user, assistant or tool, got {}",
                                     param, role->dump()));
  const json* content = field(message, "content");
  if (content && content->is_array()) PLUMB_CHECK(check_parts(*content, param + ".content"));
  if (content && !content->is_array() && !content->is_string())
    return wrong_type(param + ".content", "a string, an array of parts or null", *content);
  if (field(message, "tool_calls"))
    PLUMB_CHECK(read_tool_calls(message["tool_calls"], param + ".tool_calls"));
  return {};
}

// Text of a Responses content (a string, or parts of type input_text / output_text / text).
Checked<std::string> responses_text(const json& content, const std::string& param) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) return wrong_type(param, "a string or an array of parts", content);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string type = part.is_object() ? part.value("type", "") : "";
    if (type != "input_text" && type != "output_text" && type != "text")
      return invalid_field(
          at(param, i),
          fmt::format("request: content part '{}' has an unsupported type; expected "
                      "input_text or output_text, got {}",
                      at(param, i), part.is_object() ? part.value("type", json()).dump() : "none"),
          "unsupported_content");
    if (!part.contains("text") || !part["text"].is_string())
      return wrong_type(at(param, i) + ".text", "a string", part.value("text", json()));
    text += part["text"].get<std::string>();
  }
  return text;
}

CheckedStatus add_responses_item(const json& item, const std::string& param, json& messages) {
  if (!item.is_object()) return wrong_type(param, "an input item object", item);
  const std::string type = item.value("type", "message");
  if (type == "message") {
    const json* role = field(item, "role");
    if (!role || !role->is_string() || !known_role(role->get<std::string>()) || *role == "tool")
      return wrong_type(param + ".role", "user, assistant, system or developer", role ? *role : json());
    auto text = responses_text(item.value("content", json()), param + ".content");
    PLUMB_CHECK(text);
    messages.push_back({{"role", *role}, {"content", *text}});
  } else if (type == "function_call") {
    for (const char* name : {"call_id", "name", "arguments"})
      if (!item.contains(name) || !item[name].is_string())
        return wrong_type(param + "." + name, "a string", item.value(name, json()));
    json call = {{"id", item["call_id"]},
                 {"type", "function"},
                 {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}};
    json calls = json::array({call});
    PLUMB_CHECK(read_tool_calls(calls, param));
    // Consecutive calls belong to one assistant turn.
    if (!messages.empty() && messages.back()["role"] == "assistant" && messages.back().contains("tool_calls"))
      messages.back()["tool_calls"].push_back(calls[0]);
    else
      messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}});
  } else if (type == "function_call_output") {
    if (!item.contains("call_id") || !item["call_id"].is_string())
      return wrong_type(param + ".call_id", "a string", item.value("call_id", json()));
    auto output = responses_text(item.value("output", json()), param + ".output");
    PLUMB_CHECK(output);
    messages.push_back({{"role", "tool"}, {"tool_call_id", item["call_id"]}, {"content", *output}});
  } else if (type != "reasoning") {
    return invalid_field(param + ".type",
                         fmt::format("request: input item '{}' has an unsupported type; expected message, "
                                     "function_call or function_call_output, got \"{}\"",
                                     param, type),
                         "unsupported_content");
  }
  return {};
}

}  // namespace

Checked<json> read_chat_messages(const json& messages) {
  if (!messages.is_array()) return wrong_type("messages", "an array of messages", messages);
  if (messages.empty()) return out_of_range("messages", "at least one message", messages);
  json shaped = messages;
  for (size_t i = 0; i < shaped.size(); ++i) PLUMB_CHECK(read_message(shaped[i], at("messages", i)));
  return shaped;
}

Checked<json> read_chat_tools(const json& body) {
  const json* tools = field(body, "tools");
  if (!tools) return json();
  if (!tools->is_array()) return wrong_type("tools", "an array of tools", *tools);
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string where = at("tools", i);
    if (!tool.is_object() || tool.value("type", "") != "function")
      return invalid_field(where, fmt::format("request: tool '{}' is not a function tool; expected "
                                              "{{\"type\": \"function\", ...}}, got {}",
                                              where, tool.dump().substr(0, 60)));
    const json* function = field(tool, "function");
    if (!function || !function->is_object()) return wrong_type(where + ".function", "an object", tool);
    if (!function->contains("name") || !(*function)["name"].is_string())
      return wrong_type(where + ".function.name", "a string", function->value("name", json()));
    const json* parameters = field(*function, "parameters");
    if (parameters && !parameters->is_object())
      return wrong_type(where + ".function.parameters", "an object", *parameters);
  }
  return tools->empty() ? json() : *tools;
}

Checked<json> responses_input_messages(const json& input, const std::string& instructions) {
  json messages = json::array();
  if (!instructions.empty()) messages.push_back({{"role", "system"}, {"content", instructions}});
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array()) return wrong_type("input", "a string or an array of input items", input);
  for (size_t i = 0; i < input.size(); ++i)
    PLUMB_CHECK(add_responses_item(input[i], at("input", i), messages));
  if (messages.empty()) return out_of_range("input", "at least one input item", input);
  return messages;
}

Checked<json> responses_tools(const json& body) {
  const json* tools = field(body, "tools");
  if (!tools) return json();
  if (!tools->is_array()) return wrong_type("tools", "an array of tools", *tools);
  json shaped = json::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string where = at("tools", i);
    if (!tool.is_object() || tool.value("type", "") != "function")
      return invalid_field(where, fmt::format("request: tool '{}' is not a function tool; expected "
                                              "{{\"type\": \"function\", ...}}, got {}",
                                              where, tool.dump().substr(0, 60)));
    if (!tool.contains("name") || !tool["name"].is_string())
      return wrong_type(where + ".name", "a string", tool.value("name", json()));
    json function = {{"name", tool["name"]}};
    if (const json* description = field(tool, "description")) function["description"] = *description;
    if (const json* parameters = field(tool, "parameters")) {
      if (!parameters->is_object()) return wrong_type(where + ".parameters", "an object", *parameters);
      function["parameters"] = *parameters;
    }
    shaped.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return shaped.empty() ? json() : shaped;
}

Checked<std::vector<int32_t>> read_token_ids(const json& value, const std::string& param) {
  if (!value.is_array()) return wrong_type(param, "a string or an array of token ids", value);
  std::vector<int32_t> ids;
  ids.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const json& id = value[i];
    if (!id.is_number_integer()) return wrong_type(at(param, i), "an integer token id", id);
    if (id.is_number_unsigned() ? id.get<uint64_t>() > INT32_MAX
                                : (id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX))
      return out_of_range(at(param, i), "0 <= id < 2^31", id);
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

}  // namespace plumb::server
