// Engine::Health on a tiny random GPT-2: healthy while steps succeed; UNAVAILABLE quoting the error once the
// configured number of steps in a row failed, healthy again after a step succeeds; UNAVAILABLE while one round of
// the step thread runs past the stall timeout (a step held in the step observer stands for a wedged device), and
// healthy once it ends; the server's EngineHealthWatch reports each change.
#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>
#include <thread>

#include "engine/engine.h"
#include "server/engine_health_watch.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Engine> MakeEngine(const EngineConfig& config) {
  LoadModelOptions load;
  load.kv_blocks = 64;
  absl::StatusOr<std::unique_ptr<Engine>> engine = testing::MakeTinyRandomEngine(load, config);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? std::move(*engine) : nullptr;
}

// Submits a sampled generation of exactly `max_tokens` tokens; its observer.
std::shared_ptr<testing::CollectingObserver> SubmitOne(Engine& engine, int max_tokens) {
  EngineRequest request;
  request.prompt = {5, 6, 7};
  request.sampling.max_tokens = max_tokens;
  request.sampling.ignore_eos = true;  // `max_tokens` tokens (finish "length"), whatever the random model samples
  auto observer = std::make_shared<testing::CollectingObserver>();
  EXPECT_TRUE(engine.Submit(request, observer).ok());
  return observer;
}

// The engine's health once the step thread's round is over: a request's end reaches its observer from inside the
// step, a moment before the round ends, so a health check right after it may still see the round running.
absl::Status HealthAfterTheRound(const Engine& engine) {
  absl::Status health = engine.Health();
  for (int i = 0; i < 500 && !health.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    health = engine.Health();
  }
  return health;
}

// Runs one two-token generation to its end; its finish.
FinishInfo RunOne(Engine& engine) {
  auto observer = SubmitOne(engine, 2);
  EXPECT_TRUE(observer->Wait());
  return observer->finish();
}

TEST(EngineHealth, FailedStepsInARowMakeItUnhealthyUntilAStepSucceeds) {
  std::atomic<bool> failing{false};
  EngineConfig config;
  config.unhealthy_after_failed_steps = 3;
  config.forward_fault = [&]() { return failing ? absl::InternalError("CUDA error: an illegal memory access") : absl::OkStatus(); };
  std::unique_ptr<Engine> engine = MakeEngine(config);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(RunOne(*engine).reason, FinishReason::kLength);
  EXPECT_TRUE(engine->Health().ok());

  failing = true;
  for (int i = 0; i < 2; ++i) {
    const FinishInfo failed = RunOne(*engine);
    EXPECT_EQ(failed.reason, FinishReason::kError);
    EXPECT_THAT(std::string(failed.status.message()), HasSubstr("illegal memory access"));
  }
  EXPECT_TRUE(engine->Health().ok()) << "two failures in a row are not yet three";
  RunOne(*engine);
  const absl::Status unhealthy = engine->Health();
  EXPECT_EQ(unhealthy.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(unhealthy.message()), HasSubstr("last 3 steps failed"));
  EXPECT_THAT(std::string(unhealthy.message()), HasSubstr("illegal memory access"));
  EXPECT_EQ(engine->stats().failed_steps, 3);

  failing = false;
  EXPECT_EQ(RunOne(*engine).reason, FinishReason::kLength);
  EXPECT_TRUE(engine->Health().ok()) << engine->Health();
}

TEST(EngineHealth, AStepRunningPastTheStallTimeoutIsUnhealthyWhileItLasts) {
  std::atomic<bool> hold{false};
  std::atomic<bool> held{false};
  EngineConfig config;
  config.stall_timeout = std::chrono::milliseconds(50);
  config.step_observer = [&](const StepReport&) {
    held = hold.load();
    while (hold) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::unique_ptr<Engine> engine = MakeEngine(config);
  ASSERT_NE(engine, nullptr);
  EXPECT_EQ(RunOne(*engine).reason, FinishReason::kLength);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(engine->Health().ok()) << "an idle engine is not stalled";

  hold = true;
  auto observer = SubmitOne(*engine, 2);
  absl::Status status;
  for (int i = 0; i < 500 && status.ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    status = engine->Health();
  }
  EXPECT_TRUE(held);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(status.message()), HasSubstr("stall timeout 50 ms"));
  hold = false;
  ASSERT_TRUE(observer->Wait());
  const absl::Status after = HealthAfterTheRound(*engine);
  EXPECT_TRUE(after.ok()) << after;
}

// The watch reports the change to unhealthy while the step is held, and back to healthy once it ends; nothing after Stop.
TEST(EngineHealth, TheWatchReportsEachChange) {
  std::atomic<bool> hold{false};
  EngineConfig config;
  config.stall_timeout = std::chrono::milliseconds(30);
  config.step_observer = [&](const StepReport&) {
    while (hold) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::unique_ptr<Engine> engine = MakeEngine(config);
  ASSERT_NE(engine, nullptr);
  std::mutex mutex;
  std::vector<absl::Status> changes;
  server::EngineHealthWatch watch(*engine, std::chrono::milliseconds(5), [&](const absl::Status& health) {
    std::lock_guard<std::mutex> lock(mutex);
    changes.push_back(health);
  });
  auto count = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return changes.size();
  };
  hold = true;
  auto observer = SubmitOne(*engine, 1);
  for (int i = 0; i < 500 && count() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  hold = false;
  ASSERT_TRUE(observer->Wait());
  for (int i = 0; i < 500 && count() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  watch.Stop();
  std::lock_guard<std::mutex> lock(mutex);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(changes[1].ok());
}

}  // namespace
}  // namespace arach
