// /v1/embeddings end to end on the gpt2-tiny fixture (float32 weights, the references' hub embedding and adapter):
// an input's hidden state (normalize false) through the model's own output projection gives the references'
// last-position logits (../shared/fixtures/refs: an independent PyTorch forward) under each variant the model id
// names; the default answer is that vector at unit length; text and its token ids answer alike; the inputs are
// counted per variant in the metrics; bad input is a 400 naming the parameter. Rerank and score on the embeddings,
// and on the model as a cross-encoder (--classifier_from_token).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/collecting_observer.h"
#include "tests/testing/fixture_engine.h"
#include "tests/testing/http_answer.h"
#include "tests/testing/output_projection.h"
#include "tests/testing/run_command.h"
#include "tests/testing/prometheus_text.h"
#include "tests/testing/shared_fixture_server.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_models.h"

namespace arach {
namespace {

using json = nlohmann::json;
using testing::HttpAnswer;

// A gRPC Rerank of `documents` against `query` under ARACH (as the model id "gpt2-tiny:arach" asks over HTTP).
arach::v1::RerankRequest ArachRerankRequest(const std::string& query, const std::vector<std::string>& documents) {
  arach::v1::RerankRequest request;
  request.set_query(query);
  for (const std::string& document : documents) request.add_documents(document);
  request.mutable_variant()->set_arach(true);
  request.mutable_variant()->set_skip(false);
  return request;
}

class EmbeddingsServer : public testing::SharedFixtureServer<EmbeddingsServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--weight_dtype=f32", "--diagnostics_sample_rate=1"}; }

 protected:
  static HttpAnswer Embed(const json& body) { return testing::HttpSend(server_->http_address(), "POST", "/v1/embeddings", body.dump()); }
};

TEST_F(EmbeddingsServer, TheHiddenStateProjectsOntoTheReferenceLogitsUnderEachVariant) {
  auto projection = testing::OutputProjection::Load("gpt2-tiny");
  ASSERT_TRUE(projection.ok()) << projection.status();
  const std::vector<int32_t> prompt = testing::RefPrompt("gpt2-tiny", "p48");
  for (const auto& [suffix, ref] : std::vector<std::pair<std::string, std::string>>{
           {"base", "base"}, {"arach", "arach"}, {"skip", "skip"}, {"arach+skip", "arach_skip"}}) {
    SCOPED_TRACE(suffix);
    const HttpAnswer raw = Embed({{"model", "gpt2-tiny:" + suffix}, {"input", prompt}, {"normalize", false}});
    ASSERT_EQ(raw.status, 200) << raw.body;
    EXPECT_EQ(raw.header("x-arach-variant"), suffix);
    EXPECT_EQ(raw.body["usage"]["prompt_tokens"], prompt.size());
    const std::vector<float> hidden = raw.body["data"][0]["embedding"].get<std::vector<float>>();
    const absl::StatusOr<float> error = projection->MaxLogitError(hidden, "gpt2-tiny." + ref + ".p48.last_logits");
    ASSERT_TRUE(error.ok()) << error.status();
    EXPECT_LT(*error, 1e-3f);
    // The default: the same vector at unit length.
    const HttpAnswer unit = Embed({{"model", "gpt2-tiny:" + suffix}, {"input", prompt}});
    ASSERT_EQ(unit.status, 200) << unit.body;
    const std::vector<float> normalized = unit.body["data"][0]["embedding"].get<std::vector<float>>();
    ASSERT_EQ(normalized.size(), hidden.size());
    double norm = 0;
    for (float h : hidden) norm += static_cast<double>(h) * h;
    norm = std::sqrt(norm);
    for (size_t k = 0; k < hidden.size(); ++k) ASSERT_NEAR(normalized[k], hidden[k] / norm, 1e-6) << k;
  }
}

TEST_F(EmbeddingsServer, TextAndItsTokenIdsAnswerAlikeAndAreCounted) {
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok());
  const std::string sentence = "To be, or not to be, that is the question.";
  auto ids = (*tokenizer)->Encode(sentence, /*add_special_tokens=*/true);
  ASSERT_TRUE(ids.ok());
  const auto before = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(before.ok()) << before.status();
  const HttpAnswer both = Embed({{"model", "gpt2-tiny"}, {"input", json::array({json(sentence), json(*ids)})}});
  ASSERT_EQ(both.status, 200) << both.body;
  ASSERT_EQ(both.body["data"].size(), 2u);
  EXPECT_EQ(both.body["object"], "list");
  EXPECT_EQ(both.body["data"][1]["index"], 1);
  const std::vector<float> from_text = both.body["data"][0]["embedding"].get<std::vector<float>>();
  const std::vector<float> from_ids = both.body["data"][1]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(from_text.size(), from_ids.size());
  // (Two rows of one step: their sums may round apart in the last bits.)
  for (size_t k = 0; k < from_text.size(); ++k) ASSERT_NEAR(from_text[k], from_ids[k], 1e-5) << k;
  EXPECT_EQ(both.body["usage"]["prompt_tokens"], 2 * ids->size());
  const auto after = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->Sum("arach_embedding_inputs_total", {{"variant", "base"}}) -
                before->Sum("arach_embedding_inputs_total", {{"variant", "base"}}),
            2);
}

