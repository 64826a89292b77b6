// arach-cli batch end to end, on qwen3-tiny with the real Qwen3 template: an OpenAI Batch API file of chat,
// completions, responses and embeddings requests (and one the server refuses) comes back as one output line per
// request, in order, each answer equal to the one the API gives the same body directly; a bad line is refused
// naming the file and line before any request is sent.
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/server_process.h"
#include "tests/testing/qwen3_chat_server.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace arach {
namespace {

using json = nlohmann::json;

class BatchServer : public testing::SharedQwen3ChatServer<BatchServer> {
 protected:
  std::string Cli() const { return absl::StrCat(testing::CliBinary(), " batch --http=", server_->http_address()); }
  // The server's answer to `body` on `url`, sent directly.
  static json Direct(const std::string& url, const json& body) {
    const testing::HttpAnswer answer = testing::HttpSend(server_->http_address(), "POST", url, body.dump());
    EXPECT_EQ(answer.status, 200) << answer.body;
    return answer.body;
  }
  static double RequestsServed() {
    const auto metrics = testing::ScrapeMetrics(*server_);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? metrics->Sum("arach_requests_total", {}) : -1;
  }
  testing::ScopedTempDir dir_;
};

json Line(const std::string& id, const std::string& url, const json& body) {
  return {{"custom_id", id}, {"method", "POST"}, {"url", url}, {"body", body}};
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(BatchServer, EachLineIsAnsweredInOrderAsTheApiAnswersItsBody) {
  const json chat = {{"model", "qwen3-tiny"}, {"messages", {{{"role", "user"}, {"content", "Name a colour."}}}}, {"max_tokens", 6},
                     {"temperature", 0}, {"chat_template_kwargs", {{"enable_thinking", false}}}};
  const json completion = {{"model", "qwen3-tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 7}, {"temperature", 0}};
  const json refused = {{"model", "qwen3-tiny"}, {"prompt", "x"}, {"max_tokens", -1}};
  const json responses = {{"model", "qwen3-tiny"}, {"input", "Say hello."}, {"max_output_tokens", 5}, {"temperature", 0}};
  const json embeddings = {{"model", "qwen3-tiny"}, {"input", {"red", "a green leaf"}}};
  const std::vector<json> lines = {Line("chat", "/v1/chat/completions", chat), Line("completion", "/v1/completions", completion),
                                   Line("refused", "/v1/completions", refused), Line("responses", "/v1/responses", responses),
                                   Line("embeddings", "/v1/embeddings", embeddings)};
  std::ofstream input(dir_.File("in.jsonl"));
  for (const json& line : lines) input << line.dump() << "\n\n";
  input.close();

  const testing::CommandResult run = testing::RunCommand(
      absl::StrCat(Cli(), " --concurrency=3 --progress_seconds=0.000001 --input=", dir_.File("in.jsonl"), " --output=",
                   dir_.File("out.jsonl"), " 2>&1"));
  EXPECT_EQ(run.status, 1) << "one request was refused: " << run.output;
  EXPECT_NE(run.output.find("5 requests in"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("4 succeeded, 1 failed (answered 4xx/5xx), 0 without an answer"), std::string::npos) << run.output;
  for (int done = 1; done < 5; ++done) {  // (a progress line as often as asked; the summary says the last)
    EXPECT_NE(run.output.find(absl::StrCat("arach-cli batch: ", done, " of 5 written (", 20 * done, ".0%) in ")), std::string::npos)
        << run.output;
  }

  std::vector<json> out;
  for (absl::string_view line : absl::StrSplit(ReadFile(dir_.File("out.jsonl")), '\n', absl::SkipEmpty())) {
    out.push_back(json::parse(line, nullptr, false));
    ASSERT_FALSE(out.back().is_discarded()) << line;
  }
  ASSERT_EQ(out.size(), lines.size());
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out[i]["id"], absl::StrCat("batch_req_", i));
    EXPECT_EQ(out[i]["custom_id"], lines[i]["custom_id"]);
    EXPECT_TRUE(out[i]["error"].is_null()) << out[i];
    EXPECT_FALSE(out[i]["response"]["request_id"].get<std::string>().empty()) << out[i];
  }
  const json& chat_answer = out[0]["response"]["body"];
  ASSERT_EQ(out[0]["response"]["status_code"], 200) << out[0];
  EXPECT_EQ(chat_answer["choices"][0]["message"]["content"], Direct("/v1/chat/completions", chat)["choices"][0]["message"]["content"]);
  EXPECT_EQ(chat_answer["usage"]["completion_tokens"], 6);
  ASSERT_EQ(out[1]["response"]["status_code"], 200) << out[1];
  EXPECT_EQ(out[1]["response"]["body"]["choices"][0]["text"], Direct("/v1/completions", completion)["choices"][0]["text"]);
  EXPECT_EQ(out[2]["response"]["status_code"], 400);
  EXPECT_EQ(out[2]["response"]["body"]["error"]["param"], "max_tokens") << out[2];
  ASSERT_EQ(out[3]["response"]["status_code"], 200) << out[3];
  EXPECT_EQ(out[3]["response"]["body"]["output"].back()["content"][0]["text"],
            Direct("/v1/responses", responses)["output"].back()["content"][0]["text"]);
  ASSERT_EQ(out[4]["response"]["status_code"], 200) << out[4];
  const json direct = Direct("/v1/embeddings", embeddings);
  ASSERT_EQ(out[4]["response"]["body"]["data"].size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    const std::vector<float> got = out[4]["response"]["body"]["data"][e]["embedding"];
    const std::vector<float> want = direct["data"][e]["embedding"];
    ASSERT_EQ(got.size(), want.size());
    for (size_t d = 0; d < got.size(); ++d) EXPECT_NEAR(got[d], want[d], 1e-5) << "input " << e << " dimension " << d;
  }
}

TEST_F(BatchServer, ABadLineIsRefusedBeforeAnyRequestIsSent) {
  std::ofstream input(dir_.File("bad.jsonl"));
  input << Line("a", "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).dump() << "\n"
        << Line("b", "/v1/completions", {{"prompt", "x"}, {"stream", true}}).dump() << "\n";
  input.close();
  const double served = RequestsServed();
  const testing::CommandResult run = testing::RunCommand(
      absl::StrCat(Cli(), " --input=", dir_.File("bad.jsonl"), " --output=", dir_.File("out.jsonl"), " 2>&1"));
  EXPECT_EQ(run.status, 2) << run.output;
  EXPECT_NE(run.output.find(dir_.File("bad.jsonl") + ": line 2: body.stream: a batch request is answered whole, not streamed"),
            std::string::npos)
      << run.output;
  EXPECT_FALSE(std::ifstream(dir_.File("out.jsonl")).good()) << "no output file is made";
  EXPECT_EQ(RequestsServed(), served) << "nothing was sent";

  const testing::CommandResult no_input = testing::RunCommand(absl::StrCat(Cli(), " 2>&1"));
  EXPECT_EQ(no_input.status, 2) << no_input.output;
  EXPECT_NE(no_input.output.find("--input: give the batch file"), std::string::npos) << no_input.output;
}

// --resume: a run that got no answers, then one answered line and a line cut short, go on to every request answered
// once; the kept line stays as it was, and a second --resume sends nothing.
TEST_F(BatchServer, AResumedRunSendsOnlyTheRequestsWithoutAFinalAnswer) {
  std::vector<json> lines;
  for (int i = 0; i < 3; ++i) {
    lines.push_back(Line(absl::StrCat("r", i), "/v1/completions",
                         {{"model", "qwen3-tiny"}, {"prompt", absl::StrCat("Count to ", i + 2)}, {"max_tokens", 3}, {"temperature", 0}}));
  }
  auto write = [&](const std::string& name, const std::vector<json>& which) {
    std::ofstream out(dir_.File(name));
    for (const json& line : which) out << line.dump() << "\n";
  };
  write("in.jsonl", lines);
  write("one.jsonl", {lines[1]});
  const std::string out = dir_.File("out.jsonl");
  const testing::CommandResult unanswered = testing::RunCommand(absl::StrCat(
      testing::CliBinary(), " batch --http=127.0.0.1:1 --max_attempts=1 --input=", dir_.File("in.jsonl"), " --output=", out, " 2>&1"));
  EXPECT_EQ(unanswered.status, 1) << unanswered.output;
  EXPECT_NE(unanswered.output.find("0 succeeded, 0 failed (answered 4xx/5xx), 3 without an answer"), std::string::npos)
      << unanswered.output;
  // The second request answered by a run of its own; the third's line cut short, as by a stop while writing it.
  const testing::CommandResult one = testing::RunCommand(
      absl::StrCat(Cli(), " --input=", dir_.File("one.jsonl"), " --output=", dir_.File("one.out.jsonl"), " 2>&1"));
  ASSERT_EQ(one.status, 0) << one.output;
  std::vector<std::string> previous = absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty());
  ASSERT_EQ(previous.size(), 3u);
  const std::vector<std::string> answered_alone = absl::StrSplit(ReadFile(dir_.File("one.out.jsonl")), '\n', absl::SkipEmpty());
  ASSERT_EQ(answered_alone.size(), 1u);
  const std::string kept = answered_alone[0];
  ASSERT_NE(kept.find("\"custom_id\":\"r1\""), std::string::npos) << kept;
  std::ofstream(out) << previous[0] << "\n" << kept << "\n" << previous[2].substr(0, 20);

  const double served = RequestsServed();
  const testing::CommandResult resumed = testing::RunCommand(
      absl::StrCat(Cli(), " --resume --input=", dir_.File("in.jsonl"), " --output=", out, " 2>&1"));
  EXPECT_EQ(resumed.status, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("1 answers kept from " + out + ", 2 requests to send (2 lines dropped to be sent again)"),
            std::string::npos)
      << resumed.output;
  EXPECT_EQ(RequestsServed(), served + 2) << "only the two without an answer were sent";
  EXPECT_EQ(resumed.output.find(" written ("), std::string::npos) << "no progress line in a run shorter than 10 s";
  const std::vector<std::string> now = absl::StrSplit(ReadFile(out), '\n', absl::SkipEmpty());
  ASSERT_EQ(now.size(), 3u) << ReadFile(out);
  EXPECT_EQ(now[0], kept) << "the kept line first, as it was";
  for (size_t i = 1; i < 3; ++i) {
    const json line = json::parse(now[i]);
    const size_t request = i == 1 ? 0 : 2;
    EXPECT_EQ(line["custom_id"], absl::StrCat("r", request));
    EXPECT_EQ(line["id"], absl::StrCat("batch_req_", request)) << "its place in the input file";
    ASSERT_EQ(line["response"]["status_code"], 200) << line;
    EXPECT_EQ(line["response"]["body"]["choices"][0]["text"],
              Direct("/v1/completions", lines[request]["body"])["choices"][0]["text"]);
  }
  const testing::CommandResult again = testing::RunCommand(
      absl::StrCat(Cli(), " --resume --input=", dir_.File("in.jsonl"), " --output=", out, " 2>&1"));
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_NE(again.output.find("3 answers kept from " + out + ", 0 requests to send"), std::string::npos) << again.output;
  EXPECT_EQ(absl::StrJoin(now, "\n") + "\n", ReadFile(out));
}

}  // namespace
}  // namespace arach
