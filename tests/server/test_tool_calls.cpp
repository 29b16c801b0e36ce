// Gemma 4 tool-call syntax -> OpenAI tool calls; the streaming splitter gives the same result for any split.
#include <gtest/gtest.h>

#include "server/stop_strings.hpp"
#include "server/tool_calls.hpp"

namespace plumb::server {
namespace {

TEST(ToolCalls, ParsesStringsNumbersBooleansNullNestedAndArrays) {
  auto call = parse_tool_call(
      "call:get_weather{city:<|\"|>Paris, FR<|\"|>,days:3,ratio:-2.5,metric:true,note:None,"
      "where:{lat:48.85,tags:[<|\"|>a<|\"|>,1,false]}}");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->name, "get_weather");
  EXPECT_EQ(call->arguments, R"({"city":"Paris, FR","days":3,"ratio":-2.5,"metric":true,"note":null,)"
                             R"("where":{"lat":48.85,"tags":["a",1,false]}})");
}

TEST(ToolCalls, StringsKeepMarkupAndEmptyArgumentsAreAnObject) {
  auto call = parse_tool_call("call:run{code:<|\"|>a{b}:c,[d]<|\"|>}");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->arguments, R"({"code":"a{b}:c,[d]"})");
  auto empty = parse_tool_call("call:now{}");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->arguments, "{}");
}

TEST(ToolCalls, BareWordsAreStrings) {
  auto call = parse_tool_call("call:f{unit:celsius}");
  ASSERT_TRUE(call.has_value());
  EXPECT_EQ(call->arguments, R"({"unit":"celsius"})");
}

TEST(ToolCalls, MalformedBodiesAreNotCalls) {
  for (const char* body :
       {"", "call:", "call:f", "call:f{", "call:f{a:1", "call:f{a:1}}", "call:{a:1}", "call:bad name{a:1}",
        "call:f{a}", "call:f{a:<|\"|>open}", "cal:f{a:1}", "call:f{:1}", "call:f{a:1,}"})
    EXPECT_FALSE(parse_tool_call(body).has_value()) << "body: " << body;
}

TEST(ToolCalls, DeepNestingIsRefusedNotRecursedWithoutBound) {
  std::string body = "call:f{a:";
  for (int i = 0; i < 10000; ++i) body += "[";
  EXPECT_FALSE(parse_tool_call(body).has_value());
}

struct Collected {
  std::string content;
  std::vector<ToolCall> calls;
};

Collected split_in_pieces(const std::string& text, size_t piece) {
  ToolCallSplitter splitter;
  Collected out;
  for (size_t i = 0; i < text.size(); i += piece) {
    auto part = splitter.push(std::string_view(text).substr(i, piece));
    out.content += part.content;
    for (auto& call : part.tool_calls) out.calls.push_back(call);
  }
  out.content += splitter.finish().content;
  return out;
}

TEST(ToolCalls, SplitterGivesTheSameResultForEveryPieceSize) {
  const std::string text =
      "Let me look.<|tool_call>call:a{x:1}<tool_call|><|tool_call>call:b{y:<|\"|>z<|\"|>}<tool_call|> done "
      "<|tool";
  const Collected whole = split_in_pieces(text, text.size());
  EXPECT_EQ(whole.content, "Let me look. done <|tool");
  ASSERT_EQ(whole.calls.size(), 2u);
  EXPECT_EQ(whole.calls[0].name, "a");
  EXPECT_EQ(whole.calls[1].arguments, R"({"y":"z"})");
  for (size_t piece = 1; piece < text.size(); ++piece) {
    const Collected split = split_in_pieces(text, piece);
    EXPECT_EQ(split.content, whole.content) << "piece size " << piece;
    ASSERT_EQ(split.calls.size(), whole.calls.size()) << "piece size " << piece;
    for (size_t i = 0; i < split.calls.size(); ++i)
      EXPECT_EQ(split.calls[i].arguments, whole.calls[i].arguments)
          << "piece size " << piece << " call " << i;
  }
}

TEST(ToolCalls, UnparsableBlockStaysContentAndUnfinishedBlockIsReturnedAtTheEnd) {
  EXPECT_EQ(split_in_pieces("a<|tool_call>nonsense<tool_call|>b", 3).content,
            "a<|tool_call>nonsense<tool_call|>b");
  const Collected open = split_in_pieces("a<|tool_call>call:f{x:1", 2);
  EXPECT_EQ(open.content, "a<|tool_call>call:f{x:1");
  EXPECT_TRUE(open.calls.empty());
}

TEST(ToolCalls, PartialMarkerSuffix) {
  EXPECT_EQ(partial_marker_suffix("abc<|tool", kToolCallOpen), 6u);
  EXPECT_EQ(partial_marker_suffix("abc<", kToolCallOpen), 1u);
  EXPECT_EQ(partial_marker_suffix("abc", kToolCallOpen), 0u);
  EXPECT_EQ(partial_marker_suffix("<|tool_call>", kToolCallOpen), 0u);  // whole markers are not partial
}

std::string stop_in_pieces(const std::vector<std::string>& stops, const std::string& text, size_t piece,
                           bool* stopped) {
  StopMatcher matcher(stops);
  std::string out;
  for (size_t i = 0; i < text.size() && !matcher.stopped(); i += piece)
    out += matcher.push(std::string_view(text).substr(i, piece)).text;
  out += matcher.finish();
  *stopped = matcher.stopped();
  return out;
}

TEST(StopStrings, CutBeforeTheEarliestStopForEveryPieceSize) {
  const std::string text = "one two three four";
  for (size_t piece = 1; piece <= text.size(); ++piece) {
    bool stopped = false;
    EXPECT_EQ(stop_in_pieces({"four", "thr"}, text, piece, &stopped), "one two ") << "piece size " << piece;
    EXPECT_TRUE(stopped);
    EXPECT_EQ(stop_in_pieces({"xyz", "o t"}, text, piece, &stopped), "one tw") << "piece size " << piece;
    EXPECT_EQ(stop_in_pieces({"fourx"}, text, piece, &stopped), text) << "piece size " << piece;
    EXPECT_FALSE(stopped);
  }
}

TEST(StopStrings, HeldTextThatCannotBecomeAStopIsReleased) {
  StopMatcher matcher({"abc"});
  EXPECT_EQ(matcher.push("xxab").text, "xx");
  EXPECT_EQ(matcher.push("d").text, "abd");
  EXPECT_EQ(matcher.push("a").text, "");
  EXPECT_EQ(matcher.finish(), "a");
}

}  // namespace
}  // namespace plumb::server
