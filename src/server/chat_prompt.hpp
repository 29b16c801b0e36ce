#pragma once
// The served checkpoint's own prompt format: its chat template with the special tokens it reads (see
// text/template/chat_template.hpp), and the sampling defaults of generation_config.json.
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "server/api_error.hpp"
#include "server/requests.hpp"
#include "text/template/chat_template.hpp"

namespace plumb::server {

class ChatPrompt {
 public:
  // Reads the files of `model_dir`. A checkpoint without a usable chat template still serves completions; the
  // reason is kept for the chat routes' errors and the startup report.
  static Result<ChatPrompt> load(const std::filesystem::path& model_dir);

  bool has_template() const { return template_.has_value(); }
  const std::string& template_problem() const { return template_problem_; }
  // The prompt text for `messages` with the generation prompt appended; a template's raise_exception, and
  // any other rendering failure, is a 400 carrying the template's message.
  Checked<std::string> render(const json& messages, const json& tools, const json& template_kwargs) const;
  const SamplingDefaults& sampling_defaults() const { return defaults_; }

 private:
  std::optional<text::ChatTemplate> template_;
  std::string template_problem_;
  SamplingDefaults defaults_;
};

}  // namespace plumb::server
