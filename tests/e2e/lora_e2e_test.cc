// LoRA adapters end to end (--lora_modules) on the gpt2-tiny fixture: each adapter is a model id of its own (with
// every variant suffix) in /v1/models, and a model id or gRPC's VariantSpec.lora runs the request with it: the
// same greedy tokens as the engine serving that adapter in process, over HTTP and gRPC alike, under ARACH too;
// embeddings through it; an adapter not loaded is refused naming the parameter.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/lora_folders.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/run_command.h"
#include "tests/testing/shared_fixture_server.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::HttpAnswer;

// The adapter the suites' servers load ("tuned" at start-up; at run time by the admin suite): written once per
// process, before a server starts, and removed (with the admin suite's key file and other adapter beside it) when
// the process ends.
const std::string& AdapterDir() {
  static const std::string path = [] {
    const std::string dir = ::testing::TempDir() + "arach_lora_e2e_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir);
    if (testing::HaveFixtures()) {
      testing::RandomLora lora;
      lora.modules = testing::LoraTargetModules(testing::FixturePath("gpt2-tiny"));
      lora.seed = 5;
      testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), lora, dir);
    }
    return dir;
  }();
  struct RemovedAtExit {
    ~RemovedAtExit() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
      std::filesystem::remove(path + "-keys", ignored);
      std::filesystem::remove_all(path + "-other", ignored);
    }
  };
  static const RemovedAtExit removed;
  return path;
}

// Another adapter of the same modules (the admin suite loads it in place of the first), beside AdapterDir().
const std::string& OtherAdapterDir() {
  static const std::string path = [] {
    const std::string dir = AdapterDir() + "-other";
    testing::RandomLora lora;
    lora.modules = testing::LoraTargetModules(testing::FixturePath("gpt2-tiny"));
    lora.seed = 6;
    testing::WriteRandomLora(testing::FixturePath("gpt2-tiny"), lora, dir);
    return dir;
  }();
  return path;
}

// Greedy tokens of `prompt` from the engine serving the adapter in process (the fixture's flags, float32).
std::vector<int32_t> InProcess(const std::vector<int32_t>& prompt, const std::string& lora, bool arach, int max_tokens) {
  static std::unique_ptr<Engine> engine =
      testing::MakeFixtureEngine("gpt2-tiny", {}, 256, "", {{"tuned", AdapterDir()}, {"other", OtherAdapterDir()}});
  EngineRequest request;
  request.prompt = prompt;
  request.lora = lora;
  request.variant.arach = arach;
  request.sampling.temperature = 0;
  request.sampling.max_tokens = max_tokens;
  request.sampling.ignore_eos = true;
  auto observer = std::make_shared<testing::CollectingObserver>();
  EXPECT_TRUE(engine->Submit(request, observer).ok());
  EXPECT_TRUE(observer->Wait());
  return observer->tokens();
}

class LoraServer : public testing::SharedFixtureServer<LoraServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--weight_dtype=f32", "--lora_modules=tuned=" + AdapterDir(), "--max_loras=2"}; }

 protected:
  static HttpAnswer Post(const std::string& path, const json& body) {
    return testing::HttpSend(server_->http_address(), "POST", path, body.dump());
  }
  std::vector<int32_t> GrpcTokens(const std::vector<int32_t>& prompt, const std::string& lora, bool arach, int max_tokens,
                                  arach::v1::Finish* finish) {
    arach::v1::GenerateRequest request;
    for (int32_t id : prompt) request.mutable_token_ids()->add_ids(id);
    request.set_max_tokens(max_tokens);
    request.set_ignore_eos(true);
    request.mutable_sampling()->set_temperature(0.0f);
    request.mutable_variant()->set_arach(arach);
    request.mutable_variant()->set_lora(lora);
    std::vector<int32_t> tokens;
    const grpc::Status status = client_->Generate(request, [&](const arach::v1::GenerateResponse& r) {
      tokens.insert(tokens.end(), r.token_ids().begin(), r.token_ids().end());
      if (r.has_finish()) *finish = r.finish();
    });
    EXPECT_TRUE(status.ok()) << status.error_message();
    return tokens;
  }
};

