// Row-major GEMMs `out = in W^T (+ bias) (+ out)` through cuBLASLt, with one handle per backend and a
// plan (descriptors, layouts, algorithm) cached per shape with the row count rounded up to its bucket (a power of
// two): the heuristic runs once per bucket, never for each new token count of a step; a call sets its own row
// count in the plan's layouts, checked once per count with cublasLtMatmulAlgoCheck (a count the bucket's algorithm
// does not take gets a plan of its own).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/backend/cuda/cublaslt_library.h"
#include "engine/backend/cuda/gemm_epilogue.h"
#include "engine/backend/device_matrix.h"

namespace arach::cuda {

class CublasLtGemm {
 public:
  // `workspace_bytes` of device memory are reserved for cuBLASLt's split-K and similar algorithms.
  static absl::StatusOr<std::unique_ptr<CublasLtGemm>> Create(size_t workspace_bytes);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // in: [M, K], weight: [N, K] (contiguous), bias: [1, N] or empty, all bf16 or all f16; out: [M, N] of that type
  // or f32.
  // accumulate adds to what `out` holds (beta = 1); an epilogue (not with accumulate) applies its function to the
  // sum of the product and the bias.
  absl::Status Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                      const DeviceMatrix& out, bool accumulate, cudaStream_t stream, GemmEpilogue epilogue = GemmEpilogue::kNone);

  size_t cached_plans() const { return plans_.size(); }

  // The row count a plan is made for: the next power of two (rows >= 1).
  static int64_t RowBucket(int64_t rows);

 private:
  // Everything that selects an algorithm.
  // M (its bucket, or the exact count where the bucket's algorithm does not take it) N K, lda ldb ldc, input and
  // output dtypes, the cublasLtEpilogue_t (bias and point-wise function), alignment (bytes, <= 256) of the weight,
  // input, output and bias pointers (cuBLASLt's heuristic reads the bias pointer's alignment from the descriptor).
  using ShapeKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int, int, int, int, int, int, int>;
  struct Plan;

  CublasLtGemm() = default;
  // A plan for `key`, made (heuristic and all) with `bias` (null when the epilogue has none) in its descriptor.
  absl::StatusOr<Plan*> PlanFor(const ShapeKey& key, const void* bias);
  // The plan of `key`'s bucket with its layouts set to `rows` rows and `bias` in its descriptor, if its algorithm
  // takes them; else (or when the bucket's plan cannot be made) a plan for exactly `rows`.
  absl::StatusOr<Plan*> PlanForRows(ShapeKey key, int64_t rows, const void* bias);

  std::unique_ptr<CublasLtLibrary> lt_;  // outlives the plans and the handle (declared first, destroyed last)
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  std::map<ShapeKey, std::unique_ptr<Plan>> plans_;
};

}  // namespace arach::cuda
