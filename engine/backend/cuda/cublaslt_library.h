// cuBLASLt's entry points, resolved from the shared library when a CUDA backend is made instead of linked into every
// executable. libcublasLt is ~540 MB; loading it runs its relocations and initialisers, ~0.35 s and ~210 MB of
// resident memory in each process, which a CPU-only process (the CPU backend, every CPU test) would pay for nothing.
#pragma once

#include <cublasLt.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace arach::cuda {

class CublasLtLibrary {
 public:
  // Opens cuBLASLt of this build's major version (CublasLtFileName) through the loader's search (LD_LIBRARY_PATH,
  // the executable's run path, the system's folders), else from the folder the CUDA runtime was loaded from, and
  // resolves every entry point below. The error names the file and what the loader said, or the missing symbol.
  static absl::StatusOr<std::unique_ptr<CublasLtLibrary>> Load();
  ~CublasLtLibrary();
  CublasLtLibrary(const CublasLtLibrary&) = delete;
  CublasLtLibrary& operator=(const CublasLtLibrary&) = delete;

  decltype(&::cublasLtGetVersion) GetVersion = nullptr;
  decltype(&::cublasLtCreate) Create = nullptr;
  decltype(&::cublasLtDestroy) Destroy = nullptr;
  decltype(&::cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&::cublasLtMatmulAlgoCheck) MatmulAlgoCheck = nullptr;
  decltype(&::cublasLtMatmul) Matmul = nullptr;

 private:
  CublasLtLibrary() = default;
  void* handle_ = nullptr;  // dlopen's
};

// The shared library's name for the cuBLAS major version this build compiled against ("libcublasLt.so.13").
std::string CublasLtFileName();

}  // namespace arach::cuda