TEST_F(EmbeddingsServer, BadInputIsRefusedNamingTheParameter) {
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"model", "gpt2-tiny"}}, "input"},
      {{{"model", "gpt2-tiny"}, {"input", ""}}, "input"},
      {{{"model", "gpt2-tiny"}, {"input", json::array({"a", json::array()})}}, "input[1]"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"dimensions", 0}}, "dimensions"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"dimensions", "8"}}, "dimensions"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"dimensions", 2.5}}, "dimensions"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"dimensions", -3}}, "dimensions"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"dimensions", 100000}}, "dimensions"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"encoding_format", "int8"}}, "encoding_format"},
      {{{"model", "gpt2-tiny"}, {"input", "a"}, {"temperature", 0.5}}, "temperature"},
      {{{"model", "gpt2-tiny"}, {"input", json::array({1, 99999999})}}, "input[1]"},  // (its position)
      {{{"model", "gpt2-tiny:nope"}, {"input", "a"}}, "model"},
  };
  for (const auto& [body, param] : cases) {
    const HttpAnswer refused = Embed(body);
    EXPECT_EQ(refused.status, 400) << body.dump() << ": " << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], param) << body.dump() << ": " << refused.body;
  }
  // Any width past the model's is named as asked (it was once refused as "not at least 1" past 2^24).
  const HttpAnswer wide = Embed({{"model", "gpt2-tiny"}, {"input", "a"}, {"dimensions", 33554432}});
  EXPECT_EQ(wide.body["error"]["message"], "dimensions: 33554432 exceeds the model's 128 dimensions") << wide.body;
  arach::v1::EmbedRequest grpc_wide;
  grpc_wide.add_inputs()->set_text("a");
  grpc_wide.set_dimensions(4000000000u);
  arach::v1::EmbedResponse unused;
  const grpc::Status refused = client_->Embed(grpc_wide, &unused);
  EXPECT_EQ(refused.error_message(), "dimensions: 4000000000 exceeds the model's 128 dimensions");
}

// Diagnostics sampled by --diagnostics_sample_rate (the suite's server samples every request) are recorded for
// embeddings as for scores, on both APIs.
TEST_F(EmbeddingsServer, SampledAttentionIsRecordedOnBothApis) {
  const auto sampled = [&] {
    const auto metrics = testing::ScrapeMetrics(*server_);
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    return metrics.ok() ? metrics->Sum("arach_attention_sink_mass_count", {{"variant", "arach"}}) : -1.0;
  };
  const double before = sampled();
  ASSERT_EQ(Embed({{"model", "gpt2-tiny:arach"}, {"input", json::array({"one", "two"})}}).status, 200);
  arach::v1::EmbedRequest request;
  request.add_inputs()->set_text("three");
  request.mutable_variant()->set_arach(true);
  arach::v1::EmbedResponse response;
  ASSERT_TRUE(client_->Embed(request, &response).ok());
  EXPECT_EQ(sampled() - before, 3);
}

// gRPC Embed answers what /v1/embeddings answers for the same inputs (text and token ids) under the same variant,
// with dimensions and without normalizing; its refusals name the field.
TEST_F(EmbeddingsServer, GrpcEmbedAnswersAsHttp) {
  const std::string sentence = "Brevity is the soul of wit.";
  const std::vector<int32_t> ids = testing::RefPrompt("gpt2-tiny", "p7");
  struct Case {
    bool arach;
    uint32_t dimensions;
    bool normalize;
  };
  for (const Case& c : {Case{false, 0, true}, Case{true, 0, true}, Case{true, 8, true}, Case{false, 16, false}}) {
    SCOPED_TRACE(::testing::Message() << "arach " << c.arach << ", dimensions " << c.dimensions << ", normalize " << c.normalize);
    json body = {{"model", c.arach ? "gpt2-tiny:arach" : "gpt2-tiny"}, {"input", json::array({json(sentence), json(ids)})},
                 {"normalize", c.normalize}};
    if (c.dimensions > 0) body["dimensions"] = c.dimensions;
    const HttpAnswer http = Embed(body);
    ASSERT_EQ(http.status, 200) << http.body;
    arach::v1::EmbedRequest request;
    request.add_inputs()->set_text(sentence);
    arach::v1::TokenIds* as_ids = request.add_inputs()->mutable_token_ids();
    for (int32_t id : ids) as_ids->add_ids(id);
    request.mutable_variant()->set_arach(c.arach);
    request.set_dimensions(c.dimensions);
    if (!c.normalize) request.set_normalize(false);
    arach::v1::EmbedResponse response;
    const grpc::Status status = client_->Embed(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.variant().name(), c.arach ? "arach" : "base");
    ASSERT_EQ(response.embeddings_size(), 2);
    EXPECT_EQ(response.prompt_tokens(), http.body["usage"]["prompt_tokens"].get<uint32_t>());
    for (int i = 0; i < 2; ++i) {
      const std::vector<float> want = http.body["data"][i]["embedding"].get<std::vector<float>>();
      ASSERT_EQ(static_cast<size_t>(response.embeddings(i).values_size()), want.size()) << i;
      for (size_t k = 0; k < want.size(); ++k) ASSERT_NEAR(response.embeddings(i).values(static_cast<int>(k)), want[k], 1e-5) << i << ", " << k;
    }
    EXPECT_EQ(response.embeddings(1).prompt_tokens(), ids.size());
  }
  arach::v1::EmbedRequest too_wide;
  too_wide.add_inputs()->set_text("a");
  too_wide.set_dimensions(100000);
  arach::v1::EmbedResponse unused;
  grpc::Status refused = client_->Embed(too_wide, &unused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("dimensions"), std::string::npos) << refused.error_message();
  refused = client_->Embed(arach::v1::EmbedRequest(), &unused);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("inputs"), std::string::npos) << refused.error_message();
}

