// The engine requests of one HTTP generation call, one per choice, and what they stream back, gathered
// for the handler's thread: a streaming handler takes events as they arrive, a plain one waits for the
// end. The engine's step thread only queues (RequestObserver must not block); cancelling the run cancels every
// choice still running. Finished choices are counted in the server's metrics here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "server/metrics.h"
#include "server/shadow_scorer.h"

namespace arach::server::http {

// Something a choice produced: generated tokens with their text, or its end.
struct ChoiceEvent {
  int choice = 0;
  StreamChunk chunk;                 // when !finish
  std::optional<FinishInfo> finish;  // the choice's last event
};

class GenerationRun : public std::enable_shared_from_this<GenerationRun> {
 public:
  // `key`: the API key's name, the `key` label of the finished requests.
  static std::shared_ptr<GenerationRun> Create(Engine& engine, ServerMetrics& metrics, ShadowScorer& shadow, Variant variant,
                                               int choices, std::string key);

  // Validates and queues choice `index` (fields named by `names`); nothing of it is queued on error, nor are its
  // copies (AnswerAsCopy) then awaited.
  absl::Status Submit(int index, EngineRequest request, FieldNames names);
  // Choice `copy` is answered by choice `original`'s engine request, for choices that would compute the same thing
  // (a prompt scored, max_tokens 0, for each of its n choices): each event of `original` is also queued as
  // `copy`'s. Before Submit(original).
  void AnswerAsCopy(int copy, int original);
  // Cancels every submitted choice that is still running (each still delivers its finish).
  void CancelAll();

  // The events queued so far, waiting up to `timeout` for the first one; empty once the run is over.
  std::vector<ChoiceEvent> Take(std::chrono::milliseconds timeout);
  // Whether every submitted choice has finished and every event was taken.
  bool over() const;
  // Whether any choice has produced an event (tokens, or its end) yet.
  bool begun() const;
  // Waits until every submitted choice has finished.
  void WaitFinished();
  // The same for at most `timeout`; whether they have.
  bool WaitFinishedFor(std::chrono::milliseconds timeout);

 private:
  class ChoiceObserver;
  GenerationRun(Engine& engine, ServerMetrics& metrics, ShadowScorer& shadow, Variant variant, int choices, std::string key)
      : engine_(engine), metrics_(metrics), shadow_(shadow), variant_(variant), key_(std::move(key)),
        engine_ids_(static_cast<size_t>(choices), 0), copies_(static_cast<size_t>(choices)) {}
  void Push(ChoiceEvent event);

  Engine& engine_;
  ServerMetrics& metrics_;
  ShadowScorer& shadow_;
  Variant variant_;
  std::string key_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<uint64_t> engine_ids_;  // [choices]: 0 until submitted
  std::vector<std::vector<int>> copies_;  // [choices]: the choices each one's events also answer (AnswerAsCopy)
  int submitted_ = 0;
  int finished_ = 0;
  bool begun_ = false;  // an event was pushed
  std::deque<ChoiceEvent> events_;
};

}  // namespace arach::server::http
