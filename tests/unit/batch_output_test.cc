// The batch output format: BatchOutputLine's lines, and ReadFinishedLines reading a previous run's output back for
// arach-cli batch --resume (final answers kept, the others dropped to be sent again, another file's output refused).
#include "client/batch_output.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

using json = nlohmann::json;

std::vector<BatchRequest> Requests(int count) {
  std::vector<BatchRequest> requests;
  for (int i = 0; i < count; ++i) {
    BatchRequest r;
    r.custom_id = absl::StrCat("r", i);
    r.index = static_cast<size_t>(i);
    r.url = "/v1/completions";
    r.body = "{}";
    requests.push_back(r);
  }
  return requests;
}

BatchResult Answer(int status, const std::string& body = "{\"ok\":true}") {
  BatchResult result;
  result.status_code = status;
  result.request_id = "rid";
  result.body = body;
  result.attempts = 1;
  return result;
}

BatchResult NoAnswer(int attempts) {
  BatchResult result;
  result.error = "Connection";
  result.attempts = attempts;
  return result;
}

TEST(BatchOutputLine, HasOpenAisShapeAndKeyOrder) {
  const std::vector<BatchRequest> requests = Requests(3);
  EXPECT_EQ(BatchOutputLine(requests[2], Answer(200, "{\"b\":1,\"a\":2}")),
            "{\"id\":\"batch_req_2\",\"custom_id\":\"r2\",\"response\":{\"status_code\":200,\"request_id\":\"rid\","
            "\"body\":{\"b\":1,\"a\":2}},\"error\":null}");
  EXPECT_EQ(BatchOutputLine(requests[0], Answer(502, "<html>bad gateway</html>")),
            "{\"id\":\"batch_req_0\",\"custom_id\":\"r0\",\"response\":{\"status_code\":502,\"request_id\":\"rid\","
            "\"body\":\"<html>bad gateway</html>\"},\"error\":null}");
  EXPECT_EQ(BatchOutputLine(requests[1], NoAnswer(3)),
            "{\"id\":\"batch_req_1\",\"custom_id\":\"r1\",\"response\":null,\"error\":{\"code\":\"connection_error\","
            "\"message\":\"no answer (Connection) after 3 tries\"}}");
  EXPECT_NE(BatchOutputLine(requests[1], NoAnswer(1)).find("after 1 try\""), std::string::npos);
}

TEST(ReadFinishedLines, KeepsFinalAnswersAndDropsTheOthers) {
  const std::vector<BatchRequest> requests = Requests(8);
  const std::string text = absl::StrCat(
      BatchOutputLine(requests[0], Answer(200)), "\n", BatchOutputLine(requests[1], NoAnswer(5)), "\n\n",
      BatchOutputLine(requests[2], Answer(400)), "\n", BatchOutputLine(requests[3], Answer(429)), "\n",
      BatchOutputLine(requests[4], Answer(503)), "\n", BatchOutputLine(requests[5], Answer(502)), "\n",
      BatchOutputLine(requests[6], Answer(500)), "\n",
      BatchOutputLine(requests[7], Answer(200)).substr(0, 30));  // the last line, cut short while it was written
  const auto finished = ReadFinishedLines(text, requests);
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->lines, (std::vector<std::string>{BatchOutputLine(requests[0], Answer(200)),
                                                       BatchOutputLine(requests[2], Answer(400)),
                                                       BatchOutputLine(requests[6], Answer(500))}));
  EXPECT_EQ(finished->custom_ids, (std::set<std::string>{"r0", "r2", "r6"}));
  EXPECT_EQ(finished->dropped, 5);
  EXPECT_EQ(finished->not_2xx, 2);
}

TEST(ReadFinishedLines, AnEmptyOutputKeepsNothing) {
  const auto finished = ReadFinishedLines("", Requests(2));
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_TRUE(finished->lines.empty());
  EXPECT_EQ(finished->dropped, 0);
}

TEST(ReadFinishedLines, RefusesTheOutputOfAnotherFile) {
  const std::vector<BatchRequest> requests = Requests(2);
  const std::string good = BatchOutputLine(requests[0], Answer(200));
  auto refusal = [&](const std::string& text) { return std::string(ReadFinishedLines(text, requests).status().message()); };
  EXPECT_EQ(refusal(good + "\nnot json\n"), "line 2: is not a batch output line (custom_id, response, error)");
  EXPECT_EQ(refusal("{\"custom_id\": \"r0\"}\n"), "line 1: is not a batch output line (custom_id, response, error)");
  EXPECT_EQ(refusal("[1]\n"), "line 1: is not a batch output line (custom_id, response, error)");
  EXPECT_EQ(refusal(good + "\n" + BatchOutputLine(Requests(5)[4], Answer(200)) + "\n"),
            "line 2: custom_id \"r4\" is not a request of the input file");
  EXPECT_EQ(refusal(good + "\n" + good + "\n"), "line 2: custom_id \"r0\" is answered by an earlier line");
  EXPECT_EQ(ReadFinishedLines(good + "\nnot json\n", requests).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace arach::client
