#include "engine/runner/model_runner.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/backend/op_checks.h"
#include "engine/core/byte_size.h"
#include "engine/core/status.h"

namespace arach {
namespace {

// A batch that breaks the runner's contract (its callers validate requests first): a bug, never user input.
absl::Status Broken(size_t sequence, absl::string_view what) {
  return absl::InternalError(absl::StrCat("forward batch, sequence ", sequence, ": ", what));
}

// The count a step graph runs for `count` sequences or rows of a kind: 0 for none, else the next power of two, at
// most `most`.
int RowBucket(int count, int most) {
  return count == 0 ? 0 : std::min(static_cast<int>(std::bit_ceil(static_cast<unsigned>(count))), most);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ModelRunner>> ModelRunner::Create(std::unique_ptr<Backend> backend,
                                                                 const ModelConfig& config, ModelWeights&& weights,
                                                                 FeatureWeights&& features, const KvCacheConfig& kv) {
  ARACH_RETURN_IF_ERROR(op_checks::CheckAttentionHeadDim(config.head_dim, backend->max_attention_head_dim()));
  std::unique_ptr<ModelRunner> runner(new ModelRunner());
  runner->config_ = config;
  runner->backend_ = std::move(backend);
  ARACH_ASSIGN_OR_RETURN(runner->weights_, DeviceWeights::Upload(*runner->backend_, std::move(weights), std::move(features)));
  if (config.use_rope) {  // every position a sequence may reach (Flatten refuses the ones past max_positions)
    const std::vector<float> cos_sin = config.rope.CosSinTable(config.max_positions);
    ARACH_ASSIGN_OR_RETURN(runner->rope_table_, runner->backend_->Allocate(cos_sin.size() * sizeof(float)));
    runner->backend_->CopyToDevice(runner->rope_table_->data(), cos_sin.data(), cos_sin.size() * sizeof(float));
  }
  // The pool comes after the weights and the RoPE table, from what the device still has (on the CPU: within a container's
  // memory limit): sized as a fraction of it, or an explicit size checked against it.
  ARACH_ASSIGN_OR_RETURN(MemoryBudget available, runner->backend_->AvailableMemory());
  if (kv.keep_free_bytes > 0) {
    if (kv.keep_free_bytes >= available.bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("KV cache: the ", DescribeBytes(kv.keep_free_bytes),
                                                       " kept for LoRA adapters loaded while serving (--max_loras, --max_lora_rank) "
                                                       "exceed the ", DescribeBytes(available.bytes), " available (", available.source, ")"));
    }
    available.bytes -= kv.keep_free_bytes;
    available.source = absl::StrCat(available.source, ", less ", DescribeBytes(kv.keep_free_bytes), " kept for LoRA adapters");
  }
  const size_t per_block = KvCache::BytesPerBlock(config, kv.block_size, runner->backend_->kv_cache_dtype());
  KvCacheConfig sized = kv;
  // Where decode steps run as step graphs, they are padded to a batch-size bucket by sequences writing one block
  // of their own.
  sized.padding_block = runner->backend_->records_step_graphs();
  const int padding_blocks = sized.padding_block ? 1 : 0;
  // Bytes of the pool as sized so far, its padding block included.
  const auto pool_bytes = [&] { return static_cast<int64_t>(sized.num_blocks + padding_blocks) * static_cast<int64_t>(per_block); };
  if (sized.num_blocks <= 0 && sized.free_memory_fraction > 0) {
    sized.num_blocks =
        static_cast<int>(static_cast<double>(available.bytes) * kv.free_memory_fraction / per_block) - padding_blocks;
    if (sized.num_blocks < 1) {
      return absl::ResourceExhaustedError(absl::StrCat("KV cache: ", kv.free_memory_fraction, " of the ", DescribeBytes(available.bytes),
                                                       " available (", available.source, ") holds no block of ", per_block, " bytes"));
    }
  } else if (static_cast<double>(pool_bytes()) > static_cast<double>(available.bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat("KV cache: a pool of ", sized.num_blocks, " blocks (", DescribeBytes(pool_bytes()),
                                                     ") does not fit beside the weights: ", DescribeBytes(available.bytes),
                                                     " available (", available.source, ")"));
  }
  runner->kv_memory_note_ = absl::StrCat(DescribeBytes(pool_bytes()), " of ",
                                         DescribeBytes(available.bytes), " available: ", available.source);
  ARACH_ASSIGN_OR_RETURN(runner->kv_cache_, KvCache::Create(*runner->backend_, config, sized));
  if (runner->kv_cache_->padding_block() >= 0) {
    runner->padding_table_ = std::make_unique<BlockTable>(sized.block_size);
    runner->padding_table_->Append(runner->kv_cache_->padding_block());
  }
  runner->workspace_ = std::make_unique<Workspace>(*runner->backend_);
  return runner;
}

absl::StatusOr<ModelRunner::FlatBatch> ModelRunner::Flatten(const ForwardBatch& batch, bool bucketed_rows) const {
  FlatBatch flat;
  // With bucketed rows, the first sequences without ARACH get hub rows too, as many as fill the ARACH sequences'
  // count up to its bucket (their offset -inf: their hub term weighs exactly 0).
  int hub_fillers = 0;
  if (bucketed_rows) {
    const int arach_seqs = static_cast<int>(std::count_if(batch.sequences.begin(), batch.sequences.end(),
                                                          [](const SequenceInput& s) { return s.variant.arach; }));
    hub_fillers = RowBucket(arach_seqs, static_cast<int>(batch.sequences.size())) - arach_seqs;
  }
  const int block_size = kv_cache_->block_size();
  flat.query_start.push_back(0);
  flat.hub_start.push_back(0);
  flat.block_table_start.push_back(0);
  flat.logit_row_start.push_back(0);
  flat.score_start.push_back(0);
  flat.hidden_start.push_back(0);
  std::vector<int32_t> returned_rows, scored_rows, hidden_rows;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceInput& seq = batch.sequences[s];
    const int n = static_cast<int>(seq.tokens.size());
    if (n == 0) return Broken(s, "no new tokens");
    if (seq.block_table == nullptr) return Broken(s, "no block table");
    if (seq.start_position < 0) return Broken(s, "negative start position");
    const int end = seq.start_position + n;
    if (end > config_.max_positions) return Broken(s, absl::StrCat(end, " tokens exceed the model's context of ", config_.max_positions));
    if (seq.lora < 0 || seq.lora > static_cast<int>(weights_->loras.size()) ||
        (seq.lora > 0 && weights_->loras[static_cast<size_t>(seq.lora - 1)].layers.empty())) {
      return Broken(s, absl::StrCat("LoRA adapter slot ", seq.lora, " of ", weights_->loras.size(), " holds no adapter"));
    }
    if (seq.block_table->capacity() < end) {
      return Broken(s, absl::StrCat("block table holds ", seq.block_table->capacity(), " positions, ", end, " needed"));
    }
    const bool padding = seq.block_table == padding_table_.get();  // PaddedTo's sequences own no block of the pool
    for (int32_t block : seq.block_table->blocks()) {
      if (!padding && (block < 0 || block >= kv_cache_->num_blocks())) {
        return Broken(s, absl::StrCat("block id ", block, " is outside the pool of ", kv_cache_->num_blocks()));
      }
    }
    const int first_row = static_cast<int>(flat.ids.size());
    for (int i = 0; i < n; ++i) {
      const int32_t id = seq.tokens[i];
      if (id < 0 || id >= config_.vocab_size) return Broken(s, absl::StrCat("token id ", id, " is outside the vocabulary"));
      const int position = seq.start_position + i;
      flat.ids.push_back(id);
      flat.positions.push_back(position);
      flat.slots.push_back(seq.block_table->Slot(position));
    }
    flat.query_start.push_back(first_row + n);
    bool has_hub = seq.variant.arach;
    if (!has_hub && hub_fillers > 0) {
      has_hub = true;
      --hub_fillers;
    }
    flat.hub_start.push_back(flat.hub_start.back() + (has_hub ? n : 0));
    flat.hub_offsets.push_back(seq.variant.arach ? seq.variant.arach_offset
                                                 : (has_hub ? -std::numeric_limits<float>::infinity() : 0.0f));
    const std::vector<int32_t>& blocks = seq.block_table->blocks();
    const int used_blocks = (end + block_size - 1) / block_size;
    flat.block_tables.insert(flat.block_tables.end(), blocks.begin(), blocks.begin() + used_blocks);
    flat.block_table_start.push_back(static_cast<int32_t>(flat.block_tables.size()));
    if (seq.logits == LogitsMode::kLast) {
      returned_rows.push_back(first_row + n - 1);
    } else if (seq.logits == LogitsMode::kAll) {
      for (int i = 0; i < n; ++i) returned_rows.push_back(first_row + i);
    }
    flat.logit_row_start.push_back(static_cast<int>(returned_rows.size()));
    if (!seq.score_targets.empty()) {
      if (static_cast<int>(seq.score_targets.size()) != n) {
        return Broken(s, absl::StrCat(seq.score_targets.size(), " score targets for ", n, " new tokens"));
      }
      if (seq.score_top_n < 0 || seq.score_top_n > SamplingParams::kMaxTopLogprobs) {
        return Broken(s, absl::StrCat(seq.score_top_n, " alternatives per scored row"));
      }
      flat.score_top_n = std::max(flat.score_top_n, seq.score_top_n);
      for (int i = 0; i < n; ++i) {
        const int32_t target = seq.score_targets[i];
        if (target >= config_.vocab_size) return Broken(s, absl::StrCat("score target ", target, " is outside the vocabulary"));
        scored_rows.push_back(first_row + i);
        flat.score_targets.push_back(target);
      }
    }
    flat.score_start.push_back(static_cast<int>(scored_rows.size()));
    switch (seq.return_hidden) {
      case HiddenRows::kNone: break;
      case HiddenRows::kLast: hidden_rows.push_back(first_row + n - 1); break;
      case HiddenRows::kFirst: hidden_rows.push_back(first_row); break;
      case HiddenRows::kSum:
        for (int i = 0; i < n; ++i) hidden_rows.push_back(first_row + i);
        break;
    }
    flat.hidden_start.push_back(static_cast<int>(hidden_rows.size()));
    if (seq.sample != nullptr && backend_->samples_on_device()) {
      flat.logit_rows.push_back(first_row + n - 1);
      flat.sampled_seqs.push_back(static_cast<int>(s));
    }
  }
  flat.logit_rows.insert(flat.logit_rows.end(), returned_rows.begin(), returned_rows.end());
  flat.logit_rows.insert(flat.logit_rows.end(), scored_rows.begin(), scored_rows.end());
  flat.logit_rows.insert(flat.logit_rows.end(), hidden_rows.begin(), hidden_rows.end());
  // Hub rows follow all verbal rows; they sit at position 0.
  const int num_verbal = static_cast<int>(flat.ids.size());
  flat.rope_positions = flat.positions;
  flat.rope_positions.resize(num_verbal + flat.num_hub_rows(), 0);
  for (size_t s = 0; s < batch.sequences.size(); ++s) {  // every row (verbal and hub) of the adapter's sequences
    if (!batch.sequences[s].variant.skip) continue;
    for (int r = flat.query_start[s]; r < flat.query_start[s + 1]; ++r) flat.skip_rows.push_back(r);
    for (int h = flat.hub_start[s]; h < flat.hub_start[s + 1]; ++h) flat.skip_rows.push_back(num_verbal + h);
  }
  // Every row (verbal and hub) of the LoRA sequences, grouped by adapter: the sequences ordered by adapter (batch
  // order within one), one group per run.
  std::vector<size_t> lora_sequences;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    if (batch.sequences[s].lora > 0) lora_sequences.push_back(s);
  }
  std::stable_sort(lora_sequences.begin(), lora_sequences.end(),
                   [&](size_t a, size_t b) { return batch.sequences[a].lora < batch.sequences[b].lora; });
  for (const size_t s : lora_sequences) {
    const int adapter = batch.sequences[s].lora - 1;
    if (flat.lora_groups.empty() || flat.lora_groups.back().adapter != adapter) {
      flat.lora_groups.push_back({adapter, static_cast<int>(flat.lora_rows.size()), 0});
    }
    for (int r = flat.query_start[s]; r < flat.query_start[s + 1]; ++r) flat.lora_rows.push_back(r);
    for (int h = flat.hub_start[s]; h < flat.hub_start[s + 1]; ++h) flat.lora_rows.push_back(num_verbal + h);
    flat.lora_groups.back().count = static_cast<int>(flat.lora_rows.size()) - flat.lora_groups.back().start;
  }
  if (bucketed_rows) {
    // Skip rows filled up to their bucket with kNoRow (the adapter reads zeros there, its result goes nowhere).
    const int skip_rows = static_cast<int>(flat.skip_rows.size());
    flat.skip_rows.resize(RowBucket(skip_rows, num_verbal + flat.num_hub_rows()), Backend::kNoRow);
    // One logit row per sequence, or two where some sequence is both sampled and returned (a request asking for
    // log-probs or held to a grammar): filled up with row 0, computed and never read.
    const size_t num_seqs = batch.sequences.size();
    flat.logit_rows.resize(flat.logit_rows.size() <= num_seqs ? num_seqs : std::max(flat.logit_rows.size(), 2 * num_seqs), 0);
  }
  return flat;
}

