// The device interface: memory and the kernels one transformer forward needs. The forward itself
// (engine/runner) is written once against this interface; each device implements the ops
// (engine/backend/cpu with OpenBLAS, engine/backend/cuda with cuBLASLt and own kernels).
//
// Pointers named "device" point into memory from Allocate(); metadata arrays (token ids, positions,
// block tables) are copied there with CopyToDevice before the ops that read them.
//
// Every op is a non-virtual entry point that first checks its arguments (engine/backend/op_checks.h, the
// same checks for every device) and then runs the device's kernel (the protected *Impl methods). A failed
// check skips the kernel and is reported by the next Synchronize(), like an asynchronous device error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "engine/backend/attention_params.h"
#include "engine/backend/device_matrix.h"
#include "engine/core/activation.h"
#include "engine/sampling/logprobs.h"
#include "engine/sampling/sampler.h"

namespace arach {

enum class DeviceKind { kCpu, kCuda };
absl::string_view DeviceKindName(DeviceKind kind);
absl::StatusOr<DeviceKind> ParseDeviceKind(absl::string_view name);  // "cpu" | "cuda"

// Memory a device can still give, and where the figure comes from (for messages: "host MemAvailable", "cgroup
// memory limit 8.00 GiB less 1.20 GiB in use", "free device memory").
struct MemoryBudget {
  size_t bytes = 0;
  std::string source;
};

// Owned device memory; freed by the backend that allocated it.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
};

