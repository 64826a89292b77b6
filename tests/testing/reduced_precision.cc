#include "tests/testing/reduced_precision.h"

#include <algorithm>
#include <functional>

#include "engine/runner/offline_session.h"
#include "gtest/gtest.h"

namespace arach::testing {
namespace {

std::string RefName(const RefCase& ref, const std::string& suffix) { return ref.model + "." + ref.variant + "." + suffix; }

}  // namespace

int TopOneDisagreements(const std::vector<float>& got, const std::vector<float>& ref, size_t vocab) {
  int disagreements = 0;
  for (size_t r = 0; r * vocab < ref.size(); ++r) {
    std::span<const float> ref_row(ref.data() + r * vocab, vocab), got_row(got.data() + r * vocab, vocab);
    std::vector<float> sorted(ref_row.begin(), ref_row.end());
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    if (sorted[0] - sorted[1] > kNearTieMargin && ArgMax(got_row) != ArgMax(ref_row)) ++disagreements;
  }
  return disagreements;
}

void ExpectLastLogitsMatchRefs(ModelRunner& runner, const RefCase& ref, float tolerance) {
  OfflineSession session(runner);
  const size_t vocab = runner.config().vocab_size;
  for (const std::string prompt : {"p7", "p48"}) {
    const std::vector<int32_t> ids = RefPrompt(ref.model, prompt);
    auto logits = session.Logits(ids, 0, VariantOfRef(ref.variant));
    ASSERT_TRUE(logits.ok()) << logits.status();
    const std::vector<float> want = RefTensor(RefName(ref, prompt + ".last_logits"));
    ASSERT_EQ(want.size(), vocab);
    const std::vector<float> last(logits->end() - static_cast<long>(vocab), logits->end());
    EXPECT_LT(MaxAbsDiff(last.data(), want.data(), vocab), tolerance) << prompt;
    EXPECT_EQ(TopOneDisagreements(last, want, vocab), 0) << prompt;
  }
}

bool ExpectAllPositionLogitsMatchRefs(ModelRunner& runner, const RefCase& ref, float tolerance) {
  const std::string name = RefName(ref, "p7.logits");
  if (!HasRefTensor(name)) return false;
  OfflineSession session(runner);
  auto logits = session.Logits(RefPrompt(ref.model, "p7"), 0, VariantOfRef(ref.variant));
  EXPECT_TRUE(logits.ok()) << logits.status();
  if (!logits.ok()) return true;
  const std::vector<float> want = RefTensor(name);
  EXPECT_EQ(logits->size(), want.size());
  if (logits->size() != want.size()) return true;
  EXPECT_LT(MaxAbsDiff(logits->data(), want.data(), want.size()), tolerance);
  EXPECT_EQ(TopOneDisagreements(*logits, want, runner.config().vocab_size), 0);
  return true;
}

void ExpectGreedyMatchesRefsUpToNearTie(ModelRunner& runner, ModelRunner& float32_runner, const RefCase& ref) {
  const std::vector<int32_t> prompt = RefPrompt(ref.model, "p48");
  const auto want = RefsJsonFor(ref.model)["models"][ref.model]["variants"][ref.variant]["greedy_p48_32"].get<std::vector<int32_t>>();
  OfflineSession session(runner);
  GreedyOptions options;
  options.variant = VariantOfRef(ref.variant);
  options.max_new_tokens = static_cast<int>(want.size());
  auto out = session.GenerateGreedy({prompt}, options);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<int32_t>& got = (*out)[0];
  const auto mismatch = std::mismatch(got.begin(), got.end(), want.begin(), want.end());
  if (mismatch.first == got.end() || mismatch.second == want.end()) return;  // identical
  // A divergence is allowed only where the float32 model itself nearly ties the two tokens.
  const size_t step = static_cast<size_t>(mismatch.first - got.begin());
  std::vector<int32_t> prefix = prompt;
  prefix.insert(prefix.end(), want.begin(), want.begin() + static_cast<long>(step));
  OfflineSession float32_session(float32_runner);
  auto logits = float32_session.Logits(prefix, 0, VariantOfRef(ref.variant));
  ASSERT_TRUE(logits.ok()) << logits.status();
  const size_t vocab = float32_runner.config().vocab_size;
  const float* last = logits->data() + logits->size() - vocab;
  EXPECT_LE(last[*mismatch.second] - last[*mismatch.first], kNearTieMargin)
      << "greedy token " << step << ": chose " << *mismatch.first << ", the reference " << *mismatch.second
      << ", which the float32 model prefers by more than a near tie";
}

}  // namespace arach::testing
