#include "engine/model/safetensors.h"

#include <cstdio>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/status.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace {

using json = nlohmann::json;

// Headers above this size are refused (real checkpoints use well under 1 MiB).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

absl::Status HeaderError(const std::string& source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": invalid safetensors header: ", what));
}

absl::Status TensorError(const std::string& source, const std::string& name, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": tensor \"", name, "\": ", what));
}

absl::StatusOr<TensorInfo> ParseTensorEntry(const std::string& source, const std::string& name,
                                            const json& entry, const unsigned char* data,
                                            size_t data_size) {
  if (!entry.is_object()) return TensorError(source, name, "entry is not an object");
  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) {
    return TensorError(source, name, "missing string field \"dtype\"");
  }
  auto dtype = ParseDType(dtype_it->get<std::string>());
  if (!dtype.ok()) return TensorError(source, name, dtype.status().message());

  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return TensorError(source, name, "missing array field \"shape\"");
  }
  TensorInfo info;
  info.name = name;
  info.dtype = *dtype;
  uint64_t elements = 1;
  for (const json& dim : *shape_it) {
    if (!dim.is_number_unsigned() && !(dim.is_number_integer() && dim.get<int64_t>() >= 0)) {
      return TensorError(source, name, "shape holds a value that is not a non-negative integer");
    }
    const uint64_t d = dim.get<uint64_t>();
    if (d > (1ull << 40) || (d != 0 && elements > (1ull << 48) / d)) {
      return TensorError(source, name, "shape is too large");
    }
    elements *= d;
    info.shape.push_back(static_cast<int64_t>(d));
  }

  const auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 ||
      !(*offsets_it)[0].is_number_unsigned() || !(*offsets_it)[1].is_number_unsigned()) {
    return TensorError(source, name, "\"data_offsets\" must be two non-negative integers");
  }
  const uint64_t begin = (*offsets_it)[0].get<uint64_t>();
  const uint64_t end = (*offsets_it)[1].get<uint64_t>();
  if (begin > end || end > data_size) {
    return TensorError(source, name,
                       absl::StrCat("data_offsets [", begin, ", ", end, ") lie outside the ",
                                    data_size, " data bytes (file truncated?)"));
  }
  const uint64_t expected = elements * DTypeSize(info.dtype);
  if (end - begin != expected) {
    return TensorError(source, name,
                       absl::StrCat("holds ", end - begin, " bytes but shape ", info.ShapeString(),
                                    " of ", DTypeName(info.dtype), " needs ", expected));
  }
  info.data = data + begin;
  info.num_bytes = static_cast<size_t>(expected);
  return info;
}

}  // namespace

int64_t TensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorInfo::ShapeString() const { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

absl::StatusOr<SafetensorsHeader> ParseSafetensors(const unsigned char* bytes, size_t size,
                                                   const std::string& source) {
  if (size < 8) return HeaderError(source, absl::StrCat("file has ", size, " bytes, fewer than the 8-byte length prefix"));
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > kMaxHeaderBytes) {
    return HeaderError(source, absl::StrCat("header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes));
  }
  if (header_len > size - 8) {
    return HeaderError(source, absl::StrCat("header length ", header_len, " exceeds the ", size - 8,
                                            " bytes after the prefix (file truncated?)"));
  }
  const char* header_begin = reinterpret_cast<const char*>(bytes + 8);
  const json header = json::parse(header_begin, header_begin + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return HeaderError(source, "header is not valid JSON");
  if (!header.is_object()) return HeaderError(source, "header is not a JSON object");

  const unsigned char* data = bytes + 8 + header_len;
  const size_t data_size = size - 8 - header_len;
  SafetensorsHeader parsed;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) return HeaderError(source, "\"__metadata__\" is not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) return HeaderError(source, absl::StrCat("metadata \"", key, "\" is not a string"));
        parsed.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    ARACH_ASSIGN_OR_RETURN(TensorInfo info, ParseTensorEntry(source, name, entry, data, data_size));
    parsed.tensors.emplace(name, std::move(info));
  }
  return parsed;
}

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file, MappedFile::Open(path));
  ARACH_ASSIGN_OR_RETURN(SafetensorsHeader header, ParseSafetensors(file->data(), file->size(), path));
  return std::unique_ptr<SafetensorsFile>(new SafetensorsFile(std::move(file), std::move(header)));
}

