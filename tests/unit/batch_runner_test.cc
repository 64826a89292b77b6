// SendBatch against a scripted HTTP server: output lines in input order whatever order the answers come in, the
// tries a busy or draining server gets, errors as lines, an output that fails, and TLS.
#include "client/batch_runner.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/testing/certificates.h"

namespace arach::client {
namespace {

using json = nlohmann::json;

// POST /v1/completions and /v1/embeddings on 127.0.0.1; what each request gets is up to `answer`. Counts the tries
// of each body's "key" and the most requests it held at once.
class ScriptedServer {
 public:
  using Answer = std::function<void(const json& body, int tries, const httplib::Request&, httplib::Response&)>;
  explicit ScriptedServer(Answer answer, std::unique_ptr<httplib::Server> server = std::make_unique<httplib::Server>())
      : server_(std::move(server)), answer_(std::move(answer)) {
    for (const char* path : {"/v1/completions", "/v1/embeddings"}) {
      server_->Post(path, [this](const httplib::Request& request, httplib::Response& response) {
        const int now = ++in_flight_;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          most_in_flight_ = std::max(most_in_flight_, now);
        }
        const json body = json::parse(request.body);
        int tries;
        {
          std::lock_guard<std::mutex> lock(mutex_);
          tries = ++tries_[body.value("key", "")];
        }
        answer_(body, tries, request, response);
        --in_flight_;
      });
    }
    server_->Get("/ready", [](const httplib::Request&, httplib::Response& response) { response.set_content("ok", "text/plain"); });
    port_ = server_->bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    for (int i = 0; i < 5000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // One request before any test's: the first requests a cpp-httplib server answers fill lazy caches of the C++
    // library's locale inside the (uninstrumented) httplib code, which ThreadSanitizer reports as a race when
    // several threads do it at once (a bare httplib::Server with three clients shows it; arach-server is probed
    // before it serves, so its own are warm too).
    httplib::Client warm(absl::StrCat(dynamic_cast<httplib::SSLServer*>(server_.get()) ? "https://" : "http://", address()));
    warm.enable_server_certificate_verification(false);
    warm.Get("/ready");
  }
  ~ScriptedServer() { Stop(); }
  void Stop() {
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  int tries(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    return tries_[key];
  }
  int most_in_flight() {
    std::lock_guard<std::mutex> lock(mutex_);
    return most_in_flight_;
  }

 private:
  std::unique_ptr<httplib::Server> server_;
  Answer answer_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> in_flight_{0};
  std::mutex mutex_;
  std::map<std::string, int> tries_;
  int most_in_flight_ = 0;
};

BatchRequest Request(const std::string& custom_id, const json& body, const std::string& url = "/v1/completions") {
  BatchRequest request;
  request.custom_id = custom_id;
  request.url = url;
  request.body = body.dump();
  return request;
}

std::vector<json> Lines(const std::string& output) {
  std::vector<json> lines;
  for (absl::string_view line : absl::StrSplit(output, '\n', absl::SkipEmpty())) lines.push_back(json::parse(line));
  return lines;
}

BatchTarget Target(const std::string& url, const std::string& api_key = "", const std::string& tls_ca = "") {
  BatchTarget target;
  target.url = url;
  target.api_key = api_key;
  target.tls_ca = tls_ca;
  return target;
}

BatchRunOptions QuickRetries(int concurrency, int max_attempts) {
  BatchRunOptions options;
  options.concurrency = concurrency;
  options.max_attempts = max_attempts;
  options.first_backoff_seconds = 0.01;
  return options;
}

TEST(SendBatch, WritesEachAnswerInInputOrderWhateverOrderTheyComeIn) {
  ScriptedServer server([](const json& body, int, const httplib::Request& request, httplib::Response& response) {
    std::this_thread::sleep_for(std::chrono::milliseconds(body["sleep_ms"].get<int>()));
    response.set_header("x-request-id", absl::StrCat("rid-", body["key"].get<std::string>()));
    response.set_content(json({{"key", body["key"]}, {"path", request.path}, {"auth", request.get_header_value("Authorization")}}).dump(),
                         "application/json");
  });
  std::vector<BatchRequest> requests;
  for (int i = 0; i < 6; ++i) {  // the first sleeps longest: the later ones are answered before it
    requests.push_back(Request(absl::StrCat("id-", i), {{"key", absl::StrCat("k", i)}, {"sleep_ms", 300 - 50 * i}},
                               i == 4 ? "/v1/embeddings" : "/v1/completions"));
    requests.back().index = static_cast<size_t>(i) + 10;  // the output line's id says the request's place in its file
  }
  std::ostringstream output;
  std::vector<size_t> progress;
  const auto summary = SendBatch(requests, Target(server.address(), "key-1"), QuickRetries(3, 5), output,
                                 [&](size_t done, size_t total) {
                                   EXPECT_EQ(total, 6u);
                                   progress.push_back(done);
                                 });
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->succeeded, 6);
  EXPECT_EQ(summary->failed + summary->errors + summary->retries, 0);
  EXPECT_EQ(progress, (std::vector<size_t>{1, 2, 3, 4, 5, 6}));
  const std::vector<json> lines = Lines(output.str());
  ASSERT_EQ(lines.size(), 6u);
  for (int i = 0; i < 6; ++i) {
    const json& line = lines[static_cast<size_t>(i)];
    EXPECT_EQ(line.dump(), json({{"id", absl::StrCat("batch_req_", i + 10)},
                                 {"custom_id", absl::StrCat("id-", i)},
                                 {"error", nullptr},
                                 {"response",
                                  {{"body",
                                    {{"auth", "Bearer key-1"},
                                     {"key", absl::StrCat("k", i)},
                                     {"path", i == 4 ? "/v1/embeddings" : "/v1/completions"}}},
                                   {"request_id", absl::StrCat("rid-k", i)},
                                   {"status_code", 200}}}})
                               .dump());
  }
  EXPECT_LE(server.most_in_flight(), 3);
  EXPECT_GE(server.most_in_flight(), 2) << "requests are sent side by side";
  // OpenAI's key order: id, custom_id, response, error.
  EXPECT_EQ(output.str().rfind("{\"id\":\"batch_req_10\",\"custom_id\":\"id-0\",\"response\":{\"status_code\":200,", 0), 0u);
}

TEST(SendBatch, TriesABusyOrDrainingServerAgainButNotARefusal) {
  ScriptedServer server([](const json& body, int tries, const httplib::Request&, httplib::Response& response) {
    const std::string key = body["key"];
    if (key == "busy" && tries <= 2) {
      response.status = 429;
      response.set_header("Retry-After", "0");
    } else if (key == "draining") {
      response.status = 503;
    } else if (key == "proxy" && tries == 1) {
      response.status = 502;
      response.set_content("<html>bad gateway</html>", "text/html");
      return;
    } else if (key == "refused") {
      response.status = 400;
    }
    response.set_content(json({{"key", key}, {"tries", tries}}).dump(), "application/json");
  });
  const std::vector<BatchRequest> requests = {Request("a", {{"key", "busy"}}), Request("b", {{"key", "draining"}}),
                                              Request("c", {{"key", "refused"}}), Request("d", {{"key", "proxy"}})};
  std::ostringstream output;
  const auto summary = SendBatch(requests, Target(server.address()), QuickRetries(2, 3), output);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(server.tries("busy"), 3);
  EXPECT_EQ(server.tries("draining"), 3) << "every try spent";
  EXPECT_EQ(server.tries("refused"), 1) << "a 400 is the answer";
  EXPECT_EQ(server.tries("proxy"), 2);
  EXPECT_EQ(summary->succeeded, 2);
  EXPECT_EQ(summary->failed, 2);
  EXPECT_EQ(summary->errors, 0);
  EXPECT_EQ(summary->retries, 2 + 2 + 1);
  const std::vector<json> lines = Lines(output.str());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0]["response"]["status_code"], 200);
  EXPECT_EQ(lines[0]["response"]["body"]["tries"], 3);
  EXPECT_EQ(lines[1]["response"]["status_code"], 503);
  EXPECT_EQ(lines[2]["response"]["status_code"], 400);
  EXPECT_EQ(lines[2]["response"]["body"]["key"], "refused");
  EXPECT_EQ(lines[3]["response"]["body"]["tries"], 2);
}