absl::StatusOr<DeviceMatrix> ModelRunner::ApplyAdapter(int l, const DeviceMatrix& normed, const StepInputs& in) {
  const DeviceAdapterLayer& a = weights_->adapter[l];
  Backend& b = *backend_;
  const int64_t rows = in.num_skip_rows, d = config_.hidden_size;
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix x, workspace_->Matrix(Scratch::kAdapterX, rows, d));
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix inner, workspace_->Matrix(Scratch::kAdapterInner, rows, weights_->adapter_expansion));
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix skip, workspace_->Matrix(Scratch::kAdapterSkip, rows, d));
  b.GatherRows(normed, in.skip_rows, x);                            // x^
  b.LinearActivate(x, a.up, DeviceMatrix{}, Activation::kSilu, inner);  // SiLU(up(x^))
  b.Linear(inner, a.down, DeviceMatrix{}, x, /*accumulate=*/true);  // x~ = x^ + down(SiLU(up(x^)))
  b.Linear(x, a.skip, DeviceMatrix{}, skip, /*accumulate=*/false);  // skip_proj(x~)
  b.ScatterRows(x, in.skip_rows, normed, /*accumulate=*/false);     // Q, K, V read x~
  return skip;
}

absl::Status ModelRunner::RunLayer(int l, const DeviceMatrix& hidden, const AttentionParams& attention_template,
                                   const StepInputs& in) {
  const ModelConfig& c = config_;
  const DeviceLayerWeights& w = weights_->layers[l];
  Backend& b = *backend_;
  const int64_t rows = hidden.rows;

  auto norm = [&](const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out) {
    if (c.norm == NormKind::kLayerNorm) {
      b.LayerNorm(in, weight, bias, c.norm_eps, out);
    } else {
      b.RmsNorm(in, weight, c.norm_eps, out);
    }
  };

  // ---- attention block
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix normed, workspace_->Matrix(Scratch::kNormed, rows, c.hidden_size));
  norm(hidden, w.norm1_weight, w.norm1_bias, normed);
  DeviceMatrix mlp_input = normed;
  if (c.parallel_residual) {  // the MLP reads norm2 of the block input, before the attention is added
    ARACH_ASSIGN_OR_RETURN(mlp_input, workspace_->Matrix(Scratch::kNormed2, rows, c.hidden_size));
    norm(hidden, w.norm2_weight, w.norm2_bias, mlp_input);
  }
  DeviceMatrix skip;
  if (in.num_skip_rows > 0) {
    ARACH_ASSIGN_OR_RETURN(skip, ApplyAdapter(l, normed, in));
  }
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix qkv, workspace_->Matrix(Scratch::kQkv, rows, c.qkv_size()));
  b.Linear(normed, w.qkv_weight, w.qkv_bias, qkv, /*accumulate=*/false);
  ARACH_RETURN_IF_ERROR(ApplyLora(l, LoraSite::kQkv, normed, qkv, in));
  const DeviceMatrix q = qkv.Cols(0, c.q_size());
  const DeviceMatrix k = qkv.Cols(c.q_size(), c.kv_size());
  const DeviceMatrix v = qkv.Cols(c.q_size() + c.kv_size(), c.kv_size());
  if (c.qk_norm) {  // Qwen3: RMSNorm of every head, hub rows included, before RoPE
    b.RmsNormHeads(q, c.num_heads, c.head_dim, w.q_norm_weight, c.norm_eps);
    b.RmsNormHeads(k, c.num_kv_heads, c.head_dim, w.k_norm_weight, c.norm_eps);
  }
  if (c.use_rope) {
    const float* cos_sin = static_cast<const float*>(rope_table_->data());
    b.Rope(q, c.num_heads, c.head_dim, c.rope.rotary_dim, in.rope_positions, cos_sin);
    b.Rope(k, c.num_kv_heads, c.head_dim, c.rope.rotary_dim, in.rope_positions, cos_sin);
  }
  const PagedKvLayer kv = kv_cache_->layer(l);
  const int num_verbal = in.num_verbal_rows;
  b.WriteKv(k.Rows(0, num_verbal), v.Rows(0, num_verbal), in.slots, kv);  // hub rows never enter the cache

  ARACH_ASSIGN_OR_RETURN(DeviceMatrix attention, workspace_->Matrix(Scratch::kAttention, rows, c.q_size()));
  AttentionParams params = attention_template;
  params.q = q;
  params.out = attention;
  params.kv = kv;
  params.scale = c.AttentionScale(l);
  params.sliding_window = c.SlidingWindow(l);
  params.hub_k = k.Rows(num_verbal, rows - num_verbal);
  params.hub_v = v.Rows(num_verbal, rows - num_verbal);
  if (in.attention_mass != nullptr) {
    params.attention_mass = in.attention_mass + static_cast<int64_t>(l) * params.num_seqs * kAttentionMassKinds * c.num_heads;
  }
  b.Attention(params);
  b.Linear(attention, w.out_weight, w.out_bias, hidden, /*accumulate=*/true);  // residual add
  ARACH_RETURN_IF_ERROR(ApplyLora(l, LoraSite::kOut, attention, hidden, in));
  if (in.num_skip_rows > 0) b.ScatterRows(skip, in.skip_rows, hidden, /*accumulate=*/true);  // + skip

  // ---- MLP block
  if (!c.parallel_residual) norm(hidden, w.norm2_weight, w.norm2_bias, mlp_input);
  const int64_t inner = c.intermediate_size;
  if (c.gated_mlp) {
    ARACH_ASSIGN_OR_RETURN(DeviceMatrix gate_up, workspace_->Matrix(Scratch::kMlpIn, rows, 2 * inner));
    ARACH_ASSIGN_OR_RETURN(DeviceMatrix act, workspace_->Matrix(Scratch::kMlpAct, rows, inner));
    b.Linear(mlp_input, w.mlp_in_weight, w.mlp_in_bias, gate_up, /*accumulate=*/false);
    ARACH_RETURN_IF_ERROR(ApplyLora(l, LoraSite::kMlpIn, mlp_input, gate_up, in));
    b.GatedActivate(c.activation, gate_up, act);
    b.Linear(act, w.mlp_out_weight, w.mlp_out_bias, hidden, /*accumulate=*/true);
    ARACH_RETURN_IF_ERROR(ApplyLora(l, LoraSite::kMlpOut, act, hidden, in));
  } else {
    ARACH_ASSIGN_OR_RETURN(DeviceMatrix act, workspace_->Matrix(Scratch::kMlpIn, rows, inner));
    if (LoraChanges(l, LoraSite::kMlpIn, in)) {  // the LoRA term comes before the activation
      b.Linear(mlp_input, w.mlp_in_weight, w.mlp_in_bias, act, /*accumulate=*/false);
      ARACH_RETURN_IF_ERROR(ApplyLora(l, LoraSite::kMlpIn, mlp_input, act, in));
      b.Activate(c.activation, act);
    } else {
      b.LinearActivate(mlp_input, w.mlp_in_weight, w.mlp_in_bias, c.activation, act);
    }
    b.Linear(act, w.mlp_out_weight, w.mlp_out_bias, hidden, /*accumulate=*/true);
    ARACH_RETURN_IF_ERROR(ApplyLora(l, LoraSite::kMlpOut, act, hidden, in));
  }
  return absl::OkStatus();
}