const TensorInfo* SafetensorsFile::Find(const std::string& name) const {
  const auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : &it->second;
}

// ------------------------------------------------------------------------------------- writing

void SafetensorsStreamWriter::Declare(std::string name, DType dtype, std::vector<int64_t> shape) {
  size_t elements = 1;
  for (int64_t d : shape) elements *= static_cast<size_t>(d);
  declared_.push_back({std::move(name), dtype, std::move(shape), elements * DTypeSize(dtype)});
}

absl::Status SafetensorsStreamWriter::Open(const std::string& path,
                                           const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const Declared& t : declared_) {
    header[t.name] = {{"dtype", std::string(DTypeName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.num_bytes}}};
    offset += t.num_bytes;
  }
  std::string text = header.dump();
  while ((8 + text.size()) % 8 != 0) text.push_back(' ');  // align the data to 8 bytes
  path_ = path;
  out_ = std::fopen(path.c_str(), "wb");
  if (out_ == nullptr) return absl::PermissionDeniedError(absl::StrCat(path, ": cannot create: ", std::strerror(errno)));
  unsigned char prefix[8];
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<unsigned char>((len >> (8 * i)) & 0xff);
  if (std::fwrite(prefix, 1, 8, out_) != 8 || std::fwrite(text.data(), 1, text.size(), out_) != text.size()) {
    return absl::DataLossError(absl::StrCat(path, ": write failed"));
  }
  return absl::OkStatus();
}

absl::Status SafetensorsStreamWriter::Append(const void* data, size_t num_bytes) {
  if (out_ == nullptr) return absl::FailedPreconditionError("SafetensorsStreamWriter::Append before Open");
  if (next_ >= declared_.size()) return absl::FailedPreconditionError(absl::StrCat(path_, ": more tensors appended than declared"));
  const Declared& t = declared_[next_];
  if (num_bytes != t.num_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": tensor \"", t.name, "\" needs ", t.num_bytes,
                                                    " bytes, got ", num_bytes));
  }
  if (num_bytes > 0 && std::fwrite(data, 1, num_bytes, out_) != num_bytes) {
    return absl::DataLossError(absl::StrCat(path_, ": write failed for tensor \"", t.name, "\""));
  }
  ++next_;
  return absl::OkStatus();
}

absl::Status SafetensorsStreamWriter::Close() {
  if (out_ == nullptr) return absl::FailedPreconditionError("SafetensorsStreamWriter::Close before Open");
  const bool complete = next_ == declared_.size();
  const bool closed = std::fclose(out_) == 0;
  out_ = nullptr;
  if (!complete) return absl::FailedPreconditionError(absl::StrCat(path_, ": only ", next_, " of ", declared_.size(), " tensors written"));
  if (!closed) return absl::DataLossError(absl::StrCat(path_, ": close failed"));
  return absl::OkStatus();
}

SafetensorsStreamWriter::~SafetensorsStreamWriter() {
  if (out_ != nullptr) std::fclose(out_);
}

absl::Status WriteSafetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  SafetensorsStreamWriter writer;
  for (const TensorToWrite& t : tensors) writer.Declare(t.name, t.dtype, t.shape);
  ARACH_RETURN_IF_ERROR(writer.Open(path, metadata));
  for (const TensorToWrite& t : tensors) {
    size_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<size_t>(d);
    ARACH_RETURN_IF_ERROR(writer.Append(t.data, elements * DTypeSize(t.dtype)));
  }
  return writer.Close();
}

}  // namespace arach
