#include <cstdio>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/runner/offline_session.h"
#include "tools/arach_run/commands.h"

namespace arach::tools {

absl::Status RunLogits(const LogitsOptions& options) {
  if (options.ids.empty()) return absl::InvalidArgumentError("logits: --ids 1,2,3 is required");
  if (options.out.empty()) return absl::InvalidArgumentError("logits: --out FILE is required");
  ARACH_ASSIGN_OR_RETURN(ModelBundle model, LoadModelBundle(options.model.model_dir, options.model.load));
  OfflineSession session(*model.runner);
  ARACH_ASSIGN_OR_RETURN(std::vector<float> logits, session.Logits(options.ids, options.prefill_chunk, options.model.variant));
  std::FILE* out = std::fopen(options.out.c_str(), "wb");
  if (out == nullptr) return absl::PermissionDeniedError(absl::StrCat(options.out, ": cannot create"));
  const size_t written = std::fwrite(logits.data(), sizeof(float), logits.size(), out);  // little-endian host
  const bool closed = std::fclose(out) == 0;
  if (written != logits.size() || !closed) return absl::DataLossError(absl::StrCat(options.out, ": write failed"));
  std::printf("%zu %d\n", options.ids.size(), model.config.vocab_size);
  return absl::OkStatus();
}

}  // namespace arach::tools
