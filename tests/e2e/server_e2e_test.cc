// End-to-end: the real arach-server process on loopback ports, driven over gRPC by the client library.
//  - Fixture server (gpt2-tiny with its adapter and the references' hub embedding): every variant streams
//    exactly the reference continuation, Score matches the offline scorer, invalid requests get the right
//    codes, /metrics parses and its counters match the requests sent.
//  - A make-model GPT-2-124M server (slow enough on CPU to act mid-stream): a client cancel frees the
//    sequence (seen in /metrics), a deadline is honoured, a full queue is RESOURCE_EXHAUSTED, and SIGTERM
//    drains: health goes NOT_SERVING while calls are still served (lame duck), then the listener closes and
//    new calls get UNAVAILABLE, the stream in flight completes, exit 0.
#include <algorithm>
#include <csignal>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "client/arach_client.h"
#include "engine/runner/offline_session.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/run_command.h"
#include "tests/testing/server_checks.h"
#include "tests/testing/server_process.h"
#include "tests/testing/shared_fixture_server.h"
#include "tests/testing/test_models.h"
#include "tools/make_model/make_model.h"

namespace arach {
namespace {

using client::ArachClient;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::EventuallyMetrics;
using testing::ServerProcess;

std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> args) {
  return testing::StartServerOrFail(testing::ServerBinary(), std::move(args));
}
testing::PrometheusText Metrics(const ServerProcess& server) { return testing::MetricsOrFail(server); }

arach::v1::VariantSpec Spec(bool arach, bool skip) {
  arach::v1::VariantSpec spec;
  spec.set_arach(arach);
  spec.set_skip(skip);
  return spec;
}

// ------------------------------------------------------------------------------ fixture server

class FixtureServer : public testing::SharedFixtureServer<FixtureServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--max_prompt_bytes=4000"}; }
};

