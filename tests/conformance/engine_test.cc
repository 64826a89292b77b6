// The serving engine on the gpt2-tiny fixture: outputs under load equal outputs alone (greedy and
// seeded sampling, mixed variants), prefix caching, a bounded load test with cancellations and
// preemption, deadlines, a full queue, stop rules, log-probs and streamed text.
#include <random>
#include <span>
#include <thread>

#include "engine/core/mapped_file.h"
#include "engine/engine.h"
#include "engine/runner/offline_session.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/token_filter.h"
#include "engine/tokenizer/unicode.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/fixtures.h"

namespace arach {
namespace {

using testing::CollectingObserver;

Variant VariantNumber(int i) {
  Variant v;
  v.arach = i % 2 == 1;
  v.skip = (i / 2) % 2 == 1;
  return v;
}

struct Job {
  EngineRequest request;
  std::shared_ptr<CollectingObserver> observer = std::make_shared<CollectingObserver>();
};

std::vector<Job> MakeJobs(const std::vector<int32_t>& val, int count, bool sampled, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Job> jobs(count);
  for (int i = 0; i < count; ++i) {
    const int len = 1 + static_cast<int>(rng() % 60);
    const int start = static_cast<int>(rng() % (val.size() - len));
    jobs[i].request.prompt.assign(val.begin() + start, val.begin() + start + len);
    jobs[i].request.variant = VariantNumber(i);
    jobs[i].request.sampling.max_tokens = 8 + static_cast<int>(rng() % 24);
    jobs[i].request.sampling.ignore_eos = true;
    if (sampled) {
      jobs[i].request.sampling.temperature = 0.8f;
      jobs[i].request.sampling.top_p = 0.95f;
      jobs[i].request.sampling.top_k = 50;
      jobs[i].request.sampling.seed = 1000 + i;
    } else {
      jobs[i].request.sampling.temperature = 0.0f;
    }
  }
  return jobs;
}

class EngineUnderLoad : public ::testing::TestWithParam<bool> {};

TEST_P(EngineUnderLoad, EveryOutputEqualsItsOutputAlone) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig config;
  config.max_num_batched_tokens = 64;  // forces chunked prefill of the longer prompts
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", config);
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(engine->tokenizer());
  const bool sampled = GetParam();
  std::vector<Job> alone = MakeJobs(val, 16, sampled, 5), together = MakeJobs(val, 16, sampled, 5);
  for (Job& job : alone) {
    ASSERT_TRUE(engine->Submit(job.request, job.observer).ok());
    ASSERT_TRUE(job.observer->Wait());
  }
  for (Job& job : together) ASSERT_TRUE(engine->Submit(job.request, job.observer).ok());
  for (size_t i = 0; i < together.size(); ++i) {
    ASSERT_TRUE(together[i].observer->Wait());
    EXPECT_EQ(together[i].observer->tokens(), alone[i].observer->tokens()) << "request " << i << " " << together[i].request.variant.Name();
    EXPECT_EQ(together[i].observer->text(), alone[i].observer->text());
    EXPECT_EQ(together[i].observer->finish().reason, FinishReason::kLength);
  }
  EXPECT_EQ(testing::IdleStats(*engine).kv_blocks_used, 0);
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSeeded, EngineUnderLoad, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "seeded_sampling" : "greedy"; });

