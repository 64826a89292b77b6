// RequestPolicy: what the server adds to the requests it submits, by kind: the prompt's log-probs for the
// perplexity metric and the generation kept for shadow scoring go to generation requests only (an embedding
// request would pay the LM head on every prompt row and lose its prefix-cache reuse); sampled diagnostics to any.
#include "server/request_policy.h"

#include "gtest/gtest.h"

namespace arach::server {
namespace {

TEST(RequestPolicy, PerplexityAndShadowScoringGoToGenerationsOnly) {
  RequestPolicy policy(/*prompt_perplexity=*/true, /*diagnostics_sample_rate=*/1.0, /*shadow_rate=*/1.0, /*seed=*/7);
  for (const RequestKind kind : {RequestKind::kGenerate, RequestKind::kScore, RequestKind::kEmbed}) {
    EngineRequest request;
    request.kind = kind;
    policy.Apply(request);
    const bool generates = kind == RequestKind::kGenerate;
    EXPECT_EQ(request.sampling.prompt_logprobs, generates) << static_cast<int>(kind);
    EXPECT_EQ(request.keep_generated, generates) << static_cast<int>(kind);
    EXPECT_TRUE(request.attention_diagnostics) << static_cast<int>(kind);
  }
  RequestPolicy quiet(false, 0.0, 0.0, 7);
  EngineRequest request;
  quiet.Apply(request);
  EXPECT_FALSE(request.sampling.prompt_logprobs);
  EXPECT_FALSE(request.keep_generated);
  EXPECT_FALSE(request.attention_diagnostics);
}

}  // namespace
}  // namespace arach::server