// A recorded sequence of ops (Backend::BeginStepGraph); replayed by Backend::ReplayStepGraph.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual DeviceKind kind() const = 0;
  virtual std::string Describe() const = 0;   // e.g. "cpu (OpenBLAS, 2 threads)"
  virtual DType activation_dtype() const = 0;  // dtype of activations
  // dtype of weight matrices (projections, embeddings, LM head); norms and biases are in activation_dtype().
  virtual DType weight_dtype() const { return activation_dtype(); }
  // dtype of the paged KV cache's keys and values (PagedKvLayer::dtype).
  virtual DType kv_cache_dtype() const { return activation_dtype(); }

  // ---- memory
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(size_t bytes) = 0;
  // Host memory that CopyToDevice reads from fastest (CUDA: page-locked, so a copy is one DMA transfer that
  // does not stage through a pageable bounce buffer; CPU: ordinary memory). DeviceBuffer::data() is a host pointer.
  virtual absl::StatusOr<std::unique_ptr<DeviceBuffer>> AllocateStaging(size_t bytes);
  virtual void CopyToDevice(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void CopyToHost(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void Fill(void* device_dst, size_t bytes, unsigned char value) = 0;
  // Converts `count` float32 host values to `dtype` in device memory.
  virtual void UploadFloat(void* device_dst, DType dtype, const float* host_src, size_t count) = 0;
  // Converts a device matrix to float32 on the host (rows * cols values).
  virtual void DownloadFloat(float* host_dst, const DeviceMatrix& src) = 0;
  // Memory the device could still give, and where that figure comes from (CPU: the host's MemAvailable or a
  // container's cgroup headroom, whichever is less; CUDA: cudaMemGetInfo).
  virtual absl::StatusOr<MemoryBudget> AvailableMemory() = 0;

  // ---- ops (all shapes in rows x cols; `out` may not alias inputs unless stated)
  // out[i] = table[ids[i]] (+ position_table[positions[i]] when position_table.data != null).
  // ids, positions: [out.rows] device.
  void Embed(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table, const DeviceMatrix& position_table,
             const DeviceMatrix& out);
  // out = LayerNorm(in) * weight + bias; weight, bias: [1, cols].
  void LayerNorm(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps, const DeviceMatrix& out);
  // out = in / rms(in) * weight.
  void RmsNorm(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out);
  // In place, each head of each row: x[h] = x[h] / rms(x[h]) * weight. x: [rows, heads * head_dim] (may be
  // a column slice), weight: [1, head_dim] (Qwen3's q_norm / k_norm).
  void RmsNormHeads(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps);
  // out = in W^T + bias (+ out when accumulate). in: [M, K], weight: [N, K], bias: [1, N] or empty, out: [M, N].
  void Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, const DeviceMatrix& out,
              bool accumulate);
  // out = act(in W^T + bias): Linear, then Activate on out, as one op so that a device may apply the activation in
  // its GEMM's epilogue (CUDA: cuBLASLt's for GELU-tanh and ReLU).
  void LinearActivate(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                      const DeviceMatrix& out);
  // Rotates, in place, the first rotary_dim dims of every head of `x` ([rows, heads * head_dim]) by the angles of
  // positions[row] (rotate-half convention). positions: [rows] device; cos_sin: device float32 [any position + 1,
  // rotary_dim], row p = cos of p's rotary_dim / 2 angles, then their sines (RopeConfig::CosSinTable).
  void Rope(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions, const float* cos_sin);
  // x = act(x) in place.
  void Activate(Activation act, const DeviceMatrix& x);
  // out = act(in[:, :I]) * in[:, I:], in: [M, 2I], out: [M, I].
  void GatedActivate(Activation act, const DeviceMatrix& in, const DeviceMatrix& out);
  // x += y.
  void Add(const DeviceMatrix& x, const DeviceMatrix& y);
  // Writes k[i], v[i] ([rows, kv_heads * head_dim]) into the cache slot slots[i] (block * block_size + offset).
  void WriteKv(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv);
  // Called once per forward, before the layers' Attention calls, with the host's copy of the step's layout:
  // devices that schedule attention on the host (CUDA: FlashInfer's plan) do it here; the CPU needs nothing.
  // INVALID_ARGUMENT when the layout breaks AttentionParams' rules (rows of a sequence at positions that do not
  // end its cached context, hub rows not paired one to one).
  virtual absl::Status PlanAttention(const AttentionBatchLayout& /*layout*/) { return absl::OkStatus(); }
  void Attention(const AttentionParams& params);
  // A row index of GatherRows / ScatterRows that names no row: the gathered row is zeros, the scattered one is dropped.
  static constexpr int32_t kNoRow = -1;
  // dst[i] = src[rows[i]] (zeros where rows[i] is kNoRow), rows: [dst.rows] device.
  void GatherRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst);
  // dst[rows[i]] = src[i] (accumulate: +=; nothing where rows[i] is kNoRow), rows: [src.rows] device, distinct
  // apart from kNoRow.
  void ScatterRows(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate);
  // Every row of out = row ([1, out.cols]).
  void FillRows(const DeviceMatrix& row, const DeviceMatrix& out);
  // sum ([1, src.cols] float32) = the sum of src's rows ([rows, cols], rows >= 1), added in float32 row after row.
  // A mean-pooled embedding's rows are summed where they are computed: one row, not the chunk's, comes back.
  void SumRows(const DeviceMatrix& src, const DeviceMatrix& sum);

  // ---- sampling on the device
  // Whether SampleTokens picks tokens where the logits are: CUDA on the GPU (cuda/device_sampling.h says where its
  // tokens may differ from the host's), the CPU backend with the host's Sampler (the reference) on its threads.
  // Elsewhere callers download the logits and sample on the host with Sampler.
  virtual bool samples_on_device() const { return false; }
  // Picks the next token of rows[i] (its parameters, context, counter, seed and masks; its logits span is not
  // read) from row i of `logits` ([rows.size(), vocab] float32, dense, left unchanged) and copies only the ids back
  // into `tokens` ([rows.size()]), and where `logprobs` is not empty ([rows.size()]) each id's log-prob under the
  // model's distribution (the unprocessed logits; a backend may leave 0 for a row whose parameters ask for no
  // log-probs and whose input does not want one). Waits for the device and returns the step's errors.
  // UNIMPLEMENTED where samples_on_device() is false.
  absl::Status SampleTokens(const DeviceMatrix& logits, std::span<const SamplerInput> rows, std::span<int32_t> tokens,
                            std::span<float> logprobs = {});

  // ---- scoring on the device
  // scores[i] = ScoreRow(row i of `logits`, targets[i], top[i * n, (i + 1) * n)) (engine/sampling/logprobs.h: the
  // target's log-prob and rank, the row's argmax, its n most likely tokens; a target < 0 asks for no log-prob or
  // rank), n = top.size() / targets.size() (0 when `top` is empty). logits: [targets.size(), vocab] float32, dense,
  // left unchanged; targets, scores, top: host. Copies back only the scores and alternatives (12 + 8n bytes a row
  // where the row is 0.6 MB at a 151k vocabulary), so that scoring a prompt does not move its logits. Waits for the
  // device and returns the step's errors.
  absl::Status ScoreRows(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                         std::span<TokenLogprob> top = {});

  // ---- step graphs (CUDA graphs): the ops of a step recorded once and replayed, so that a decode step costs one
  // launch instead of one per op. Every pointer and launch shape an op is given is recorded as it was: a replay
  // reads the memory those pointers point to now (the caller rewrites its metadata there before replaying).
  // Whether this device records step graphs.
  virtual bool records_step_graphs() const { return false; }
  // From here until EndStepGraph the ops are recorded, not run. No copies to the host, no Synchronize in between.
  virtual absl::Status BeginStepGraph();
  // The ops recorded since BeginStepGraph.
  virtual absl::StatusOr<std::unique_ptr<StepGraph>> EndStepGraph();
  // Queues `graph`'s ops again. FAILED_PRECONDITION when the device's own scratch the graph points into has moved
  // since it was recorded (the caller records it again).
  virtual absl::Status ReplayStepGraph(StepGraph& graph);

  // Waits for queued work; reports the first failed op check, then asynchronous device errors.
  absl::Status Synchronize();
  // The largest attention head size the device's kernels take (even sizes only).
  virtual int max_attention_head_dim() const = 0;

 protected:
  // The device kernels behind the ops above, called with checked arguments.
  virtual void EmbedImpl(const int32_t* ids, const int32_t* positions, const DeviceMatrix& table,
                         const DeviceMatrix& position_table, const DeviceMatrix& out) = 0;
  virtual void LayerNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, float eps,
                             const DeviceMatrix& out) = 0;
  virtual void RmsNormImpl(const DeviceMatrix& in, const DeviceMatrix& weight, float eps, const DeviceMatrix& out) = 0;
  virtual void RmsNormHeadsImpl(const DeviceMatrix& x, int heads, int head_dim, const DeviceMatrix& weight, float eps) = 0;
  virtual void LinearImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                          const DeviceMatrix& out, bool accumulate) = 0;
  // Default: LinearImpl, then ActivateImpl.
  virtual void LinearActivateImpl(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias, Activation act,
                                  const DeviceMatrix& out);
  virtual void RopeImpl(const DeviceMatrix& x, int heads, int head_dim, int rotary_dim, const int32_t* positions,
                        const float* cos_sin) = 0;
  virtual void ActivateImpl(Activation act, const DeviceMatrix& x) = 0;
  virtual void GatedActivateImpl(Activation act, const DeviceMatrix& in, const DeviceMatrix& out) = 0;
  virtual void AddImpl(const DeviceMatrix& x, const DeviceMatrix& y) = 0;
  virtual void WriteKvImpl(const DeviceMatrix& k, const DeviceMatrix& v, const int32_t* slots, const PagedKvLayer& kv) = 0;
  virtual void AttentionImpl(const AttentionParams& params) = 0;
  virtual void GatherRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst) = 0;
  virtual void ScatterRowsImpl(const DeviceMatrix& src, const int32_t* rows, const DeviceMatrix& dst, bool accumulate) = 0;
  virtual void FillRowsImpl(const DeviceMatrix& row, const DeviceMatrix& out) = 0;
  virtual void SumRowsImpl(const DeviceMatrix& src, const DeviceMatrix& sum) = 0;
  virtual absl::Status SampleTokensImpl(const DeviceMatrix& logits, std::span<const SamplerInput> rows,
                                        std::span<int32_t> tokens, std::span<float> logprobs);
  virtual absl::Status ScoreRowsImpl(const DeviceMatrix& logits, std::span<const int32_t> targets, std::span<RowScore> scores,
                                     std::span<TokenLogprob> top) = 0;
  // Waits for the device; reports its asynchronous errors.
  virtual absl::Status SynchronizeImpl() = 0;

 private:
  // Keeps the first failed check until Synchronize; true when `check` passed.
  bool Passes(absl::Status check);

  absl::Status failed_check_;
};

