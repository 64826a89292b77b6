#include "engine/backend/cuda/cublaslt_library.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "engine/core/status.h"

namespace arach::cuda {
namespace {

// The folder of the shared library that holds the CUDA runtime (empty where none is known).
std::string CudaRuntimeFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&cudaRuntimeGetVersion), &info) == 0 || info.dli_fname == nullptr) return "";
  return std::filesystem::path(info.dli_fname).parent_path().string();
}

// What the loader said about the last dlopen that failed.
std::string LoaderError() {
  const char* error = dlerror();
  return error != nullptr ? error : "not found";
}

// Points `*entry` at `name` in `handle`.
template <typename Function>
absl::Status Resolve(void* handle, const char* name, Function* entry) {
  *entry = reinterpret_cast<Function>(dlsym(handle, name));
  if (*entry == nullptr) return absl::NotFoundError(absl::StrCat(CublasLtFileName(), " has no ", name));
  return absl::OkStatus();
}

}  // namespace

std::string CublasLtFileName() { return absl::StrCat("libcublasLt.so.", CUBLAS_VER_MAJOR); }

absl::StatusOr<std::unique_ptr<CublasLtLibrary>> CublasLtLibrary::Load() {
  const std::string file = CublasLtFileName();
  std::string searched = "the loader's search path";
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = handle == nullptr ? LoaderError() : "";
  if (handle == nullptr) {
    if (const std::string folder = CudaRuntimeFolder(); !folder.empty()) {
      handle = dlopen((std::filesystem::path(folder) / file).c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) why = LoaderError();
      absl::StrAppend(&searched, " and ", folder, " (the CUDA runtime's folder)");
    }
  }
  if (handle == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("cannot load cuBLASLt (", file, ") from ", searched, ": ", why,
                                                      "; install the CUDA toolkit's cuBLAS or add its folder to LD_LIBRARY_PATH"));
  }
  std::unique_ptr<CublasLtLibrary> lt(new CublasLtLibrary());
  lt->handle_ = handle;
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtGetVersion", &lt->GetVersion));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtCreate", &lt->Create));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtDestroy", &lt->Destroy));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulDescCreate", &lt->MatmulDescCreate));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulDescDestroy", &lt->MatmulDescDestroy));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulDescSetAttribute", &lt->MatmulDescSetAttribute));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatrixLayoutCreate", &lt->MatrixLayoutCreate));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatrixLayoutDestroy", &lt->MatrixLayoutDestroy));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatrixLayoutSetAttribute", &lt->MatrixLayoutSetAttribute));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulPreferenceCreate", &lt->MatmulPreferenceCreate));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulPreferenceDestroy", &lt->MatmulPreferenceDestroy));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulPreferenceSetAttribute", &lt->MatmulPreferenceSetAttribute));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulAlgoGetHeuristic", &lt->MatmulAlgoGetHeuristic));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmulAlgoCheck", &lt->MatmulAlgoCheck));
  ARACH_RETURN_IF_ERROR(Resolve(handle, "cublasLtMatmul", &lt->Matmul));
  // The header's major version is the one the file name asked for; a library that reports another is not it.
  const size_t version = lt->GetVersion();
  if (version / 10000 != CUBLAS_VER_MAJOR) {
    return absl::FailedPreconditionError(absl::StrCat(file, " reports version ", version, ", not the ", CUBLAS_VER_MAJOR,
                                                      ".x this build was compiled against"));
  }
  return lt;
}

CublasLtLibrary::~CublasLtLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace arach::cuda
