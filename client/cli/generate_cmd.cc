// arach-cli generate: streams a generation to the terminal.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "client/arach_client.h"
#include "client/cli/commands.h"
#include "client/cli/connect.h"
#include "client/cli/variant_arg.h"
#include "engine/core/mapped_file.h"
#include "google/protobuf/util/json_util.h"

namespace arach::client {
namespace {

// The contents of the file `--flag` names; errors name the flag.
absl::StatusOr<std::string> FlagFile(absl::string_view flag, const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFileToString(path);
  if (!contents.ok()) return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", contents.status().message()));
  return contents;
}

absl::StatusOr<arach::v1::GenerateRequest> BuildRequest(const GenerateOptions& o) {
  arach::v1::GenerateRequest request;
  if (!o.ids.empty()) {
    for (int32_t id : o.ids) request.mutable_token_ids()->add_ids(id);
  } else {
    request.set_text(o.prompt);
  }
  request.set_max_tokens(o.max_tokens);
  request.set_min_tokens(o.min_tokens);
  arach::v1::SamplingParams* s = request.mutable_sampling();
  s->set_temperature(static_cast<float>(o.temperature));
  s->set_top_k(o.top_k);
  s->set_top_p(static_cast<float>(o.top_p));
  s->set_min_p(static_cast<float>(o.min_p));
  s->set_repetition_penalty(static_cast<float>(o.repetition_penalty));
  if (o.seed) s->set_seed(*o.seed);
  for (const std::string& stop : o.stop) request.add_stop(stop);
  request.set_ignore_eos(o.ignore_eos);
  request.set_top_logprobs(o.top_logprobs);
  request.set_logprobs(o.top_logprobs > 0);
  if (absl::Status s = ApplyVariant(o.variant.variant, o.variant.arach_offset, o.variant.experiment_key, &request, o.variant.lora); !s.ok()) return s;
  if (!o.prediction_file.empty()) {
    absl::StatusOr<std::string> prediction = FlagFile("prediction_file", o.prediction_file);
    if (!prediction.ok()) return prediction.status();
    request.set_prediction(*prediction);
  }
  arach::v1::StructuredOutput* structured = request.mutable_structured_output();
  if (!o.json_schema_file.empty()) {
    absl::StatusOr<std::string> schema = FlagFile("json_schema", o.json_schema_file);
    if (!schema.ok()) return schema.status();
    structured->set_json_schema(*schema);
  } else if (!o.grammar_file.empty()) {
    absl::StatusOr<std::string> grammar = FlagFile("grammar", o.grammar_file);
    if (!grammar.ok()) return grammar.status();
    structured->set_grammar(*grammar);
  } else if (!o.regex.empty()) {
    structured->set_regex(o.regex);
  } else if (!o.choices.empty()) {
    for (const std::string& choice : o.choices) structured->mutable_choice()->add_choices(choice);
  }
  return request;
}

}  // namespace

int RunGenerate(const GenerateOptions& o) {
  absl::StatusOr<arach::v1::GenerateRequest> request = BuildRequest(o);
  if (!request.ok()) return ReportError("generate", request.status());
  absl::StatusOr<std::unique_ptr<ArachClient>> client = Connect(o.connect);
  if (!client.ok()) return ReportError("generate", client.status());
  arach::v1::Finish finish;
  ArachClient::Deadline deadline;
  if (o.timeout_seconds > 0) {
    deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(1000 * o.timeout_seconds));
  }
  const grpc::Status status = (*client)->Generate(*request, [&](const arach::v1::GenerateResponse& response) {
    if (o.json) {
      std::string line;
      (void)google::protobuf::util::MessageToJsonString(response, &line);
      std::printf("%s\n", line.c_str());
    } else {
      std::fputs(response.text().c_str(), stdout);
    }
    std::fflush(stdout);
    if (response.has_finish()) finish = response.finish();
  }, deadline);
  if (!status.ok()) {
    if (!o.json) std::printf("\n");
    return ReportRpcFailure("generate", status);
  }
  if (!o.json) {
    std::printf("\n");
    std::fprintf(stderr, "[arach-cli] %s, %u prompt + %u generated tokens (%s), TTFT %.1f ms, %.2f ms/token, total %.3f s\n",
                 finish.variant().name().c_str(), finish.usage().prompt_tokens(), finish.usage().completion_tokens(),
                 finish.reason() == arach::v1::FINISH_REASON_LENGTH ? "length" : "stop",
                 1e3 * finish.timings().time_to_first_token_seconds(), 1e3 * finish.timings().time_per_output_token_seconds(),
                 finish.timings().total_seconds());
    if (finish.usage().draft_tokens() > 0) {
      std::fprintf(stderr, "[arach-cli] speculative decoding: %u of %u draft tokens kept\n", finish.usage().accepted_draft_tokens(),
                   finish.usage().draft_tokens());
    }
  }
  return 0;
}

}  // namespace arach::client