// The CPU backend samples where the logits are (every row of a step on its threads, nothing copied out): the same
// tokens and log-probs as the engine's own thread sampling the copied rows one by one (sample_on_device false),
// for greedy and seeded requests, with and without log-probs asked (the quality metrics want them all).
TEST(EngineSampling, TheBackendsThreadsDrawTheEnginesTokens) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig on_backend, on_engine;
  on_backend.always_compute_logprobs = on_engine.always_compute_logprobs = true;
  on_engine.sample_on_device = false;
  auto backend_engine = testing::MakeFixtureEngine("gpt2-tiny", on_backend);
  auto engine_engine = testing::MakeFixtureEngine("gpt2-tiny", on_engine);
  ASSERT_NE(backend_engine, nullptr);
  ASSERT_NE(engine_engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(backend_engine->tokenizer());
  for (const bool sampled : {false, true}) {
    std::vector<Job> backend_jobs = MakeJobs(val, 8, sampled, 9), engine_jobs = MakeJobs(val, 8, sampled, 9);
    for (size_t i = 0; i < backend_jobs.size(); ++i) {
      backend_jobs[i].request.sampling.logprobs = engine_jobs[i].request.sampling.logprobs = i % 2 == 0;
      backend_jobs[i].request.sampling.min_p = engine_jobs[i].request.sampling.min_p = i % 3 == 0 ? 0.05f : 0.0f;
      ASSERT_TRUE(backend_engine->Submit(backend_jobs[i].request, backend_jobs[i].observer).ok());
      ASSERT_TRUE(engine_engine->Submit(engine_jobs[i].request, engine_jobs[i].observer).ok());
    }
    for (size_t i = 0; i < backend_jobs.size(); ++i) {
      ASSERT_TRUE(backend_jobs[i].observer->Wait());
      ASSERT_TRUE(engine_jobs[i].observer->Wait());
      EXPECT_EQ(backend_jobs[i].observer->tokens(), engine_jobs[i].observer->tokens()) << "request " << i << " sampled " << sampled;
      const FinishInfo& a = backend_jobs[i].observer->finish();
      const FinishInfo& b = engine_jobs[i].observer->finish();
      // (A step's batch decides which GEMM path computes a row: logits equal to rounding, not bit for bit.)
      ASSERT_TRUE(a.mean_generated_logprob.has_value()) << "request " << i << ": every token's log-prob, asked for or not";
      ASSERT_TRUE(b.mean_generated_logprob.has_value()) << "request " << i;
      EXPECT_NEAR(*a.mean_generated_logprob, *b.mean_generated_logprob, 1e-4) << "request " << i;
      EXPECT_LT(*a.mean_generated_logprob, 0.0) << "request " << i;
      std::vector<float> a_logprobs, b_logprobs;
      for (const StreamChunk& chunk : backend_jobs[i].observer->chunks()) {
        for (const SampledToken& t : chunk.tokens) a_logprobs.push_back(t.logprob);
      }
      for (const StreamChunk& chunk : engine_jobs[i].observer->chunks()) {
        for (const SampledToken& t : chunk.tokens) b_logprobs.push_back(t.logprob);
      }
      ASSERT_EQ(a_logprobs.size(), b_logprobs.size()) << "request " << i;
      for (size_t t = 0; t < a_logprobs.size(); ++t) EXPECT_NEAR(a_logprobs[t], b_logprobs[t], 1e-4) << "request " << i << " token " << t;
    }
  }
}

TEST(EngineGreedy, MatchesTheReferenceContinuation) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  for (const std::string variant : {"base", "arach", "skip", "arach_skip"}) {
    Job job;
    job.request.prompt = testing::RefPrompt("gpt2-tiny", "p48");
    job.request.sampling.temperature = 0.0f;
    job.request.sampling.max_tokens = 32;
    job.request.sampling.ignore_eos = true;
    job.request.variant.arach = variant.find("arach") != std::string::npos;
    job.request.variant.skip = variant.find("skip") != std::string::npos;
    ASSERT_TRUE(engine->Submit(job.request, job.observer).ok());
    ASSERT_TRUE(job.observer->Wait());
    EXPECT_EQ(job.observer->tokens(),
              testing::RefsJson()["models"]["gpt2-tiny"]["variants"][variant]["greedy_p48_32"].get<std::vector<int32_t>>())
        << variant;
  }
}

TEST(EnginePrefixCache, SharedPrefixReusesBlocksOfTheSameVariantOnly) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(engine->tokenizer());
  auto run = [&](Engine& e, std::vector<int32_t> prompt, Variant variant) {
    Job job;
    job.request.prompt = std::move(prompt);
    job.request.variant = variant;
    job.request.sampling.temperature = 0.0f;
    job.request.sampling.max_tokens = 12;
    job.request.sampling.ignore_eos = true;
    EXPECT_TRUE(e.Submit(job.request, job.observer).ok());
    EXPECT_TRUE(job.observer->Wait());
    return job;
  };
  std::vector<int32_t> first(val.begin(), val.begin() + 40);
  std::vector<int32_t> second(val.begin(), val.begin() + 36);  // shares 36 tokens: two full blocks of 16
  second.push_back(val[100]);
  second.push_back(val[101]);
  Variant arach;
  arach.arach = true;
  run(*engine, first, arach);
  const EngineStats before = testing::IdleStats(*engine);
  const Job reused = run(*engine, second, arach);
  EXPECT_EQ(reused.observer->finish().usage.cached_prompt_tokens, 32);
  EXPECT_EQ(testing::IdleStats(*engine).prefix_cache_hits - before.prefix_cache_hits, 2);
  const Job other_variant = run(*engine, second, Variant{});
  EXPECT_EQ(other_variant.observer->finish().usage.cached_prompt_tokens, 0) << "base must not reuse ARACH's K/V";

  EngineConfig no_cache;
  no_cache.enable_prefix_caching = false;
  auto fresh = testing::MakeFixtureEngine("gpt2-tiny", no_cache);
  const Job uncached = run(*fresh, second, arach);
  EXPECT_EQ(uncached.observer->finish().usage.cached_prompt_tokens, 0);
  EXPECT_EQ(reused.observer->tokens(), uncached.observer->tokens()) << "reused blocks must give the same output";
}