// /v1/rerank (and vLLM's /rerank, /v2/rerank): each document's relevance is the cosine of its embedding to the
// query's, as /v1/embeddings answers them; best first, cut to top_n, with or without the documents' text.
TEST_F(EmbeddingsServer, RerankOrdersDocumentsByTheCosineOfTheirEmbeddingsToTheQuery) {
  const std::string query = "Who is the prince of Denmark?";
  const std::vector<std::string> documents = {"Hamlet, the prince of Denmark.", "A horse, a horse!", "Denmark's prince", "Out, damned spot!"};
  const HttpAnswer embedded = Embed({{"model", "gpt2-tiny:arach"}, {"input", json::array({query, documents[0], documents[1], documents[2], documents[3]})}});
  ASSERT_EQ(embedded.status, 200) << embedded.body;
  std::vector<double> cosine;
  const std::vector<float> q = embedded.body["data"][0]["embedding"].get<std::vector<float>>();
  for (size_t i = 0; i < documents.size(); ++i) {
    const std::vector<float> d = embedded.body["data"][i + 1]["embedding"].get<std::vector<float>>();
    double dot = 0;
    for (size_t k = 0; k < q.size(); ++k) dot += static_cast<double>(q[k]) * d[k];  // (unit vectors)
    cosine.push_back(dot);
  }
  std::vector<size_t> best_first = {0, 1, 2, 3};
  std::sort(best_first.begin(), best_first.end(), [&](size_t a, size_t b) { return cosine[a] > cosine[b]; });
  ASSERT_GT(cosine[best_first[0]] - cosine[best_first[3]], 1e-3) << "the test needs documents the model tells apart";
  for (const char* route : {"/v1/rerank", "/rerank", "/v2/rerank"}) {
    SCOPED_TRACE(route);
    const HttpAnswer ranked = testing::HttpSend(server_->http_address(), "POST", route,
                                                json{{"model", "gpt2-tiny:arach"}, {"query", query},
                                                     {"documents", json::array({documents[0], json{{"text", documents[1]}}, documents[2], documents[3]})}}
                                                    .dump());
    ASSERT_EQ(ranked.status, 200) << ranked.body;
    EXPECT_EQ(ranked.header("x-arach-variant"), "arach");
    EXPECT_EQ(ranked.body["usage"]["total_tokens"], embedded.body["usage"]["prompt_tokens"]);
    EXPECT_EQ(ranked.body["id"].get<std::string>().rfind("rerank-", 0), 0u) << ranked.body;
    ASSERT_EQ(ranked.body["results"].size(), documents.size()) << ranked.body;
    for (size_t k = 0; k < documents.size(); ++k) {
      const json& result = ranked.body["results"][k];
      const size_t index = best_first[k];
      EXPECT_EQ(result["index"], index) << k;
      EXPECT_NEAR(result["relevance_score"].get<double>(), cosine[index], 1e-5) << k;
      EXPECT_EQ(result["document"]["text"], documents[index]) << k;
    }
  }
  const HttpAnswer top = testing::HttpSend(server_->http_address(), "POST", "/v1/rerank",
                                           json{{"model", "gpt2-tiny:arach"}, {"query", query}, {"documents", documents}, {"top_n", 2},
                                                {"return_documents", false}}
                                               .dump());
  ASSERT_EQ(top.status, 200) << top.body;
  ASSERT_EQ(top.body["results"].size(), 2u);
  EXPECT_EQ(top.body["results"][0]["index"], best_first[0]);
  EXPECT_EQ(top.body["results"][1]["index"], best_first[1]);
  EXPECT_FALSE(top.body["results"][0].contains("document"));

  for (const auto& [body, param] : std::vector<std::pair<json, std::string>>{
           {{{"model", "gpt2-tiny"}, {"documents", documents}}, "query"},
           {{{"model", "gpt2-tiny"}, {"query", 3}, {"documents", documents}}, "query"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", json::array()}}, "documents"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", "one"}}, "documents"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", json::array({"a", 4})}}, "documents[1]"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", json::array({json{{"text", "a"}, {"url", "b"}}})}}, "documents[0].url"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", documents}, {"top_n", -1}}, "top_n"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", documents}, {"max_tokens", 3}}, "max_tokens"},
           {{{"model", "gpt2-tiny"}, {"query", query}, {"documents", documents}, {"input", "x"}}, "input"},
           {{{"model", "nope"}, {"query", query}, {"documents", documents}}, "model"}}) {
    const HttpAnswer refused = testing::HttpSend(server_->http_address(), "POST", "/v1/rerank", body.dump());
    EXPECT_EQ(refused.status, param == "model" ? 404 : 400) << body << " -> " << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], param) << body << " -> " << refused.body;
  }
}