TEST_F(LoraServer, EachAdapterIsAModelIdWithEveryVariant) {
  const HttpAnswer models = testing::HttpSend(server_->http_address(), "GET", "/v1/models");
  ASSERT_EQ(models.status, 200) << models.body;
  std::vector<std::string> ids;
  for (const json& model : models.body["data"]) {
    ids.push_back(model["id"]);
    if (model["id"].get<std::string>().rfind("tuned", 0) == 0) {
      EXPECT_EQ(model["parent"], "gpt2-tiny") << model;
      EXPECT_EQ(model["root"], "tuned") << model;
    } else {
      EXPECT_TRUE(model["parent"].is_null()) << model;
    }
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"gpt2-tiny", "gpt2-tiny:base", "gpt2-tiny:arach", "gpt2-tiny:skip", "gpt2-tiny:arach+skip",
                                           "tuned", "tuned:base", "tuned:arach", "tuned:skip", "tuned:arach+skip"}));
  const HttpAnswer one = testing::HttpSend(server_->http_address(), "GET", "/v1/models/tuned:arach");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.body["parent"], "gpt2-tiny");
  arach::v1::ModelInfo info;
  ASSERT_TRUE(client_->GetModelInfo(&info).ok());
  ASSERT_EQ(info.lora_adapters_size(), 1);
  EXPECT_EQ(info.lora_adapters(0), "tuned");
  // The model server protocol's LoRA info for an endpoint picker: the adapters a batch may hold (--max_loras), read
  // just now; one adapter registered, on the device.
  const auto metrics = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_GT(metrics->Sum("arach_lora_requests_info", {{"max_lora", "2"}}), 1.7e9);
  EXPECT_EQ(metrics->Sum("arach_lora_adapters_loaded", {}), 1);
  EXPECT_EQ(metrics->Sum("arach_lora_adapters_on_device", {}), 1);
  EXPECT_EQ(metrics->Sum("arach_lora_swap_ins_total", {}), 0);
}

TEST_F(LoraServer, HttpAndGrpcGenerateWhatTheEngineGivesWithTheAdapter) {
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok());
  const auto before = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(before.ok()) << before.status();
  for (const bool arach : {false, true}) {
    SCOPED_TRACE(arach ? "arach" : "base");
    const std::vector<int32_t> expected = InProcess(prompt, "tuned", arach, 16);
    ASSERT_EQ(expected.size(), 16u);
    EXPECT_NE(expected, InProcess(prompt, "", arach, 16)) << "the adapter changes nothing";
    arach::v1::Finish finish;
    EXPECT_EQ(GrpcTokens(prompt, "tuned", arach, 16, &finish), expected);
    EXPECT_EQ(finish.variant().lora(), "tuned");
    EXPECT_EQ(finish.variant().arach(), arach);
    const HttpAnswer completion = Post("/v1/completions", {{"model", arach ? "tuned:arach" : "tuned:base"}, {"prompt", prompt},
                                                            {"max_tokens", 16}, {"temperature", 0}, {"ignore_eos", true}});
    ASSERT_EQ(completion.status, 200) << completion.body;
    EXPECT_EQ(completion.body["model"], arach ? "tuned:arach" : "tuned:base");
    EXPECT_EQ(completion.body["choices"][0]["text"], *(*tokenizer)->Decode(expected, false));
  }
  // Counted per adapter: two gRPC and two HTTP generations of 16 tokens each.
  const std::map<std::string, std::string> labels = {{"lora", "tuned"}, {"kind", "generate"}, {"finish_reason", "length"}};
  ASSERT_TRUE(testing::EventuallyMetrics(*server_, [&](const testing::PrometheusText& m) {
    return m.Sum("arach_lora_requests_total", labels) - before->Sum("arach_lora_requests_total", labels) == 4;
  }));
  const auto after = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->Sum("arach_lora_tokens_total", {{"lora", "tuned"}, {"type", "generation"}}) -
                before->Sum("arach_lora_tokens_total", {{"lora", "tuned"}, {"type", "generation"}}),
            64);
}

