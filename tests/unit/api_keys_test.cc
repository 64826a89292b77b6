// API keys: the key file's format and its errors, authentication of bearer tokens, scopes, reloading, and the
// per-key token buckets of requests and tokens per minute.
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/api_keys.h"
#include "server/caller.h"
#include "server/rate_limits.h"
#include "tests/testing/temp_dir.h"

namespace arach::server {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ApiKeyFile, ReadsNamesScopesLimitsAndPriorities) {
  auto keys = ParseApiKeyFile(R"(# the team keys
alice:sk-alice-1234
bob:sk-bob:diagnostics   # one scope
carol : sk-carol : diagnostics, experiment, adapters : rpm=60, tpm=10000, priority=-1

dave:sk-dave:all:priority=5
erin:sk-erin::rpm=0
)", "keys.txt");
  ASSERT_TRUE(keys.ok()) << keys.status();
  ASSERT_EQ(keys->size(), 5u);
  EXPECT_EQ((*keys)[0].name, "alice");
  EXPECT_EQ((*keys)[0].scopes, 0u);
  EXPECT_EQ((*keys)[0].digest, DigestOf("sk-alice-1234")) << "only the secret's digest is kept";
  EXPECT_EQ((*keys)[1].scopes, uint32_t{kScopeDiagnostics});
  EXPECT_EQ((*keys)[2].name, "carol");
  EXPECT_EQ((*keys)[2].scopes, kAllScopes);
  EXPECT_EQ((*keys)[2].limits.requests_per_minute, 60);
  EXPECT_EQ((*keys)[2].limits.tokens_per_minute, 10000);
  EXPECT_EQ((*keys)[2].priority, -1);
  EXPECT_EQ((*keys)[2].digest, DigestOf("sk-carol")) << "spaces around fields are not part of them";
  EXPECT_EQ((*keys)[3].scopes, kAllScopes);
  EXPECT_EQ((*keys)[3].priority, 5);
  EXPECT_FALSE((*keys)[4].limits.any());
}

TEST(ApiKeyFile, ErrorsNameTheFileAndLineButNeverTheSecret) {
  auto error = [](const char* text) { return std::string(ParseApiKeyFile(text, "k.txt").status().message()); };
  EXPECT_THAT(error("alice\n"), HasSubstr("k.txt:1: expected NAME:SECRET"));
  EXPECT_THAT(error("ok:s1\nbad name:s2\n"), HasSubstr("k.txt:2: the key's name"));
  EXPECT_THAT(error("alice:\n"), HasSubstr("k.txt:1: key 'alice' has an empty secret"));
  EXPECT_THAT(error("alice:sk-x:admin\n"), AllOf(HasSubstr("k.txt:1: unknown scope 'admin'"), Not(HasSubstr("sk-x"))));
  EXPECT_THAT(error("alice:sk-x::rpm=ten\n"), AllOf(HasSubstr("rpm: 'ten' is not an integer"), Not(HasSubstr("sk-x"))));
  EXPECT_THAT(error("alice:sk-x::burst=3\n"), HasSubstr("unknown setting 'burst'"));
  EXPECT_THAT(error("alice:sk-x::rpm=-1\n"), HasSubstr("rpm: must be 0"));
  EXPECT_THAT(error("alice:sk-x::rpm=1,rpm=2\n"), HasSubstr("'rpm' is given twice"));
  EXPECT_THAT(error("a:sk-1\na:sk-2\n"), HasSubstr("k.txt:2: key 'a' is given twice"));
  EXPECT_THAT(error("a:sk-1\nb:sk-1\n"), AllOf(HasSubstr("k.txt:2: key 'b' has the secret of an earlier key"), Not(HasSubstr("sk-1"))));
  EXPECT_THAT(error("a:sk 1\n"), HasSubstr("whitespace"));
}

TEST(ApiKeys, AuthenticatesBearerTokensOnlyWhereKeysAreConfigured) {
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "alice:sk-alice:diagnostics:rpm=5,priority=2\n";
  auto keys = ApiKeys::Load(dir.File("keys"), "sk-root");
  ASSERT_TRUE(keys.ok()) << keys.status();
  EXPECT_FALSE((*keys)->open());
  EXPECT_EQ((*keys)->names(), (std::vector<std::string>{"alice", "default"}));

  auto alice = Authenticate(**keys, "Bearer sk-alice");
  ASSERT_TRUE(alice.ok()) << alice.status();
  EXPECT_EQ(alice->key, "alice");
  EXPECT_EQ(alice->limits.requests_per_minute, 5);
  EXPECT_EQ(alice->priority, 2);
  EXPECT_TRUE(RequireScope(*alice, kScopeDiagnostics, "diagnostics").ok());
  const absl::Status denied = RequireScope(*alice, kScopeExperiment, "arach");
  EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(denied.message()), HasSubstr("arach: the key 'alice' does not have the scope 'experiment'"));
  auto root = Authenticate(**keys, "bearer   sk-root ");
  ASSERT_TRUE(root.ok()) << "the scheme is case-insensitive and the token trimmed";
  EXPECT_EQ(root->key, "default");
  EXPECT_EQ(root->scopes, kAllScopes);

  for (const char* bad : {"", "sk-alice", "Basic c2stYWxpY2U=", "Bearer ", "Bearer sk-alic", "Bearer sk-alice2"}) {
    EXPECT_EQ(Authenticate(**keys, bad).status().code(), absl::StatusCode::kUnauthenticated) << "'" << bad << "'";
  }
}

