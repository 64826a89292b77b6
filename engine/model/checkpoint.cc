#include "engine/model/checkpoint.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/mapped_file.h"
#include "engine/core/status.h"
#include "nlohmann/json.hpp"

namespace arach {
namespace fs = std::filesystem;

std::string ShapeToString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

absl::Status Checkpoint::AddFile(const std::string& path) {
  ARACH_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file, SafetensorsFile::Open(path));
  const size_t file_index = files_.size();
  for (const auto& [name, info] : file->tensors()) {
    if (index_.count(name) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": tensor \"", name, "\" also appears in ",
                                                     files_[index_[name]]->path()));
    }
    index_[name] = file_index;
  }
  files_.push_back(std::move(file));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::OpenFile(const std::string& path) {
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(path));
  ARACH_RETURN_IF_ERROR(checkpoint->AddFile(path));
  return checkpoint;
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat(dir, ": not a model folder"));
  std::unique_ptr<Checkpoint> checkpoint(new Checkpoint(dir));

  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  const fs::path single_path = fs::path(dir) / "model.safetensors";
  if (fs::exists(index_path, ec)) {
    ARACH_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index_path.string()));
    const auto index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
        !index["weight_map"].is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(index_path.string(), ": not a valid index (needs a \"weight_map\" object)"));
    }
    std::vector<std::string> shards;
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(index_path.string(), ": weight_map entry \"", name, "\" is not a file name"));
      }
      const std::string shard_name = shard.get<std::string>();
      if (shard_name.find('/') != std::string::npos || shard_name.find("..") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(index_path.string(), ": shard name \"", shard_name, "\" must be a plain file name"));
      }
      if (std::find(shards.begin(), shards.end(), shard_name) == shards.end()) shards.push_back(shard_name);
    }
    std::sort(shards.begin(), shards.end());
    for (const std::string& shard : shards) {
      ARACH_RETURN_IF_ERROR(checkpoint->AddFile((fs::path(dir) / shard).string()));
    }
    // Every tensor the index promises must be in the shard it names.
    for (const auto& [name, shard] : index["weight_map"].items()) {
      const auto it = checkpoint->index_.find(name);
      if (it == checkpoint->index_.end()) {
        return absl::NotFoundError(absl::StrCat((fs::path(dir) / shard.get<std::string>()).string(),
                                                ": tensor \"", name, "\" listed in the index is missing"));
      }
    }
  } else if (fs::exists(single_path, ec)) {
    ARACH_RETURN_IF_ERROR(checkpoint->AddFile(single_path.string()));
  } else {
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".safetensors") found.push_back(entry.path().string());
    }
    std::sort(found.begin(), found.end());
    if (found.empty()) return absl::NotFoundError(absl::StrCat(dir, ": no model.safetensors, index or *.safetensors file"));
    for (const std::string& path : found) ARACH_RETURN_IF_ERROR(checkpoint->AddFile(path));
  }
  return checkpoint;
}

bool Checkpoint::Has(const std::string& name) const { return index_.count(name) != 0; }

absl::StatusOr<const TensorInfo*> Checkpoint::Find(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) {
    return absl::NotFoundError(absl::StrCat(source_, ": missing tensor \"", name, "\""));
  }
  return files_[it->second]->Find(name);
}

std::string Checkpoint::FileOf(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? std::string() : files_[it->second]->path();
}

std::vector<std::string> Checkpoint::Names() const {
  std::vector<std::string> names;
  names.reserve(index_.size());
  for (const auto& [name, file] : index_) names.push_back(name);
  return names;
}

absl::StatusOr<std::vector<float>> Checkpoint::ReadFloat(const std::string& name,
                                                         const std::vector<int64_t>& expected_shape) const {
  ARACH_ASSIGN_OR_RETURN(const TensorInfo* info, Find(name));
  if (!expected_shape.empty() && info->shape != expected_shape) {
    return absl::InvalidArgumentError(absl::StrCat(FileOf(name), ": tensor \"", name, "\" has shape ",
                                                   info->ShapeString(), ", expected ", ShapeToString(expected_shape)));
  }
  if (info->dtype != DType::kF32 && info->dtype != DType::kF16 && info->dtype != DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrCat(FileOf(name), ": tensor \"", name, "\" has dtype ",
                                                   DTypeName(info->dtype), "; weights must be F32, F16 or BF16"));
  }
  std::vector<float> out(static_cast<size_t>(info->NumElements()));
  ConvertToFloat(info->dtype, info->data, out.size(), out.data());
  return out;
}

DType Checkpoint::MatrixDType() const {
  std::map<DType, int64_t> elements;  // by dtype, over the 2-D tensors
  for (const auto& [name, file] : index_) {
    const TensorInfo* info = files_[file]->Find(name);
    if (info != nullptr && info->shape.size() == 2) elements[info->dtype] += info->NumElements();
  }
  DType most = DType::kF32;
  int64_t most_elements = 0;
  for (const auto& [dtype, count] : elements) {
    if (count > most_elements) {
      most = dtype;
      most_elements = count;
    }
  }
  return most;
}

}  // namespace arach
