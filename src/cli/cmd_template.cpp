// `plumb template`: renders a checkpoint's chat template for a conversation and prints the prompt, byte for
// byte.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "text/template/chat_template.hpp"

namespace plumb::cli {

namespace {

struct TemplateOptions {
  std::string model;
  std::string messages;
  std::string tools;
  std::string which;
  bool add_generation_prompt = false;
  std::vector<std::string> vars;
};

// Reads a JSON file; `problem` says why not.
bool read_json(const std::string& path, nlohmann::ordered_json& json, std::string& problem) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    problem = "file '" + path + "' cannot be read";
    return false;
  }
  std::ostringstream text;
  text << file.rdbuf();
  json = nlohmann::ordered_json::parse(text.str(), nullptr, false);
  if (json.is_discarded()) {
    problem = "file '" + path + "' is not valid JSON";
    return false;
  }
  return true;
}

// "--var k=v": v is read as JSON when it parses (true, 3, "x", [..]), else as a plain string.
bool parse_var(const std::string& spec, std::string& key, nlohmann::ordered_json& value) {
  const std::size_t equals = spec.find('=');
  if (equals == 0 || equals == std::string::npos) return false;
  key = spec.substr(0, equals);
  const std::string text = spec.substr(equals + 1);
  value = nlohmann::ordered_json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  return true;
}

// Error messages are printed on one line.
std::string one_line(std::string message) {
  std::string out;
  for (char c : message) out += c == '\n' ? std::string("\\n") : std::string(1, c);
  return out;
}

int run_template(const TemplateOptions& options) {
  const std::string name = "template";
  auto chat = text::ChatTemplate::load(options.model, options.which);
  if (!chat) return report_bad_input(name, one_line(chat.error().message));
  text::ChatRequest request;
  nlohmann::ordered_json messages;
  std::string problem;
  if (!read_json(options.messages, messages, problem)) return report_bad_input(name, "--messages " + problem);
  // A bare list of messages, or a request object holding "messages" (and maybe "tools").
  // Moved, never copied: copying JSON recurses once per nesting level, and the file may be hostile.
  if (messages.is_object() && messages.contains("messages")) {
    if (messages.contains("tools")) request.tools = std::move(messages["tools"]);
    request.messages = std::move(messages["messages"]);
  } else {
    request.messages = std::move(messages);
  }
  if (!options.tools.empty()) {
    nlohmann::ordered_json tools;
    if (!read_json(options.tools, tools, problem)) return report_bad_input(name, "--tools " + problem);
    request.tools =
        tools.is_object() && tools.contains("tools") ? std::move(tools["tools"]) : std::move(tools);
  }
  request.add_generation_prompt = options.add_generation_prompt;
  for (const std::string& spec : options.vars) {
    std::string key;
    nlohmann::ordered_json value;
    if (!parse_var(spec, key, value))
      return report_bad_input(name,
                              "--var '" + spec + "' is not key=value; expected e.g. enable_thinking=false");
    request.extra[key] = value;
  }
  auto rendered = chat->render(request);
  if (!rendered) return report_bad_input(name, one_line(rendered.error().message));
  std::fwrite(rendered->data(), 1, rendered->size(), stdout);
  return std::fflush(stdout) == 0 ? kExitOk : kExitFailure;
}

const RegisterCommand kTemplate(
    {"template", "Print the chat prompt a checkpoint's template renders for a conversation",
     [](CLI::App& command) {
       auto options = std::make_shared<TemplateOptions>();
       command
           .add_option(
               "model", options->model,
               "Model directory with chat_template.jinja, chat_template.json or tokenizer_config.json")
           ->required();
       command.add_option("--messages", options->messages, "JSON file: a list of OpenAI-shaped messages")
           ->required();
       command.add_option("--tools", options->tools, "JSON file: a list of tools (OpenAI function schemas)");
       command.add_flag("--add-generation-prompt", options->add_generation_prompt,
                        "End with the prompt that starts the assistant's turn");
       command.add_option("--var", options->vars,
                          "Extra template variable k=v (v as JSON if it parses), repeatable");
       command.add_option("--template", options->which, "Named template to use when the model has several");
       return CommandRun([options] { return run_template(*options); });
     }});

}  // namespace

}  // namespace plumb::cli