// Hundreds of requests of random lengths and variants, some cancelled, on a pool small enough to preempt.
TEST(EngineLoad, AllRequestsFinishOrCancelAndNoBlockLeaks) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig config;
  config.max_num_seqs = 24;
  config.max_num_batched_tokens = 128;
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", config, /*kv_blocks=*/24);  // 384 tokens of KV for up to 24 sequences
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> val = testing::ValidationTokens(engine->tokenizer());
  std::mt19937 rng(11);
  constexpr int kRequests = 240;
  std::vector<Job> jobs(kRequests);
  std::vector<uint64_t> ids(kRequests);
  std::vector<bool> cancelled(kRequests, false);
  for (int i = 0; i < kRequests; ++i) {
    const int len = 1 + static_cast<int>(rng() % 90);
    const int start = static_cast<int>(rng() % (val.size() - len));
    jobs[i].request.prompt.assign(val.begin() + start, val.begin() + start + len);
    jobs[i].request.variant = VariantNumber(static_cast<int>(rng() % 4));
    jobs[i].request.sampling.max_tokens = 1 + static_cast<int>(rng() % 48);
    jobs[i].request.sampling.temperature = (rng() % 2) ? 0.0f : 1.0f;
    auto id = engine->Submit(jobs[i].request, jobs[i].observer);
    ASSERT_TRUE(id.ok()) << id.status();
    ids[i] = *id;
    if (rng() % 5 == 0) {  // cancel some at once, some a little later
      if (rng() % 2) std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 5));
      engine->Cancel(ids[i]);
      cancelled[i] = true;
    }
  }
  int finished = 0, cancels = 0;
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(jobs[i].observer->Wait()) << "request " << i << " lost";
    const FinishInfo info = jobs[i].observer->finish();
    EXPECT_EQ(jobs[i].observer->finish_count(), 1);
    if (info.reason == FinishReason::kCancelled) {
      EXPECT_TRUE(cancelled[i]) << "request " << i << " cancelled without being asked";
      ++cancels;
      continue;
    }
    ASSERT_TRUE(info.reason == FinishReason::kLength || info.reason == FinishReason::kStop) << FinishReasonName(info.reason);
    EXPECT_TRUE(info.status.ok());
    EXPECT_EQ(static_cast<int>(jobs[i].observer->tokens().size()), info.usage.completion_tokens);
    if (info.reason == FinishReason::kLength) {
      EXPECT_EQ(info.usage.completion_tokens, jobs[i].request.sampling.max_tokens);
    }
    ++finished;
  }
  EXPECT_EQ(finished + cancels, kRequests);
  const EngineStats stats = testing::IdleStats(*engine);
  EXPECT_GT(stats.preemptions, 0) << "the pool was meant to force preemption";
  EXPECT_EQ(stats.kv_blocks_used, 0);
  EXPECT_EQ(stats.num_running, 0);
  EXPECT_EQ(stats.num_waiting, 0);
  EXPECT_EQ(stats.requests_finished, kRequests);
}

