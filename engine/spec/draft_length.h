// How many draft tokens a request's next step checks. A rejected draft costs a row of compute for nothing (on a CPU a
// step's time grows with its rows), so the recent record decides: all kept doubles the count (up to the maximum), some
// kept gives one more than were kept, none kept gives one, and after a single draft is rejected too, steps without
// drafts follow (1, 2, 4, ... 16 of them, the pause doubling while single tries keep failing) before the next try.
#pragma once

namespace arach {

class DraftLength {
 public:
  static constexpr int kMaxPause = 16;

  explicit DraftLength(int max) : max_(max), next_(max) {}

  // Drafts for this step: 0 while paused (each call is a step of the pause).
  int Next() {
    if (pause_ > 0) {
      --pause_;
      return 0;
    }
    return next_;
  }
  // What a step did with its drafts.
  void Record(int drafted, int kept);

 private:
  int max_;
  int next_;
  int pause_ = 0;
  int backoff_ = 1;  // the next pause's length
};

}  // namespace arach
