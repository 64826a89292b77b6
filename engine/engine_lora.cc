// The engine's LoRA adapters: resolving a request's adapter, loading and unloading adapters while it serves, and
// swapping them between host and device where more are registered than the device holds (their device memory
// changes on the step thread, between steps).
#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/status.h"
#include "engine/engine.h"
#include "engine/engine_request_state.h"
#include "engine/model/lora_adapter.h"

namespace arach {

std::vector<std::string> Engine::lora_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const LoraEntry& entry : loras_) {
    if (!entry.name.empty()) names.push_back(entry.name);
  }
  return names;
}

absl::StatusOr<int> Engine::LoraIndexLocked(const std::string& name, FieldNames names) const {
  if (name.empty()) return 0;
  const auto it = std::find_if(loras_.begin(), loras_.end(), [&](const LoraEntry& entry) { return entry.name == name; });
  if (it == loras_.end()) {
    std::vector<std::string> loaded;
    for (const LoraEntry& entry : loras_) {
      if (!entry.name.empty()) loaded.push_back(entry.name);
    }
    return InvalidField(names, "lora", absl::StrCat("no LoRA adapter '", name, "' is loaded (",
                                                   loaded.empty() ? "none is" : absl::StrJoin(loaded, ", "), ")"));
  }
  return static_cast<int>(it - loras_.begin()) + 1;
}

absl::Status Engine::LoadLora(const std::string& name, const std::string& path, bool replace) {
  if (absl::Status valid = CheckLoraName(name); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("lora_name: ", valid.message()));
  }
  if (!replace) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::any_of(loras_.begin(), loras_.end(), [&](const LoraEntry& entry) { return entry.name == name; })) {
      return absl::InvalidArgumentError(absl::StrCat("lora_name: the adapter '", name, "' is already loaded"));
    }
  }
  ARACH_ASSIGN_OR_RETURN(LoraAdapter adapter, LoadLoraAdapter(name, path, model_.config));  // read here, off the step thread
  if (absl::Status rank = CheckLoraRank(adapter, model_.lora_limits); !rank.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("lora_path: ", rank.message()));
  }
  auto op = std::make_unique<LoraOp>();
  op->name = name;
  op->adapter = std::move(adapter);
  op->replace = replace;
  return RunLoraOp(std::move(op));
}

absl::Status Engine::UnloadLora(const std::string& name) {
  auto op = std::make_unique<LoraOp>();
  op->name = name;
  return RunLoraOp(std::move(op));
}

absl::Status Engine::RunLoraOp(std::unique_ptr<LoraOp> op) {
  std::future<absl::Status> done = op->done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return absl::UnavailableError("the engine is shutting down");
    lora_ops_.push_back(std::move(op));
  }
  wake_.notify_one();
  return done.get();
}

void Engine::FailLoraOps(std::vector<std::unique_ptr<LoraOp>>& ops) {
  for (auto& op : ops) op->done.set_value(absl::UnavailableError("the engine shut down"));
  ops.clear();
}

int Engine::LoraUsersLocked(size_t index) const {
  const int lora = static_cast<int>(index) + 1;
  int users = 0;
  for (const auto& [id, state] : requests_) users += !state->finished && state->seq.lora == lora;
  for (const auto& state : inbox_) users += state->seq.lora == lora;
  return users;
}

int Engine::LorasOnDevice() const {
  return static_cast<int>(std::count_if(loras_.begin(), loras_.end(), [](const LoraEntry& e) { return e.on_device; }));
}

void Engine::DropLoraLocked(size_t index) {
  if (loras_[index].on_device) model_.runner->RemoveLora(static_cast<int>(index));
  loras_[index] = LoraEntry{};
}

void Engine::FreeReplacedLorasLocked() {
  for (size_t i = 0; i < loras_.size(); ++i) {
    if (loras_[i].replaced && LoraUsersLocked(i) == 0) DropLoraLocked(i);  // an index free to take now
  }
}

absl::Status Engine::PutRunningLorasOnDevice() {
  std::vector<size_t> needed;  // the running sequences' adapters (at most max_loras where adapters swap)
  for (const Sequence* seq : scheduler_.running()) {
    const size_t index = static_cast<size_t>(seq->lora - 1);
    if (seq->lora > 0 && std::find(needed.begin(), needed.end(), index) == needed.end()) needed.push_back(index);
  }
  if (needed.empty()) return absl::OkStatus();
  ++lora_round_;
  for (const size_t index : needed) loras_[index].last_used = lora_round_;
  for (const size_t index : needed) {
    LoraEntry& entry = loras_[index];
    if (entry.on_device) continue;
    if (entry.host == nullptr) {
      return absl::InternalError(absl::StrCat("LoRA adapter ", index, " is neither on the device nor on the host"));
    }
    if (LorasOnDevice() >= model_.lora_limits.max_loras) {  // the least recently used that no running sequence needs goes
      LoraEntry* victim = nullptr;
      for (LoraEntry& other : loras_) {
        const bool needed_now = other.last_used == lora_round_;
        if (other.on_device && !needed_now && (victim == nullptr || other.last_used < victim->last_used)) victim = &other;
      }
      if (victim == nullptr) return absl::InternalError("no LoRA adapter on the device can make room (more in use than --max_loras)");
      model_.runner->RemoveLora(static_cast<int>(victim - loras_.data()));
      victim->on_device = false;
    }
    ARACH_RETURN_IF_ERROR(model_.runner->AddLora(static_cast<int>(index), LoraAdapter(*entry.host)));
    entry.on_device = true;
    ++lora_swap_ins_;
  }
  return absl::OkStatus();
}

