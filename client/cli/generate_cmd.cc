// arach-cli generate: streams a generation to the terminal.
#include <cmath>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "client/arach_client.h"
#include "client/cli/cli_commands.h"
#include "client/cli/cli_flags.h"
#include "client/cli/connect.h"
#include "client/cli/variant_arg.h"
#include "google/protobuf/util/json_util.h"

namespace arach::client {

absl::StatusOr<arach::v1::VariantSpec> VariantFromFlags(const std::string& variant, double offset) {
  arach::v1::VariantSpec spec;
  if (!variant.empty()) {
    auto parsed = ParseVariantArg(variant);
    if (!parsed.ok()) return parsed.status();
    spec = *parsed;
  }
  if (!std::isnan(offset)) spec.set_arach_offset(static_cast<float>(offset));
  return spec;
}

template <typename Request>
bool ApplyVariantFlags(Request* request) {
  auto variant = VariantFromFlags(absl::GetFlag(FLAGS_variant), absl::GetFlag(FLAGS_arach_offset));
  if (!variant.ok()) {
    std::fprintf(stderr, "%s\n", std::string(variant.status().message()).c_str());
    return false;
  }
  *request->mutable_variant() = *variant;
  request->set_experiment_key(absl::GetFlag(FLAGS_experiment_key));
  return true;
}
template bool ApplyVariantFlags(arach::v1::GenerateRequest*);
template bool ApplyVariantFlags(arach::v1::ScoreRequest*);

int RunGenerate() {
  arach::v1::GenerateRequest request;
  if (!absl::GetFlag(FLAGS_ids).empty()) {
    for (absl::string_view part : absl::StrSplit(absl::GetFlag(FLAGS_ids), ',', absl::SkipWhitespace())) {
      int32_t id;
      if (!absl::SimpleAtoi(part, &id)) {
        std::fprintf(stderr, "--ids: \"%s\" is not an integer\n", std::string(part).c_str());
        return 2;
      }
      request.mutable_token_ids()->add_ids(id);
    }
  } else {
    request.set_text(absl::GetFlag(FLAGS_prompt));
  }
  request.set_max_tokens(absl::GetFlag(FLAGS_max_tokens));
  request.set_min_tokens(absl::GetFlag(FLAGS_min_tokens));
  arach::v1::SamplingParams* s = request.mutable_sampling();
  s->set_temperature(static_cast<float>(absl::GetFlag(FLAGS_temperature)));
  s->set_top_k(absl::GetFlag(FLAGS_top_k));
  s->set_top_p(static_cast<float>(absl::GetFlag(FLAGS_top_p)));
  s->set_min_p(static_cast<float>(absl::GetFlag(FLAGS_min_p)));
  s->set_repetition_penalty(static_cast<float>(absl::GetFlag(FLAGS_repetition_penalty)));
  if (absl::GetFlag(FLAGS_seed) >= 0) s->set_seed(static_cast<uint64_t>(absl::GetFlag(FLAGS_seed)));
  for (const std::string& stop : absl::GetFlag(FLAGS_stop)) request.add_stop(stop);
  request.set_ignore_eos(absl::GetFlag(FLAGS_ignore_eos));
  request.set_top_logprobs(absl::GetFlag(FLAGS_top_logprobs));
  request.set_logprobs(absl::GetFlag(FLAGS_top_logprobs) > 0);
  if (!ApplyVariantFlags(&request)) return 2;

  auto client = ConnectFromFlags();
  const bool json = absl::GetFlag(FLAGS_json);
  arach::v1::Finish finish;
  ArachClient::Deadline deadline;
  if (absl::GetFlag(FLAGS_timeout) > 0) {
    deadline = std::chrono::system_clock::now() +
               std::chrono::milliseconds(static_cast<int64_t>(1000 * absl::GetFlag(FLAGS_timeout)));
  }
  const grpc::Status status = client->Generate(request, [&](const arach::v1::GenerateResponse& response) {
    if (json) {
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
    std::fprintf(stderr, "\narach-cli generate: %d %s\n", static_cast<int>(status.error_code()), status.error_message().c_str());
    return 1;
  }
  if (!json) {
    std::printf("\n");
    std::fprintf(stderr, "[arach-cli] %s, %u prompt + %u generated tokens (%s), TTFT %.1f ms, %.2f ms/token, total %.3f s\n",
                 finish.variant().name().c_str(), finish.usage().prompt_tokens(), finish.usage().completion_tokens(),
                 finish.reason() == arach::v1::FINISH_REASON_LENGTH ? "length" : "stop",
                 1e3 * finish.timings().time_to_first_token_seconds(), 1e3 * finish.timings().time_per_output_token_seconds(),
                 finish.timings().total_seconds());
  }
  return 0;
}

}  // namespace arach::client