// gRPC Rerank answers as HTTP /v1/rerank: the same scores in the same order, top_n, the usage; bad input is
// INVALID_ARGUMENT naming the field.
TEST_F(EmbeddingsServer, GrpcRerankAnswersAsHttp) {
  const std::string query = "Who is the prince of Denmark?";
  const std::vector<std::string> documents = {"Hamlet, the prince of Denmark.", "A horse, a horse!", "Denmark's prince"};
  const HttpAnswer http = testing::HttpSend(server_->http_address(), "POST", "/v1/rerank",
                                            json{{"model", "gpt2-tiny:arach"}, {"query", query}, {"documents", documents}}.dump());
  ASSERT_EQ(http.status, 200) << http.body;
  arach::v1::RerankRequest request = ArachRerankRequest(query, documents);
  arach::v1::RerankResponse response;
  const grpc::Status status = client_->Rerank(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.variant().name(), "arach");
  EXPECT_EQ(response.prompt_tokens(), http.body["usage"]["prompt_tokens"].get<uint32_t>());
  ASSERT_EQ(response.results_size(), 3);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(response.results(k).index(), http.body["results"][k]["index"].get<uint32_t>()) << k;
    EXPECT_NEAR(response.results(k).relevance_score(), http.body["results"][k]["relevance_score"].get<double>(), 1e-6) << k;
  }
  request.set_top_n(1);
  arach::v1::RerankResponse top;
  ASSERT_TRUE(client_->Rerank(request, &top).ok());
  ASSERT_EQ(top.results_size(), 1);
  EXPECT_EQ(top.results(0).index(), response.results(0).index());

  arach::v1::RerankRequest empty;
  empty.set_query(query);
  arach::v1::RerankResponse refused;
  const grpc::Status none = client_->Rerank(empty, &refused);
  EXPECT_EQ(none.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(none.error_message(), "documents: empty");
  arach::v1::RerankRequest blank = request;
  blank.set_documents(1, "");
  const grpc::Status blank_status = client_->Rerank(blank, &refused);
  EXPECT_EQ(blank_status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(blank_status.error_message().rfind("documents[1]", 0), 0u) << blank_status.error_message();
}

// /v1/classify on a server without --classifier_from_token: a 400 naming the model.
TEST_F(EmbeddingsServer, ClassifyNeedsAClassifier) {
  const HttpAnswer refused = testing::HttpSend(server_->http_address(), "POST", "/v1/classify",
                                               json{{"model", "gpt2-tiny"}, {"input", "a"}}.dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.body["error"]["param"], "model") << refused.body;
}

// /v1/score (and /score): vLLM's score API on the embedding model: one text_1 against each text_2, or pairwise, each
// score the cosine of the two texts' embeddings as /v1/embeddings answers them.
TEST_F(EmbeddingsServer, ScoreIsTheCosineOfEachPairsEmbeddings) {
  const std::vector<std::string> texts = {"To be, or not to be", "that is the question", "Whether 'tis nobler", "To be"};
  const HttpAnswer embedded = Embed({{"model", "gpt2-tiny"}, {"input", texts}});
  ASSERT_EQ(embedded.status, 200) << embedded.body;
  const auto cosine = [&](size_t a, size_t b) {
    const std::vector<float> x = embedded.body["data"][a]["embedding"].get<std::vector<float>>();
    const std::vector<float> y = embedded.body["data"][b]["embedding"].get<std::vector<float>>();
    double dot = 0;
    for (size_t k = 0; k < x.size(); ++k) dot += static_cast<double>(x[k]) * y[k];  // (unit vectors)
    return dot;
  };
  const auto score = [&](const char* route, const json& text_1, const json& text_2) {
    return testing::HttpSend(server_->http_address(), "POST", route, json{{"model", "gpt2-tiny"}, {"text_1", text_1}, {"text_2", text_2}}.dump());
  };
  const HttpAnswer one_to_many = score("/v1/score", texts[0], json::array({texts[1], texts[2], texts[3]}));
  ASSERT_EQ(one_to_many.status, 200) << one_to_many.body;
  EXPECT_EQ(one_to_many.body["object"], "list");
  ASSERT_EQ(one_to_many.body["data"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(one_to_many.body["data"][i]["index"], i);
    EXPECT_EQ(one_to_many.body["data"][i]["object"], "score");
    EXPECT_NEAR(one_to_many.body["data"][i]["score"].get<double>(), cosine(0, i + 1), 1e-5) << i;
  }
  const HttpAnswer pairwise = score("/score", json::array({texts[0], texts[1]}), json::array({texts[2], texts[3]}));
  ASSERT_EQ(pairwise.status, 200) << pairwise.body;
  ASSERT_EQ(pairwise.body["data"].size(), 2u);
  EXPECT_NEAR(pairwise.body["data"][0]["score"].get<double>(), cosine(0, 2), 1e-5);
  EXPECT_NEAR(pairwise.body["data"][1]["score"].get<double>(), cosine(1, 3), 1e-5);
  ASSERT_GT(std::abs(cosine(0, 2) - cosine(0, 3)), 1e-3) << "the test needs pairs the model tells apart";
  const HttpAnswer same = score("/v1/score", texts[1], texts[1]);
  ASSERT_EQ(same.status, 200) << same.body;
  EXPECT_NEAR(same.body["data"][0]["score"].get<double>(), 1.0, 1e-6);
  for (const auto& [body, param] : std::vector<std::pair<json, std::string>>{
           {{{"model", "gpt2-tiny"}, {"text_2", "a"}}, "text_1"},
           {{{"model", "gpt2-tiny"}, {"text_1", "a"}, {"text_2", json::array()}}, "text_2"},
           {{{"model", "gpt2-tiny"}, {"text_1", json::array({"a", "b"})}, {"text_2", json::array({"a", "b", "c"})}}, "text_2"},
           {{{"model", "gpt2-tiny"}, {"text_1", json::array({"a", 1})}, {"text_2", "b"}}, "text_1[1]"},
           {{{"model", "gpt2-tiny"}, {"text_1", "a"}, {"text_2", "b"}, {"top_n", 1}}, "top_n"}}) {
    const HttpAnswer refused = testing::HttpSend(server_->http_address(), "POST", "/v1/score", body.dump());
    EXPECT_EQ(refused.status, 400) << body << " -> " << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], param) << body << " -> " << refused.body;
  }
}