TEST(EngineLimits, FullQueueIsResourceExhausted) {
  ARACH_REQUIRE_FIXTURES();
  EngineConfig config;
  config.max_num_seqs = 1;
  config.max_queued_requests = 2;
  auto engine = testing::MakeFixtureEngine("gpt2-tiny", config);
  ASSERT_NE(engine, nullptr);
  std::vector<Job> jobs(10);
  int accepted = 0, exhausted = 0;
  for (Job& job : jobs) {
    job.request.prompt = {464, 1110};
    job.request.sampling.max_tokens = 200;
    job.request.sampling.ignore_eos = true;
    auto id = engine->Submit(job.request, job.observer);
    if (id.ok()) {
      ++accepted;
    } else {
      EXPECT_EQ(id.status().code(), absl::StatusCode::kResourceExhausted) << id.status();
      ++exhausted;
    }
  }
  EXPECT_LE(accepted, 3);
  EXPECT_GE(exhausted, 7);
  engine->Shutdown();  // ends the accepted ones as cancelled
  for (Job& job : jobs) {
    if (job.observer->finish_count() > 0) {
      EXPECT_EQ(job.observer->finish().reason, FinishReason::kCancelled);
    }
  }
}

TEST(EngineLimits, InvalidRequestsNameTheField) {
  ARACH_REQUIRE_FIXTURES();
  LoadModelOptions load;
  load.kv_blocks = 8;  // 128 tokens
  auto loaded = LoadModelBundle(testing::FixturePath("gpt2-tiny"), load);
  ASSERT_TRUE(loaded.ok());
  auto engine = Engine::Create(std::move(*loaded), EngineConfig{});
  ASSERT_TRUE(engine.ok());
  auto observer = std::make_shared<CollectingObserver>();
  auto submit = [&](EngineRequest r) { return (*engine)->Submit(std::move(r), observer).status(); };
  EngineRequest r;
  EXPECT_THAT(std::string(submit(r).message()), ::testing::HasSubstr("prompt: empty"));
  r.prompt = {1, 2, 99999};
  EXPECT_THAT(std::string(submit(r).message()), ::testing::HasSubstr("prompt[2]: token id 99999"));
  r.prompt = std::vector<int32_t>(256, 5);
  EXPECT_THAT(std::string(submit(r).message()), ::testing::HasSubstr("leave no room in the model's context of 256"));
  r.prompt = {1, 2};
  r.sampling.temperature = -1.0f;
  EXPECT_THAT(std::string(submit(r).message()), ::testing::HasSubstr("temperature"));
  r.sampling = SamplingParams{};
  r.sampling.max_tokens = 200;
  EXPECT_THAT(std::string(submit(r).message()), ::testing::HasSubstr("the whole pool holds 8"));
  r.sampling = SamplingParams{};
  r.variant.skip = true;
  const absl::Status no_adapter = submit(r);
  EXPECT_EQ(no_adapter.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(no_adapter.message()), ::testing::HasSubstr("--adapter"));
  EXPECT_EQ(observer->finish_count(), 0) << "nothing was queued";
}

// A client's deadline fires when the request's does, and its cancel may arrive first: a cancel that close to the
// deadline is the deadline's; one well before it is the client's.
TEST(EngineLifecycle, ACancelAtTheDeadlineIsTheDeadlines) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  for (const bool near : {true, false}) {
    Job job;
    job.request.prompt = {464, 1110, 286};
    job.request.sampling.max_tokens = 200;
    job.request.sampling.ignore_eos = true;
    job.request.deadline = Clock::now() + (near ? std::chrono::milliseconds(30) : std::chrono::milliseconds(60000));
    auto id = engine->Submit(job.request, job.observer);
    ASSERT_TRUE(id.ok());
    engine->Cancel(*id);
    ASSERT_TRUE(job.observer->Wait());
    EXPECT_EQ(job.observer->finish().reason, near ? FinishReason::kDeadline : FinishReason::kCancelled) << near;
  }
}