TEST(SendBatch, AnAnswerThatIsNotJsonIsKeptAsText) {
  ScriptedServer server([](const json&, int, const httplib::Request&, httplib::Response& response) {
    response.status = 500;
    response.set_content("<html>oops</html>", "text/html");
  });
  std::ostringstream output;
  const auto summary = SendBatch({Request("a", {{"key", "x"}})}, Target(server.address()), QuickRetries(1, 3), output);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(server.tries("x"), 1) << "a 500 is not tried again";
  const std::vector<json> lines = Lines(output.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["response"]["status_code"], 500);
  EXPECT_EQ(lines[0]["response"]["body"], "<html>oops</html>");
}

TEST(SendBatch, ARequestNoServerAnswersIsAnErrorLine) {
  std::string address;
  {
    ScriptedServer gone([](const json&, int, const httplib::Request&, httplib::Response&) {});
    address = gone.address();
  }  // nothing listens there now
  std::ostringstream output;
  const auto summary = SendBatch({Request("a", {{"key", "x"}}), Request("b", {{"key", "y"}})}, Target("http://" + address),
                                 QuickRetries(2, 2), output);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->errors, 2);
  EXPECT_EQ(summary->retries, 2);
  const std::vector<json> lines = Lines(output.str());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["custom_id"], "b");
  EXPECT_TRUE(lines[1]["response"].is_null());
  EXPECT_EQ(lines[1]["error"]["code"], "connection_error");
  EXPECT_NE(lines[1]["error"]["message"].get<std::string>().find("after 2 tries"), std::string::npos) << lines[1];
}

