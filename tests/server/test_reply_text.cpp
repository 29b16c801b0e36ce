// A reply's tokens as the client sees them, on the tiny Gemma tokenizer: tool-call markers survive decoding,
// end tokens have no text, stop strings cut, and every grouping of the same tokens gives the same reply.
#include <gtest/gtest.h>

#include "models/gemma4/tiny.hpp"
#include "server/formats.hpp"
#include "server/reply_text.hpp"

namespace plumb::server {
namespace {

text::Tokenizer tiny_tokenizer() {
  auto tokenizer = text::Tokenizer::from_json(gemma4::tiny_tokenizer_json().dump(), "tiny tokenizer.json");
  PLUMB_ASSERT(tokenizer.ok(), "the tiny tokenizer parses");
  return std::move(*tokenizer);
}

std::vector<int32_t> ids_of(const text::Tokenizer& tokenizer, const std::string& text) {
  auto ids = tokenizer.encode(text, false);
  PLUMB_ASSERT(ids.ok(), "the tiny tokenizer encodes");
  return *ids;
}

struct Reply {
  std::string content;
  std::vector<ToolCall> calls;
};

Reply feed(ReplyText text, const std::vector<int32_t>& ids, size_t group) {
  Reply reply;
  auto take = [&](const ReplyText::Piece& piece) {
    reply.content += piece.content;
    reply.calls.insert(reply.calls.end(), piece.tool_calls.begin(), piece.tool_calls.end());
  };
  for (size_t i = 0; i < ids.size(); i += group) {
    auto piece = text.push(std::span(ids).subspan(i, std::min(group, ids.size() - i)));
    EXPECT_TRUE(piece.ok());
    take(*piece);
  }
  auto rest = text.finish();
  EXPECT_TRUE(rest.ok());
  take(*rest);
  return reply;
}

const std::vector<int32_t> kEnd = {1, 106, 50};

TEST(ReplyText, ToolCallsComeThroughTheTokenizerForEveryGrouping) {
  const text::Tokenizer tokenizer = tiny_tokenizer();
  std::vector<int32_t> ids =
      ids_of(tokenizer, "Checking é.<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,days:3}<tool_call|>");
  ids.push_back(50);  // <|tool_response>, one of the end tokens
  const Reply whole = feed(ReplyText(tokenizer, kEnd, {}, true), ids, ids.size());
  EXPECT_EQ(whole.content, "Checking é.");
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].name, "get_weather");
  EXPECT_EQ(whole.calls[0].arguments, R"({"city":"Paris","days":3})");
  for (size_t group = 1; group < ids.size(); ++group) {
    const Reply split = feed(ReplyText(tokenizer, kEnd, {}, true), ids, group);
    EXPECT_EQ(split.content, whole.content) << "group " << group;
    ASSERT_EQ(split.calls.size(), 1u) << "group " << group;
    EXPECT_EQ(split.calls[0].arguments, whole.calls[0].arguments) << "group " << group;
  }
}

TEST(ReplyText, WithoutToolsMarkersAreSpecialTokensAndLeftOut) {
  const text::Tokenizer tokenizer = tiny_tokenizer();
  const std::vector<int32_t> ids = ids_of(tokenizer, "a<|tool_call>call:f{x:1}<tool_call|>b<turn|>");
  const Reply reply = feed(ReplyText(tokenizer, kEnd, {}, false), ids, 2);
  EXPECT_EQ(reply.content, "acall:f{x:1}b");
  EXPECT_TRUE(reply.calls.empty());
}

TEST(ReplyText, StopStringsCutForEveryGrouping) {
  const text::Tokenizer tokenizer = tiny_tokenizer();
  const std::vector<int32_t> ids = ids_of(tokenizer, "hello world, and more");
  for (size_t group = 1; group <= ids.size(); ++group) {
    const Reply reply = feed(ReplyText(tokenizer, kEnd, {"ld,", "zzz"}, false), ids, group);
    EXPECT_EQ(reply.content, "hello wor") << "group " << group;
  }
}

// A decoder whose Replace runs after Fuse rewrites text across ids: "a" then "b" decodes to "X".
text::Tokenizer across_ids_tokenizer() {
  const json root = json::parse(R"({"version": "1.0", "truncation": null, "padding": null,
      "added_tokens": [], "normalizer": null, "pre_tokenizer": null, "post_processor": null,
      "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Replace", "pattern": {"String": "ab"}, "content": "X"}]},
      "model": {"type": "BPE", "unk_token": null, "merges": [], "vocab": {"a": 0, "b": 1, "c": 2}}})");
  auto tokenizer = text::Tokenizer::from_json(root.dump(), "across ids tokenizer.json");
  PLUMB_ASSERT(tokenizer.ok(), "the across-ids tokenizer parses");
  return std::move(*tokenizer);
}