absl::Status ModelRunner::Execute(const ForwardBatch& batch, ForwardOutput& output) {
  const ModelConfig& c = config_;
  Backend& b = *backend_;
  const int num_requested = static_cast<int>(batch.sequences.size());  // the caller's sequences, before any padding
  const std::optional<int> graph_batch_size = StepGraphBatchSize(batch);
  const bool padded = graph_batch_size.has_value() && *graph_batch_size > num_requested;
  ForwardBatch padded_batch;
  if (padded) padded_batch = PaddedTo(batch, *graph_batch_size);
  ARACH_ASSIGN_OR_RETURN(FlatBatch flat, Flatten(padded ? padded_batch : batch, /*bucketed_rows=*/graph_batch_size.has_value()));
  const int num_verbal = static_cast<int>(flat.ids.size());
  const int num_hub = flat.num_hub_rows();
  const int num_seqs = static_cast<int>(flat.query_start.size()) - 1;  // with the padding sequences
  const bool want_mass = std::any_of(batch.sequences.begin(), batch.sequences.end(),
                                     [](const SequenceInput& s) { return s.attention_diagnostics; });
  std::optional<StepGraphKey> graph_key;
  if (graph_batch_size) {
    graph_key = StepGraphKey{num_seqs, num_hub, static_cast<int>(flat.skip_rows.size()), static_cast<int>(flat.logit_rows.size())};
  }

  // Every metadata array of the step in one transfer (on a GPU, one DMA from page-locked memory). The block tables
  // go last: they are the one array whose length changes from one decode step to the next, so every other array
  // stays at its address (a recorded step graph reads them there).
  using W = Workspace;
  ARACH_ASSIGN_OR_RETURN(const std::vector<const void*> uploaded,
                         workspace_->UploadTogether({W::Of(flat.ids), W::Of(flat.positions), W::Of(flat.slots),
                                                     W::Of(flat.query_start), W::Of(flat.block_table_start),
                                                     W::Of(flat.rope_positions), W::Of(flat.skip_rows), W::Of(flat.hub_start),
                                                     W::Of(flat.hub_offsets), W::Of(flat.logit_rows), W::Of(flat.lora_rows),
                                                     W::Of(flat.block_tables)}));
  const auto ints = [&uploaded](size_t i) { return static_cast<const int32_t*>(uploaded[i]); };
  StepDevicePointers d;
  d.ids = ints(0);
  d.positions = ints(1);
  d.selected = ints(9);
  StepInputs& in = d.inputs;
  in.num_verbal_rows = num_verbal;
  in.num_skip_rows = static_cast<int>(flat.skip_rows.size());
  in.slots = ints(2);
  in.rope_positions = ints(5);
  in.skip_rows = ints(6);
  in.lora_rows = ints(10);
  in.lora_groups = flat.lora_groups;
  DeviceMatrix mass_sums;  // [L * S * kAttentionMassKinds, H] float32, zeroed
  if (want_mass) {
    const int64_t mass_rows = static_cast<int64_t>(c.num_layers) * num_seqs * kAttentionMassKinds;
    ARACH_ASSIGN_OR_RETURN(mass_sums, workspace_->Matrix(Scratch::kAttentionMass, mass_rows, c.num_heads, DType::kF32));
    b.Fill(mass_sums.data, static_cast<size_t>(mass_rows) * c.num_heads * sizeof(float), 0);
    in.attention_mass = mass_sums.As<float>();
  }

  AttentionParams& attention = d.attention;
  attention.num_heads = c.num_heads;
  attention.num_seqs = num_seqs;
  attention.num_verbal_rows = num_verbal;
  attention.query_start = ints(3);
  attention.positions = d.positions;
  attention.block_table_start = ints(4);
  attention.block_tables = ints(11);
  attention.num_hub_rows = num_hub;
  attention.hub_start = ints(7);
  attention.hub_logit_offset = static_cast<const float*>(uploaded[8]);
  AttentionBatchLayout layout;
  layout.query_start = flat.query_start;
  layout.positions = flat.positions;
  layout.block_table_start = flat.block_table_start;
  layout.block_tables = flat.block_tables;
  layout.hub_start = flat.hub_start;
  layout.block_size = kv_cache_->block_size();
  layout.num_heads = c.num_heads;
  layout.num_kv_heads = c.num_kv_heads;
  layout.head_dim = c.head_dim;
  layout.for_step_graph = graph_key.has_value();
  ARACH_RETURN_IF_ERROR(b.PlanAttention(layout));

  const int logit_rows = static_cast<int>(flat.logit_rows.size());
  const int num_scored = static_cast<int>(flat.score_targets.size());
  const int num_hidden = flat.hidden_start.back();
  const int head_rows = logit_rows - num_scored - num_hidden;  // the sampled and returned rows (and a graph's padding rows)
  DeviceMatrix normed;                            // [logit_rows, d]; set unless a recorded graph is replayed
  const auto enqueue = [&]() -> absl::StatusOr<DeviceMatrix> {
    ARACH_ASSIGN_OR_RETURN(normed, EnqueueForward(d, num_hub, logit_rows));
    if (head_rows == 0) return DeviceMatrix{};
    return LmHead(normed.Rows(0, head_rows), Scratch::kLogits);
  };
  absl::StatusOr<DeviceMatrix> logits = graph_key ? RunAsStepGraph(*graph_key, enqueue) : enqueue();
  if (!logits.ok()) return logits.status();

  output.vocab_size = c.vocab_size;
  // The requested sequences' rows only: the padding sequences' rows come after them and stay on the device.
  output.row_start.assign(flat.logit_row_start.begin(), flat.logit_row_start.begin() + num_requested + 1);
  output.logits.clear();  // keeps its capacity (ForwardOutput)
  output.sampled_tokens.clear();
  output.sampled_logprobs.clear();
  output.score_start.assign(flat.score_start.begin(), flat.score_start.begin() + num_requested + 1);
  output.scores.clear();
  output.score_top_n = flat.score_top_n;
  output.score_top.clear();
  output.attention_diagnostics = StepAttentionDiagnostics{};
  const int num_sampled = static_cast<int>(flat.sampled_seqs.size());
  if (head_rows > 0) {
    const DeviceMatrix returned = logits->Rows(num_sampled, output.row_start.back());
    output.logits.resize(static_cast<size_t>(returned.rows) * c.vocab_size);
    if (returned.rows > 0) b.DownloadFloat(output.logits.data(), returned);
    if (num_sampled > 0) {
      std::vector<SamplerInput> inputs;
      for (int seq : flat.sampled_seqs) inputs.push_back(*batch.sequences[seq].sample);
      std::vector<int32_t> tokens(num_sampled);
      std::vector<float> logprobs(num_sampled);
      absl::Status sampled = b.SampleTokens(logits->Rows(0, num_sampled), inputs, tokens, logprobs);
      if (!sampled.ok()) {
        if (graph_key) step_graphs_.erase(*graph_key);
        return sampled;
      }
      output.sampled_tokens.assign(num_requested, -1);
      output.sampled_logprobs.assign(num_requested, 0.0f);
      for (int i = 0; i < num_sampled; ++i) {
        output.sampled_tokens[flat.sampled_seqs[i]] = tokens[i];
        output.sampled_logprobs[flat.sampled_seqs[i]] = logprobs[i];
      }
    }
  }
  if (num_scored > 0) {  // never in a step graph (StepGraphBatchSize)
    output.scores.resize(num_scored);
    output.score_top.resize(static_cast<size_t>(num_scored) * flat.score_top_n);
    ARACH_RETURN_IF_ERROR(ScoreInBlocks(normed.Rows(head_rows, num_scored), flat.score_targets, output.scores, output.score_top));
  }
  output.hidden_size = c.hidden_size;
  output.hidden.clear();
  output.hidden_start.clear();
  if (num_hidden > 0) {  // never in a step graph (StepGraphBatchSize)
    ARACH_RETURN_IF_ERROR(DownloadHiddenSums(normed.Rows(head_rows + num_scored, num_hidden), flat.hidden_start, output));
  }
  if (want_mass) {
    output.attention_diagnostics.num_layers = c.num_layers;
    output.attention_diagnostics.num_sequences = num_seqs;  // never padded: steps with diagnostics run without a graph
    output.attention_diagnostics.num_heads = c.num_heads;
    output.attention_diagnostics.sums.resize(static_cast<size_t>(mass_sums.rows * mass_sums.cols));
    b.DownloadFloat(output.attention_diagnostics.sums.data(), mass_sums);
  }
  if (absl::Status done = b.Synchronize(); !done.ok()) {
    if (graph_key) step_graphs_.erase(*graph_key);  // a failed op check may have left an op out of the recording
    return done;
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceMatrix> ModelRunner::EnqueueForward(const StepDevicePointers& d, int num_hub, int logit_rows) {
  const ModelConfig& c = config_;
  Backend& b = *backend_;
  const int num_verbal = d.inputs.num_verbal_rows;
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix hidden, workspace_->Matrix(Scratch::kHidden, num_verbal + num_hub, c.hidden_size));
  b.Embed(d.ids, d.positions, weights_->token_embedding, weights_->position_embedding, hidden.Rows(0, num_verbal));
  if (num_hub > 0) b.FillRows(weights_->hub_input, hidden.Rows(num_verbal, num_hub));
  for (int l = 0; l < c.num_layers; ++l) {
    ARACH_RETURN_IF_ERROR(RunLayer(l, hidden, d.attention, d.inputs));
  }
  if (logit_rows == 0) return DeviceMatrix{};
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix gathered, workspace_->Matrix(Scratch::kLogitHidden, logit_rows, c.hidden_size));
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix normed, workspace_->Matrix(Scratch::kLogitNormed, logit_rows, c.hidden_size));
  b.GatherRows(hidden, d.selected, gathered);
  if (c.norm == NormKind::kLayerNorm) {
    b.LayerNorm(gathered, weights_->final_norm_weight, weights_->final_norm_bias, c.norm_eps, normed);
  } else {
    b.RmsNorm(gathered, weights_->final_norm_weight, c.norm_eps, normed);
  }
  return normed;
}

