// The engine's LoRA adapters: resolving a request's adapter, and loading and unloading adapters while it serves
// (their device memory changes on the step thread, between steps).
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
  for (const std::string& name : lora_names_) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

absl::StatusOr<int> Engine::LoraSlotLocked(const std::string& name, FieldNames names) const {
  if (name.empty()) return 0;
  const auto it = std::find(lora_names_.begin(), lora_names_.end(), name);
  if (it == lora_names_.end()) {
    std::vector<std::string> loaded;
    for (const std::string& n : lora_names_) {
      if (!n.empty()) loaded.push_back(n);
    }
    return InvalidField(names, "lora", absl::StrCat("no LoRA adapter '", name, "' is loaded (",
                                                   loaded.empty() ? "none is" : absl::StrJoin(loaded, ", "), ")"));
  }
  return static_cast<int>(it - lora_names_.begin()) + 1;
}

absl::Status Engine::LoadLora(const std::string& name, const std::string& path, bool replace) {
  if (absl::Status valid = CheckLoraName(name); !valid.ok()) return absl::InvalidArgumentError(absl::StrCat("lora_name: ", valid.message()));
  if (!replace) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (std::find(lora_names_.begin(), lora_names_.end(), name) != lora_names_.end()) {
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

void Engine::FreeReplacedLorasLocked() {
  for (size_t i = 0; i < lora_replaced_.size(); ++i) {
    if (!lora_replaced_[i] || LoraUsersLocked(i) > 0) continue;
    model_.runner->RemoveLora(static_cast<int>(i));
    lora_replaced_[i] = false;  // an empty slot now, for the next load
  }
}

void Engine::RunLoraOps(std::unique_lock<std::mutex>& lock) {
  std::vector<std::unique_ptr<LoraOp>> ops;
  ops.swap(lora_ops_);
  if (!ops.empty()) FreeReplacedLorasLocked();  // requests that ended since the last step (cancelled) hold no slot
  for (auto& op : ops) {
    const auto named = std::find(lora_names_.begin(), lora_names_.end(), op->name);
    const int slot = named == lora_names_.end() ? -1 : static_cast<int>(named - lora_names_.begin());  // -1: not loaded
    if (op->adapter.has_value()) {  // load: the name is checked again (another load of it may have come first)
      if (slot >= 0 && !op->replace) {
        op->done.set_value(absl::InvalidArgumentError(absl::StrCat("lora_name: the adapter '", op->name, "' is already loaded")));
        continue;
      }
      int replaced = slot;  // the slot whose adapter the load replaces; -1: none
      int held = static_cast<int>(std::count_if(lora_names_.begin(), lora_names_.end(), [](const std::string& n) { return !n.empty(); }) +
                                  std::count(lora_replaced_.begin(), lora_replaced_.end(), true));
      const auto full = [&] { return model_.lora_limits.max_loras > 0 && held >= model_.lora_limits.max_loras; };
      if (full() && replaced >= 0 && LoraUsersLocked(static_cast<size_t>(replaced)) == 0) {
        // No slot beside it and no request on it: the adapter replaced is unloaded first (a failed load then leaves
        // the name unloaded).
        lora_names_[static_cast<size_t>(replaced)] = "";
        model_.runner->RemoveLora(replaced);
        replaced = -1;
        --held;
      }
      if (full()) {
        op->done.set_value(absl::ResourceExhaustedError(absl::StrCat(
            "lora_name: ", held, " adapters are loaded, the most --max_loras ", model_.lora_limits.max_loras, " allows; ",
            replaced >= 0 ? "the replacement needs a slot while requests of the adapter it replaces run; retry once they finish"
                                 : "unload one first")));
        continue;
      }
      // The first empty slot, else a new one. No request holds an empty slot (unloads wait for them, replaced
      // adapters are freed after theirs) and none can name it while the load runs: its name is still "".
      size_t index = 0;
      while (index < lora_names_.size() && (!lora_names_[index].empty() || lora_replaced_[index])) ++index;
      lock.unlock();
      absl::Status added = model_.runner->AddLora(static_cast<int>(index), std::move(*op->adapter));
      lock.lock();
      if (added.ok()) {
        if (index == lora_names_.size()) {
          lora_names_.emplace_back();
          lora_loads_.emplace_back();
          lora_replaced_.push_back(false);
        }
        if (replaced >= 0) {  // its requests finish on it (freed once they have); new ones get the new weights
          lora_names_[static_cast<size_t>(replaced)] = "";
          lora_replaced_[static_cast<size_t>(replaced)] = true;
        }
        lora_names_[index] = op->name;
        lora_loads_[index] = ++lora_load_count_;
      }
      op->done.set_value(added);
      continue;
    }
    if (slot < 0) {
      op->done.set_value(absl::NotFoundError(absl::StrCat("lora_name: no LoRA adapter '", op->name, "' is loaded")));
      continue;
    }
    // Unload: refused while a request that named it is queued or running. Submit resolves names under mutex_,
    // held here, so none can name it once its slot is emptied.
    const int users = LoraUsersLocked(static_cast<size_t>(slot));
    if (users > 0) {
      op->done.set_value(absl::FailedPreconditionError(absl::StrCat("lora_name: ", users, " request(s) of the adapter '", op->name,
                                                                     "' are queued or running; unload it once they finish")));
      continue;
    }
    lora_names_[static_cast<size_t>(slot)] = "";
    model_.runner->RemoveLora(slot);
    op->done.set_value(absl::OkStatus());
  }
}

}  // namespace arach