TEST(ReplyText, ADetokenizerThatRewritesEmittedTextRestartsTheSameWayForEveryGrouping) {
  const text::Tokenizer tokenizer = across_ids_tokenizer();
  const std::vector<int32_t> ids = {2, 0, 1, 0, 1, 2};
  // The stream decoder cannot take back the "a" it emitted, so its push fails: the restart is reachable.
  text::StreamDecoder decoder(tokenizer, true);
  ASSERT_TRUE(decoder.push(0).ok());
  auto rewritten = decoder.push(1);
  ASSERT_FALSE(rewritten.ok()) << "pushing 'b' after 'a' gave '" << *rewritten << "'";
  EXPECT_NE(rewritten.error().message.find("rewrote text already emitted"), std::string::npos)
      << rewritten.error().message;
  for (size_t group = 1; group <= ids.size(); ++group)
    EXPECT_EQ(feed(ReplyText(tokenizer, {}, {}, false), ids, group).content, "cababc") << "group " << group;
}

engine::Reply finished_reply() {
  engine::Reply reply;
  reply.tokens = {5, 6, 106};
  reply.token_sha = engine::token_sha(reply.tokens);
  reply.finish = engine::FinishReason::stop_token;
  reply.prompt_tokens = 10;
  reply.cached_tokens = 4;
  return reply;
}

TEST(Formats, ChatChunksAddUpToTheWholeReply) {
  auto streamed = chat_format({"m", 1, true});
  auto whole = chat_format({"m", 1, true});
  const ReplyText::Piece pieces[] = {{"Hel", {}}, {"lo", {{"f", R"({"a":1})"}}}};
  std::string content;
  json calls = json::array();
  for (const Event& event : streamed->open())
    EXPECT_EQ(event.data["choices"][0]["delta"]["role"], "assistant");
  for (const auto& piece : pieces) {
    (void)whole->piece(piece);
    for (const Event& event : streamed->piece(piece)) {
      const json& delta = event.data["choices"][0]["delta"];
      if (delta.contains("content")) content += delta["content"].get<std::string>();
      if (delta.contains("tool_calls")) calls.push_back(delta["tool_calls"][0]);
    }
  }
  const engine::Reply reply = finished_reply();
  const std::vector<Event> closing = streamed->close(reply);
  ASSERT_EQ(closing.size(), 2u);
  EXPECT_EQ(closing[0].data["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(closing[1].data["choices"], json::array());
  EXPECT_EQ(closing[1].data["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
  const json body = whole->whole(reply);
  const json& message = body["choices"][0]["message"];
  EXPECT_EQ(message["content"], content);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(message["tool_calls"][0]["function"], calls[0]["function"]);
  EXPECT_EQ(body["usage"]["completion_tokens"], 3);
  EXPECT_EQ(body["plumb"]["token_sha"], reply.token_sha);
  EXPECT_EQ(sse_text(closing[0]).substr(0, 6), "data: ");
}

TEST(Formats, ResponsesEventsRunFromCreatedToCompletedWithIncreasingSequenceNumbers) {
  auto format = responses_format({"m", 1, false, json::object(), json::array()});
  std::vector<Event> events = format->open();
  for (const ReplyText::Piece& piece : {ReplyText::Piece{"Hi", {}}, ReplyText::Piece{"", {{"f", "{}"}}}})
    for (Event& event : format->piece(piece)) events.push_back(std::move(event));
  for (Event& event : format->close(finished_reply())) events.push_back(std::move(event));
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"};
  ASSERT_EQ(events.size(), expected.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].event, expected[i]) << "event " << i;
    EXPECT_EQ(events[i].data["type"], expected[i]) << "event " << i;
    EXPECT_EQ(events[i].data["sequence_number"], i) << "event " << i;
  }
  const json& done = events.back().data["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hi");
  EXPECT_EQ(done["output"][1]["name"], "f");
  EXPECT_EQ(done["usage"]["input_tokens_details"]["cached_tokens"], 4);
}

}  // namespace
}  // namespace plumb::server