TEST(EngineLifecycle, DeadlinesAndCancellationFreeTheBlocks) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  Job expires;
  expires.request.prompt = {464, 1110, 286};
  expires.request.sampling.max_tokens = 200;
  expires.request.sampling.ignore_eos = true;
  expires.request.deadline = Clock::now() + std::chrono::milliseconds(30);
  ASSERT_TRUE(engine->Submit(expires.request, expires.observer).ok());
  Job cancelled;
  cancelled.request = expires.request;
  cancelled.request.deadline.reset();
  auto id = engine->Submit(cancelled.request, cancelled.observer);
  ASSERT_TRUE(id.ok());
  while (cancelled.observer->chunk_count() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  engine->Cancel(*id);
  ASSERT_TRUE(expires.observer->Wait());
  ASSERT_TRUE(cancelled.observer->Wait());
  EXPECT_EQ(expires.observer->finish().reason, FinishReason::kDeadline);
  EXPECT_EQ(expires.observer->finish().status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_LT(expires.observer->finish().usage.completion_tokens, 200);
  EXPECT_EQ(cancelled.observer->finish().reason, FinishReason::kCancelled);
  EXPECT_LT(cancelled.observer->finish().usage.completion_tokens, 200);
  EXPECT_EQ(testing::IdleStats(*engine).kv_blocks_used, 0);
}

TEST(EngineOutput, StopRulesLogprobsAndStreamedText) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  const std::vector<int32_t> p48 = testing::RefPrompt("gpt2-tiny", "p48");
  // Greedy after p48 gives ":\nI'll not, ..." (see refs): stop at the string "not".
  Job stop;
  stop.request.prompt = p48;
  stop.request.sampling.temperature = 0.0f;
  stop.request.sampling.max_tokens = 32;
  stop.request.sampling.stop = {"not"};
  stop.request.sampling.logprobs = true;
  stop.request.sampling.top_logprobs = 3;
  ASSERT_TRUE(engine->Submit(stop.request, stop.observer).ok());
  ASSERT_TRUE(stop.observer->Wait());
  EXPECT_EQ(stop.observer->finish().reason, FinishReason::kStop);
  EXPECT_EQ(stop.observer->finish().stop_string, "not");
  EXPECT_EQ(stop.observer->text(), ":\nI'll ");
  EXPECT_FALSE(stop.observer->finish().stop_token_id.has_value());
  for (const StreamChunk& chunk : stop.observer->chunks()) {
    EXPECT_TRUE(DecodeUtf8(chunk.text).ok());
    ASSERT_EQ(chunk.tokens.size(), 1u);
    EXPECT_EQ(chunk.tokens[0].top.size(), 3u);
    EXPECT_EQ(chunk.tokens[0].top[0].token, chunk.tokens[0].token) << "greedy picks the most likely token";
    EXPECT_LE(chunk.tokens[0].logprob, 0.0f);
  }
  // include_stop_str_in_output: the same tokens, the text through the stop string.
  Job kept;
  kept.request = stop.request;
  kept.request.sampling.include_stop_str_in_output = true;
  ASSERT_TRUE(engine->Submit(kept.request, kept.observer).ok());
  ASSERT_TRUE(kept.observer->Wait());
  EXPECT_EQ(kept.observer->finish().stop_string, "not");
  EXPECT_EQ(kept.observer->text(), ":\nI'll not");
  EXPECT_EQ(kept.observer->tokens(), stop.observer->tokens());
  // Prompt log-probs equal the offline scorer's.
  Job score;
  score.request.prompt = p48;
  score.request.kind = RequestKind::kScore;
  score.request.variant.arach = true;
  ASSERT_TRUE(engine->Submit(score.request, score.observer).ok());
  ASSERT_TRUE(score.observer->Wait());
  const std::vector<float> got = score.observer->finish().prompt_logprobs;
  auto runner = testing::LoadFixtureRunner("gpt2-tiny");
  OfflineSession session(**runner);
  Variant arach;
  arach.arach = true;
  auto expected = testing::TokenLogProbs(session, p48, 512, arach);
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(got.size(), expected->size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], (*expected)[i], 1e-4) << i;
  EXPECT_EQ(score.observer->tokens().size(), 0u);
  // Ranks, most likely tokens and greedy flags (scored where the logits are) equal those read off the offline rows.
  const FinishInfo& scored = score.observer->finish();
  const std::vector<int32_t> context(p48.begin(), p48.end() - 1);
  auto rows = session.Logits(context, 512, arach);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const size_t vocab = static_cast<size_t>(engine->model_config().vocab_size);
  ASSERT_EQ(scored.prompt_ranks.size(), context.size());
  ASSERT_EQ(scored.prompt_argmax.size(), context.size());
  ASSERT_EQ(scored.prompt_is_greedy.size(), context.size());
  int greedy = 0;
  for (size_t i = 0; i < context.size(); ++i) {
    const std::span<const float> row = std::span<const float>(*rows).subspan(i * vocab, vocab);
    EXPECT_EQ(scored.prompt_argmax[i], ArgMax(row)) << i;
    EXPECT_EQ(scored.prompt_ranks[i], RankOf(row, p48[i + 1])) << i;
    EXPECT_EQ(scored.prompt_is_greedy[i], ArgMax(row) == p48[i + 1]) << i;
    greedy += scored.prompt_is_greedy[i] ? 1 : 0;
  }
  EXPECT_GT(greedy, 0) << "some prompt tokens are the model's own greedy picks";
}

