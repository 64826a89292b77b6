// ModelRunner: one transformer forward over a ForwardBatch on one backend, reading and writing the
// paged KV cache. It owns the backend, the device weights, the KV pool and the scratch memory; block
// bookkeeping (which sequence owns which blocks) belongs to the caller.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/backend.h"
#include "engine/kv/kv_cache.h"
#include "engine/model/model_config.h"
#include "engine/model/model_weights.h"
#include "engine/runner/device_weights.h"
#include "engine/runner/forward_batch.h"
#include "engine/runner/workspace.h"

namespace arach {

class ModelRunner {
 public:
  // Uploads `weights` to `backend` and allocates a KV pool of `kv.num_blocks` blocks.
  static absl::StatusOr<std::unique_ptr<ModelRunner>> Create(std::unique_ptr<Backend> backend, const ModelConfig& config,
                                                             ModelWeights&& weights, const KvCacheConfig& kv);

  // Runs the forward. Invalid input (token ids outside the vocabulary, positions past the context,
  // block tables too short) is INVALID_ARGUMENT naming the sequence and value; nothing is written then.
  absl::StatusOr<ForwardOutput> Execute(const ForwardBatch& batch);

  const ModelConfig& config() const { return config_; }
  const KvCache& kv_cache() const { return *kv_cache_; }
  Backend& backend() { return *backend_; }
  size_t weight_bytes() const { return weights_->total_bytes; }

 private:
  ModelRunner() = default;

  // Host-side flattening of the batch (validated).
  struct FlatBatch {
    std::vector<int32_t> ids;                // [N_v]
    std::vector<int32_t> positions;          // [N_v]
    std::vector<int32_t> slots;              // [N_v]
    std::vector<int32_t> query_start;        // [S + 1]
    std::vector<int32_t> block_table_start;  // [S + 1]
    std::vector<int32_t> block_tables;       // flattened block ids
    std::vector<int32_t> logit_rows;         // verbal rows whose logits are returned
    std::vector<int> logit_row_start;        // [S + 1]
    int max_context = 0;
  };
  absl::StatusOr<FlatBatch> Flatten(const ForwardBatch& batch) const;
  // Runs layer `l` on the rows of `hidden`.
  absl::Status RunLayer(int l, const DeviceMatrix& hidden, const AttentionParams& attention_template,
                        const int32_t* positions, const int32_t* slots, int num_verbal_rows);

  ModelConfig config_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<KvCache> kv_cache_;
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<DeviceBuffer> inv_freq_;  // [rotary_dim / 2] float32, RoPE models only
};

}  // namespace arach
