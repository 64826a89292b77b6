// Predicted outputs end to end on the gpt2-tiny fixture: /v1/completions and gRPC Generate with a `prediction`
// answer exactly what they answer without one (whole and streamed, every variant), usage reports the predicted
// tokens kept and dropped (OpenAI's completion_tokens_details), /metrics counts the drafts, arach-cli generate sends
// a prediction file, and a malformed prediction is a 400 naming the part at fault.
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/http_completion.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/run_command.h"
#include "tests/testing/shared_fixture_server.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::HttpAnswer;

class PredictionServer : public testing::SharedFixtureServer<PredictionServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {}; }

 protected:
  static json Greedy(const std::string& model, int max_tokens) {
    return {{"model", model}, {"prompt", "First Citizen:\nBefore we proceed any further, hear me speak."},
            {"max_tokens", max_tokens}, {"temperature", 0}, {"ignore_eos", true}};
  }
  static std::string TextOf(const HttpAnswer& answer) { return answer.body["choices"][0]["text"].get<std::string>(); }
  static double Metric(const std::string& name) {
    const HttpAnswer metrics = testing::Send(*server_, "GET", "/metrics");
    absl::StatusOr<testing::PrometheusText> parsed = testing::ParsePrometheusText(metrics.body.is_string() ? metrics.body.get<std::string>() : "");
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    return parsed.ok() ? parsed->Sum(name) : -1;
  }
};

TEST_F(PredictionServer, ARightPredictionAnswersTheSameTextAndCountsItsTokens) {
  for (const std::string model : {"gpt2-tiny", "gpt2-tiny:arach", "gpt2-tiny:arach+skip"}) {
    SCOPED_TRACE(model);
    const HttpAnswer plain = testing::Complete(*server_, Greedy(model, 48));
    ASSERT_EQ(plain.status, 200) << plain.body;
    EXPECT_FALSE(plain.body["usage"].contains("completion_tokens_details")) << "no prediction, nothing to report";
    json body = Greedy(model, 48);
    body["prediction"] = {{"type", "content"}, {"content", TextOf(plain)}};
    const HttpAnswer predicted = testing::Complete(*server_, body);
    ASSERT_EQ(predicted.status, 200) << predicted.body;
    EXPECT_EQ(TextOf(predicted), TextOf(plain));
    EXPECT_EQ(predicted.body["usage"]["completion_tokens"], 48);
    const json& details = predicted.body["usage"]["completion_tokens_details"];
    EXPECT_GE(details["accepted_prediction_tokens"].get<int>(), 30) << predicted.body["usage"];
    EXPECT_EQ(details["rejected_prediction_tokens"], 0) << predicted.body["usage"];
  }
}

TEST_F(PredictionServer, AStreamedAnswerWithAPredictionIsTheSameText) {
  const HttpAnswer plain = testing::Complete(*server_, Greedy("gpt2-tiny", 40));
  ASSERT_EQ(plain.status, 200) << plain.body;
  json body = Greedy("gpt2-tiny", 40);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  // A prediction given as text parts, with an edit: the answer is still the same.
  const std::string text = TextOf(plain);
  body["prediction"] = {{"type", "content"},
                        {"content", json::array({{{"type", "text"}, {"text", text.substr(0, text.size() / 2) + " EDIT " + text.substr(text.size() / 2)}}})}};
  const testing::StreamResult stream = testing::Stream(*server_, body);
  ASSERT_EQ(stream.status, 200);
  std::string streamed;
  json usage;
  for (const std::string& event : stream.events) {
    if (event == "[DONE]") continue;
    const json chunk = json::parse(event);
    if (!chunk["choices"].empty()) streamed += chunk["choices"][0]["text"].get<std::string>();
    if (chunk.contains("usage") && !chunk["usage"].is_null()) usage = chunk["usage"];
  }
  EXPECT_EQ(streamed, text);
  ASSERT_TRUE(usage.contains("completion_tokens_details")) << usage;
  EXPECT_GT(usage["completion_tokens_details"]["accepted_prediction_tokens"].get<int>(), 10) << usage;
}

TEST_F(PredictionServer, GrpcGenerateTakesAPrediction) {
  arach::v1::GenerateRequest request;
  request.set_text("Before we proceed any further");
  request.set_max_tokens(32);
  request.mutable_sampling()->set_temperature(0);
  request.set_ignore_eos(true);
  auto run = [&](const arach::v1::GenerateRequest& r, arach::v1::Usage* usage) {
    std::string text;
    const grpc::Status status = client_->Generate(r, [&](const arach::v1::GenerateResponse& m) {
      text += m.text();
      if (m.has_finish()) *usage = m.finish().usage();
    });
    EXPECT_TRUE(status.ok()) << status.error_message();
    return text;
  };
  arach::v1::Usage plain_usage, predicted_usage;
  const std::string plain = run(request, &plain_usage);
  EXPECT_EQ(plain_usage.draft_tokens(), 0u);
  request.set_prediction(plain);
  EXPECT_EQ(run(request, &predicted_usage), plain);
  EXPECT_GE(predicted_usage.accepted_draft_tokens(), 20u);
  EXPECT_EQ(predicted_usage.accepted_draft_tokens(), predicted_usage.draft_tokens());
}

