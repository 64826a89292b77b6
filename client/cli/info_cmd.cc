// arach-cli info / health / score.
#include <cstdio>

#include "absl/flags/flag.h"
#include "client/arach_client.h"
#include "client/cli/cli_commands.h"
#include "client/cli/cli_flags.h"
#include "client/cli/connect.h"
#include "google/protobuf/util/json_util.h"
#include "engine/core/mapped_file.h"

namespace arach::client {
namespace {

void PrintJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  (void)google::protobuf::util::MessageToJsonString(message, &json, options);
  std::printf("%s", json.c_str());
}

}  // namespace

int RunInfo() {
  auto client = ConnectFromFlags();
  arach::v1::ModelInfo info;
  const grpc::Status status = client->GetModelInfo(&info);
  if (!status.ok()) return ReportRpcFailure("info", status);
  PrintJson(info);
  return 0;
}

int RunHealth() {
  auto client = ConnectFromFlags();
  grpc::health::v1::HealthCheckResponse::ServingStatus serving;
  const grpc::Status status = client->Health("", &serving);
  if (!status.ok()) return ReportRpcFailure("health", status);
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(serving).c_str());
  return serving == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

int RunScore() {
  arach::v1::ScoreRequest request;
  std::string text = absl::GetFlag(FLAGS_text);
  if (!absl::GetFlag(FLAGS_file).empty()) {
    auto file = ReadFileToString(absl::GetFlag(FLAGS_file));
    if (!file.ok()) {
      std::fprintf(stderr, "%s\n", file.status().ToString().c_str());
      return 2;
    }
    text = *file;
  }
  if (text.empty()) {
    std::fprintf(stderr, "arach-cli score: give --text or --file\n");
    return 2;
  }
  request.add_inputs()->set_text(text);
  if (!ApplyVariantFlags(&request)) return 2;
  auto client = ConnectFromFlags();
  arach::v1::ScoreResponse response;
  const grpc::Status status = client->Score(request, &response);
  if (!status.ok()) return ReportRpcFailure("score", status);
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(response);
  } else {
    const arach::v1::ScoreResult& r = response.results(0);
    std::printf("variant %s: %u tokens scored, total log-prob %.4f, perplexity %.4f\n", response.variant().name().c_str(),
                r.scored_tokens(), r.total_logprob(), r.perplexity());
  }
  return 0;
}

}  // namespace arach::client