// How the CPU backend stores weight matrices. f16 and bf16 halve the bytes that bound a decode step; f16 keeps
// 11 significant bits to bf16's 8 (measured: bf16 weights move the fixtures' logits up to 0.084, f16 within
// 0.05). kAuto: on the CPU f16 where the CPU converts halves in hardware (F16C), else float32; on the GPU see
// PlanCudaDType.
// kInt8: a quarter of the bytes, one float scale per output row (max |w| / 127), widened and scaled in registers
// (CPU only).
enum class WeightDTypeChoice { kAuto, kF32, kF16, kBF16, kInt8 };
absl::StatusOr<WeightDTypeChoice> ParseWeightDType(absl::string_view name);  // "auto" | "f32" | "f16" | "bf16" | "int8"
absl::string_view WeightDTypeChoiceName(WeightDTypeChoice choice);

// How the KV cache stores keys and values. f16 and bf16 take half the bytes per cached token, so twice the tokens
// fit in the same memory; attention widens them to float32 as it reads them. f16 keeps 11 significant bits to
// bf16's 8: over 256-token sequences of the fixtures bf16 moves logits up to 0.32, f16 up to 0.047
// (tests/conformance/cpu_kv_half_test.cc; values beyond f16's range, 65504, are saturated). kAuto: on the CPU f16
// when the weight matrices are narrower than float32, float32 with float32 weights; the GPU keeps bf16.
enum class KvDTypeChoice { kAuto, kF32, kF16, kBF16 };
absl::StatusOr<KvDTypeChoice> ParseKvCacheDType(absl::string_view name);  // "auto" | "f32" | "f16" | "bf16"
absl::string_view KvDTypeChoiceName(KvDTypeChoice choice);

