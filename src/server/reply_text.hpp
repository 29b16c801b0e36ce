#pragma once
// A reply's tokens as the client sees them: decoded as they stream (special tokens left out, except the
// tool-call markers when tools are parsed), cut before a stop string, and split into content and tool calls.
// Fed the same tokens in any grouping, it gives the same concatenated content and calls, so streamed and
// whole replies are equal.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "server/stop_strings.hpp"
#include "server/tool_calls.hpp"
#include "text/tokenizer/tokenizer.hpp"

namespace plumb::server {

class ReplyText {
 public:
  struct Piece {
    std::string content;
    std::vector<ToolCall> tool_calls;
    bool empty() const { return content.empty() && tool_calls.empty(); }
  };

  // `end_tokens` (eos and stop ids) end the reply and have no text; `parse_tools` turns Gemma 4 tool-call
  // blocks into calls.
  ReplyText(const text::Tokenizer& tokenizer, std::vector<int32_t> end_tokens, std::vector<std::string> stops,
            bool parse_tools);

  Result<Piece> push(std::span<const int32_t> tokens);
  // The held-back text at the end of the reply.
  Result<Piece> finish();

 private:
  // Decoded text of `tokens` before stop strings.
  Result<std::string> decode(std::span<const int32_t> tokens);
  Piece split(std::string text, bool last);
  // What the detokenizer holds back, and a fresh detokenizer.
  std::string flush_decoder();

  text::Tokenizer tokenizer_;
  text::StreamDecoder decoder_;
  std::vector<int32_t> end_tokens_;
  std::vector<int32_t> marker_tokens_;  // tool-call markers kept as text
  StopMatcher stops_;
  bool parse_tools_;
  ToolCallSplitter splitter_;
};

}  // namespace plumb::server