TEST_F(FixtureServer, EachVariantStreamsTheReferenceContinuation) {
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok());
  const testing::PrometheusText before = Metrics(*server_);
  for (const auto& [name, ref] : std::vector<std::pair<std::string, std::string>>{
           {"base", "base"}, {"arach", "arach"}, {"skip", "skip"}, {"arach+skip", "arach_skip"}}) {
    arach::v1::GenerateRequest request;
    for (int32_t id : testing::RefPrompt("gpt2-tiny", "p48")) request.mutable_token_ids()->add_ids(id);
    request.set_max_tokens(32);
    request.set_ignore_eos(true);
    request.mutable_sampling()->set_temperature(0.0f);
    *request.mutable_variant() = Spec(name.find("arach") != std::string::npos, name.find("skip") != std::string::npos);
    request.set_request_id("req-" + name);
    std::vector<int32_t> tokens;
    std::string text;
    arach::v1::Finish finish;
    int messages = 0;
    const grpc::Status status = client_->Generate(request, [&](const arach::v1::GenerateResponse& r) {
      tokens.insert(tokens.end(), r.token_ids().begin(), r.token_ids().end());
      text += r.text();
      if (r.has_finish()) finish = r.finish();
      ++messages;
    });
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(tokens, testing::RefsJson()["models"]["gpt2-tiny"]["variants"][ref]["greedy_p48_32"].get<std::vector<int32_t>>()) << name;
    EXPECT_EQ(text, *(*tokenizer)->Decode(tokens, false)) << name;
    EXPECT_GT(messages, 1) << "tokens are streamed, not sent at the end";
    EXPECT_EQ(finish.variant().name(), name);
    EXPECT_EQ(finish.reason(), arach::v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(finish.usage().completion_tokens(), 32u);
    EXPECT_EQ(finish.request_id(), "req-" + name);
  }
  // The counters moved by exactly what was sent.
  ASSERT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    return m.Sum("arach_requests_total") - before.Sum("arach_requests_total") == 4;
  }));
  const testing::PrometheusText after = Metrics(*server_);
  for (const std::string variant : {"base", "arach", "skip", "arach+skip"}) {
    const std::map<std::string, std::string> labels = {{"finish_reason", "length"}, {"variant", variant}};
    EXPECT_EQ(after.Sum("arach_requests_total", labels) - before.Sum("arach_requests_total", labels), 1) << variant;
    EXPECT_EQ(after.Value("arach_generation_tokens_total", "variant=\"" + variant + "\"") -
                  before.Value("arach_generation_tokens_total", "variant=\"" + variant + "\""),
              32);
    EXPECT_EQ(after.Sum("arach_time_to_first_token_seconds_count", {{"variant", variant}}) -
                  before.Sum("arach_time_to_first_token_seconds_count", {{"variant", variant}}),
              1);
  }
  for (const char* family : {"arach_requests_total", "arach_time_to_first_token_seconds", "arach_time_per_output_token_seconds",
                             "arach_e2e_request_latency_seconds", "arach_request_queue_time_seconds", "arach_prompt_tokens_total",
                             "arach_generation_tokens_total", "arach_num_requests_running", "arach_num_requests_waiting",
                             "arach_kv_cache_usage_ratio", "arach_prefix_cache_queried_tokens_total",
                             "arach_prefix_cache_hit_tokens_total", "arach_preemptions_total", "arach_batch_size",
                             "arach_step_duration_seconds", "arach_iteration_tokens", "arach_request_prompt_tokens",
                             "arach_request_generation_tokens", "arach_request_max_tokens", "arach_request_prefill_time_seconds",
                             "arach_request_decode_time_seconds", "arach_score_request_latency_seconds",
                                                          "arach_tokenizer_request_latency_seconds", "arach_build_info", "arach_cache_config_info",
                             "arach_kv_cache_bytes_per_token"}) {
    EXPECT_EQ(after.types.count(family), 1u) << family << " missing from /metrics";
    EXPECT_TRUE(after.helps.count(family) && !after.helps.at(family).empty()) << family << " has no help text";
  }
  // Every series names the served model (the folder's name by default).
  EXPECT_EQ(after.models, std::set<std::string>{"gpt2-tiny"});
  EXPECT_EQ(after.samples_without_model, 0);
  EXPECT_EQ(after.Sum("arach_build_info", {{"device", "cpu"}}), 1) << "one build_info series, with the device once loaded";
  EXPECT_EQ(after.Sum("arach_build_info"), 1);
  // The model server protocol's cache_config_info: one series whose labels give the pool's blocks.
  const std::string blocks = std::to_string(static_cast<int64_t>(after.Value("arach_kv_cache_blocks_total")));
  EXPECT_EQ(after.Sum("arach_cache_config_info", {{"num_gpu_blocks", blocks}}), 1) << blocks;
  EXPECT_EQ(after.Sum("arach_cache_config_info"), 1);
  // Per-request histograms of the four requests: 32 tokens generated each, max_tokens 32 asked.
  for (const std::string variant : {"base", "arach", "skip", "arach+skip"}) {
    const std::string v = "variant=\"" + variant + "\"";
    EXPECT_EQ(after.Value("arach_request_generation_tokens_sum", v) - before.Value("arach_request_generation_tokens_sum", v), 32);
    EXPECT_EQ(after.Value("arach_request_max_tokens_sum", v) - before.Value("arach_request_max_tokens_sum", v), 32);
    EXPECT_EQ(after.Value("arach_request_decode_time_seconds_count", v) - before.Value("arach_request_decode_time_seconds_count", v), 1);
  }
}

