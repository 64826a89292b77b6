#include "server/http/generation_run.h"

#include "engine/core/status.h"

namespace arach::server::http {

class GenerationRun::ChoiceObserver : public RequestObserver {
 public:
  ChoiceObserver(std::shared_ptr<GenerationRun> run, int choice, RequestKind kind)
      : run_(std::move(run)), choice_(choice), kind_(kind) {}

  void OnChunk(const StreamChunk& chunk) override { run_->Push(ChoiceEvent{choice_, chunk, std::nullopt}); }
  void OnFinish(const FinishInfo& info) override {
    const bool answered = info.reason == FinishReason::kStop || info.reason == FinishReason::kLength;
    run_->metrics_.RecordLora(kind_, info);
    if (kind_ == RequestKind::kGenerate) {
      run_->metrics_.RecordGenerate(run_->variant_, info, run_->key_);
      if (info.generated) run_->shadow_.OnFinished(run_->engine_, run_->variant_, info);
    } else if (answered) {
      if (kind_ == RequestKind::kEmbed) {
        run_->metrics_.RecordEmbedding(run_->variant_, info.usage.prompt_tokens, info.timings.total_seconds);
      } else if (kind_ == RequestKind::kClassify) {
        run_->metrics_.RecordClassification(run_->variant_, info.usage.prompt_tokens, info.timings.total_seconds);
      } else {
        run_->metrics_.RecordScore(run_->variant_, info.usage.prompt_tokens, info.timings.total_seconds);
      }
      if (info.attention) run_->metrics_.RecordAttention(run_->variant_, *info.attention);
    }
    run_->Push(ChoiceEvent{choice_, {}, info});
  }

 private:
  std::shared_ptr<GenerationRun> run_;
  int choice_;
  RequestKind kind_;
};

std::shared_ptr<GenerationRun> GenerationRun::Create(Engine& engine, ServerMetrics& metrics, ShadowScorer& shadow, Variant variant,
                                                     int choices, std::string key) {
  return std::shared_ptr<GenerationRun>(new GenerationRun(engine, metrics, shadow, variant, choices, std::move(key)));
}

absl::Status GenerationRun::Submit(int index, EngineRequest request, FieldNames names) {
  auto observer = std::make_shared<ChoiceObserver>(shared_from_this(), index, request.kind);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++submitted_;  // before Submit: the finish may arrive before it returns
  }
  absl::StatusOr<uint64_t> id = engine_.Submit(std::move(request), std::move(observer), std::move(names));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!id.ok()) {
    std::vector<int>& copies = copies_[static_cast<size_t>(index)];
    submitted_ -= 1 + static_cast<int>(copies.size());
    copies.clear();
    return id.status();
  }
  engine_ids_[static_cast<size_t>(index)] = *id;
  return absl::OkStatus();
}

void GenerationRun::AnswerAsCopy(int copy, int original) {
  std::lock_guard<std::mutex> lock(mutex_);
  copies_[static_cast<size_t>(original)].push_back(copy);
  ++submitted_;  // (finished with its original)
}

void GenerationRun::CancelAll() {
  std::vector<uint64_t> ids;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ids = engine_ids_;
  }
  for (uint64_t id : ids) {
    if (id != 0) engine_.Cancel(id);
  }
}

void GenerationRun::Push(ChoiceEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const int original = event.choice;
    for (int copy : copies_[static_cast<size_t>(original)]) {
      ChoiceEvent copied = event;
      copied.choice = copy;
      events_.push_back(std::move(copied));
    }
    finished_ += event.finish ? 1 + static_cast<int>(copies_[static_cast<size_t>(original)].size()) : 0;
    begun_ = true;
    events_.push_back(std::move(event));
  }
  changed_.notify_all();
}

std::vector<ChoiceEvent> GenerationRun::Take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !events_.empty() || finished_ == submitted_; });
  std::vector<ChoiceEvent> out(std::make_move_iterator(events_.begin()), std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

bool GenerationRun::begun() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return begun_;
}

bool GenerationRun::over() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_ == submitted_ && events_.empty();
}

void GenerationRun::WaitFinished() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return finished_ == submitted_; });
}

bool GenerationRun::WaitFinishedFor(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return finished_ == submitted_; });
}

}  // namespace arach::server::http