struct BackendOptions {
  int cpu_threads = 0;  // CPU: threads of the parallel loops; 0 = OMP_NUM_THREADS, else what the process may use
  // CPU: the weight matrices' storage (the binaries default to auto). GPU: the one 16-bit type of weights,
  // activations and KV cache (PlanCudaDType).
  WeightDTypeChoice weight_dtype = WeightDTypeChoice::kF32;
  KvDTypeChoice kv_cache_dtype = KvDTypeChoice::kAuto;  // CPU: f32, f16 or bf16 (auto: f32 beside f32 weights)
  DType checkpoint_dtype = DType::kF32;  // what the checkpoint stores its matrices in (Checkpoint::MatrixDType)
};

// The GPU computes in one 16-bit type, weights, activations and KV cache alike. f16 / bf16 ask for it; auto (and
// f32, the library's default choice) follows the checkpoint: bf16 for bf16 (and FP8) checkpoints, f16 for f16 and
// float32 ones, whose weights bf16 would round to 8 significant bits (on the fixtures that alone moves logits
// past 5e-2; f16 keeps 11, like the CPU's f16 weights). int8 weights and f32 or f16/bf16-mismatched KV caches are
// INVALID_ARGUMENT naming the flag.
absl::StatusOr<DType> PlanCudaDType(const BackendOptions& options);

// Creates the backend for `kind`; CUDA fails with FAILED_PRECONDITION where it was not built or no GPU is present.
absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(DeviceKind kind, const BackendOptions& options = {});

}  // namespace arach
