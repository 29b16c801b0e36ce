#pragma once
// A lane model for serving tests whose next token follows a script, so that tool calls, which a random-weight
// checkpoint never writes, go through the real server: engine, tokenizer, chat template, tool-call parser and
// the OpenAI client. Everything but the weights is the production path.
//
// The script starts after the last of the `starts` tokens in the sequence (Gemma 4's generation prompt ends
// with <channel|>; a turn that continues after a tool response starts after <tool_response|>). A conversation
// that declares tools (it holds <|tool>) and has no tool response yet gets `tool_script`; any other gets
// `text_script`, continued from the longest script prefix that ends the sequence (the prompt may put other
// text after the start token). Past the script's end, or with no start token, the model writes `end`. The
// scripted token
// gets a logit far above the others, so sampled and greedy draws agree.
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/lane_model.hpp"

namespace plumb::server::testing {

struct Script {
  std::vector<int32_t> starts = {101, 51};  // <channel|>, <tool_response|>
  int32_t tool_marker = 46;                 // <|tool>
  int32_t response_marker = 50;             // <|tool_response>
  int32_t end = 106;                        // <turn|>
  std::vector<int32_t> tool_script;
  std::vector<int32_t> text_script;
  std::vector<int32_t> eos = {1, 106, 50};
  int64_t vocab = 0;
  int64_t context = 4096;
};

std::unique_ptr<engine::LaneModel> make_scripted_lane(Script script);

}  // namespace plumb::server::testing