// arach-cli embed prints what gRPC Embed answers (its JSON, or the values), under the variant it names.
TEST_F(EmbeddingsServer, TheCliPrintsTheEmbedding) {
  const std::string command = absl::StrCat(testing::CliBinary(), " embed --server=", server_->grpc_address(),
                                           " --text='All the world' --dimensions=8 --variant=arach");
  const testing::CommandResult as_json = testing::RunCommand(command + " --json");
  ASSERT_EQ(as_json.status, 0) << as_json.output;
  const json printed = json::parse(as_json.output, nullptr, false);
  ASSERT_FALSE(printed.is_discarded()) << as_json.output;
  arach::v1::EmbedRequest request;
  request.add_inputs()->set_text("All the world");
  request.set_dimensions(8);
  request.mutable_variant()->set_arach(true);
  arach::v1::EmbedResponse response;
  ASSERT_TRUE(client_->Embed(request, &response).ok());
  ASSERT_EQ(printed["embeddings"][0]["values"].size(), 8u) << as_json.output;
  for (int k = 0; k < 8; ++k) EXPECT_NEAR(printed["embeddings"][0]["values"][k].get<double>(), response.embeddings(0).values(k), 1e-6) << k;
  EXPECT_EQ(printed["variant"]["name"], "arach");
  const testing::CommandResult plain = testing::RunCommand(command);
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_NE(plain.output.find("variant arach: 8 dimensions"), std::string::npos) << plain.output;
  const testing::CommandResult no_text = testing::RunCommand(absl::StrCat(testing::CliBinary(), " embed --server=", server_->grpc_address()));
  EXPECT_NE(no_text.status, 0);
  EXPECT_NE(no_text.output.find("give --text or --file"), std::string::npos) << no_text.output;
}

// Each input is an engine request: a call of more inputs than the engine queues could never be admitted whole, so it
// is a 400 naming the input (not a 429 its client would retry forever); one that fits is served.
TEST(EmbeddingsQueue, MoreInputsThanTheQueueHoldsAreRefusedUpFront) {
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + testing::TinyRandomModelDir(), "--served_model_name=tiny",
                                                                    "--kv_cache_bytes=16777216", "--max_queued_requests=4"});
  ASSERT_NE(server, nullptr);
  const auto inputs = [](int n) {
    json list = json::array();
    for (int i = 0; i < n; ++i) list.push_back(json::array({5 + i, 6, 7}));
    return list;
  };
  const HttpAnswer fits = testing::HttpSend(server->http_address(), "POST", "/v1/embeddings",
                                            json{{"model", "tiny"}, {"input", inputs(4)}}.dump());
  EXPECT_EQ(fits.status, 200) << fits.body;
  const HttpAnswer too_many = testing::HttpSend(server->http_address(), "POST", "/v1/embeddings",
                                                json{{"model", "tiny"}, {"input", inputs(5)}}.dump());
  EXPECT_EQ(too_many.status, 400) << too_many.body;
  EXPECT_EQ(too_many.body["error"]["param"], "input");
  EXPECT_NE(too_many.body["error"]["message"].get<std::string>().find("--max_queued_requests"), std::string::npos) << too_many.body;
  auto client = client::ArachClient::Connect(server->grpc_address());
  arach::v1::EmbedRequest request;
  for (int i = 0; i < 5; ++i) request.add_inputs()->set_text("a");
  arach::v1::EmbedResponse response;
  const grpc::Status refused = client->Embed(request, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(refused.error_message().find("inputs: 5 inputs exceed"), std::string::npos) << refused.error_message();
}