absl::Status ModelRunner::DownloadHiddenSums(const DeviceMatrix& rows, const std::vector<int>& row_start, ForwardOutput& output) {
  const int64_t d = config_.hidden_size;
  int num_asking = 0;
  for (size_t s = 0; s + 1 < row_start.size(); ++s) num_asking += row_start[s + 1] > row_start[s] ? 1 : 0;
  output.hidden.resize(static_cast<size_t>(num_asking) * d);
  if (num_asking == rows.rows) {  // one row each (last- or first-token pooling): the rows are the answer, in order
    output.hidden_start = row_start;
    backend_->DownloadFloat(output.hidden.data(), rows);
    return absl::OkStatus();
  }
  ARACH_ASSIGN_OR_RETURN(const DeviceMatrix sums, workspace_->Matrix(Scratch::kHiddenSums, num_asking, d, DType::kF32));  // [asking, d]
  output.hidden_start.assign(row_start.size(), 0);
  int next = 0;
  for (size_t s = 0; s + 1 < row_start.size(); ++s) {
    const int n = row_start[s + 1] - row_start[s];
    if (n > 0) backend_->SumRows(rows.Rows(row_start[s], n), sums.Rows(next++, 1));
    output.hidden_start[s + 1] = next;
  }
  backend_->DownloadFloat(output.hidden.data(), sums);
  return absl::OkStatus();
}

