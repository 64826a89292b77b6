#include "client/cli/eval_tasks.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "client/cli/stream_timing.h"
#include "engine/core/mapped_file.h"
#include "nlohmann/json.hpp"

namespace arach::client {
namespace {

constexpr int kInputsPerCall = 16;

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), absl::StrCat(what, ": ", s.error_message()));
}

absl::StatusOr<std::vector<std::vector<int32_t>>> Tokenize(ArachClient& client, const std::vector<std::string>& texts, bool add_bos) {
  std::vector<std::vector<int32_t>> out;
  for (size_t begin = 0; begin < texts.size(); begin += 256) {
    arach::v1::TokenizeRequest request;
    request.set_add_bos(add_bos);
    for (size_t i = begin; i < std::min(texts.size(), begin + 256); ++i) request.add_texts(texts[i]);
    arach::v1::TokenizeResponse response;
    grpc::ClientContext ctx;
    client.Authorize(&ctx);
    if (auto s = FromGrpc(client.inference().Tokenize(&ctx, request, &response), "Tokenize"); !s.ok()) return s;
    for (const arach::v1::TokenIds& ids : response.tokens()) out.emplace_back(ids.ids().begin(), ids.ids().end());
  }
  return out;
}

// Scores `inputs` (token ids) under `variant`, kInputsPerCall per Score call.
absl::StatusOr<std::vector<arach::v1::ScoreResult>> ScoreAll(ArachClient& client, const std::vector<std::vector<int32_t>>& inputs,
                                                             const arach::v1::VariantSpec& variant) {
  std::vector<arach::v1::ScoreResult> results;
  for (size_t begin = 0; begin < inputs.size(); begin += kInputsPerCall) {
    arach::v1::ScoreRequest request;
    *request.mutable_variant() = variant;
    for (size_t i = begin; i < std::min(inputs.size(), begin + kInputsPerCall); ++i) {
      arach::v1::TokenIds* ids = request.add_inputs()->mutable_token_ids();
      for (int32_t id : inputs[i]) ids->add_ids(id);
    }
    arach::v1::ScoreResponse response;
    if (auto s = FromGrpc(client.Score(request, &response), "Score"); !s.ok()) return s;
    for (const arach::v1::ScoreResult& r : response.results()) results.push_back(r);
  }
  return results;
}

}  // namespace

absl::StatusOr<std::vector<LambadaItem>> LoadLambada(ArachClient& client, const std::string& path, int limit) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::vector<std::string> contexts, targets;
  std::string line;
  int number = 0;
  while (std::getline(in, line) && (limit <= 0 || static_cast<int>(contexts.size()) < limit)) {
    ++number;
    if (line.empty()) continue;
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.contains("text") || !j["text"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": line ", number, " has no \"text\""));
    }
    const std::string text = j["text"].get<std::string>();
    const size_t space = text.rfind(' ');
    if (space == std::string::npos) return absl::InvalidArgumentError(absl::StrCat(path, ": line ", number, " has one word"));
    contexts.push_back(text.substr(0, space));
    targets.push_back(absl::StrCat(" ", absl::string_view(text).substr(space + 1)));
  }
  auto context_ids = Tokenize(client, contexts, /*add_bos=*/true);
  if (!context_ids.ok()) return context_ids.status();
  auto target_ids = Tokenize(client, targets, /*add_bos=*/false);
  if (!target_ids.ok()) return target_ids.status();
  std::vector<LambadaItem> items(contexts.size());
  for (size_t i = 0; i < items.size(); ++i) items[i] = {(*context_ids)[i], (*target_ids)[i]};
  return items;
}

absl::StatusOr<std::vector<LambadaScore>> ScoreLambada(ArachClient& client, const std::vector<LambadaItem>& items,
                                                       const arach::v1::VariantSpec& variant) {
  std::vector<std::vector<int32_t>> inputs;
  for (const LambadaItem& item : items) {
    std::vector<int32_t> ids = item.context;
    ids.insert(ids.end(), item.target.begin(), item.target.end());
    inputs.push_back(std::move(ids));
  }
  auto results = ScoreAll(client, inputs, variant);
  if (!results.ok()) return results.status();
  std::vector<LambadaScore> scores(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const arach::v1::ScoreResult& r = (*results)[i];
    // logprobs[t - 1] belongs to token t; the target tokens are t = |context| .. |context| + |target| - 1.
    scores[i].greedy = true;
    for (size_t t = items[i].context.size(); t < inputs[i].size(); ++t) {
      scores[i].logprob += r.logprobs(static_cast<int>(t - 1));
      scores[i].greedy = scores[i].greedy && r.is_greedy(static_cast<int>(t - 1));
    }
  }
  return scores;
}

absl::StatusOr<std::vector<std::vector<int32_t>>> TextWindows(ArachClient& client, const std::string& path, int window,
                                                              int max_windows, double val_fraction) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  auto ids = Tokenize(client, {*text}, /*add_bos=*/false);
  if (!ids.ok()) return ids.status();
  const std::vector<int32_t>& all = (*ids)[0];
  const size_t start = static_cast<size_t>(val_fraction * all.size());
  std::vector<std::vector<int32_t>> windows;
  for (size_t begin = start; begin + 1 < all.size(); begin += window) {
    if (max_windows > 0 && static_cast<int>(windows.size()) >= max_windows) break;
    const size_t end = std::min(all.size(), begin + window + 1);
    windows.emplace_back(all.begin() + begin, all.begin() + end);
  }
  return windows;
}

absl::StatusOr<std::vector<WindowScore>> ScoreWindows(ArachClient& client, const std::vector<std::vector<int32_t>>& windows,
                                                      const arach::v1::VariantSpec& variant) {
  auto results = ScoreAll(client, windows, variant);
  if (!results.ok()) return results.status();
  std::vector<WindowScore> scores;
  for (const arach::v1::ScoreResult& r : *results) scores.push_back({-r.total_logprob(), static_cast<int>(r.scored_tokens())});
  return scores;
}

absl::StatusOr<std::vector<LatencySample>> MeasureLatency(ArachClient& client, const std::vector<std::vector<int32_t>>& prompts,
                                                          const arach::v1::VariantSpec& variant, int max_tokens) {
  std::vector<LatencySample> samples;
  for (const std::vector<int32_t>& prompt : prompts) {
    arach::v1::GenerateRequest request;
    for (int32_t id : prompt) request.mutable_token_ids()->add_ids(id);
    request.set_max_tokens(max_tokens);
    request.set_ignore_eos(true);
    request.mutable_sampling()->set_temperature(0.0f);
    *request.mutable_variant() = variant;
    StreamTimer timer;
    const grpc::Status status = client.Generate(request, [&](const arach::v1::GenerateResponse& r) { timer.OnTokens(r.token_ids_size()); });
    if (!status.ok()) return FromGrpc(status, "Generate");
    const StreamTiming t = timer.Finish();
    LatencySample s{t.ttft_seconds, t.tpot_seconds, t.e2e_seconds, t.tokens};
    samples.push_back(s);
  }
  return samples;
}

}  // namespace arach::client
