// cuBLASLt is opened when a CUDA backend is made, not linked: a process that runs a model on the CPU never loads
// it (its load costs ~0.35 s and ~210 MB resident), and CublasLtLibrary::Load finds the build's major version with
// every entry point the GEMMs call. CUDA builds only; no GPU needed (loading the library touches no device).
#include <dlfcn.h>

#include <string>
#include <utility>

#include "engine/backend/cuda/cublaslt_library.h"
#include "engine/bundle/model_bundle.h"
#include "engine/runner/offline_session.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"
#include "tools/make_model/make_model.h"

namespace arach {
namespace {

// Whether this process has cuBLASLt loaded (RTLD_NOLOAD opens only a library already there).
bool CublasLtIsLoaded() {
  void* handle = dlopen(cuda::CublasLtFileName().c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle != nullptr) dlclose(handle);  // NOLOAD's open counts as one
  return handle != nullptr;
}

// First in this file: the test after it loads the library into the process.
TEST(CublasLtLibrary, AModelRunOnTheCpuNeverLoadsIt) {
  EXPECT_FALSE(CublasLtIsLoaded()) << cuda::CublasLtFileName() << " is linked into the executable";
  testing::ScopedTempDir dir;
  MakeModelOptions options;
  options.arch = "gpt2";
  options.out_dir = dir.path() + "/model";
  ASSERT_TRUE(MakeModel(options).ok());
  LoadModelOptions load;
  load.device = DeviceKind::kCpu;
  absl::StatusOr<ModelBundle> model = LoadModelBundle(options.out_dir, load);
  ASSERT_TRUE(model.ok()) << model.status();
  OfflineSession session(*model->runner);
  absl::StatusOr<std::vector<float>> logits = session.Logits({5, 17, 300, 42});
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_FALSE(CublasLtIsLoaded()) << "loaded by running a model on the CPU";
}

TEST(CublasLtLibrary, LoadsTheBuildsMajorVersionWithEveryEntryPoint) {
  absl::StatusOr<std::unique_ptr<cuda::CublasLtLibrary>> lt = cuda::CublasLtLibrary::Load();
  ASSERT_TRUE(lt.ok()) << lt.status();
  EXPECT_TRUE(CublasLtIsLoaded());
  const cuda::CublasLtLibrary& library = **lt;
  EXPECT_EQ(library.GetVersion() / 10000, static_cast<size_t>(CUBLAS_VER_MAJOR));
  // Each entry is the library's own symbol of that name.
  const std::pair<const void*, const char*> entries[] = {
      {reinterpret_cast<const void*>(library.Create), "cublasLtCreate"},
      {reinterpret_cast<const void*>(library.Destroy), "cublasLtDestroy"},
      {reinterpret_cast<const void*>(library.MatmulDescCreate), "cublasLtMatmulDescCreate"},
      {reinterpret_cast<const void*>(library.MatmulDescDestroy), "cublasLtMatmulDescDestroy"},
      {reinterpret_cast<const void*>(library.MatmulDescSetAttribute), "cublasLtMatmulDescSetAttribute"},
      {reinterpret_cast<const void*>(library.MatrixLayoutCreate), "cublasLtMatrixLayoutCreate"},
      {reinterpret_cast<const void*>(library.MatrixLayoutDestroy), "cublasLtMatrixLayoutDestroy"},
      {reinterpret_cast<const void*>(library.MatrixLayoutSetAttribute), "cublasLtMatrixLayoutSetAttribute"},
      {reinterpret_cast<const void*>(library.MatmulPreferenceCreate), "cublasLtMatmulPreferenceCreate"},
      {reinterpret_cast<const void*>(library.MatmulPreferenceDestroy), "cublasLtMatmulPreferenceDestroy"},
      {reinterpret_cast<const void*>(library.MatmulPreferenceSetAttribute), "cublasLtMatmulPreferenceSetAttribute"},
      {reinterpret_cast<const void*>(library.MatmulAlgoGetHeuristic), "cublasLtMatmulAlgoGetHeuristic"},
      {reinterpret_cast<const void*>(library.MatmulAlgoCheck), "cublasLtMatmulAlgoCheck"},
      {reinterpret_cast<const void*>(library.Matmul), "cublasLtMatmul"}};
  for (const auto& [entry, name] : entries) {
    Dl_info info{};
    ASSERT_NE(dladdr(entry, &info), 0) << name << " points nowhere";
    EXPECT_STREQ(info.dli_sname, name);
    EXPECT_NE(std::string(info.dli_fname).find("libcublasLt"), std::string::npos) << name << " is in " << info.dli_fname;
  }
}

}  // namespace
}  // namespace arach