void Engine::RunLoraOps(std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<LoraOp>> ops;
  ops.swap(lora_ops_);
  if (!ops.empty()) FreeReplacedLorasLocked();  // requests that ended since the last step (cancelled) hold no adapter
  const LoraLimits& limits = model_.lora_limits;
  for (auto& op : ops) {
    const auto named = std::find_if(loras_.begin(), loras_.end(), [&](const LoraEntry& entry) { return entry.name == op->name; });
    const int found = named == loras_.end() ? -1 : static_cast<int>(named - loras_.begin());  // -1: not loaded
    if (op->adapter.has_value()) {  // load: the name is checked again (another load of it may have come first)
      if (found >= 0 && !op->replace) {
        op->done.set_value(absl::InvalidArgumentError(absl::StrCat("lora_name: the adapter '", op->name, "' is already loaded")));
        continue;
      }
      int replaced = found;  // the index whose adapter the load replaces; -1: none
      int held = static_cast<int>(std::count_if(loras_.begin(), loras_.end(), [](const LoraEntry& e) { return e.taken(); }));
      const auto full = [&] { return limits.max_registered() > 0 && held >= limits.max_registered(); };
      if (full() && replaced >= 0 && LoraUsersLocked(static_cast<size_t>(replaced)) == 0) {
        // No room beside it and no request on it: the adapter replaced is unloaded first (a failed load then leaves
        // the name unloaded).
        DropLoraLocked(static_cast<size_t>(replaced));
        replaced = -1;
        --held;
      }
      if (full()) {
        op->done.set_value(absl::ResourceExhaustedError(absl::StrCat(
            "lora_name: ", held, " adapters are loaded, the most ", limits.registered_flag(), " ", limits.max_registered(),
            " allows; ",
            replaced >= 0 ? "the replacement needs room while requests of the adapter it replaces run; retry once they finish"
                          : "unload one first")));
        continue;
      }
      // The first free index, else a new one. No request holds a free index (unloads wait for them, replaced
      // adapters are dropped after theirs) and none can name it while the load runs: its name is still "".
      size_t index = 0;
      while (index < loras_.size() && loras_[index].taken()) ++index;
      // Onto the device now where there is room (always where adapters do not swap: the bound is the device's).
      const bool upload = !limits.swaps() || LorasOnDevice() < limits.max_loras;
      std::shared_ptr<const LoraAdapter> host;
      absl::Status added = absl::OkStatus();
      if (limits.swaps()) host = std::make_shared<const LoraAdapter>(std::move(*op->adapter));
      if (upload) {
        lock.unlock();
        added = model_.runner->AddLora(static_cast<int>(index), host != nullptr ? LoraAdapter(*host) : std::move(*op->adapter));
        lock.lock();
      }
      if (added.ok()) {
        if (index == loras_.size()) loras_.emplace_back();
        if (replaced >= 0) {  // its requests finish on it (dropped once they have); new ones get the new weights
          LoraEntry& old = loras_[static_cast<size_t>(replaced)];
          old.former_name = std::move(old.name);
          old.name = "";
          old.replaced = true;
        }
        LoraEntry& entry = loras_[index];
        entry.name = op->name;
        entry.load = ++lora_load_count_;
        entry.host = std::move(host);
        entry.on_device = upload;
        entry.last_used = 0;
      }
      op->done.set_value(added);
      continue;
    }
    if (found < 0) {
      op->done.set_value(absl::NotFoundError(absl::StrCat("lora_name: no LoRA adapter '", op->name, "' is loaded")));
      continue;
    }
    // Unload: refused while a request that named it is queued or running. Submit resolves names under mutex_,
    // held here, so none can name it once its entry is emptied.
    const int users = LoraUsersLocked(static_cast<size_t>(found));
    if (users > 0) {
      op->done.set_value(absl::FailedPreconditionError(absl::StrCat("lora_name: ", users, " request(s) of the adapter '", op->name,
                                                                     "' are queued or running; unload it once they finish")));
      continue;
    }
    DropLoraLocked(static_cast<size_t>(found));
    op->done.set_value(absl::OkStatus());
  }
}

}  // namespace arach
