// ParseBatchInput: OpenAI Batch API input files, and every refusal naming its line and field.
#include "client/batch_input.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using json = nlohmann::json;

std::string Line(const std::string& id, const std::string& url, const json& body) {
  return json({{"custom_id", id}, {"method", "POST"}, {"url", url}, {"body", body}}).dump();
}

// The refusal of a file whose only request line is `line` (after one good line).
std::string Refusal(const std::string& line) {
  const std::string text = Line("ok", "/v1/completions", {{"prompt", "x"}}) + "\n" + line + "\n";
  const auto parsed = ParseBatchInput(text);
  EXPECT_FALSE(parsed.ok()) << line;
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(BatchInput, ReadsEachRouteSkipsBlankLinesAndKeepsLineNumbers) {
  const std::string text = absl::StrCat(
      Line("chat-1", "/v1/chat/completions", {{"model", "m"}, {"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}}),
      "\n\n   \n", Line("cmpl-1", "/v1/completions", {{"prompt", "Hello"}, {"max_tokens", 4}, {"stream", false}}), "\r\n",
      Line("emb", "/v1/embeddings", {{"input", "a"}}), "\n", Line("resp", "/v1/responses", {{"input", "a"}}), "\n",
      Line("rr", "/v1/rerank", {{"query", "q"}, {"documents", {"d"}}}), "\n", Line("sc", "/v1/score", {{"text_1", "a"}, {"text_2", "b"}}),
      "\n", Line("cl", "/v1/classify", {{"input", "a"}}));  // no newline after the last line
  const auto parsed = ParseBatchInput(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 7u);
  EXPECT_EQ((*parsed)[0].custom_id, "chat-1");
  EXPECT_EQ((*parsed)[0].line, 1);
  EXPECT_EQ((*parsed)[0].url, "/v1/chat/completions");
  EXPECT_EQ(json::parse((*parsed)[0].body)["messages"][0]["content"], "Hi");
  EXPECT_EQ((*parsed)[1].line, 4) << "blank lines count as lines";
  EXPECT_EQ((*parsed)[1].custom_id, "cmpl-1");
  EXPECT_EQ(json::parse((*parsed)[1].body), json({{"prompt", "Hello"}, {"max_tokens", 4}, {"stream", false}}));
  EXPECT_EQ((*parsed)[2].line, 5) << "a \\r\\n line end is one line end";
  EXPECT_EQ((*parsed)[6].url, "/v1/classify");
  for (size_t i = 0; i < parsed->size(); ++i) EXPECT_EQ((*parsed)[i].index, i) << "the request's place among the file's requests";
  EXPECT_EQ((*parsed)[6].line, 9);
}

TEST(BatchInput, RefusesABadLineNamingItsLineAndField) {
  EXPECT_EQ(Refusal("{\"custom_id\": "), "line 2: is not a JSON object");
  EXPECT_EQ(Refusal("[1, 2]"), "line 2: is not a JSON object");
  EXPECT_EQ(Refusal(json({{"method", "POST"}, {"url", "/v1/completions"}, {"body", json::object()}}).dump()),
            "line 2: custom_id: must be a non-empty string");
  EXPECT_EQ(Refusal(Line("", "/v1/completions", json::object())), "line 2: custom_id: must be a non-empty string");
  EXPECT_EQ(Refusal(json({{"custom_id", 7}, {"method", "POST"}, {"url", "/v1/completions"}, {"body", json::object()}}).dump()),
            "line 2: custom_id: must be a non-empty string");
  EXPECT_EQ(Refusal(Line("ok", "/v1/completions", json::object())), "line 2: custom_id: \"ok\" is used by an earlier line");
  EXPECT_EQ(Refusal(json({{"custom_id", "b"}, {"method", "GET"}, {"url", "/v1/completions"}, {"body", json::object()}}).dump()),
            "line 2: method: must be \"POST\"");
  EXPECT_EQ(Refusal(json({{"custom_id", "b"}, {"url", "/v1/completions"}, {"body", json::object()}}).dump()),
            "line 2: method: must be \"POST\"");
  const std::string urls = "must be one of /v1/chat/completions, /v1/completions, /v1/responses, /v1/embeddings, /v1/rerank, "
                           "/v1/score, /v1/classify";
  EXPECT_EQ(Refusal(Line("b", "/v1/models", json::object())), "line 2: url: " + urls);
  EXPECT_EQ(Refusal(Line("b", "/v1/completions/", json::object())), "line 2: url: " + urls);
  EXPECT_EQ(Refusal(Line("b", "/v1/completions", "prompt")), "line 2: body: must be a JSON object");
  EXPECT_EQ(Refusal(json({{"custom_id", "b"}, {"method", "POST"}, {"url", "/v1/completions"}}).dump()),
            "line 2: body: must be a JSON object");
  EXPECT_EQ(Refusal(Line("b", "/v1/completions", {{"prompt", "x"}, {"stream", true}})),
            "line 2: body.stream: a batch request is answered whole, not streamed");
  EXPECT_EQ(Refusal(json({{"custom_id", "b"}, {"method", "POST"}, {"url", "/v1/completions"}, {"body", json::object()}, {"x", 1}}).dump()),
            "line 2: x: is not a key of a batch request (custom_id, method, url, body)");
}

TEST(BatchInput, RefusesAnEmptyFileAndOneOfTooManyRequests) {
  EXPECT_EQ(ParseBatchInput("").status().message(), "the file holds no request");
  EXPECT_EQ(ParseBatchInput("\n \n").status().message(), "the file holds no request");
  std::string text;
  for (size_t i = 0; i <= kMaxBatchRequests; ++i) absl::StrAppend(&text, Line(absl::StrCat("r", i), "/v1/embeddings", json::object()), "\n");
  const auto parsed = ParseBatchInput(text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(), "line 50001: the file holds more than 50000 requests");
  text.resize(text.rfind('\n', text.size() - 2) + 1);  // the last line off: exactly the limit
  const auto at_limit = ParseBatchInput(text);
  ASSERT_TRUE(at_limit.ok()) << at_limit.status();
  EXPECT_EQ(at_limit->size(), kMaxBatchRequests);
}

}  // namespace
}  // namespace arach::client