// A sampled request without a seed reports the seed the server drew, and the same request with it draws the
// same tokens; log-probs carry each token's text and bytes, which join to the text; Detokenize gives it back.
TEST_F(FixtureServer, SeedLogprobTextAndDetokenize) {
  arach::v1::GenerateRequest request;
  request.set_text("ROMEO:");
  request.set_max_tokens(12);
  request.set_ignore_eos(true);
  request.set_logprobs(true);
  request.set_top_logprobs(2);
  request.mutable_sampling()->set_temperature(1.0f);
  auto run = [&](const arach::v1::GenerateRequest& r, std::vector<int32_t>* ids, std::string* text, std::string* bytes) {
    arach::v1::Finish finish;
    const grpc::Status status = client_->Generate(r, [&](const arach::v1::GenerateResponse& m) {
      ids->insert(ids->end(), m.token_ids().begin(), m.token_ids().end());
      *text += m.text();
      for (const arach::v1::TokenLogprob& lp : m.logprobs()) {
        *bytes += lp.token_bytes();
        EXPECT_EQ(lp.top_size(), 2);
        for (const arach::v1::TopLogprob& top : lp.top()) EXPECT_FALSE(top.token_bytes().empty()) << top.token_id();
      }
      if (m.has_finish()) finish = m.finish();
    });
    EXPECT_TRUE(status.ok()) << status.error_message();
    return finish;
  };
  std::vector<int32_t> first_ids, again_ids;
  std::string first_text, first_bytes, again_text, again_bytes;
  const arach::v1::Finish first = run(request, &first_ids, &first_text, &first_bytes);
  ASSERT_EQ(first_ids.size(), 12u);
  EXPECT_EQ(first_bytes, first_text) << "the tokens' pieces join to the streamed text";
  request.mutable_sampling()->set_seed(first.seed());
  const arach::v1::Finish again = run(request, &again_ids, &again_text, &again_bytes);
  EXPECT_EQ(again.seed(), first.seed());
  EXPECT_EQ(again_ids, first_ids) << "the reported seed reproduces the draws";

  arach::v1::DetokenizeRequest detokenize;
  arach::v1::TokenIds* ids = detokenize.add_tokens();
  for (int32_t id : first_ids) ids->add_ids(id);
  arach::v1::DetokenizeResponse texts;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->inference().Detokenize(&context, detokenize, &texts).ok());
  }
  ASSERT_EQ(texts.texts_size(), 1);
  EXPECT_EQ(texts.texts(0), first_text);
  detokenize.add_tokens()->add_ids(1 << 30);
  grpc::ClientContext context;
  const grpc::Status bad = client_->inference().Detokenize(&context, detokenize, &texts);
  EXPECT_EQ(bad.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(bad.error_message(), ::testing::HasSubstr("tokens[1].ids[0]")) << bad.error_message();
}

TEST_F(FixtureServer, ScoreMatchesTheOfflineScorer) {
  arach::v1::ScoreRequest request;
  const std::vector<int32_t> p48 = testing::RefPrompt("gpt2-tiny", "p48");
  arach::v1::TokenIds* ids = request.add_inputs()->mutable_token_ids();
  for (int32_t id : p48) ids->add_ids(id);
  request.add_inputs()->set_text("To be, or not to be, that is the question.");
  *request.mutable_variant() = Spec(true, false);
  arach::v1::ScoreResponse response;
  ASSERT_TRUE(client_->Score(request, &response).ok());
  ASSERT_EQ(response.results_size(), 2);
  EXPECT_EQ(response.variant().name(), "arach");
  testing::FixtureOptions options;  // the server's storage: its default auto weights and KV cache
  options.weight_dtype = WeightDTypeChoice::kAuto;
  options.kv_cache_dtype = KvDTypeChoice::kAuto;
  auto runner = testing::LoadFixtureRunner("gpt2-tiny", options);
  ASSERT_TRUE(runner.ok());
  OfflineSession session(**runner);
  Variant arach;
  arach.arach = true;
  auto expected = testing::TokenLogProbs(session, p48, 512, arach);
  ASSERT_TRUE(expected.ok());
  const arach::v1::ScoreResult& r = response.results(0);
  ASSERT_EQ(r.logprobs_size(), static_cast<int>(expected->size()));
  double total = 0;
  for (int i = 0; i < r.logprobs_size(); ++i) {
    EXPECT_NEAR(r.logprobs(i), (*expected)[i], 1e-4);
    total += (*expected)[i];
  }
  EXPECT_NEAR(r.perplexity(), std::exp(-total / expected->size()), 1e-3 * r.perplexity());
  EXPECT_GT(response.results(1).scored_tokens(), 5u);
}

