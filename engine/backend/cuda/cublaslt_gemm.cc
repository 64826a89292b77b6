// Row-major out[M, N] = in[M, K] . W[N, K]^T is, in cuBLASLt's column-major terms,
// out^T (N x M, ld = out.stride) = op(W) (N x K from the K x N column-major view, transposed) . in^T (K x M):
// transa = T, transb = N, m = N, n = M, k = K.
#include "engine/backend/cuda/cublaslt_gemm.h"

#include "absl/strings/str_cat.h"
#include "engine/backend/cuda/cuda_status.h"
#include "engine/core/status.h"

namespace arach::cuda {

struct CublasLtGemm::Plan {
  explicit Plan(const CublasLtLibrary& library) : lt(library) {}
  const CublasLtLibrary& lt;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  int64_t rows = 0;                   // what the B and C layouts are set to now
  std::map<int64_t, bool> rows_taken;  // row counts checked against the algorithm (cublasLtMatmulAlgoCheck)
  ~Plan() {
    if (c != nullptr) lt.MatrixLayoutDestroy(c);
    if (b != nullptr) lt.MatrixLayoutDestroy(b);
    if (a != nullptr) lt.MatrixLayoutDestroy(a);
    if (desc != nullptr) lt.MatmulDescDestroy(desc);
  }
};

namespace {

cudaDataType_t CudaType(DType dtype) {
  return dtype == DType::kF32 ? CUDA_R_32F : dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_16BF;
}

cublasLtEpilogue_t EpilogueOf(bool has_bias, GemmEpilogue epilogue) {
  switch (epilogue) {
    case GemmEpilogue::kNone: return has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case GemmEpilogue::kGeluTanh: return has_bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case GemmEpilogue::kRelu: return has_bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool HasBias(cublasLtEpilogue_t epilogue) { return (epilogue & CUBLASLT_EPILOGUE_BIAS) != 0; }

// Points the descriptor's bias at `bias` (epilogues with a bias only).
absl::Status SetBiasPointer(const CublasLtLibrary& lt, cublasLtMatmulDesc_t desc, cublasLtEpilogue_t epilogue, const void* bias) {
  if (!HasBias(epilogue)) return absl::OkStatus();
  ARACH_CUBLAS_RETURN_IF_ERROR(lt.MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
                               "BIAS_POINTER");
  return absl::OkStatus();
}

// The largest power of two, at most 256, dividing the address (cuBLASLt assumes 256 unless told).
int Alignment(const void* pointer) {
  const uintptr_t address = reinterpret_cast<uintptr_t>(pointer);
  int alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CublasLtGemm>> CublasLtGemm::Create(size_t workspace_bytes) {
  std::unique_ptr<CublasLtGemm> gemm(new CublasLtGemm());
  ARACH_ASSIGN_OR_RETURN(gemm->lt_, CublasLtLibrary::Load());
  ARACH_CUBLAS_RETURN_IF_ERROR(gemm->lt_->Create(&gemm->handle_), "cublasLtCreate");
  if (workspace_bytes > 0) {
    ARACH_CUDA_RETURN_IF_ERROR(cudaMalloc(&gemm->workspace_, workspace_bytes), "allocating the cuBLASLt workspace");
    gemm->workspace_bytes_ = workspace_bytes;
  }
  return gemm;
}

CublasLtGemm::~CublasLtGemm() {
  plans_.clear();
  if (workspace_ != nullptr) cudaFree(workspace_);
  if (handle_ != nullptr) lt_->Destroy(handle_);
}

absl::StatusOr<CublasLtGemm::Plan*> CublasLtGemm::PlanFor(const ShapeKey& key, const void* bias) {
  auto found = plans_.find(key);
  if (found != plans_.end()) {
    ARACH_RETURN_IF_ERROR(SetBiasPointer(*lt_, found->second->desc, static_cast<cublasLtEpilogue_t>(std::get<8>(key)), bias));
    return found->second.get();
  }
  const auto [m_rows, n_out, k_in, lda, ldb, ldc, in_dtype, out_dtype, epilogue_code, align_a, align_b, align_c, align_bias] =
      key;
  (void)align_bias;  // selects the plan; the heuristic reads the pointer itself
  const cublasLtEpilogue_t epilogue = static_cast<cublasLtEpilogue_t>(epilogue_code);
  const cudaDataType_t ab_type = CudaType(static_cast<DType>(in_dtype));
  auto plan = std::make_unique<Plan>(*lt_);
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F), "MatmulDescCreate");
  const cublasOperation_t transpose = CUBLAS_OP_T, keep = CUBLAS_OP_N;
  ARACH_CUBLAS_RETURN_IF_ERROR(
      lt_->MatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &transpose, sizeof(transpose)), "TRANSA");
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &keep, sizeof(keep)),
                               "TRANSB");
  ARACH_CUBLAS_RETURN_IF_ERROR(
      lt_->MatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)), "EPILOGUE");
  if (HasBias(epilogue)) {
    const cudaDataType_t bias_type = ab_type;
    ARACH_CUBLAS_RETURN_IF_ERROR(
        lt_->MatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, sizeof(bias_type)),
        "BIAS_DATA_TYPE");
    ARACH_RETURN_IF_ERROR(SetBiasPointer(*lt_, plan->desc, epilogue, bias));
  }
  const cudaDataType_t c_type = CudaType(static_cast<DType>(out_dtype));
  // Column-major views: A = W as K x N (ld lda), B = in as K x M (ld ldb), C = out as N x M (ld ldc).
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatrixLayoutCreate(&plan->a, ab_type, k_in, n_out, lda), "layout A");
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatrixLayoutCreate(&plan->b, ab_type, k_in, m_rows, ldb), "layout B");
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatrixLayoutCreate(&plan->c, c_type, n_out, m_rows, ldc), "layout C");

  cublasLtMatmulPreference_t preference = nullptr;
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatmulPreferenceCreate(&preference), "PreferenceCreate");
  lt_->MatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                       sizeof(workspace_bytes_));
  const uint32_t alignments[3] = {static_cast<uint32_t>(align_a), static_cast<uint32_t>(align_b), static_cast<uint32_t>(align_c)};
  lt_->MatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignments[0], sizeof(uint32_t));
  lt_->MatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignments[1], sizeof(uint32_t));
  lt_->MatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignments[2], sizeof(uint32_t));
  lt_->MatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignments[2], sizeof(uint32_t));
  cublasLtMatmulHeuristicResult_t result{};
  int found_algos = 0;
  const cublasStatus_t heuristic = lt_->MatmulAlgoGetHeuristic(handle_, plan->desc, plan->a, plan->b, plan->c, plan->c,
                                                                  preference, 1, &result, &found_algos);
  lt_->MatmulPreferenceDestroy(preference);
  ARACH_CUBLAS_RETURN_IF_ERROR(heuristic, "AlgoGetHeuristic");
  if (found_algos == 0) {
    return absl::InternalError(absl::StrCat("cublasLt: no algorithm for a ", m_rows, "x", k_in, " by ", n_out, "x", k_in,
                                            " GEMM (", DTypeName(static_cast<DType>(in_dtype)), " in, ", DTypeName(static_cast<DType>(out_dtype)), " out, epilogue ", epilogue_code, ")"));
  }
  plan->algo = result.algo;
  plan->rows = m_rows;
  Plan* raw = plan.get();
  plans_.emplace(key, std::move(plan));
  return raw;
}

