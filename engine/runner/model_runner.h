// ModelRunner: one transformer forward over a ForwardBatch on one backend, reading and writing the
// paged KV cache. It owns the backend, the device weights (base model and variant features), the KV
// pool and the scratch memory; block bookkeeping (which sequence owns which blocks) belongs to the caller.
//
// Rows of a forward: the verbal rows of every sequence (its new tokens), then one ARACH hub row per new
// token of each ARACH sequence (in a step graph of a batch that mixes variants, of every sequence: see Flatten).
// Only verbal rows write K/V to the cache; hub K/V exist for the step only.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
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
  // Uploads `weights` and `features` to `backend` and allocates a KV pool of `kv.num_blocks` blocks.
  static absl::StatusOr<std::unique_ptr<ModelRunner>> Create(std::unique_ptr<Backend> backend, const ModelConfig& config,
                                                             ModelWeights&& weights, FeatureWeights&& features,
                                                             const KvCacheConfig& kv);

  // Runs the forward. Callers validate requests first (Engine::Submit, OfflineSession); a batch that still
  // breaks the contract (token ids outside the vocabulary, positions past the context, block tables too
  // short or outside the pool) is INTERNAL naming the sequence, and nothing is written then. Every field of
  // `output` is overwritten; pass the same object each step to reuse its buffers (ForwardOutput). After an error its
  // contents are unspecified.
  absl::Status Execute(const ForwardBatch& batch, ForwardOutput& output);

  const ModelConfig& config() const { return config_; }
  const KvCache& kv_cache() const { return *kv_cache_; }
  Backend& backend() { return *backend_; }
  const Backend& backend() const { return *backend_; }
  // Whether Execute picks the tokens that sequences ask for with SequenceInput::sample (Backend::samples_on_device).
  bool samples_on_device() const { return backend_->samples_on_device(); }

  // Step graphs (where the backend records them, Backend::records_step_graphs): a decode step's ops, from the
  // embeddings to the logits, are recorded the second time a batch shape (sequences, hub rows, skip rows, logit
  // rows) comes, and replayed for every later step of that shape, its metadata uploaded to the same addresses
  // first. A decode step of S sequences runs as one of the next batch-size bucket (a power of two), filled up
  // with padding sequences, so that batches that shrink and grow by a few sequences replay the same graph. On by
  // default.
  void set_step_graphs(bool enabled) { step_graphs_enabled_ = enabled; }
  // How many recorded shapes are kept (each holds a CUDA graph's device resources); at the limit the least recently
  // replayed one makes room. 64 by default.
  void set_max_step_graphs(int count) { max_step_graphs_ = std::max(count, 1); }
  // Scored rows (SequenceInput::score_targets) get their logits a block of rows at a time, each block scored before
  // the next: this bounds the float32 logits a scoring step holds (a prompt of 8,192 rows of a 151,936-token
  // vocabulary would take 5 GB at once). 128 MiB by default; at least one row a block.
  void set_scored_logits_bytes(size_t bytes) { scored_logits_bytes_ = bytes; }
  struct StepGraphStats {
    int64_t recorded = 0;
    int64_t replayed = 0;
  };
  const StepGraphStats& step_graph_stats() const { return graph_stats_; }
  size_t weight_bytes() const { return weights_->total_bytes; }
  bool has_adapter() const { return !weights_->adapter.empty(); }
  // LoRA adapters on the device by index (SequenceInput::lora = index + 1), in FeatureWeights::loras' order, then
  // where AddLora puts them; an index may be empty (never filled, or emptied by RemoveLora).
  // Uploads `adapter` (for this model: LoadLoraAdapter) at `index`, which must be empty (any index past the last is);
  // between steps only (the step thread's). Errors: the device's, when its memory cannot hold it; INTERNAL for an
  // index that holds an adapter.
  absl::Status AddLora(int index, LoraAdapter adapter);
  // Frees the adapter in slot `index`; the slot stays, empty (a sequence naming it is INTERNAL). Between steps only.
  void RemoveLora(int index);
  int adapter_expansion() const { return weights_->adapter_expansion; }
  // How the KV pool was sized, for the start-up line: "64.00 MiB of 7.20 GiB available (cgroup memory limit ...)".
  const std::string& kv_memory_note() const { return kv_memory_note_; }

 private:
  ModelRunner() = default;

  // The rows of one LoRA adapter in a step: lora_rows[start, start + count).
  struct LoraRows {
    int adapter = 0;  // index into DeviceWeights::loras
    int start = 0;
    int count = 0;
  };
  // Host-side flattening of the batch (validated).
  struct FlatBatch {
    std::vector<int32_t> ids;                // [N_v]
    std::vector<int32_t> positions;          // [N_v]
    std::vector<int32_t> slots;              // [N_v]
    std::vector<int32_t> rope_positions;     // [N_v + N_h]: positions, then 0 for hub rows
    std::vector<int32_t> query_start;        // [S + 1]
    std::vector<int32_t> hub_start;          // [S + 1]
    std::vector<float> hub_offsets;          // [S]
    std::vector<int32_t> block_table_start;  // [S + 1]
    std::vector<int32_t> block_tables;       // flattened block ids
    std::vector<int32_t> skip_rows;          // rows (verbal and hub) of skip-on sequences
    std::vector<int32_t> lora_rows;          // rows (verbal and hub) of LoRA sequences, grouped by adapter
    std::vector<LoraRows> lora_groups;       // one per adapter in the step: its part of lora_rows
    // Verbal rows whose logits are computed: first the last row of each sequence sampled on the device
    // ([0, num_sampled)), then the rows whose logits are returned, then the rows scored on the device (the same
    // row may be in several parts), and last the rows whose hidden state is returned (no logits for those).
    std::vector<int32_t> logit_rows;
    std::vector<int> logit_row_start;        // [S + 1] into the returned rows
    std::vector<int> sampled_seqs;           // [num_sampled]: the sequence of each sampled row
    std::vector<int32_t> score_targets;      // [num_scored]: the target of each scored row
    std::vector<int> score_start;            // [S + 1] into the scored rows
    int score_top_n = 0;                     // the most alternatives a scored sequence asked for
    std::vector<int> hidden_start;           // [S + 1] into the returned hidden rows
    int num_hub_rows() const { return hub_start.back(); }
  };
  // `bucketed_rows` (step graphs): the hub and skip rows come in buckets (0 or a power of two) and the logit rows
  // follow the batch size, so that a batch keeps its graph as sequences come and go while base sequences cost
  // little beside ARACH and adapter ones (an A/B experiment's batches): the ARACH sequences' count is filled up to
  // its bucket by hub rows of the first other sequences (their logit offset -inf, so that their hub term weighs
  // exactly 0 and their verbal rows are those of their own variant); the skip rows (every row of the adapter's
  // sequences) are filled up to theirs with Backend::kNoRow (the adapter reads zeros there and its result goes
  // nowhere); the logit rows are one per sequence, or two when some sequence is both sampled and returned, filled
  // up with rows never read.
  absl::StatusOr<FlatBatch> Flatten(const ForwardBatch& batch, bool bucketed_rows) const;

  // Device pointers of the uploaded per-step metadata.
  struct StepInputs {
    const int32_t* rope_positions = nullptr;
    const int32_t* slots = nullptr;
    const int32_t* skip_rows = nullptr;
    const int32_t* lora_rows = nullptr;    // FlatBatch::lora_rows on the device
    std::span<const LoraRows> lora_groups;  // FlatBatch::lora_groups (host)
    float* attention_mass = nullptr;  // [L, S, kAttentionMassKinds, H] or null (no sequence asked)
    int num_verbal_rows = 0;
    int num_skip_rows = 0;
  };
  // The device addresses of one step's metadata, and what the layers read of them.
  struct StepDevicePointers {
    const int32_t* ids = nullptr;        // [N_v]
    const int32_t* positions = nullptr;  // [N_v]
    const int32_t* selected = nullptr;   // the logit rows
    StepInputs inputs;
    AttentionParams attention;  // without the per-layer fields (RunLayer fills them)
  };
  // Queues the forward from the embeddings to the final norm of the logit rows: [logit_rows, d] in scratch
  // (empty without logit rows).
  absl::StatusOr<DeviceMatrix> EnqueueForward(const StepDevicePointers& step, int num_hub, int logit_rows);
  // The LM head on `normed` rows: [normed.rows, V] float32 in scratch `slot`.
  absl::StatusOr<DeviceMatrix> LmHead(const DeviceMatrix& normed, Scratch slot);
  // Sums each sequence's hidden rows on the device (`rows`: the step's hidden rows after the final norm, sequence s
  // owning [row_start[s], row_start[s+1])) and downloads one float32 row per sequence that has any into
  // output.hidden / hidden_start; where every such sequence has one row, those rows are downloaded as they are.
  absl::Status DownloadHiddenSums(const DeviceMatrix& rows, const std::vector<int>& row_start, ForwardOutput& output);
  // Backend::ScoreRows of the rows `normed` ([targets.size(), d]) against `targets`, their logits computed a
  // block of rows at a time (at most scored_logits_bytes_ of them) and each block scored before the next.
  absl::Status ScoreInBlocks(const DeviceMatrix& normed, std::span<const int32_t> targets, std::span<RowScore> scores,
                             std::span<TokenLogprob> top);

  // Step graphs, keyed by (sequences, hub rows, skip rows, logit rows) of the padded step, flattened with bucketed
  // rows: the shape every launch of a decode step follows from. Per batch-size bucket, hub rows and skip rows take
  // a few bucketed counts and logit rows one or two per sequence, as the mix of variants and requests changes.
  using StepGraphKey = std::tuple<int, int, int, int>;
  // Decode steps are padded to the next power of two (RowBucket in model_runner.cc: 1, 2, 4, ..., 256); larger
  // decode batches run without a graph.
  static constexpr int kMaxStepGraphBatch = 256;
  // The batch size `batch` runs as when it may run as a step graph (its bucket); nullopt for other steps.
  std::optional<int> StepGraphBatchSize(const ForwardBatch& batch) const;
  // `batch` filled up to `batch_size` sequences by padding sequences: one token at position 0 written to the KV
  // cache's padding block, the base variant (Flatten may give them hub rows that fill up the ARACH count's bucket), the
  // last row's logits computed but never returned, nothing sampled.
  ForwardBatch PaddedTo(const ForwardBatch& batch, int batch_size) const;
  struct RecordedStep {
    std::unique_ptr<StepGraph> graph;
    uint64_t workspace_generation = 0;  // the scratch addresses it was recorded with
    DeviceMatrix logits;                // where it writes the logits
    uint64_t last_used = 0;             // graph_clock_ when it was last recorded or replayed
  };
  // Replays the graph recorded for `key`, or runs `enqueue` (recording it when the shape has come before).
  absl::StatusOr<DeviceMatrix> RunAsStepGraph(const StepGraphKey& key, const std::function<absl::StatusOr<DeviceMatrix>()>& enqueue);

  // Runs layer `l` on the rows of `hidden`.
  absl::Status RunLayer(int l, const DeviceMatrix& hidden, const AttentionParams& attention_template, const StepInputs& in);
  // Pre-projection + skip on the skip rows of `normed`: replaces them by x~ and returns skip_proj(x~)
  // ([skip rows, d], to be added to the residual).
  absl::StatusOr<DeviceMatrix> ApplyAdapter(int l, const DeviceMatrix& normed, const StepInputs& in);
  // Adds the LoRA term of layer `l`'s projection `site` to `output` for the rows of every adapter in the step that
  // changes it: output[rows] += ((input[rows] A^T) B^T) (engine/model/lora_adapter.h). input: the projection's
  // input [rows, in]; output: its result [rows, out] (already holding x W^T + bias).
  absl::Status ApplyLora(int l, LoraSite site, const DeviceMatrix& input, const DeviceMatrix& output, const StepInputs& in);
  // Whether some adapter of the step changes layer `l`'s `site`.
  bool LoraChanges(int l, LoraSite site, const StepInputs& in) const;

  ModelConfig config_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<KvCache> kv_cache_;
  std::string kv_memory_note_;
  std::unique_ptr<Workspace> workspace_;
  std::unique_ptr<DeviceBuffer> rope_table_;  // [max_positions, rotary_dim] float32 (RopeConfig::CosSinTable), RoPE models only
  std::unique_ptr<BlockTable> padding_table_;  // the KV cache's padding block, where step graphs pad decode steps
  bool step_graphs_enabled_ = true;
  int max_step_graphs_ = 64;  // recorded shapes kept at most (then the least recently replayed goes)
  size_t scored_logits_bytes_ = size_t{128} << 20;  // set_scored_logits_bytes
  std::map<StepGraphKey, RecordedStep> step_graphs_;
  std::set<StepGraphKey> warmed_up_;  // shapes run once already
  uint64_t graph_clock_ = 0;          // counts the steps run as graphs
  StepGraphStats graph_stats_;
};

}  // namespace arach