TEST_F(FixtureServer, InvalidRequestsGetTheRightCodes) {
  auto generate = [&](const arach::v1::GenerateRequest& r) { return client_->Generate(r, [](const auto&) {}); };
  arach::v1::GenerateRequest empty;
  grpc::Status s = generate(empty);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("prompt: set text or token_ids"));

  arach::v1::GenerateRequest bad;
  bad.set_text("hello");
  bad.mutable_sampling()->set_temperature(-2.0f);
  s = generate(bad);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("sampling.temperature"));

  arach::v1::GenerateRequest ids;
  ids.mutable_token_ids()->add_ids(5);
  ids.mutable_token_ids()->add_ids(60000);
  s = generate(ids);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("prompt.token_ids[1]"));

  arach::v1::GenerateRequest long_prompt;
  for (int i = 0; i < 256; ++i) long_prompt.mutable_token_ids()->add_ids(11);
  s = generate(long_prompt);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("context"));

  arach::v1::GenerateRequest oversize;
  oversize.set_text(std::string(5000, 'a'));
  s = generate(oversize);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("prompt.text: 5000 bytes exceed the limit of 4000"));

  arach::v1::GenerateRequest stop;
  stop.set_text("hello");
  stop.add_stop("");
  s = generate(stop);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("stop[0]"));

  arach::v1::GenerateRequest nan_offset;  // the server's default variant is base: the offset would go unused
  nan_offset.set_text("hello");
  nan_offset.mutable_variant()->set_arach_offset(std::numeric_limits<float>::quiet_NaN());
  s = generate(nan_offset);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("variant.arach_offset: nan is not finite"));

  arach::v1::GenerateRequest forged_log_line;  // the id is written into the request log line as given
  forged_log_line.set_text("hello");
  forged_log_line.set_request_id("x\nrequest id=forged api=grpc");
  s = generate(forged_log_line);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("request_id: must be 1 to 128 printable ASCII characters without spaces"));
  EXPECT_THAT(server_->Output(), Not(HasSubstr("id=forged"))) << "a refused id is not logged";

  arach::v1::ScoreRequest long_id;
  long_id.add_inputs()->set_text("hello world");
  long_id.set_request_id(std::string(129, 'r'));
  arach::v1::ScoreResponse long_id_response;
  s = client_->Score(long_id, &long_id_response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("request_id: must be 1 to 128"));
  long_id.set_request_id(std::string(128, 'r'));
  EXPECT_TRUE(client_->Score(long_id, &long_id_response).ok()) << "128 characters are allowed";
  EXPECT_EQ(long_id_response.request_id(), std::string(128, 'r'));

  arach::v1::ScoreRequest one_token;
  one_token.add_inputs()->mutable_token_ids()->add_ids(3);
  arach::v1::ScoreResponse response;
  s = client_->Score(one_token, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("inputs[0]"));

  // arach-cli names the code of a failed call.
  const testing::CommandResult cli = testing::RunCommand(std::string(testing::CliBinary()) + " generate --server " +
                                                         server_->grpc_address() + " --prompt hello --max-tokens 0");
  EXPECT_NE(cli.status, 0) << cli.output;
  EXPECT_THAT(cli.output, HasSubstr("arach-cli generate: INVALID_ARGUMENT: max_tokens: 0 must be >= 1"));

  const testing::PrometheusText m = Metrics(*server_);
  EXPECT_GE(m.Sum("arach_requests_rejected_total", {{"code", "invalid_argument"}}), 11);
}

// ------------------------------------------------------------------------------ slow server

std::string SlowModel() { return testing::SlowModelDir(); }

arach::v1::GenerateRequest LongRequest(int max_tokens) {
  arach::v1::GenerateRequest r;
  for (int i = 0; i < 16; ++i) r.mutable_token_ids()->add_ids(1000 + i);
  r.set_max_tokens(max_tokens);
  r.set_ignore_eos(true);
  r.mutable_sampling()->set_temperature(0.0f);
  return r;
}

class SlowServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = StartServer({"--model=" + SlowModel(), "--kv_cache_bytes=268435456", "--max_num_seqs=1",
                           "--max_queued_requests=1"})
                  .release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    client_ = ArachClient::Connect(server_->grpc_address());
    ASSERT_TRUE(client_->WaitServing(std::chrono::seconds(60)));
  }
  static ServerProcess* server_;
  std::unique_ptr<ArachClient> client_;
};
ServerProcess* SlowServer::server_ = nullptr;

TEST_F(SlowServer, ClientCancelMidStreamFreesTheSequence) {
  const testing::PrometheusText before = Metrics(*server_);
  grpc::ClientContext context;
  int tokens = 0;
  const grpc::Status status = client_->Generate(LongRequest(800), [&](const arach::v1::GenerateResponse& r) {
    tokens += r.token_ids_size();
    if (tokens >= 3) context.TryCancel();
  }, std::nullopt, &context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_LT(tokens, 800);
  EXPECT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    return testing::OneMoreCancelledAndNothingHeld(m, before);
  })) << "the cancelled sequence must leave the batch and give back its blocks";
}

TEST_F(SlowServer, DeadlineIsHonoured) {
  const absl::StatusOr<testing::PrometheusText> before = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(before.ok()) << before.status();
  const double deadlines_before = before->Sum("arach_requests_total", {{"finish_reason", "deadline"}});
  const double cancels_before = before->Sum("arach_requests_total", {{"finish_reason", "cancelled"}});
  int tokens = 0;
  const auto start = std::chrono::steady_clock::now();
  const grpc::Status status = client_->Generate(LongRequest(800), [&](const auto& r) { tokens += r.token_ids_size(); },
                                                std::chrono::system_clock::now() + std::chrono::milliseconds(400));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_LT(tokens, 800);
  EXPECT_TRUE(EventuallyMetrics(*server_, [](const testing::PrometheusText& m) {
    return m.Value("arach_num_requests_running") == 0 && m.Value("arach_kv_cache_usage_ratio") == 0;
  }));
  // Counted as a deadline, not as a client that went away (gRPC cancels the call when its deadline passes).
  EXPECT_TRUE(EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    return m.Sum("arach_requests_total", {{"finish_reason", "deadline"}}) == deadlines_before + 1 &&
           m.Sum("arach_requests_total", {{"finish_reason", "cancelled"}}) == cancels_before;
  }));
}

TEST_F(SlowServer, FullQueueIsResourceExhausted) {
  // One running and one queued request at most: of four sent at once, at least two are refused.
  std::vector<grpc::Status> statuses(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { statuses[i] = client_->Generate(LongRequest(40), [](const auto&) {}); });
  }
  for (std::thread& t : threads) t.join();
  int exhausted = 0, ok = 0;
  for (const grpc::Status& s : statuses) {
    exhausted += s.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    ok += s.ok();
  }
  EXPECT_GE(exhausted, 2);
  EXPECT_EQ(exhausted + ok, 4);
  EXPECT_GE(ok, 1);
}