absl::StatusOr<DeviceMatrix> ModelRunner::LmHead(const DeviceMatrix& normed, Scratch slot) {
  // Logits stay float32 on every device: sampling and log-probabilities need more than bf16's 8 bits.
  ARACH_ASSIGN_OR_RETURN(DeviceMatrix logits, workspace_->Matrix(slot, normed.rows, config_.vocab_size, DType::kF32));
  backend_->Linear(normed, weights_->lm_head, DeviceMatrix{}, logits, /*accumulate=*/false);
  return logits;
}

absl::Status ModelRunner::ScoreInBlocks(const DeviceMatrix& normed, std::span<const int32_t> targets,
                                        std::span<RowScore> scores, std::span<TokenLogprob> top) {
  const size_t row_bytes = static_cast<size_t>(config_.vocab_size) * sizeof(float);
  const int64_t block_rows = std::max<int64_t>(1, static_cast<int64_t>(scored_logits_bytes_ / row_bytes));
  const size_t top_n = top.size() / targets.size();
  for (int64_t first = 0; first < normed.rows; first += block_rows) {
    const int64_t rows = std::min(block_rows, normed.rows - first);
    ARACH_ASSIGN_OR_RETURN(const DeviceMatrix logits, LmHead(normed.Rows(first, rows), Scratch::kScoredLogits));
    const size_t begin = static_cast<size_t>(first), count = static_cast<size_t>(rows);
    // Each call waits for its scores (Backend::ScoreRows), so the next block may reuse the scratch.
    ARACH_RETURN_IF_ERROR(backend_->ScoreRows(logits, targets.subspan(begin, count), scores.subspan(begin, count),
                                              top.subspan(begin * top_n, count * top_n)));
  }
  return absl::OkStatus();
}