// A Sentence-Transformers folder's text inputs get the default prompt (config_sentence_transformers.json) and are
// lower-cased before they are tokenized (sentence_bert_config.json's do_lower_case), on both APIs; an input longer
// than max_seq_length is a 400 naming it (vLLM's rule), or kept to its last max_seq_length tokens with
// truncate_prompt_tokens -1.
TEST(SentenceTransformersFolder, TextGetsThePromptAndIsLowerCasedAndInputsAreBoundByMaxSeqLength) {
  ARACH_REQUIRE_FIXTURES();
  constexpr int kMaxSeqLength = 8;
  testing::ScopedTempDir dir;
  testing::MakePooledFixtureFolder("gpt2-tiny", "pooling_mode_lasttoken", dir.path());
  std::ofstream(std::filesystem::path(dir.path()) / "sentence_bert_config.json")
      << "{\"max_seq_length\": " << kMaxSeqLength << ", \"do_lower_case\": true}";
  std::ofstream(std::filesystem::path(dir.path()) / "config_sentence_transformers.json")
      << R"({"prompts": {"query": "Query: ", "document": ""}, "default_prompt_name": "query", "similarity_fn_name": "cosine"})";
  auto server = testing::StartServerOrFail(testing::ServerBinary(), {"--model=" + dir.path(), "--served_model_name=st",
                                                                    "--kv_cache_bytes=16777216", "--weight_dtype=f32"});
  ASSERT_NE(server, nullptr);
  EXPECT_NE(server->Output().find("embedding_max_tokens=8 embedding_lowercase=yes embedding_default_prompt=yes"), std::string::npos) << server->Output();
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const auto embed = [&](const json& body) { return testing::HttpSend(server->http_address(), "POST", "/v1/embeddings", body.dump()); };
  const auto encode = [&](const std::string& text) {
    absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->Encode(text, /*add_special_tokens=*/true);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<int32_t>{};
  };
  const std::string shouted = "ALL THE World";
  const std::vector<int32_t> lowered = encode("query: all the world");
  ASSERT_NE(encode(shouted), lowered) << "the test needs a text whose case changes its tokens";
  ASSERT_LE(lowered.size(), static_cast<size_t>(kMaxSeqLength));
  const HttpAnswer both = embed({{"model", "st"}, {"input", json::array({json(shouted), json(lowered)})}});
  ASSERT_EQ(both.status, 200) << both.body;
  const std::vector<float> from_text = both.body["data"][0]["embedding"].get<std::vector<float>>();
  const std::vector<float> from_lowered_ids = both.body["data"][1]["embedding"].get<std::vector<float>>();
  ASSERT_EQ(from_text.size(), from_lowered_ids.size());
  for (size_t k = 0; k < from_text.size(); ++k) ASSERT_NEAR(from_text[k], from_lowered_ids[k], 1e-5) << k;
  EXPECT_EQ(both.body["usage"]["prompt_tokens"], 2 * lowered.size());
  // gRPC Embed lower-cases its text alike.
  auto client = client::ArachClient::Connect(server->grpc_address());
  arach::v1::EmbedRequest request;
  request.add_inputs()->set_text(shouted);
  arach::v1::EmbedResponse response;
  ASSERT_TRUE(client->Embed(request, &response).ok());
  ASSERT_EQ(response.embeddings_size(), 1);
  ASSERT_EQ(static_cast<size_t>(response.embeddings(0).values_size()), from_text.size());
  for (size_t k = 0; k < from_text.size(); ++k) ASSERT_NEAR(response.embeddings(0).values(static_cast<int>(k)), from_text[k], 1e-5) << k;
  EXPECT_EQ(response.embeddings(0).prompt_tokens(), lowered.size());

  // Longer than max_seq_length: refused on both APIs, naming the input; truncate_prompt_tokens -1 keeps the last 8.
  const std::vector<int32_t> long_ids = testing::RefPrompt("gpt2-tiny", "p48");
  const HttpAnswer too_long = embed({{"model", "st"}, {"input", json::array({json(lowered), json(long_ids)})}});
  EXPECT_EQ(too_long.status, 400) << too_long.body;
  EXPECT_EQ(too_long.body["error"]["param"], "input[1]") << too_long.body;
  EXPECT_NE(too_long.body["error"]["message"].get<std::string>().find("exceed the 8 the embedding model takes"), std::string::npos)
      << too_long.body;
  arach::v1::EmbedRequest long_request;
  arach::v1::TokenIds* long_input = long_request.add_inputs()->mutable_token_ids();
  for (int32_t id : long_ids) long_input->add_ids(id);
  const grpc::Status refused = client->Embed(long_request, &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << refused.error_message();
  EXPECT_NE(refused.error_message().find("inputs[0].token_ids: the input's 48 tokens"), std::string::npos) << refused.error_message();
  const HttpAnswer truncated = embed({{"model", "st"}, {"input", long_ids}, {"truncate_prompt_tokens", -1}});
  ASSERT_EQ(truncated.status, 200) << truncated.body;
  EXPECT_EQ(truncated.body["usage"]["prompt_tokens"], kMaxSeqLength);
  const HttpAnswer last_eight = embed({{"model", "st"}, {"input", std::vector<int32_t>(long_ids.end() - kMaxSeqLength, long_ids.end())}});
  ASSERT_EQ(last_eight.status, 200) << last_eight.body;
  EXPECT_EQ(truncated.body["data"][0]["embedding"], last_eight.body["data"][0]["embedding"]);
  // Generation is bound by the model's context, not the embedding limit.
  const HttpAnswer completion = testing::HttpSend(server->http_address(), "POST", "/v1/completions",
                                                  json{{"model", "st"}, {"prompt", long_ids}, {"max_tokens", 2}}.dump());
  EXPECT_EQ(completion.status, 200) << completion.body;
}

// --classifier_from_token=no,yes: /v1/rerank and /v1/score score each pair as a cross-encoder (Qwen3-Reranker's way,
// vLLM's classifier_from_token): the query's tokens then the document's, sigmoid(logit(yes) - logit(no)) at the last
// position, as the engine in process classifies the same tokens.
class CrossEncoderServer : public testing::SharedFixtureServer<CrossEncoderServer> {
 public:
  static std::vector<std::string> ExtraFlags() { return {"--weight_dtype=f32", "--classifier_from_token=no,yes"}; }

 protected:
  // The in-process engine's score of the pair (first, second) under ARACH.
  static double InProcessScore(const std::string& first, const std::string& second) {
    static std::unique_ptr<Engine> engine = testing::MakeFixtureEngine("gpt2-tiny");
    const Tokenizer& tokenizer = engine->tokenizer();
    EngineRequest request;
    request.kind = RequestKind::kClassify;
    request.prompt = *tokenizer.Encode(first, true);
    const std::vector<int32_t> tail = *tokenizer.Encode(second, true);
    request.prompt.insert(request.prompt.end(), tail.begin(), tail.end());
    request.class_token_ids = {*tokenizer.TokenToId("no"), *tokenizer.TokenToId("yes")};
    request.variant.arach = true;
    auto observer = std::make_shared<testing::CollectingObserver>();
    EXPECT_TRUE(engine->Submit(request, observer).ok());
    EXPECT_TRUE(observer->Wait());
    const std::vector<float> logits = observer->finish().class_logits;
    EXPECT_EQ(logits.size(), 2u);
    return logits.size() == 2 ? 1.0 / (1.0 + std::exp(-(static_cast<double>(logits[1]) - logits[0]))) : NAN;
  }
};

TEST_F(CrossEncoderServer, RerankAndScoreClassifyEachPair) {
  const std::string query = "Who is the prince of Denmark?";
  const std::vector<std::string> documents = {"Hamlet, the prince of Denmark.", "A horse, a horse!", "Denmark's prince",
                                              "Out, damned spot!"};
  std::vector<double> expected;
  for (const std::string& document : documents) expected.push_back(InProcessScore(query, document));
  std::vector<size_t> best_first = {0, 1, 2, 3};
  std::sort(best_first.begin(), best_first.end(), [&](size_t a, size_t b) { return expected[a] > expected[b]; });
  ASSERT_GT(expected[best_first[0]] - expected[best_first[3]], 1e-4) << "the test needs documents the model tells apart";
  const HttpAnswer ranked = testing::HttpSend(server_->http_address(), "POST", "/v1/rerank",
                                              json{{"model", "gpt2-tiny:arach"}, {"query", query}, {"documents", documents}}.dump());
  ASSERT_EQ(ranked.status, 200) << ranked.body;
  ASSERT_EQ(ranked.body["results"].size(), documents.size()) << ranked.body;
  for (size_t k = 0; k < documents.size(); ++k) {
    EXPECT_EQ(ranked.body["results"][k]["index"], best_first[k]) << k;
    EXPECT_NEAR(ranked.body["results"][k]["relevance_score"].get<double>(), expected[best_first[k]], 1e-6) << k;
  }
  const HttpAnswer scored = testing::HttpSend(server_->http_address(), "POST", "/v1/score",
                                              json{{"model", "gpt2-tiny:arach"}, {"text_1", query}, {"text_2", documents}}.dump());
  ASSERT_EQ(scored.status, 200) << scored.body;
  ASSERT_EQ(scored.body["data"].size(), documents.size());
  int prompt_tokens = 0;
  for (size_t i = 0; i < documents.size(); ++i) {
    EXPECT_NEAR(scored.body["data"][i]["score"].get<double>(), expected[i], 1e-6) << i;
  }
  for (const std::string& document : documents) {
    auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
    prompt_tokens += static_cast<int>((*tokenizer)->Encode(query, true)->size() + (*tokenizer)->Encode(document, true)->size());
  }
  EXPECT_EQ(scored.body["usage"]["prompt_tokens"], prompt_tokens) << "each pair's tokens, the query's counted with each";
  arach::v1::RerankRequest request = ArachRerankRequest(query, documents);
  arach::v1::RerankResponse response;
  const grpc::Status status = client_->Rerank(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.results_size(), 4);
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(response.results(k).index(), best_first[static_cast<size_t>(k)]) << "gRPC " << k;
    EXPECT_NEAR(response.results(k).relevance_score(), expected[best_first[static_cast<size_t>(k)]], 1e-6) << "gRPC " << k;
  }
  EXPECT_EQ(response.prompt_tokens(), static_cast<uint32_t>(prompt_tokens));
  const auto metrics = testing::ScrapeMetrics(*server_);
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_EQ(metrics->Sum("arach_classifier_inputs_total", {{"variant", "arach"}}), 12);
  EXPECT_EQ(metrics->Sum("arach_embedding_inputs_total", {}), 0) << "nothing was embedded";
}

