// ModelRunner's LoRA terms (engine/model/lora_adapter.h): each adapter's rows gathered, passed through its A and B,
// and added back to the projection's output. Built from the backend's ops (GatherRows, Linear, ScatterRows), so every
// device runs it without a kernel of its own.
#include "absl/strings/str_cat.h"
#include "engine/core/status.h"
#include "engine/runner/model_runner.h"

namespace arach {

absl::Status ModelRunner::AddLora(int index, LoraAdapter adapter) {
  std::vector<DeviceLoraAdapter>& loras = weights_->loras;
  if (index < 0 || (index < static_cast<int>(loras.size()) && !loras[static_cast<size_t>(index)].layers.empty())) {
    return absl::InternalError(absl::StrCat("LoRA index ", index, " is taken"));
  }
  ARACH_ASSIGN_OR_RETURN(DeviceLoraAdapter device, UploadLora(*backend_, std::move(adapter)));
  ARACH_RETURN_IF_ERROR(backend_->Synchronize());  // an upload that failed on the device is reported here
  if (index >= static_cast<int>(loras.size())) loras.resize(static_cast<size_t>(index) + 1);
  loras[static_cast<size_t>(index)] = std::move(device);
  return absl::OkStatus();
}

void ModelRunner::RemoveLora(int index) {
  if (index < 0 || index >= static_cast<int>(weights_->loras.size())) return;
  weights_->loras[static_cast<size_t>(index)] = DeviceLoraAdapter{};  // its views and memory go together
}

bool ModelRunner::LoraChanges(int l, LoraSite site, const StepInputs& in) const {
  for (const LoraRows& group : in.lora_groups) {
    if (weights_->loras[group.adapter].layers[l][static_cast<int>(site)].a.data != nullptr) return true;
  }
  return false;
}

absl::Status ModelRunner::ApplyLora(int l, LoraSite site, const DeviceMatrix& input, const DeviceMatrix& output,
                                    const StepInputs& in) {
  Backend& b = *backend_;
  for (const LoraRows& group : in.lora_groups) {
    const DeviceLoraProjection& p = weights_->loras[group.adapter].layers[l][static_cast<int>(site)];
    if (p.a.data == nullptr) continue;
    const int32_t* rows = in.lora_rows + group.start;  // [group.count]
    ARACH_ASSIGN_OR_RETURN(DeviceMatrix x, workspace_->Matrix(Scratch::kLoraX, group.count, input.cols));
    ARACH_ASSIGN_OR_RETURN(DeviceMatrix inner, workspace_->Matrix(Scratch::kLoraInner, group.count, p.a.rows));
    ARACH_ASSIGN_OR_RETURN(DeviceMatrix delta, workspace_->Matrix(Scratch::kLoraDelta, group.count, output.cols));
    b.GatherRows(input, rows, x);                                      // [n, in]
    b.Linear(x, p.a, DeviceMatrix{}, inner, /*accumulate=*/false);     // [n, R] = x A^T
    b.Linear(inner, p.b, DeviceMatrix{}, delta, /*accumulate=*/false);  // [n, out] = scale (x A^T) B^T
    b.ScatterRows(delta, rows, output, /*accumulate=*/true);
  }
  return absl::OkStatus();
}

}  // namespace arach
