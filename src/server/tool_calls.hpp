#pragma once
// Gemma 4's tool-call syntax, turned into OpenAI tool calls:
//   <|tool_call>call:NAME{key:value,...}<tool_call|>
// Values are strings wrapped in <|"|>...<|"|>, numbers, true/false/null, {...} objects and [...] arrays; keys
// are bare (or wrapped like strings). The arguments come out as a JSON object in text, as OpenAI sends them.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plumb::server {

inline constexpr std::string_view kToolCallOpen = "<|tool_call>";
inline constexpr std::string_view kToolCallClose = "<tool_call|>";

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON object text
};

// Parses the text between kToolCallOpen and kToolCallClose ("call:NAME{...}"); nullopt when it is not a call.
std::optional<ToolCall> parse_tool_call(std::string_view body);

// Splits streamed model text into content and tool calls. Text that may begin a call marker is held back
// until it is known; a call's text is held until its close marker arrives, then parsed. A block that does not
// parse is returned as content, unchanged.
class ToolCallSplitter {
 public:
  struct Piece {
    std::string content;               // text to show now
    std::vector<ToolCall> tool_calls;  // calls completed by this input
  };
  Piece push(std::string_view text);
  // End of the stream: whatever is held back (an unfinished call is returned as content).
  Piece finish();

 private:
  std::string held_;
  bool in_call_ = false;
};

// The longest suffix of `text` that is a proper prefix of `marker` (what must be held back while streaming).
size_t partial_marker_suffix(std::string_view text, std::string_view marker);

}  // namespace plumb::server
