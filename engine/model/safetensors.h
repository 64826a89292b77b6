// Reader and writer for the safetensors format (https://huggingface.co/docs/safetensors):
//   [u64 little-endian header length N][N bytes JSON header][raw tensor data]
// The header maps each tensor name to {dtype, shape, data_offsets=[begin, end)} relative to the data.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/dtype.h"
#include "engine/core/mapped_file.h"

namespace arach {

// One tensor of a safetensors file; `data` points into the mapped file.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const unsigned char* data = nullptr;  // num_bytes bytes, little-endian elements
  size_t num_bytes = 0;

  int64_t NumElements() const;
  std::string ShapeString() const;  // e.g. "[768, 2304]"
};

// The parsed header of a safetensors buffer. Every offset and size is validated against the buffer.
struct SafetensorsHeader {
  std::map<std::string, TensorInfo> tensors;
  std::map<std::string, std::string> metadata;  // the optional "__metadata__" string map
};

// Parses `size` bytes at `bytes` (a whole safetensors file). `source` names the file in errors.
absl::StatusOr<SafetensorsHeader> ParseSafetensors(const unsigned char* bytes, size_t size,
                                                   const std::string& source);

// A memory-mapped safetensors file.
class SafetensorsFile {
 public:
  static absl::StatusOr<std::unique_ptr<SafetensorsFile>> Open(const std::string& path);

  const std::string& path() const { return file_->path(); }
  const std::map<std::string, TensorInfo>& tensors() const { return header_.tensors; }
  const std::map<std::string, std::string>& metadata() const { return header_.metadata; }
  // nullptr when the file has no tensor of that name.
  const TensorInfo* Find(const std::string& name) const;

 private:
  SafetensorsFile(std::unique_ptr<MappedFile> file, SafetensorsHeader header)
      : file_(std::move(file)), header_(std::move(header)) {}
  std::unique_ptr<MappedFile> file_;
  SafetensorsHeader header_;
};

// A tensor to write: `data` holds NumElements(shape) elements of `dtype`.
struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// Writes a safetensors file in one go.
absl::Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                              const std::map<std::string, std::string>& metadata = {});

// Writes a safetensors file tensor by tensor, so that large checkpoints never sit whole in memory:
//   SafetensorsStreamWriter w; w.Declare(...) for every tensor; w.Open(path); w.Append(data) in order.
class SafetensorsStreamWriter {
 public:
  void Declare(std::string name, DType dtype, std::vector<int64_t> shape);
  // Writes the header; tensors must then be appended in declaration order.
  absl::Status Open(const std::string& path, const std::map<std::string, std::string>& metadata = {});
  // Appends the next declared tensor's bytes (exactly its size).
  absl::Status Append(const void* data, size_t num_bytes);
  // Checks that every declared tensor was written and closes the file.
  absl::Status Close();
  ~SafetensorsStreamWriter();

 private:
  struct Declared {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    size_t num_bytes;
  };
  std::vector<Declared> declared_;
  size_t next_ = 0;
  std::string path_;
  std::FILE* out_ = nullptr;
};

}  // namespace arach