TEST_F(PredictionServer, TheCliSendsAPredictionFile) {
  testing::ScopedTempDir dir;
  const std::string base = absl::StrCat(testing::CliBinary(), " generate --server=", server_->grpc_address(),
                                        " --prompt='Before we proceed' --max_tokens=24 --json");
  const testing::CommandResult plain = testing::RunCommand(base);
  ASSERT_EQ(plain.status, 0) << plain.output;
  auto text_of = [](const std::string& output) {  // the streamed messages' text (--json: one message per line)
    std::string text;
    for (const absl::string_view line : absl::StrSplit(output, '\n')) {
      const json message = json::parse(line, nullptr, false);
      if (message.is_object() && message.contains("text")) text += message["text"].get<std::string>();
    }
    return text;
  };
  const std::string text = text_of(plain.output);
  ASSERT_FALSE(text.empty()) << plain.output;
  const std::string file = dir.File("prediction.txt");
  std::ofstream(file) << text;
  const testing::CommandResult predicted = testing::RunCommand(base + " --prediction_file=" + file);
  ASSERT_EQ(predicted.status, 0) << predicted.output;
  EXPECT_EQ(text_of(predicted.output), text);
  EXPECT_NE(predicted.output.find("\"acceptedDraftTokens\""), std::string::npos) << predicted.output;
  const testing::CommandResult missing = testing::RunCommand(base + " --prediction_file=" + dir.File("none.txt"));
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("--prediction_file"), std::string::npos) << missing.output;
}

TEST_F(PredictionServer, MetricsCountTheDraftsAndTheKeptOnes) {
  const double drafted = Metric("arach_spec_decode_draft_tokens_total"), kept = Metric("arach_spec_decode_accepted_tokens_total");
  const HttpAnswer plain = testing::Complete(*server_, Greedy("gpt2-tiny", 24));
  json body = Greedy("gpt2-tiny", 24);
  body["prediction"] = {{"type", "content"}, {"content", TextOf(plain)}};
  const HttpAnswer predicted = testing::Complete(*server_, body);
  ASSERT_EQ(predicted.status, 200) << predicted.body;
  const int accepted = predicted.body["usage"]["completion_tokens_details"]["accepted_prediction_tokens"].get<int>();
  EXPECT_GT(accepted, 0);
  EXPECT_EQ(Metric("arach_spec_decode_accepted_tokens_total") - kept, accepted);
  EXPECT_GE(Metric("arach_spec_decode_draft_tokens_total") - drafted, accepted);
}

TEST_F(PredictionServer, AMalformedPredictionIsRefusedNamingThePart) {
  const std::vector<std::pair<json, std::string>> cases = {
      {"just text", "prediction"},
      {{{"type", "text"}, {"content", "x"}}, "prediction.type"},
      {{{"type", "content"}}, "prediction.content"},
      {{{"type", "content"}, {"content", 5}}, "prediction.content"},
      {{{"type", "content"}, {"content", json::array({{{"type", "image_url"}}})}}, "prediction.content[0].type"},
      {{{"type", "content"}, {"content", json::array({{{"type", "text"}}})}}, "prediction.content[0].text"},
      {{{"type", "content"}, {"content", "x"}, {"extra", 1}}, "prediction.extra"},
  };
  for (const auto& [prediction, param] : cases) {
    json body = Greedy("gpt2-tiny", 4);
    body["prediction"] = prediction;
    const HttpAnswer refused = testing::Complete(*server_, body);
    EXPECT_EQ(refused.status, 400) << prediction.dump() << ": " << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], param) << prediction.dump() << ": " << refused.body;
  }
  // null and an empty text ask for nothing.
  for (const json& nothing : {json(nullptr), json{{"type", "content"}, {"content", ""}}}) {
    json body = Greedy("gpt2-tiny", 4);
    body["prediction"] = nothing;
    const HttpAnswer answered = testing::Complete(*server_, body);
    EXPECT_EQ(answered.status, 200) << answered.body;
    EXPECT_FALSE(answered.body["usage"].contains("completion_tokens_details")) << answered.body;
  }
}

}  // namespace
}  // namespace arach
