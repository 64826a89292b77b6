// arach-run score, which scores through the serving Engine's score requests (the path of the server's Score
// RPC), gives the references' validation perplexity: 8 windows of 128 tokens, each after one context token.
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/build_paths.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

// Runs `command` and returns what it printed on stdout.
std::string Output(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buffer[4096];
  while (pipe != nullptr && fgets(buffer, sizeof(buffer), pipe.get()) != nullptr) out += buffer;
  return out;
}

class ArachRunScore : public ::testing::TestWithParam<testing::RefCase> {};

TEST_P(ArachRunScore, GivesTheReferencePerplexity) {
  ARACH_REQUIRE_FIXTURES();
  const std::string& model = GetParam().model;
  const absl::StatusOr<std::vector<int32_t>> val = testing::ValidationIds(model);
  ASSERT_TRUE(val.ok()) << val.status();
  ASSERT_GE(val->size(), 8u * 128 + 1);
  const std::vector<int32_t> ids(val->begin(), val->begin() + 8 * 128 + 1);
  std::string command = absl::StrCat(testing::RunBinary(), " score --model=", testing::FixturePath(model),
                                     " --window=128 --ids=", absl::StrJoin(ids, ","));
  if (testing::VariantOfRef(GetParam().variant).arach) {
    command += absl::StrCat(" --arach --arach_hub_embedding=", testing::FixturePath(testing::RefsFileFor(model)), ":",
                            model, ".hub_embedding");
  }
  const nlohmann::json out = nlohmann::json::parse(Output(command + " 2>/dev/null"), nullptr, false);
  ASSERT_FALSE(out.is_discarded()) << command;
  const nlohmann::json& ref = testing::RefsJsonFor(model)["models"][model]["variants"][GetParam().variant];
  EXPECT_EQ(out["tokens_scored"].get<int>(), ref["val_tokens"].get<int>());
  const double ppl = out["perplexity"].get<double>(), ref_ppl = ref["val_ppl"].get<double>();
  EXPECT_NEAR(ppl, ref_ppl, 1e-4 * ref_ppl) << "ppl " << ppl << " vs " << ref_ppl;
}

INSTANTIATE_TEST_SUITE_P(Refs, ArachRunScore,
                         ::testing::Values(testing::RefCase{"gpt2-tiny", "base"}, testing::RefCase{"gpt2-tiny", "arach"},
                                           testing::RefCase{"qwen3-tiny", "base"}),
                         testing::RefCaseName);

}  // namespace
}  // namespace arach