// prompt_scores_in_first_chunk: the first generated chunk carries the prompt's scores (a stream writes them before
// the generated tokens), equal to those the finish carries; no other chunk does, nor any chunk without the flag.
TEST(EngineOutput, TheFirstChunkCarriesThePromptsScoresWhenAsked) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  Job asked;
  asked.request.prompt = testing::RefPrompt("gpt2-tiny", "p48");
  asked.request.sampling.temperature = 0.0f;
  asked.request.sampling.max_tokens = 3;
  asked.request.sampling.prompt_logprobs = true;
  asked.request.prompt_top_logprobs = 2;
  asked.request.prompt_scores_in_first_chunk = true;
  Job unasked;
  unasked.request = asked.request;
  unasked.request.prompt_scores_in_first_chunk = false;
  ASSERT_TRUE(engine->Submit(asked.request, asked.observer).ok());
  ASSERT_TRUE(engine->Submit(unasked.request, unasked.observer).ok());
  ASSERT_TRUE(asked.observer->Wait());
  ASSERT_TRUE(unasked.observer->Wait());
  const std::vector<StreamChunk> chunks = asked.observer->chunks();
  ASSERT_EQ(chunks.size(), 3u);
  ASSERT_NE(chunks[0].prompt_scores, nullptr);
  EXPECT_EQ(chunks[1].prompt_scores, nullptr);
  EXPECT_EQ(chunks[2].prompt_scores, nullptr);
  const FinishInfo finish = asked.observer->finish();
  ASSERT_EQ(finish.prompt_logprobs.size(), asked.request.prompt.size() - 1);
  EXPECT_EQ(chunks[0].prompt_scores->logprobs, finish.prompt_logprobs);
  ASSERT_EQ(chunks[0].prompt_scores->top_logprobs.size(), finish.prompt_top_logprobs.size());
  for (size_t t = 0; t < finish.prompt_top_logprobs.size(); ++t) {
    ASSERT_EQ(chunks[0].prompt_scores->top_logprobs[t].size(), 2u) << t;
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(chunks[0].prompt_scores->top_logprobs[t][k].token, finish.prompt_top_logprobs[t][k].token) << t;
      EXPECT_EQ(chunks[0].prompt_scores->top_logprobs[t][k].logprob, finish.prompt_top_logprobs[t][k].logprob) << t;
    }
  }
  for (const StreamChunk& chunk : unasked.observer->chunks()) EXPECT_EQ(chunk.prompt_scores, nullptr);
  const std::vector<float> unasked_scores = unasked.observer->finish().prompt_logprobs;
  ASSERT_EQ(unasked_scores.size(), finish.prompt_logprobs.size()) << "the finish carries them either way";
  for (size_t t = 0; t < unasked_scores.size(); ++t) EXPECT_NEAR(unasked_scores[t], finish.prompt_logprobs[t], 1e-4) << t;
}

TEST(EngineOutput, EndOfSequenceStopsUnlessMinTokens) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  // Make the most likely next token a stop token: stop_token_ids = the greedy first token after p48 (":" = 25).
  Job stop;
  stop.request.prompt = testing::RefPrompt("gpt2-tiny", "p48");
  stop.request.sampling.temperature = 0.0f;
  stop.request.sampling.max_tokens = 10;
  stop.request.sampling.stop_token_ids = {25};
  ASSERT_TRUE(engine->Submit(stop.request, stop.observer).ok());
  ASSERT_TRUE(stop.observer->Wait());
  EXPECT_EQ(stop.observer->finish().reason, FinishReason::kStop);
  EXPECT_EQ(stop.observer->tokens(), std::vector<int32_t>{25});
  EXPECT_EQ(stop.observer->text(), "") << "a stop token adds no text";
  EXPECT_EQ(stop.observer->finish().stop_token_id, std::optional<int32_t>(25)) << "the request's stop token is reported";
  EXPECT_TRUE(stop.observer->finish().stop_string.empty());
  // The model's own end of sequence (forced here by a logit bias) is not a stop token the request listed.
  ASSERT_FALSE(engine->model_config().eos_token_ids.empty());
  const int32_t eos = engine->model_config().eos_token_ids[0];
  Job ended;
  ended.request = stop.request;
  ended.request.sampling.stop_token_ids.clear();
  ended.request.sampling.logit_bias = {{eos, 100.0f}};
  ASSERT_TRUE(engine->Submit(ended.request, ended.observer).ok());
  ASSERT_TRUE(ended.observer->Wait());
  EXPECT_EQ(ended.observer->tokens(), std::vector<int32_t>{eos});
  EXPECT_EQ(ended.observer->finish().reason, FinishReason::kStop);
  EXPECT_FALSE(ended.observer->finish().stop_token_id.has_value());
  Job held;
  held.request = stop.request;
  held.request.sampling.min_tokens = 4;
  ASSERT_TRUE(engine->Submit(held.request, held.observer).ok());
  ASSERT_TRUE(held.observer->Wait());
  EXPECT_GE(held.observer->tokens().size(), 4u);
  EXPECT_NE(held.observer->tokens()[0], 25);
}