// /v1/classify (and /classify): each input's class-token probabilities, the softmax of the logits the engine in
// process gives, and the label of the more likely token; bad input is a 400 naming the parameter.
TEST_F(CrossEncoderServer, ClassifyAnswersEachInputsClassProbabilities) {
  auto tokenizer = LoadTokenizer(testing::FixturePath("gpt2-tiny"));
  ASSERT_TRUE(tokenizer.ok());
  const std::vector<std::string> inputs = {"Is the prince of Denmark Hamlet? Answer:", "A horse, a horse!"};
  for (const char* route : {"/v1/classify", "/classify"}) {
    SCOPED_TRACE(route);
    const HttpAnswer answer = testing::HttpSend(server_->http_address(), "POST", route,
                                                json{{"model", "gpt2-tiny:arach"}, {"input", inputs}}.dump());
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(answer.body["object"], "list");
    EXPECT_EQ(answer.body["id"].get<std::string>().rfind("classify-", 0), 0u) << answer.body;
    ASSERT_EQ(answer.body["data"].size(), 2u) << answer.body;
    int prompt_tokens = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const double yes = InProcessScore(inputs[i], "");  // p(yes) between no and yes
      const json& item = answer.body["data"][i];
      EXPECT_EQ(item["index"], i);
      EXPECT_EQ(item["num_classes"], 2);
      ASSERT_EQ(item["probs"].size(), 2u);
      EXPECT_NEAR(item["probs"][1].get<double>(), yes, 1e-6) << i;
      EXPECT_NEAR(item["probs"][0].get<double>(), 1 - yes, 1e-6) << i;
      EXPECT_EQ(item["label"], yes >= 0.5 ? "yes" : "no") << i;
      prompt_tokens += static_cast<int>((*tokenizer)->Encode(inputs[i], true)->size());
    }
    EXPECT_EQ(answer.body["usage"]["prompt_tokens"], prompt_tokens);
  }
  for (const auto& [body, param] : std::vector<std::pair<json, std::string>>{
           {{{"model", "gpt2-tiny"}}, "input"},
           {{{"model", "gpt2-tiny"}, {"input", json::array()}}, "input"},
           {{{"model", "gpt2-tiny"}, {"input", "a"}, {"documents", json::array({"b"})}}, "documents"},
           {{{"model", "gpt2-tiny"}, {"input", "a"}, {"max_tokens", 3}}, "max_tokens"}}) {
    const HttpAnswer refused = testing::HttpSend(server_->http_address(), "POST", "/v1/classify", body.dump());
    EXPECT_EQ(refused.status, 400) << body << " -> " << refused.body;
    EXPECT_EQ(refused.body["error"]["param"], param) << body << " -> " << refused.body;
  }
}

TEST_F(CrossEncoderServer, AClassifierTokenTheVocabularyLacksIsRefusedAtStartUp) {
  const testing::CommandResult refused = testing::RunCommand(absl::StrCat(
      "timeout -s KILL 60 ", testing::ServerBinary(), " --model=", testing::FixturePath("gpt2-tiny"),
      " --listen=127.0.0.1:0 --http_listen=127.0.0.1:0 --classifier_from_token=no,not-a-token"));
  EXPECT_NE(refused.status, 0);
  EXPECT_NE(refused.output.find("--classifier_from_token: 'not-a-token' is no token of the vocabulary"), std::string::npos)
      << refused.output;
}

}  // namespace
}  // namespace arach