int64_t CublasLtGemm::RowBucket(int64_t rows) {
  int64_t bucket = 1;
  while (bucket < rows) bucket *= 2;
  return bucket;
}

absl::StatusOr<CublasLtGemm::Plan*> CublasLtGemm::PlanForRows(ShapeKey key, int64_t rows, const void* bias) {
  std::get<0>(key) = RowBucket(rows);
  absl::StatusOr<Plan*> bucket = PlanFor(key, bias);
  if (bucket.ok()) {
    Plan* plan = *bucket;
    if (plan->rows != rows) {
      const uint64_t cols = static_cast<uint64_t>(rows);  // the row-major rows are the column-major views' columns
      ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatrixLayoutSetAttribute(plan->b, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols)),
                                   "layout B rows");
      ARACH_CUBLAS_RETURN_IF_ERROR(lt_->MatrixLayoutSetAttribute(plan->c, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, sizeof(cols)),
                                   "layout C rows");
      plan->rows = rows;
    }
    auto [checked, inserted] = plan->rows_taken.emplace(rows, false);
    if (inserted) {
      cublasLtMatmulHeuristicResult_t result{};
      checked->second = lt_->MatmulAlgoCheck(handle_, plan->desc, plan->a, plan->b, plan->c, plan->c, &plan->algo, &result) ==
                            CUBLAS_STATUS_SUCCESS &&
                        result.workspaceSize <= workspace_bytes_;
    }
    if (checked->second) return plan;
  }
  std::get<0>(key) = rows;  // a plan of its own for this count
  return PlanFor(key, bias);
}

absl::Status CublasLtGemm::Linear(const DeviceMatrix& in, const DeviceMatrix& weight, const DeviceMatrix& bias,
                                  const DeviceMatrix& out, bool accumulate, cudaStream_t stream, GemmEpilogue epilogue) {
  if (in.rows == 0) return absl::OkStatus();
  const bool half_inputs = in.dtype == DType::kBF16 || in.dtype == DType::kF16;
  if (!half_inputs || weight.dtype != in.dtype || (out.dtype != in.dtype && out.dtype != DType::kF32) ||
      (bias.data != nullptr && bias.dtype != in.dtype)) {
    return absl::InvalidArgumentError(
        "cublasLt Linear: input, weight and bias must share one 16-bit type (bf16 or f16), the output that type or f32");
  }
  if (accumulate && epilogue != GemmEpilogue::kNone) {
    return absl::InvalidArgumentError("cublasLt Linear: an activation epilogue would apply to the accumulated sum");
  }
  const bool has_bias = bias.data != nullptr;
  const ShapeKey key{in.rows,   weight.rows, in.cols,  weight.stride,          in.stride,          out.stride,
                     static_cast<int>(in.dtype), static_cast<int>(out.dtype), static_cast<int>(EpilogueOf(has_bias, epilogue)),
                     Alignment(weight.data),
                     Alignment(in.data), Alignment(out.data), has_bias ? Alignment(bias.data) : 256};
  ARACH_ASSIGN_OR_RETURN(Plan * plan, PlanForRows(key, in.rows, bias.data));
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  ARACH_CUBLAS_RETURN_IF_ERROR(lt_->Matmul(handle_, plan->desc, &alpha, weight.data, plan->a, in.data, plan->b, &beta, out.data,
                                              plan->c, out.data, plan->c, &plan->algo, workspace_, workspace_bytes_, stream),
                               "Matmul");
  return absl::OkStatus();
}

}  // namespace arach::cuda