// A stream that takes `room` bytes and then fails, as a full disk does.
class FullDisk : public std::streambuf {
 public:
  explicit FullDisk(size_t room) : room_(room) {}

 protected:
  int_type overflow(int_type c) override {
    if (room_ == 0) return traits_type::eof();
    --room_;
    return c;
  }

 private:
  size_t room_;
};

TEST(SendBatch, StopsSendingWhenTheOutputCannotBeWritten) {
  ScriptedServer server([](const json& body, int, const httplib::Request&, httplib::Response& response) {
    response.set_content(body.dump(), "application/json");
  });
  std::vector<BatchRequest> requests;
  for (int i = 0; i < 40; ++i) requests.push_back(Request(absl::StrCat("r", i), {{"key", absl::StrCat("k", i)}}));
  FullDisk disk(150);  // room for the first line, not the second
  std::ostream output(&disk);
  const auto summary = SendBatch(requests, Target(server.address()), QuickRetries(1, 1), output);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(summary.status().message(), "the output could not be written after 1 lines");
  int sent = 0;
  for (int i = 0; i < 40; ++i) sent += server.tries(absl::StrCat("k", i));
  EXPECT_LE(sent, 4) << "no request is sent once the output fails";
}

TEST(SendBatch, RefusesATargetThatIsNotAnHttpUrl) {
  std::ostringstream output;
  const auto summary = SendBatch({Request("a", json::object())}, Target("ftp://127.0.0.1:1"), BatchRunOptions{}, output);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(summary.status().message(), "http: \"ftp://127.0.0.1:1\" is not http://HOST:PORT or https://HOST:PORT");
  EXPECT_TRUE(output.str().empty());
}

TEST(SendBatch, SpeaksTlsToAServerOfACertificateItTrusts) {
  testing::Certificates certificates;
  ASSERT_TRUE(certificates.ok()) << "the openssl command could not make the test certificates";
  ScriptedServer server(
      [](const json& body, int, const httplib::Request&, httplib::Response& response) {
        response.set_content(body.dump(), "application/json");
      },
      std::make_unique<httplib::SSLServer>(certificates.File("server.pem").c_str(), certificates.File("server.key").c_str()));
  std::ostringstream trusted;
  // HOST:PORT with a CA file: https.
  const auto summary = SendBatch({Request("a", {{"key", "x"}})}, Target(server.address(), "", certificates.File("ca.pem")),
                                 QuickRetries(1, 1), trusted);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->succeeded, 1) << trusted.str();
  EXPECT_EQ(Lines(trusted.str())[0]["response"]["body"]["key"], "x");

  std::ostringstream plain;
  const auto refused = SendBatch({Request("b", {{"key", "y"}})}, Target("http://" + server.address()), QuickRetries(1, 1), plain);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->errors, 1) << "plain HTTP to a TLS port gets no answer: " << plain.str();
  std::ostringstream untrusted;  // https with the system's CAs, which did not sign this certificate
  const auto stranger = SendBatch({Request("c", {{"key", "z"}})}, Target("https://" + server.address()), QuickRetries(1, 1), untrusted);
  ASSERT_TRUE(stranger.ok()) << stranger.status();
  EXPECT_EQ(stranger->errors, 1) << untrusted.str();
  EXPECT_EQ(server.tries("z"), 0);
}

}  // namespace
}  // namespace arach::client