std::optional<int> ModelRunner::StepGraphBatchSize(const ForwardBatch& batch) const {
  if (!step_graphs_enabled_ || !backend_->records_step_graphs() || padding_table_ == nullptr || batch.sequences.empty()) {
    return std::nullopt;
  }
  // Decode steps only (one new token per sequence: the attention plan's shape is then the batch's alone), without
  // the diagnostics' extra buffer, scored or hidden rows or LoRA rows (their count would not follow the batch size).
  for (const SequenceInput& seq : batch.sequences) {
    if (seq.tokens.size() != 1 || seq.attention_diagnostics || !seq.score_targets.empty() || seq.return_hidden != HiddenRows::kNone ||
        seq.lora != 0) {
      return std::nullopt;
    }
  }
  const int num_seqs = static_cast<int>(batch.sequences.size());
  if (num_seqs > kMaxStepGraphBatch) return std::nullopt;
  return RowBucket(num_seqs, kMaxStepGraphBatch);
}

ForwardBatch ModelRunner::PaddedTo(const ForwardBatch& batch, int batch_size) const {
  static constexpr int32_t kPaddingToken[] = {0};
  ForwardBatch padded = batch;
  SequenceInput filler;
  filler.tokens = kPaddingToken;
  filler.start_position = 0;
  filler.block_table = padding_table_.get();
  filler.logits = LogitsMode::kLast;  // a logit row each, so that the logit rows follow the batch size too
  padded.sequences.resize(batch_size, filler);
  return padded;
}

