#pragma once
// Conversation input checked and shaped for the chat template: OpenAI chat messages as they are (tool-call
// arguments parsed from their JSON text into objects, which templates format), and the Responses API's input
// items turned into the same messages.
#include <cstdint>
#include <string>
#include <vector>

#include "server/api_error.hpp"

namespace plumb::server {

// Checks `messages` (a non-empty array of {role, content, ...}) and returns what the template gets.
Checked<json> read_chat_messages(const json& messages);

// Tools in the chat-completions shape ([{type: function, function: {name, description, parameters}}]); null
// when absent or empty.
Checked<json> read_chat_tools(const json& body);

// The Responses API's `input` (a string or a list of items) and `instructions` as chat messages.
Checked<json> responses_input_messages(const json& input, const std::string& instructions);
// The Responses API's flat function tools ([{type: function, name, parameters}]) in the chat shape.
Checked<json> responses_tools(const json& body);

// Token ids: a JSON array of integers in [0, 2^31).
Checked<std::vector<int32_t>> read_token_ids(const json& value, const std::string& param);

}  // namespace plumb::server
