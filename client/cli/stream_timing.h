// Client-side timing of one streamed generation: time to the first token, mean time per output token
// after it, and end to end. Used by bench, ab and eval alike.
#pragma once

#include <chrono>

namespace arach::client {

struct StreamTiming {
  double ttft_seconds = 0;  // start -> first message with tokens
  double tpot_seconds = 0;  // (end - first token) / (tokens - 1); 0 with fewer than 2 tokens
  double e2e_seconds = 0;   // start -> end
  int tokens = 0;
};

class StreamTimer {
 public:
  using Clock = std::chrono::steady_clock;

  StreamTimer() : start_(Clock::now()) {}
  // Call for every stream message with the number of tokens it carries.
  void OnTokens(int count) {
    if (count > 0 && tokens_ == 0) first_ = Clock::now();
    tokens_ += count;
  }
  int tokens() const { return tokens_; }
  // Call once when the stream ended.
  StreamTiming Finish() const {
    const Clock::time_point end = Clock::now();
    auto seconds = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    StreamTiming t;
    t.tokens = tokens_;
    t.e2e_seconds = seconds(end - start_);
    if (tokens_ > 0) t.ttft_seconds = seconds(first_ - start_);
    if (tokens_ > 1) t.tpot_seconds = seconds(end - first_) / (tokens_ - 1);
    return t;
  }

 private:
  Clock::time_point start_, first_;
  int tokens_ = 0;
};

}  // namespace arach::client
