#include "engine/sampling/most_likely_tokens.h"

#include <algorithm>
#include <limits>

#include "engine/sampling/vector_math.h"

namespace arach {
namespace {

constexpr size_t kGroup = 16;  // tokens compared with the threshold at once

}  // namespace

MostLikelyTokens::MostLikelyTokens(std::span<const float> values, size_t capacity, std::vector<int32_t>& kept)
    : values_(values), capacity_(std::min(capacity, values.size())), kept_(kept) {
  kept_.clear();
  kept_.reserve(capacity_);
}

void MostLikelyTokens::Offer(int32_t id) {
  const MoreLikely more_likely{values_};
  if (!full()) {
    kept_.push_back(id);
    std::push_heap(kept_.begin(), kept_.end(), more_likely);
  } else if (capacity_ > 0 && more_likely(id, kept_.front())) {
    std::pop_heap(kept_.begin(), kept_.end(), more_likely);
    kept_.back() = id;
    std::push_heap(kept_.begin(), kept_.end(), more_likely);
  }
}

void MostLikelyTokens::OfferRange(size_t begin, size_t end) {
  size_t t = begin;
  for (; t < end && !full(); ++t) Offer(static_cast<int32_t>(t));  // the first ones are kept whatever they are
  if (capacity_ == 0) return;
  for (; t + kGroup <= end; t += kGroup) {
    if (CountAbove(&values_[t], kGroup, values_[static_cast<size_t>(kept_.front())]) == 0) continue;
    for (size_t j = t; j < t + kGroup; ++j) Offer(static_cast<int32_t>(j));
  }
  for (; t < end; ++t) Offer(static_cast<int32_t>(t));
}

float MostLikelyTokens::threshold() const {
  if (capacity_ == 0) return std::numeric_limits<float>::infinity();
  return full() ? values_[static_cast<size_t>(kept_.front())] : -std::numeric_limits<float>::infinity();
}

std::span<const int32_t> MostLikelyTokens::Sorted() {
  std::sort_heap(kept_.begin(), kept_.end(), MoreLikely{values_});
  return kept_;
}

}  // namespace arach