TEST(ServerDrain, SigtermDrainsTheStreamInFlightThenExitsZero) {
  // The grace period only bounds the drain (it ends as soon as the stream finishes), so it is generous:
  // under ThreadSanitizer on a slow CI machine one token of this model can take a second.
  auto server = StartServer({"--model=" + SlowModel(), "--kv_cache_bytes=134217728", "--drain_grace_seconds=600",
                             "--drain_announce_ms=1000"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  // The stream must outlast the 1 s announcement and the checks after it, whatever this machine's speed at the
  // moment (a fixed 150 tokens once finished first on a loaded machine): about 10 s of tokens at the pace a short
  // generation just measured, 150 at least, within the model's 1024-token context.
  const auto calibration_start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client->Generate(LongRequest(16), [](const auto&) {}).ok());
  const double seconds_per_token =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - calibration_start).count() / 16;
  const int stream_tokens = std::clamp(static_cast<int>(10.0 / seconds_per_token), 150, 1000);
  std::atomic<int> tokens{0};
  grpc::Status stream_status;
  arach::v1::Finish finish;
  std::thread stream([&] {
    stream_status = client->Generate(LongRequest(stream_tokens), [&](const arach::v1::GenerateResponse& r) {
      tokens += r.token_ids_size();
      if (r.has_finish()) finish = r.finish();
    });
  });
  const auto first_tokens_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (tokens < 2 && std::chrono::steady_clock::now() < first_tokens_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_GE(tokens.load(), 2) << "the stream produced no tokens within 120 s";  // (no ASSERT: the stream thread must be joined)
  server->Signal(SIGTERM);
  // A lame duck first: health turns NOT_SERVING while new calls are still served (--drain_announce_ms).
  bool not_serving = false;
  for (int i = 0; i < 200 && !not_serving; ++i) {
    grpc::health::v1::HealthCheckResponse::ServingStatus health;
    not_serving = client->Health("", &health).ok() && health == grpc::health::v1::HealthCheckResponse::NOT_SERVING;
    if (!not_serving) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(not_serving);
  const grpc::Status during_lame_duck = client->Generate(LongRequest(1), [](const auto&) {});
  EXPECT_TRUE(during_lame_duck.ok()) << "a call that reaches a lame duck is served: " << during_lame_duck.error_message();
  // Then the listener closes (GOAWAY): health fails and new calls are UNAVAILABLE while the stream goes on.
  grpc::Status health_status;
  const auto closed_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {
    grpc::health::v1::HealthCheckResponse::ServingStatus health;
    health_status = client->Health("", &health);
    if (health_status.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (health_status.ok() && std::chrono::steady_clock::now() < closed_deadline);
  EXPECT_FALSE(health_status.ok()) << "the listener should close after the announcement";
  // Refused, never served: UNAVAILABLE from the closed listener, or CANCELLED when the call raced the close on the
  // server (seen once under ThreadSanitizer on the 2-core machine, 2026-12-02); either way the call was not served.
  const grpc::Status refused = client->Generate(LongRequest(5), [](const auto&) {});
  EXPECT_TRUE(refused.error_code() == grpc::StatusCode::UNAVAILABLE || refused.error_code() == grpc::StatusCode::CANCELLED)
      << "code " << refused.error_code() << ": " << refused.error_message();
  EXPECT_LT(tokens.load(), stream_tokens) << "the stream should still be running during the drain";
  stream.join();
  EXPECT_TRUE(stream_status.ok()) << stream_status.error_message();
  EXPECT_EQ(finish.usage().completion_tokens(), static_cast<uint32_t>(stream_tokens));
  auto exit_code = server->Wait(std::chrono::seconds(30));
  ASSERT_TRUE(exit_code.ok()) << exit_code.status();
  EXPECT_EQ(*exit_code, 0);
  EXPECT_THAT(server->Output(), HasSubstr("arach-server stopped (drained;"));
}

// --max_model_len serves a shorter context than the model's: every API reports it, a prompt that fills it is
// refused naming the field, a generation stops at its end; past the model's own context the server does not start.
TEST(MaxModelLen, TheServedContextIsTheFlagsOnEveryApi) {
  constexpr int kContext = 48;
  auto server = StartServer({"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny", "--kv_cache_bytes=16777216",
                             absl::StrCat("--max_model_len=", kContext)});
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(server->Output(), HasSubstr(absl::StrCat("max_model_len=", kContext)));
  const testing::HttpAnswer models = testing::HttpSend(server->http_address(), "GET", "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.body["data"][0]["max_model_len"], kContext);
  const testing::HttpAnswer tokenized = testing::HttpSend(server->http_address(), "POST", "/tokenize", R"({"prompt": "hi"})");
  EXPECT_EQ(tokenized.body["max_model_len"], kContext);
  auto client = ArachClient::Connect(server->grpc_address());
  arach::v1::ModelInfo info;
  ASSERT_TRUE(client->GetModelInfo(&info).ok());
  EXPECT_EQ(info.context_length(), static_cast<uint32_t>(kContext));

  nlohmann::json prompt = nlohmann::json::array();
  for (int i = 0; i < 40; ++i) prompt.push_back(100 + i);
  const nlohmann::json completion = {{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 20}, {"ignore_eos", true}};
  const testing::HttpAnswer stopped = testing::HttpSend(server->http_address(), "POST", "/v1/completions", completion.dump());
  ASSERT_EQ(stopped.status, 200) << stopped.body;
  EXPECT_EQ(stopped.body["usage"]["completion_tokens"], kContext - 40) << "the generation ends with the served context";
  EXPECT_EQ(stopped.body["choices"][0]["finish_reason"], "length");
  for (int i = 40; i < kContext; ++i) prompt.push_back(100 + i);
  const testing::HttpAnswer full = testing::HttpSend(server->http_address(), "POST", "/v1/completions",
                                                     nlohmann::json{{"model", "tiny"}, {"prompt", prompt}}.dump());
  EXPECT_EQ(full.status, 400);
  EXPECT_EQ(full.body["error"]["param"], "prompt");
  EXPECT_THAT(full.body["error"]["message"].get<std::string>(), HasSubstr(absl::StrCat("context of ", kContext, " tokens")));

  const std::string start = absl::StrCat("timeout -s KILL 60 ", testing::ServerBinary(), " --model=", testing::TinyRandomModelDir(),
                                         " --listen=127.0.0.1:0 --http_listen=127.0.0.1:0");
  const testing::CommandResult too_long = testing::RunCommand(start + " --max_model_len=1000000");
  EXPECT_NE(too_long.status, 0);
  EXPECT_THAT(too_long.output, HasSubstr("max_model_len 1000000 exceeds the context of " + testing::TinyRandomModelDir()));
  const testing::CommandResult negative = testing::RunCommand(start + " --max_model_len=-1");
  EXPECT_NE(negative.status, 0);
  EXPECT_THAT(negative.output, HasSubstr("--max_model_len: must be 0"));
}

// A second server started on a port the first one holds fails at once naming the address, for the gRPC and the
// HTTP port alike, instead of binding it too (SO_REUSEPORT: the kernel then split the connections between the two,
// and a client of the first met the second one's 503s while it loaded); the first one serves on.
TEST_F(FixtureServer, APortInUseIsRefusedAtStart) {
  // (Bounded: a second server that did bind would serve until killed.)
  const std::string second = absl::StrCat("timeout -s KILL 60 ", testing::ServerBinary(), " --model=", testing::FixturePath("gpt2-tiny"));
  struct Ports {
    std::string grpc, http, taken;
  };
  for (const Ports& ports : {Ports{server_->grpc_address(), "127.0.0.1:0", server_->grpc_address()},
                             Ports{"127.0.0.1:0", server_->http_address(), server_->http_address()}}) {
    const testing::CommandResult started = testing::RunCommand(absl::StrCat(second, " --listen=", ports.grpc, " --http_listen=", ports.http));
    EXPECT_NE(started.status, 0) << started.output;
    EXPECT_THAT(started.output, HasSubstr("cannot listen on " + ports.taken + ": the port is in use")) << started.output;
    EXPECT_THAT(started.output, Not(HasSubstr("arach-server ready")));
  }
  auto client = ArachClient::Connect(server_->grpc_address());
  EXPECT_TRUE(client->WaitServing(std::chrono::seconds(10)));
  EXPECT_TRUE(testing::HttpGetMetrics(server_->http_address()).ok());
}

TEST(ServerStartup, SkipWithoutAdapterIsFailedPrecondition) {
  auto server = StartServer({"--model=" + SlowModel(), "--kv_cache_bytes=67108864"});
  ASSERT_NE(server, nullptr);
  auto client = ArachClient::Connect(server->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(60)));
  arach::v1::GenerateRequest r = LongRequest(2);
  *r.mutable_variant() = Spec(false, true);
  const grpc::Status s = client->Generate(r, [](const auto&) {});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s.error_message(), HasSubstr("--adapter"));
  arach::v1::ModelInfo info;
  ASSERT_TRUE(client->GetModelInfo(&info).ok());
  EXPECT_EQ(info.architecture(), "gpt2");
  EXPECT_FALSE(info.adapter_loaded());
  EXPECT_EQ(info.context_length(), 1024u);
}

}  // namespace
}  // namespace arach
