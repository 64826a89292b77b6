// A RequestObserver that records what the engine sends and lets a test wait for the end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "engine/request.h"

namespace arach::testing {

class CollectingObserver : public RequestObserver {
 public:
  void OnChunk(const StreamChunk& chunk) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const SampledToken& t : chunk.tokens) tokens_.push_back(t.token);
    chunks_.push_back(chunk);
    text_ += chunk.text;
    ++chunk_count_;
  }
  void OnFinish(const FinishInfo& info) override {
    std::lock_guard<std::mutex> lock(mutex_);
    finish_ = info;
    text_ += info.text;
    ++finish_count_;
    done_.notify_all();
  }
  // Waits until OnFinish (false on timeout).
  bool Wait(std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::unique_lock<std::mutex> lock(mutex_);
    return done_.wait_for(lock, timeout, [&] { return finish_count_ > 0; });
  }
  int chunk_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return chunk_count_;
  }
  std::vector<int32_t> tokens() {
    std::lock_guard<std::mutex> lock(mutex_);
    return tokens_;
  }
  std::vector<StreamChunk> chunks() {
    std::lock_guard<std::mutex> lock(mutex_);
    return chunks_;
  }
  std::string text() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }
  FinishInfo finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    return finish_;
  }
  int finish_count() {
    std::lock_guard<std::mutex> lock(mutex_);
    return finish_count_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable done_;
  std::vector<int32_t> tokens_;
  std::vector<StreamChunk> chunks_;
  std::string text_;
  FinishInfo finish_;
  int chunk_count_ = 0;
  int finish_count_ = 0;
};

}  // namespace arach::testing
