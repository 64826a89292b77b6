#include "engine/spec/draft_length.h"

#include <algorithm>

namespace arach {

void DraftLength::Record(int drafted, int kept) {
  if (drafted <= 0) return;
  if (kept > 0) backoff_ = 1;
  if (kept >= drafted) {
    next_ = std::min(max_, std::max(1, 2 * next_));
  } else if (kept > 0) {
    next_ = std::min(max_, kept + 1);
  } else {
    if (next_ == 1) {  // a single draft rejected: pause, longer each time in a row
      pause_ = backoff_;
      backoff_ = std::min(kMaxPause, 2 * backoff_);
    }
    next_ = 1;
  }
}

}  // namespace arach