absl::StatusOr<DeviceMatrix> ModelRunner::RunAsStepGraph(const StepGraphKey& key,
                                                         const std::function<absl::StatusOr<DeviceMatrix>()>& enqueue) {
  if (auto found = step_graphs_.find(key); found != step_graphs_.end()) {
    RecordedStep& step = found->second;
    if (step.workspace_generation == workspace_->generation()) {
      const absl::Status replayed = backend_->ReplayStepGraph(*step.graph);
      if (replayed.ok()) {
        ++graph_stats_.replayed;
        step.last_used = ++graph_clock_;
        return step.logits;
      }
      if (!absl::IsFailedPrecondition(replayed)) return replayed;
    }
    step_graphs_.erase(found);  // its scratch moved: record it again
  }
  // The first step of a shape runs as it is, sizing the scratch; the next one is recorded.
  if (warmed_up_.size() >= 16 * static_cast<size_t>(max_step_graphs_)) warmed_up_.clear();
  if (warmed_up_.insert(key).second) return enqueue();
  const uint64_t generation = workspace_->generation();
  ARACH_RETURN_IF_ERROR(backend_->BeginStepGraph());
  workspace_->set_recording(true);
  absl::StatusOr<DeviceMatrix> logits = enqueue();
  workspace_->set_recording(false);
  absl::StatusOr<std::unique_ptr<StepGraph>> graph = backend_->EndStepGraph();  // always ends the recording
  // A shape whose scratch must grow first (not after its warm-up run; scratch never shrinks) runs as it is.
  if (workspace_->TakeRefusedGrowth()) return enqueue();
  if (!logits.ok()) return logits.status();
  if (!graph.ok()) return graph.status();
  if (step_graphs_.size() >= static_cast<size_t>(max_step_graphs_)) {  // the least recently used shape makes room
    step_graphs_.erase(std::min_element(step_graphs_.begin(), step_graphs_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    }));
  }
  ARACH_RETURN_IF_ERROR(backend_->ReplayStepGraph(**graph));  // recording ran nothing
  ++graph_stats_.recorded;
  step_graphs_[key] = RecordedStep{std::move(*graph), generation, *logits, ++graph_clock_};
  return logits;
}

}  // namespace arach
