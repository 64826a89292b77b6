// End-to-end: arach-server serves the model families production runs, as their folders ship
// (../shared/fixtures/{qwen3,qwen2,llama3}-tiny: real tokenizers, BF16/F16, sharded, generation_config.json),
// with every variant: each streams the reference greedy continuation; GetModelInfo names the family and the
// end-of-sequence ids of both configs; a text prompt is tokenized with the model's own tokenizer. And a
// folder whose config or tokenizer.json uses something unsupported stops the server at start, naming it.
#include <filesystem>
#include <fstream>

#include "client/arach_client.h"
#include "engine/tokenizer/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/server_process.h"
#include "tests/testing/temp_dir.h"
#include "tools/make_model/make_model.h"

namespace arach {
namespace {

using client::ArachClient;
using ::testing::HasSubstr;
using testing::ServerProcess;

class ModelFamily : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelFamily, ServesEveryVariantAsTheReferencesDo) {
  ARACH_REQUIRE_FIXTURES();
  const std::string model = GetParam();
  std::vector<std::string> flags = testing::FixtureServerFlags(model);
  flags.push_back("--kv_cache_bytes=16777216");
  auto server = ServerProcess::Start(testing::ServerBinary(), flags);
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = ArachClient::Connect((*server)->grpc_address());
  ASSERT_TRUE(client->WaitServing(std::chrono::seconds(30)));

  arach::v1::ModelInfo info;
  ASSERT_TRUE(client->GetModelInfo(&info).ok());
  const std::string family = model.substr(0, model.find('-'));
  EXPECT_EQ(info.architecture(), family == "llama3" ? "llama" : family);
  EXPECT_TRUE(info.adapter_loaded());
  std::vector<int32_t> eos(info.eos_token_ids().begin(), info.eos_token_ids().end());
  if (model == "qwen3-tiny") {
    EXPECT_EQ(eos, (std::vector<int32_t>{151645, 151643})) << "config.json then generation_config.json";
  }

  const auto& refs = testing::ModernRefsJson()["models"][model]["variants"];
  for (const auto& [name, ref] : std::vector<std::pair<std::string, std::string>>{
           {"base", "base"}, {"arach", "arach"}, {"skip", "skip"}, {"arach+skip", "arach_skip"}}) {
    arach::v1::GenerateRequest request;
    for (int32_t id : testing::RefPrompt(model, "p48")) request.mutable_token_ids()->add_ids(id);
    request.set_max_tokens(32);
    request.set_ignore_eos(true);
    request.mutable_sampling()->set_temperature(0.0f);
    request.mutable_variant()->set_arach(name.find("arach") != std::string::npos);
    request.mutable_variant()->set_skip(name.find("skip") != std::string::npos);
    std::vector<int32_t> tokens;
    arach::v1::Finish finish;
    const grpc::Status status = client->Generate(request, [&](const arach::v1::GenerateResponse& r) {
      tokens.insert(tokens.end(), r.token_ids().begin(), r.token_ids().end());
      if (r.has_finish()) finish = r.finish();
    });
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(tokens, refs[ref]["greedy_p48_32"].get<std::vector<int32_t>>()) << model << " " << name;
    EXPECT_EQ(finish.variant().name(), name);
  }

  // A text prompt goes through the model's own tokenizer.json (no BOS for these files).
  auto tokenizer = LoadTokenizer(testing::FixturePath(model));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const std::string text = "ROMEO:\nBut, soft! what light through yonder window breaks?";
  arach::v1::TokenizeRequest tokenize;
  tokenize.add_texts(text);
  tokenize.set_add_bos(true);
  arach::v1::TokenizeResponse tokenized;
  grpc::ClientContext context;
  const grpc::Status tokenized_status = client->inference().Tokenize(&context, tokenize, &tokenized);
  ASSERT_TRUE(tokenized_status.ok()) << tokenized_status.error_code() << " " << tokenized_status.error_message();
  EXPECT_EQ(std::vector<int32_t>(tokenized.tokens(0).ids().begin(), tokenized.tokens(0).ids().end()),
            *(*tokenizer)->Encode(text, /*add_special_tokens=*/true));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ModelFamily, ::testing::Values("qwen3-tiny", "qwen2-tiny", "llama3-tiny"),
                         [](const auto& info) { return info.param.substr(0, info.param.find('-')); });

// Rewrites `file` (JSON) in `dir` with `edit` applied.
void EditJson(const std::string& file, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j;
  {
    std::ifstream in(file);
    j = nlohmann::json::parse(in);
  }
  edit(j);
  std::ofstream(file) << j.dump();
}

TEST(ModelFamilyStartup, UnsupportedConfigsAndTokenizersStopTheServerNamingWhat) {
  testing::ScopedTempDir dir;
  MakeModelOptions options;
  options.arch = "qwen3";
  options.out_dir = dir.path();
  ASSERT_TRUE(MakeModel(options).ok());
  // A tokenizer.json with a pre-tokenizer this engine does not implement.
  nlohmann::json tokenizer = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", nlohmann::json::array()}}},
                              {"pre_tokenizer", {{"type", "UnicodeScripts"}}}};
  std::ofstream(dir.File("tokenizer.json")) << tokenizer.dump();
  auto server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + dir.path()});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("pre-tokenizer type \"UnicodeScripts\" is not supported"));
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("tokenizer.json"));
  std::filesystem::remove(dir.File("tokenizer.json"));
  // A config with a RoPE scaling this engine does not implement.
  EditJson(dir.File("config.json"), [](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; });
  server = ServerProcess::Start(testing::ServerBinary(), {"--model=" + dir.path()});
  ASSERT_FALSE(server.ok());
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("\"yarn\" is not supported"));
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("config.json"));
}

}  // namespace
}  // namespace arach
