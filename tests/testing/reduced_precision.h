// What a runner of reduced precision (bf16 weight matrices on the CPU; bf16 throughout on the GPU) must give on
// the float32 references of ../shared/fixtures: logits within 5e-2, the same top-1 wherever the reference's
// top-1 / top-2 margin exceeds 0.1, greedy tokens identical up to the first step where the float32 model itself
// nearly ties (margin at most 0.1) the two tokens.
#pragma once

#include <string>
#include <vector>

#include "engine/runner/model_runner.h"
#include "tests/testing/fixtures.h"

namespace arach::testing {

inline constexpr float kReducedPrecisionLogitTolerance = 5e-2f;
inline constexpr float kNearTieMargin = 0.1f;

// Rows of `got` whose reference has a clear winner (margin > kNearTieMargin) but a different top-1.
int TopOneDisagreements(const std::vector<float>& got, const std::vector<float>& ref, size_t vocab);

// The last-position logits of p7 and p48 against the references, within `tolerance`.
void ExpectLastLogitsMatchRefs(ModelRunner& runner, const RefCase& ref, float tolerance = kReducedPrecisionLogitTolerance);
// The logits of every position of p7, where the references hold them (false: no such reference).
bool ExpectAllPositionLogitsMatchRefs(ModelRunner& runner, const RefCase& ref, float tolerance = kReducedPrecisionLogitTolerance);
// 32 greedy tokens after p48 against the references, up to the first near tie of `float32_runner`'s logits.
void ExpectGreedyMatchesRefsUpToNearTie(ModelRunner& runner, ModelRunner& float32_runner, const RefCase& ref);

}  // namespace arach::testing