TEST(ApiKeys, AnOpenServerLetsEveryoneInWithEveryScope) {
  auto keys = ApiKeys::Load("", "");
  ASSERT_TRUE(keys.ok());
  EXPECT_TRUE((*keys)->open());
  auto caller = Authenticate(**keys, "");
  ASSERT_TRUE(caller.ok());
  EXPECT_EQ(caller->key, kOpenCallerName);
  EXPECT_EQ(caller->scopes, kAllScopes);
}

TEST(ApiKeys, ReloadReplacesTheKeysAndAFailedReloadKeepsThem) {
  testing::ScopedTempDir dir;
  std::ofstream(dir.File("keys")) << "alice:sk-alice\nbob:sk-bob\n";
  auto keys = ApiKeys::Load(dir.File("keys"), "");
  ASSERT_TRUE(keys.ok()) << keys.status();
  std::ofstream(dir.File("keys")) << "alice:sk-alice\ncarol:sk-carol\n";
  ASSERT_TRUE((*keys)->Reload().ok());
  EXPECT_FALSE((*keys)->Find("sk-bob").has_value()) << "bob was revoked";
  EXPECT_TRUE((*keys)->Find("sk-carol").has_value());
  std::ofstream(dir.File("keys")) << "broken line\n";
  EXPECT_FALSE((*keys)->Reload().ok());
  EXPECT_TRUE((*keys)->Find("sk-carol").has_value()) << "a failed reload keeps the keys in use";
  EXPECT_FALSE(ApiKeys::Load(dir.File("missing"), "").ok());
}

using Clock = RateLimiter::Clock;

Caller Limited(int64_t rpm, int64_t tpm) {
  Caller caller;
  caller.key = "k";
  caller.limits = {rpm, tpm};
  return caller;
}

TEST(RateLimiter, ABurstUpToTheLimitThenTheLimitsPace) {
  RateLimiter limiter;
  const Caller caller = Limited(/*rpm=*/3, /*tpm=*/0);
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.TakeRequest(caller, t0).ok()) << i;
  const absl::Status refused = limiter.TakeRequest(caller, t0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(refused.message()), HasSubstr("3 requests per minute (rpm)"));
  ASSERT_TRUE(RetryAfterOf(refused).has_value());
  EXPECT_NEAR(*RetryAfterOf(refused), 20.0, 1e-6) << "one request comes back every 60/3 s";
  EXPECT_FALSE(limiter.TakeRequest(caller, t0 + std::chrono::seconds(19)).ok());
  EXPECT_TRUE(limiter.TakeRequest(caller, t0 + std::chrono::seconds(21)).ok());
  const RateLimitState state = limiter.State(caller, t0 + std::chrono::seconds(21));
  EXPECT_EQ(state.limit_requests, 3);
  EXPECT_EQ(state.remaining_requests, 0);
  EXPECT_TRUE(limiter.TakeRequest(Limited(0, 0), t0).ok()) << "no limit";
}

TEST(RateLimiter, TokensAreReservedThenSettledWithWhatWasUsed) {
  RateLimiter limiter;
  const Caller caller = Limited(/*rpm=*/0, /*tpm=*/100);
  const Clock::time_point t0 = Clock::now();
  EXPECT_EQ(limiter.ReserveTokens(caller, 101, "max_tokens", t0).code(), absl::StatusCode::kInvalidArgument)
      << "more than a minute's tokens can never pass";
  ASSERT_TRUE(limiter.ReserveTokens(caller, 80, "max_tokens", t0).ok());
  const absl::Status refused = limiter.ReserveTokens(caller, 30, "max_tokens", t0);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NEAR(*RetryAfterOf(refused), 6.0, 1e-6) << "10 more tokens at 100 a minute";
  limiter.Settle(caller, /*reserved=*/80, /*used=*/30, t0);  // 50 unused come back
  EXPECT_TRUE(limiter.ReserveTokens(caller, 60, "max_tokens", t0).ok());
  EXPECT_EQ(limiter.State(caller, t0).remaining_tokens, 10);
  limiter.Settle(caller, /*reserved=*/60, /*used=*/90, t0);  // 30 more than reserved are taken
  EXPECT_FALSE(limiter.ReserveTokens(caller, 1, "max_tokens", t0).ok());
  EXPECT_TRUE(limiter.ReserveTokens(caller, 1, "max_tokens", t0 + std::chrono::seconds(60)).ok()) << "a minute refills it";
}

}  // namespace
}  // namespace arach::server