// vLLM's allowed_token_ids and bad_words on greedy text: the allowed ids only (the first token is still the
// model's argmax when it is among them); a two-token bad word lets its first token through and masks its second
// right after it; a one-token bad word never comes; a blank bad word is refused naming it.
TEST(EngineOutput, AllowedTokenIdsAndBadWordsShapeTheGreedyText) {
  ARACH_REQUIRE_FIXTURES();
  auto engine = testing::MakeFixtureEngine();
  ASSERT_NE(engine, nullptr);
  auto generate = [&](const SamplingParams& sampling) {
    Job job;
    job.request.prompt = testing::RefPrompt("gpt2-tiny", "p48");
    job.request.sampling = sampling;
    EXPECT_TRUE(engine->Submit(job.request, job.observer).ok());
    EXPECT_TRUE(job.observer->Wait());
    EXPECT_TRUE(job.observer->finish().status.ok()) << job.observer->finish().status;
    return job.observer->tokens();
  };
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 12;
  greedy.ignore_eos = true;
  const std::vector<int32_t> plain = generate(greedy);
  ASSERT_EQ(plain.size(), 12u);

  SamplingParams allowed = greedy;
  allowed.allowed_token_ids = {plain[0], 11, 13, 262};  // its first token, ",", ".", " the"
  const std::vector<int32_t> restricted = generate(allowed);
  ASSERT_EQ(restricted.size(), 12u);
  EXPECT_EQ(restricted[0], plain[0]);
  for (int32_t t : restricted) EXPECT_THAT(allowed.allowed_token_ids, ::testing::Contains(t));
  EXPECT_NE(restricted, plain) << "the restriction changed the text";

  // A bad word made of the greedy text's first two tokens.
  auto word = engine->tokenizer().Decode(std::span<const int32_t>(plain).first(2), false);
  ASSERT_TRUE(word.ok()) << word.status();
  SamplingParams banned = greedy;
  banned.bad_words = {*word};
  auto sequences = BadWordTokenIds(banned.bad_words, engine->tokenizer(), engine->model_config().vocab_size);
  ASSERT_TRUE(sequences.ok()) << sequences.status();
  ASSERT_THAT(*sequences, ::testing::Contains(std::vector<int32_t>{plain[0], plain[1]})) << "'" << *word << "'";
  const std::vector<int32_t> avoided = generate(banned);
  ASSERT_GE(avoided.size(), 2u);
  EXPECT_EQ(avoided[0], plain[0]) << "the first token of a longer word passes";
  EXPECT_NE(avoided[1], plain[1]);
  for (size_t i = 1; i < avoided.size(); ++i) {
    for (const std::vector<int32_t>& seq : *sequences) {
      if (seq.size() == 2) {
        EXPECT_FALSE(avoided[i - 1] == seq[0] && avoided[i] == seq[1]) << "at " << i;
      }
    }
  }

  auto first = engine->tokenizer().Decode(std::span<const int32_t>(plain).first(1), false);
  ASSERT_TRUE(first.ok());
  SamplingParams single = greedy;
  single.bad_words = {*first};
  const std::vector<int32_t> without = generate(single);
  EXPECT_THAT(without, ::testing::Not(::testing::Contains(plain[0])));

  Job blank;
  blank.request.prompt = testing::RefPrompt("gpt2-tiny", "p48");
  blank.request.sampling = greedy;
  blank.request.sampling.bad_words = {"fine", " "};
  const absl::StatusOr<uint64_t> refused = engine->Submit(blank.request, blank.observer);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("bad_words[1]"));
}

}  // namespace
}  // namespace arach