// The server's log line of the request `id`, once written (or "" after 5 s).
std::string LogLineOf(testing::ServerProcess& server, const std::string& id) {
  for (int i = 0; i < 250; ++i) {
    const std::string output = server.Output();
    const size_t at = output.find("request id=" + id + " ");
    if (at != std::string::npos) return output.substr(at, output.find('\n', at) - at);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

TEST_F(LoraServer, TheLogLineNamesTheAdapter) {
  const json body = {{"model", "tuned:arach"}, {"prompt", "Hello"}, {"max_tokens", 2}};
  ASSERT_EQ(testing::HttpSend(server_->http_address(), "POST", "/v1/completions", body.dump(), {{"x-request-id", "lora-log-http"}}).status, 200);
  json base = body;
  base["model"] = "gpt2-tiny";
  ASSERT_EQ(testing::HttpSend(server_->http_address(), "POST", "/v1/completions", base.dump(), {{"x-request-id", "lora-log-base"}}).status, 200);
  arach::v1::GenerateRequest request;
  request.set_text("Hello");
  request.set_max_tokens(2);
  request.set_request_id("lora-log-grpc");
  request.mutable_variant()->set_lora("tuned");
  ASSERT_TRUE(client_->Generate(request, [](const auto&) {}).ok());
  arach::v1::ScoreRequest score;
  score.add_inputs()->set_text("Hello there");
  score.set_request_id("lora-log-score");
  score.mutable_variant()->set_lora("tuned");
  arach::v1::ScoreResponse scored;
  ASSERT_TRUE(client_->Score(score, &scored).ok());
  EXPECT_THAT(LogLineOf(*server_, "lora-log-http"), ::testing::EndsWith(" lora=tuned"));
  EXPECT_THAT(LogLineOf(*server_, "lora-log-base"), ::testing::EndsWith(" lora=-"));
  EXPECT_THAT(LogLineOf(*server_, "lora-log-grpc"), ::testing::EndsWith(" lora=tuned"));
  EXPECT_THAT(LogLineOf(*server_, "lora-log-score"), ::testing::EndsWith(" lora=tuned"));
}

TEST_F(LoraServer, EmbeddingsRunThroughTheAdapter) {
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  const HttpAnswer tuned = Post("/v1/embeddings", {{"model", "tuned"}, {"input", prompt}, {"normalize", false}});
  const HttpAnswer base = Post("/v1/embeddings", {{"model", "gpt2-tiny"}, {"input", prompt}, {"normalize", false}});
  ASSERT_EQ(tuned.status, 200) << tuned.body;
  ASSERT_EQ(base.status, 200) << base.body;
  const std::vector<float> with_lora = tuned.body["data"][0]["embedding"].get<std::vector<float>>();
  EXPECT_NE(with_lora, base.body["data"][0]["embedding"].get<std::vector<float>>());
  arach::v1::EmbedRequest request;
  arach::v1::TokenIds* ids = request.add_inputs()->mutable_token_ids();
  for (int32_t id : prompt) ids->add_ids(id);
  request.mutable_variant()->set_lora("tuned");
  request.set_normalize(false);
  arach::v1::EmbedResponse response;
  const grpc::Status status = client_->Embed(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.embeddings_size(), 1);
  ASSERT_EQ(response.embeddings(0).values_size(), static_cast<int>(with_lora.size()));
  for (size_t k = 0; k < with_lora.size(); ++k) EXPECT_NEAR(response.embeddings(0).values(static_cast<int>(k)), with_lora[k], 1e-5) << k;
}

TEST_F(LoraServer, AnAdapterNotLoadedIsRefusedNamingTheParameter) {
  const HttpAnswer http = Post("/v1/completions", {{"model", "other"}, {"prompt", "Hi"}, {"max_tokens", 2}});
  EXPECT_EQ(http.status, 404) << http.body;
  EXPECT_EQ(http.body["error"]["param"], "model");
  arach::v1::GenerateRequest request;
  request.set_text("Hi");
  request.set_max_tokens(2);
  request.mutable_variant()->set_lora("other");
  const grpc::Status status = client_->Generate(request, [](const arach::v1::GenerateResponse&) {});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("lora"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("'other'"), std::string::npos) << status.error_message();
}

// arach-cli generate --lora streams what the adapter generates.
TEST_F(LoraServer, TheCliNamesAnAdapter) {
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  const testing::CommandResult run = testing::RunCommand(absl::StrCat(
      testing::CliBinary(), " generate --server=", server_->grpc_address(), " --ids=", absl::StrJoin(prompt, ","),
      " --max_tokens=8 --temperature=0 --ignore_eos --lora=tuned --json"));
  ASSERT_EQ(run.status, 0) << run.output;
  std::vector<int32_t> tokens;
  for (absl::string_view line : absl::StrSplit(run.output, '\n', absl::SkipEmpty())) {
    const json message = json::parse(line, nullptr, false);
    ASSERT_FALSE(message.is_discarded()) << line;
    for (const json& id : message.value("tokenIds", json::array())) tokens.push_back(id.get<int32_t>());
  }
  EXPECT_EQ(tokens, InProcess(prompt, "tuned", false, 8));
}

// gRPC's LoadLoraAdapter (`path` given) or UnloadLoraAdapter through `client` (its key); the adapters after it in `loaded`.
grpc::Status ChangeOverGrpc(client::ArachClient& client, const std::string& name, const std::string& path, bool inplace = false,
                            std::vector<std::string>* loaded = nullptr) {
  arach::v1::LoraAdaptersResponse response;
  grpc::Status status;
  if (path.empty()) {
    arach::v1::UnloadLoraAdapterRequest request;
    request.set_lora_name(name);
    status = client.UnloadLoraAdapter(request, &response);
  } else {
    arach::v1::LoadLoraAdapterRequest request;
    request.set_lora_name(name);
    request.set_lora_path(path);
    request.set_load_inplace(inplace);
    status = client.LoadLoraAdapter(request, &response);
  }
  if (loaded != nullptr) loaded->assign(response.lora_adapters().begin(), response.lora_adapters().end());
  return status;
}

TEST_F(LoraServer, RuntimeUpdatesAreOffWithoutTheFlag) {
  const HttpAnswer load = Post("/v1/load_lora_adapter", {{"lora_name", "more"}, {"lora_path", AdapterDir()}});
  EXPECT_EQ(load.status, 404) << load.body;
  EXPECT_NE(load.body.dump().find("--allow_runtime_lora_updating"), std::string::npos) << load.body;
  const grpc::Status over_grpc = ChangeOverGrpc(*client_, "more", AdapterDir());
  EXPECT_EQ(over_grpc.error_code(), grpc::StatusCode::NOT_FOUND) << over_grpc.error_message();
  EXPECT_EQ(ChangeOverGrpc(*client_, "tuned", "").error_code(), grpc::StatusCode::NOT_FOUND);
}

// --allow_runtime_lora_updating with API keys: a key with the scope `adapters` loads and unloads adapters over HTTP
// (vLLM's routes); another key may not.
class LoraAdminServer : public testing::SharedFixtureServer<LoraAdminServer> {
 public:
  static std::vector<std::string> ExtraFlags() {
    const std::string keys = AdapterDir() + "-keys";
    std::ofstream(keys) << "admin:secret-admin:adapters\nuser:secret-user\n";
    return {"--weight_dtype=f32", "--allow_runtime_lora_updating", "--api_key_file=" + keys, "--max_loras=1", "--max_lora_rank=8"};
  }

 protected:
  static HttpAnswer Call(const std::string& method, const std::string& path, const json& body, const std::string& secret) {
    return testing::HttpSend(server_->http_address(), method, path, method == "GET" ? "" : body.dump(),
                             {{"Authorization", "Bearer " + secret}});
  }
  static std::vector<std::string> ModelIds() {
    std::vector<std::string> ids;
    const HttpAnswer models = Call("GET", "/v1/models", {}, "secret-user");
    for (const json& model : models.body["data"]) ids.push_back(model["id"]);
    return ids;
  }
};

TEST_F(LoraAdminServer, AKeyWithTheScopeLoadsAndUnloadsAnAdapterWhileServing) {
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  const json completion = {{"model", "hot"}, {"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
  EXPECT_EQ(Call("POST", "/v1/completions", completion, "secret-user").status, 404);

  const HttpAnswer refused = Call("POST", "/v1/load_lora_adapter", {{"lora_name", "hot"}, {"lora_path", AdapterDir()}}, "secret-user");
  EXPECT_EQ(refused.status, 403) << refused.body;
  EXPECT_NE(refused.body.dump().find("adapters"), std::string::npos) << refused.body;

  const HttpAnswer loaded = Call("POST", "/v1/load_lora_adapter", {{"lora_name", "hot"}, {"lora_path", AdapterDir()}}, "secret-admin");
  ASSERT_EQ(loaded.status, 200) << loaded.body;
  EXPECT_EQ(loaded.body, "Success: LoRA adapter 'hot' added successfully.");
  const std::vector<std::string> ids = ModelIds();
  EXPECT_NE(std::find(ids.begin(), ids.end(), "hot:arach"), ids.end());
  const HttpAnswer answer = Call("POST", "/v1/completions", completion, "secret-user");
  ASSERT_EQ(answer.status, 200) << answer.body;
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok());
  EXPECT_EQ(answer.body["choices"][0]["text"], *(*tokenizer)->Decode(InProcess(prompt, "tuned", false, 8), false));

  // --max_loras=1: no second adapter while this one is loaded (429: the server is full of adapters).
  const HttpAnswer full = Call("POST", "/v1/load_lora_adapter", {{"lora_name", "warm"}, {"lora_path", AdapterDir()}}, "secret-admin");
  EXPECT_EQ(full.status, 429) << full.body;
  EXPECT_NE(full.body.dump().find("--max_loras 1"), std::string::npos) << full.body;
  EXPECT_NE(server_->Output().find(" kept for LoRA adapters"), std::string::npos) << "the start-up line says what the KV pool left";

  const HttpAnswer twice = Call("POST", "/v1/load_lora_adapter", {{"lora_name", "hot"}, {"lora_path", AdapterDir()}}, "secret-admin");
  EXPECT_EQ(twice.status, 400) << twice.body;
  EXPECT_EQ(twice.body["error"]["param"], "lora_name");
  const HttpAnswer broken = Call("POST", "/v1/load_lora_adapter", {{"lora_name", "cold"}, {"lora_path", "/nonexistent"}}, "secret-admin");
  EXPECT_NE(broken.status, 200);
  EXPECT_NE(broken.body.dump().find("/nonexistent/adapter_config.json"), std::string::npos) << broken.body;
  for (const json& bad : {json{{"lora_path", AdapterDir()}}, json{{"lora_name", "a:b"}, {"lora_path", AdapterDir()}},
                          json{{"lora_name", "c"}}, json{{"lora_name", "c"}, {"lora_path", AdapterDir()}, {"load_inplace", "yes"}},
                          json{{"lora_name", "c"}, {"lora_path", AdapterDir()}, {"rank", 8}}}) {
    const HttpAnswer answer400 = Call("POST", "/v1/load_lora_adapter", bad, "secret-admin");
    EXPECT_EQ(answer400.status, 400) << bad << " " << answer400.body;
  }

  // vLLM's load_inplace: the name's new weights (at --max_loras=1 with no request of it running, the old ones go first).
  const HttpAnswer in_place =
      Call("POST", "/v1/load_lora_adapter", {{"lora_name", "hot"}, {"lora_path", OtherAdapterDir()}, {"load_inplace", true}}, "secret-admin");
  ASSERT_EQ(in_place.status, 200) << in_place.body;
  const HttpAnswer replaced = Call("POST", "/v1/completions", completion, "secret-user");
  ASSERT_EQ(replaced.status, 200) << replaced.body;
  EXPECT_NE(replaced.body["choices"][0]["text"], answer.body["choices"][0]["text"]) << "the other adapter's weights answer";

  const HttpAnswer unloaded = Call("POST", "/v1/unload_lora_adapter", {{"lora_name", "hot"}}, "secret-admin");
  ASSERT_EQ(unloaded.status, 200) << unloaded.body;
  EXPECT_EQ(unloaded.body, "Success: LoRA adapter 'hot' removed successfully.");
  const std::vector<std::string> after = ModelIds();
  EXPECT_EQ(std::find(after.begin(), after.end(), "hot"), after.end());
  EXPECT_EQ(Call("POST", "/v1/completions", completion, "secret-user").status, 404);
  EXPECT_EQ(Call("POST", "/v1/unload_lora_adapter", {{"lora_name", "hot"}}, "secret-admin").status, 404);
}

TEST_F(LoraAdminServer, GrpcLoadsAndUnloadsAnAdapterWithTheScope) {
  const auto admin = client::ArachClient::Connect(server_->grpc_address(), {}, "secret-admin");
  const auto user = client::ArachClient::Connect(server_->grpc_address(), {}, "secret-user");
  const grpc::Status refused = ChangeOverGrpc(*user, "rpc", AdapterDir());
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::PERMISSION_DENIED) << refused.error_message();
  const grpc::Status bad_name = ChangeOverGrpc(*admin, "rpc:arach", AdapterDir());
  EXPECT_EQ(bad_name.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(bad_name.error_message(), "lora_name: must not contain ':' (NAME:VARIANT names a variant) or ','");
  const grpc::Status broken = ChangeOverGrpc(*admin, "rpc", "/nonexistent");
  EXPECT_NE(broken.error_message().find("/nonexistent/adapter_config.json"), std::string::npos) << broken.error_message();

  std::vector<std::string> loaded;
  const grpc::Status load = ChangeOverGrpc(*admin, "rpc", AdapterDir(), false, &loaded);
  ASSERT_TRUE(load.ok()) << load.error_message();
  EXPECT_EQ(loaded, std::vector<std::string>{"rpc"});
  // Served to every key over both APIs.
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  arach::v1::GenerateRequest request;
  for (int32_t id : prompt) request.mutable_token_ids()->add_ids(id);
  request.set_max_tokens(8);
  request.set_ignore_eos(true);
  request.mutable_sampling()->set_temperature(0.0f);
  request.mutable_variant()->set_lora("rpc");
  std::vector<int32_t> tokens;
  ASSERT_TRUE(user->Generate(request, [&](const arach::v1::GenerateResponse& r) {
                    tokens.insert(tokens.end(), r.token_ids().begin(), r.token_ids().end());
                  }).ok());
  EXPECT_EQ(tokens, InProcess(prompt, "tuned", false, 8));
  const grpc::Status full = ChangeOverGrpc(*admin, "more", AdapterDir());
  EXPECT_EQ(full.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << full.error_message();

  ASSERT_TRUE(ChangeOverGrpc(*admin, "rpc", "", false, &loaded).ok());
  EXPECT_TRUE(loaded.empty());
  EXPECT_EQ(ChangeOverGrpc(*admin, "rpc", "").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(server_->Output().find("arach-server LoRA adapter 'rpc' unloaded (key admin)"), std::string::npos);
}

// arach-cli load-lora / unload-lora: the admin RPCs from the command line, with the key's scope.
TEST_F(LoraAdminServer, TheCliLoadsAndUnloadsAnAdapter) {
  const std::string cli = absl::StrCat(testing::CliBinary(), " --server=", server_->grpc_address());
  const testing::CommandResult refused = testing::RunCommand(
      absl::StrCat(cli, " load-lora --api_key=secret-user --lora=cli --lora_path=", AdapterDir(), " 2>&1"));
  EXPECT_EQ(refused.status, 1) << refused.output;
  EXPECT_NE(refused.output.find("PERMISSION_DENIED"), std::string::npos) << refused.output;
  const testing::CommandResult loaded = testing::RunCommand(
      absl::StrCat(cli, " load-lora --api_key=secret-admin --lora=cli --lora_path=", AdapterDir()));
  ASSERT_EQ(loaded.status, 0) << loaded.output;
  const json adapters = json::parse(loaded.output, nullptr, false);
  ASSERT_FALSE(adapters.is_discarded()) << loaded.output;
  EXPECT_EQ(adapters["loraAdapters"], json::array({"cli"})) << loaded.output;
  const testing::CommandResult missing = testing::RunCommand(absl::StrCat(cli, " load-lora --api_key=secret-admin --lora=x 2>&1"));
  EXPECT_EQ(missing.status, 2) << missing.output;
  const testing::CommandResult unloaded = testing::RunCommand(absl::StrCat(cli, " unload-lora --api_key=secret-admin --lora=cli"));
  ASSERT_EQ(unloaded.status, 0) << unloaded.output;
  const testing::CommandResult again = testing::RunCommand(absl::StrCat(cli, " unload-lora --api_key=secret-admin --lora=cli 2>&1"));
  EXPECT_EQ(again.status, 1) << again.output;
  EXPECT_NE(again.output.find("NOT_FOUND"), std::string::npos) << "it is gone: " << again.output;
}

// --max_cpu_loras above --max_loras: two adapters registered, one on the device at a time; requests of each, one after
// the other, are answered with their own adapter (swapped in), as the engine serving both on the device answers.
class LoraSwapServer : public testing::SharedFixtureServer<LoraSwapServer> {
 public:
  static std::vector<std::string> ExtraFlags() {
    return {"--weight_dtype=f32", "--lora_modules=tuned=" + AdapterDir() + ",other=" + OtherAdapterDir(), "--max_loras=1",
            "--max_cpu_loras=2", "--max_lora_rank=8"};
  }
};

TEST_F(LoraSwapServer, EachAdapterAnswersWithItsOwnWeightsOneOnTheDeviceAtATime) {
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok());
  for (const char* lora : {"other", "tuned", "other"}) {
    const json completion = {{"model", lora}, {"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}, {"ignore_eos", true}};
    const HttpAnswer answer = testing::HttpSend(server_->http_address(), "POST", "/v1/completions", completion.dump());
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(answer.body["choices"][0]["text"], *(*tokenizer)->Decode(InProcess(prompt, lora, false, 8), false)) << lora;
  }
  const auto metrics = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->Sum("arach_lora_adapters_loaded", {}), 2);
  EXPECT_EQ(metrics->Sum("arach_lora_adapters_on_device", {}), 1);
  EXPECT_EQ(metrics->Sum("arach_lora_swap_ins_total", {}), 3) << "tuned went first at start-up: other, tuned, other swapped in";
  EXPECT_GT(metrics->Sum("arach_lora_requests_info", {{"max_lora", "1"}}), 1.7e9);
}

}  // namespace
}  // namespace arach
