// A Hugging Face checkpoint folder: one `model.safetensors`, or shards listed by
// `model.safetensors.index.json`, or (failing both) every `*.safetensors` file in the folder.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/model/safetensors.h"

namespace arach {

class Checkpoint {
 public:
  // Opens the weights of the model folder `dir`. Errors name the file that failed.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::string& dir);
  // Opens a single safetensors file (an adapter, a hub embedding, reference outputs).
  static absl::StatusOr<std::unique_ptr<Checkpoint>> OpenFile(const std::string& path);

  bool Has(const std::string& name) const;
  // The tensor named `name`, or NotFound naming the tensor and the checkpoint.
  absl::StatusOr<const TensorInfo*> Find(const std::string& name) const;
  // The file that holds `name` (for error messages); empty when absent.
  std::string FileOf(const std::string& name) const;
  // All tensor names, sorted.
  std::vector<std::string> Names() const;
  // The dtype most of the checkpoint's weight matrices (2-D tensors) are stored in: what "the checkpoint's
  // dtype" means when a device picks its own (F32 for a checkpoint without matrices).
  DType MatrixDType() const;
  // Where the weights came from (folder or file), for messages.
  const std::string& source() const { return source_; }

  // Reads tensor `name` as float32, converting F16/BF16. When `expected_shape` is non-empty the
  // stored shape must equal it; a mismatch is an error naming the file, the tensor and both shapes.
  absl::StatusOr<std::vector<float>> ReadFloat(const std::string& name,
                                               const std::vector<int64_t>& expected_shape = {}) const;

 private:
  explicit Checkpoint(std::string source) : source_(std::move(source)) {}
  absl::Status AddFile(const std::string& path);

  std::string source_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  // name -> index into files_
  std::map<std::string, size_t> index_;
};

std::string ShapeToString(const std::vector<int64_t>& shape);

}  // namespace arach
