#include "server/http/http_server.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <cerrno>
#include <cstring>

#include <sys/socket.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/build_info.h"
#include "server/http/chat_completions.h"
#include "server/http/classify.h"
#include "server/http/completions.h"
#include "server/http/cors.h"
#include "server/http/elastic_thread_pool.h"
#include "server/http/http_call.h"
#include "server/http/lora_admin.h"
#include "server/http/model_ids.h"
#include "server/http/openai_error.h"
#include "server/http/request_deadline_server.h"
#include "server/http/responses.h"
#include "server/http/embeddings.h"
#include "server/http/similarity.h"
#include "server/http/tokenize.h"
#include "server/listen_error.h"

namespace arach::server::http {
namespace {

using json = nlohmann::json;

constexpr const char* kRoutes[] = {"/health", "/ready", "/version", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions",
                                   "/v1/responses", "/v1/responses/input_tokens", "/v1/embeddings", "/rerank", "/v1/rerank",
                                   "/v2/rerank", "/score", "/v1/score", "/classify", "/v1/classify", "/tokenize", "/detokenize",
                                   "/v1/load_lora_adapter", "/v1/unload_lora_adapter"};

constexpr char kModelRoutePrefix[] = "/v1/models/";

// The API's threads kept warm, and how long a thread beyond them lives without a connection to serve.
constexpr int kWarmApiThreads = 8;
constexpr std::chrono::milliseconds kIdleThreadLifetime{10000};
// Connections the probes-and-metrics listener serves at once (kubelet probes, Prometheus, the endpoint picker).
constexpr int kProbeAndMetricsThreads = 16;
// How long a request to that listener may take to arrive (probes and scrapes send a few hundred bytes at once).
constexpr std::chrono::milliseconds kProbeRequestTimeout{10000};

// The route label of a path: one of kRoutes, "/v1/models/{model}" for any model's, else "other" (unknown paths
// and model ids must not grow the label set).
std::string RouteLabel(const std::string& path) {
  for (const char* route : kRoutes) {
    if (path == route) return route;
  }
  if (path.rfind(kModelRoutePrefix, 0) == 0) return "/v1/models/{model}";
  return "other";
}

// OK, or the refusal (401) of a call without a valid key where keys are configured.
absl::Status CheckKey(const ServiceContext& context, const httplib::Request& request) {
  return Authenticate(*context.keys, request.get_header_value("Authorization")).status();
}

void ServeMetrics(httplib::Server& server, ServiceContext& context) {
  server.Get("/metrics", [&context](const httplib::Request& request, httplib::Response& response) {
    if (context.metrics_need_key) {
      if (absl::Status key = CheckKey(context, request); !key.ok()) return SendError(response, key);
    }
    response.set_content(context.metrics->Scrape(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

// The engine's health (Engine::Health), OK while none is loaded.
absl::Status EngineHealth(const ServiceContext& context) {
  const Engine* engine = context.engine.load();
  return engine == nullptr ? absl::OkStatus() : engine->Health();
}

// The probes, all open. GET /health and /ready: 200 while serving, 503 while loading, draining (a lame duck is not
// ready) or while the engine is unhealthy. GET /live: 200 while the process can serve in time (loading and
// draining included), 503 while the engine is unhealthy (failing steps, a stalled step), for a liveness probe to
// restart it. A 503 for an unhealthy engine says why: {"status": "unhealthy", "reason": ...}.
void ServeHealthRoutes(httplib::Server& server, const ServiceContext& context) {
  auto unhealthy = [](httplib::Response& response, const absl::Status& health) {
    SendJson(response, 503, {{"status", "unhealthy"}, {"reason", std::string(health.message())}});
  };
  auto ready = [&context, unhealthy](const httplib::Request&, httplib::Response& response) {
    if (const absl::Status health = EngineHealth(context); !health.ok()) return unhealthy(response, health);
    const Phase phase = context.state.phase();
    const char* name = phase == Phase::kServing ? "serving" : phase == Phase::kLoading ? "loading" : "draining";
    SendJson(response, phase == Phase::kServing ? 200 : 503, {{"status", name}});
  };
  server.Get("/health", ready);
  server.Get("/ready", ready);
  server.Get("/live", [&context, unhealthy](const httplib::Request&, httplib::Response& response) {
    if (const absl::Status health = EngineHealth(context); !health.ok()) return unhealthy(response, health);
    SendJson(response, 200, {{"status", "alive"}});
  });
}

// GET /v1/models (`model_id` empty: the list of every id) or GET /v1/models/{model_id} (that one, 404 when it is
// not one of them), each id as OpenAI's model object.
void ServeModels(const httplib::Request& request, httplib::Response& response, const ServiceContext& context,
                 const std::string& model_id) {
  if (absl::Status key = CheckKey(context, request); !key.ok()) return SendError(response, key);
  const Engine* engine = context.engine.load();
  if (engine == nullptr || (context.state.phase() != Phase::kServing && context.state.phase() != Phase::kLameDuck)) {
    SendError(response, absl::UnavailableError(context.state.phase() == Phase::kLoading ? "the model is still loading"
                                                                                          : "the server is draining"));
    return;
  }
  const ServedModels served = ServedModelsOf(context.served_model_name, *engine);
  const std::vector<std::string> ids = ServedModelIds(served);
  auto model_object = [&](const std::string& id) {
    // A LoRA's ids are rooted at the adapter and name the served model as their parent (vLLM's model cards).
    const std::string lora = LoraOfModelId(id, served);
    json object = {{"id", id},
                   {"object", "model"},
                   {"created", context.started_unix_seconds},
                   {"owned_by", "arach-serve"},
                   {"root", lora.empty() ? context.served_model_name : lora},
                   {"parent", lora.empty() ? json(nullptr) : json(context.served_model_name)},
                   {"max_model_len", engine->model_config().max_positions}};
    return object;
  };
  if (!model_id.empty()) {
    if (std::find(ids.begin(), ids.end(), model_id) == ids.end()) {
      return SendError(response, ModelNotServed(model_id, served));
    }
    return SendJson(response, 200, model_object(model_id));
  }
  json data = json::array();
  for (const std::string& id : ids) data.push_back(model_object(id));
  SendJson(response, 200, {{"object", "list"}, {"data", std::move(data)}});
}

// Before any route, in this order: CORS (cors.h: a browser's preflight is answered here; answers to an allowed
// origin say so), then a request body is read as sent: the library would inflate a gzip or deflate body past
// --max_request_bytes (it bounds the bytes received, not what they inflate to: a 400 kB body became 400 MB in
// memory), so a body with a Content-Encoding other than identity is refused (415) before it is read. OpenAI's
// clients send plain JSON.
void PreRoute(httplib::Server& server, std::shared_ptr<const CorsPolicy> cors) {
  server.set_pre_routing_handler([cors](const httplib::Request& request, httplib::Response& response) {
    if (cors->Apply(request, response)) return httplib::Server::HandlerResponse::Handled;
    const std::string encoding = request.get_header_value("Content-Encoding");
    if (encoding.empty() || absl::EqualsIgnoreCase(encoding, "identity")) return httplib::Server::HandlerResponse::Unhandled;
    response.status = 415;
    response.set_header("Connection", "close");  // the unread body must not be taken for the next request
    response.set_content(JsonText(ErrorBody(absl::InvalidArgumentError(absl::StrCat(
                             "body: Content-Encoding '", encoding, "' is not accepted; send the body uncompressed")))),
                         "application/json");
    return httplib::Server::HandlerResponse::Handled;
  });
}

// Bodies for the errors the library answers itself (unknown path, body too large), in OpenAI's shape.
void AnswerLibraryErrors(httplib::Server& server, size_t max_request_bytes) {
  server.set_error_handler([max_request_bytes](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return;  // a handler's own error
    const int status = response.status;
    absl::Status error;
    const bool form = request.get_header_value("Content-Type").rfind("application/x-www-form-urlencoded", 0) == 0;
    if (status == 413 && form) {  // the library bounds form bodies on its own
      error = absl::InvalidArgumentError(absl::StrCat(
          "body: sent as a form (Content-Type: application/x-www-form-urlencoded, at most ",
          CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH, " bytes); send it as Content-Type: application/json"));
    } else if (status == 413) {
      error = absl::InvalidArgumentError(absl::StrCat("body: larger than ", max_request_bytes, " bytes (--max_request_bytes)"));
    } else if (status == 404) {
      error = absl::NotFoundError(absl::StrCat("no route ", request.method, " ", request.path));
    } else {
      error = absl::InvalidArgumentError(absl::StrCat("the request could not be read (HTTP ", status, ")"));
    }
    json body = ErrorBody(error);
    response.set_content(JsonText(body), "application/json");
  });
}

// The listening socket's options: SO_REUSEADDR (a restarted server binds again at once while its old connections
// linger in TIME_WAIT) and not SO_REUSEPORT, which cpp-httplib's defaults set: with it a second server started on a
// port in use bound it too, and the kernel split the connections between the two.
void ListeningSocketOptions(socket_t socket) {
  const int yes = 1;
  ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

}  // namespace

absl::Status HttpServer::Listen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("HTTP address '", listen, "' is not HOST:PORT"));
  }
  const std::string host = listen.substr(0, colon);
  // cpp-httplib listens with a backlog of 5 connections waiting to be accepted: a burst of clients connecting at
  // once (a client pool opening its connections, a gateway after a failover) overflowed it, and the kernel reset
  // or delayed the rest by its SYN retries (1 s, 3 s). The socket it binds is listened on again with the system's
  // bound (SOMAXCONN; Linux takes the new backlog).
  int listening_socket = -1;
  server_->set_socket_options([&listening_socket](socket_t socket) {
    ListeningSocketOptions(socket);
    listening_socket = socket;  // the last socket it is called for is the one bound (earlier candidates failed)
  });
  const bool bound = port == 0 ? (port = server_->bind_to_any_port(host)) > 0 : server_->bind_to_port(host, port);
  server_->set_socket_options(ListeningSocketOptions);  // the callback above refers to this frame
  if (!bound) return CannotListenError(listen);
  if (listening_socket < 0 || ::listen(listening_socket, SOMAXCONN) != 0) {
    return absl::InternalError(absl::StrCat("cannot widen the connection backlog of ", listen, ": ", std::strerror(errno)));
  }
  address_ = absl::StrCat(host, ":", port);
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // Stop() must not come before the loop runs (it would then never end): wait for it (bounded, in case the
  // loop ended at once).
  for (int i = 0; i < 5000 && !server_->is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::StartApi(const HttpOptions& options, ServiceContext& context) {
  std::unique_ptr<HttpServer> http(new HttpServer());
  http->background_ = std::make_unique<BackgroundResponses>(context.metrics);
  BackgroundResponses* const background = http->background_.get();
  const auto request_timeout = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(options.request_timeout_seconds * 1000)));
  const ClientConnections* connections = nullptr;  // the server's: which connection each request came on
  if (options.tls.enabled()) {
    absl::StatusOr<std::unique_ptr<HttpsCertificates>> certificates = HttpsCertificates::Load(options.tls);
    if (!certificates.ok()) return certificates.status();
    http->certificates_ = std::move(*certificates);
    HttpsCertificates* loaded = http->certificates_.get();
    auto tls = std::make_unique<DeadlineSslServer>(request_timeout, std::function<bool(SSL_CTX&)>([loaded](SSL_CTX& ctx) {
                                                     return loaded->Configure(ctx);
                                                   }));
    if (!tls->is_valid()) return absl::InternalError("the HTTPS server could not be set up (OpenSSL)");
    connections = &tls->client_connections();
    http->server_ = std::move(tls);
  } else {
    auto plain = std::make_unique<DeadlineServer>(request_timeout);
    connections = &plain->client_connections();
    http->server_ = std::move(plain);
  }
  httplib::Server& server = *http->server_;
  const int threads = std::max(1, options.threads);
  server.new_task_queue = [threads] {
    return new ElasticThreadPool(std::min(threads, kWarmApiThreads), threads, kIdleThreadLifetime);
  };
  server.set_payload_max_length(options.max_request_bytes);
  ServerMetrics& metrics = *context.metrics;
  server.set_logger([&metrics](const httplib::Request& request, const httplib::Response& response) {
    metrics.RecordHttpRequest(RouteLabel(request.path), response.status, response.get_header_value(kVariantHeader));
  });
  AnswerLibraryErrors(server, options.max_request_bytes);
  PreRoute(server, std::make_shared<const CorsPolicy>(options.cors_allowed_origins));
  ServeHealthRoutes(server, context);
  ServeMetrics(server, context);
  // vLLM's GET /version, with the commit the server was built from (a key where keys are configured).
  server.Get("/version", [&context](const httplib::Request& request, httplib::Response& response) {
    if (absl::Status key = CheckKey(context, request); !key.ok()) return SendError(response, key);
    SendJson(response, 200, {{"version", ArachVersion()}, {"git_sha", ArachGitSha()}});
  });
  ServeLoraAdminRoutes(server, context);
  server.Get("/v1/models", [&context](const httplib::Request& request, httplib::Response& response) {
    ServeModels(request, response, context, "");
  });
  server.Get(absl::StrCat(kModelRoutePrefix, "(.+)"), [&context](const httplib::Request& request, httplib::Response& response) {
    ServeModels(request, response, context, request.matches[1].str());
  });
  server.Post("/v1/completions", [&context, connections](const httplib::Request& request, httplib::Response& response) {
    HandleCompletions(context, request, response, connections->Of(request));
  });
  server.Post("/v1/chat/completions", [&context, connections](const httplib::Request& request, httplib::Response& response) {
    HandleChatCompletions(context, request, response, connections->Of(request));
  });
  server.Post("/v1/embeddings", [&context, connections](const httplib::Request& request, httplib::Response& response) {
    HandleEmbeddings(context, request, response, connections->Of(request));
  });
  for (const char* route : {"/rerank", "/v1/rerank", "/v2/rerank"}) {  // vLLM serves all three (Jina's and Cohere's paths)
    server.Post(route, [&context, connections](const httplib::Request& request, httplib::Response& response) {
      HandleRerank(context, request, response, connections->Of(request));
    });
  }
  for (const char* route : {"/score", "/v1/score"}) {  // vLLM's score API (similarity of embeddings here)
    server.Post(route, [&context, connections](const httplib::Request& request, httplib::Response& response) {
      HandleSimilarityScore(context, request, response, connections->Of(request));
    });
  }
  for (const char* route : {"/classify", "/v1/classify"}) {  // vLLM's classify API (a model served as a classifier)
    server.Post(route, [&context, connections](const httplib::Request& request, httplib::Response& response) {
      HandleClassify(context, request, response, connections->Of(request));
    });
  }
  server.Post("/tokenize", [&context](const httplib::Request& request, httplib::Response& response) {
    HandleTokenize(context, request, response);
  });
  server.Post("/detokenize", [&context](const httplib::Request& request, httplib::Response& response) {
    HandleDetokenize(context, request, response);
  });
  server.Post("/v1/responses", [&context, background, connections](const httplib::Request& request, httplib::Response& response) {
    HandleResponses(context, *background, request, response, connections->Of(request));
  });
  server.Post("/v1/responses/input_tokens", [&context](const httplib::Request& request, httplib::Response& response) {
    HandleResponseInputTokens(context, request, response);
  });
  // Stored responses: retrieve, delete and list their input items, cancel a background one (by the key that made
  // them).
  server.Get("/v1/responses/([^/]+)", [&context, background](const httplib::Request& request, httplib::Response& response) {
    ServeStoredResponse(context, background, request, response, StoredResponseAction::kRetrieve);
  });
  server.Delete("/v1/responses/([^/]+)", [&context, background](const httplib::Request& request, httplib::Response& response) {
    ServeStoredResponse(context, background, request, response, StoredResponseAction::kDelete);
  });
  server.Get("/v1/responses/([^/]+)/input_items", [&context, background](const httplib::Request& request, httplib::Response& response) {
    ServeStoredResponse(context, background, request, response, StoredResponseAction::kListInputItems);
  });
  server.Post("/v1/responses/([^/]+)/cancel", [&context, background](const httplib::Request& request, httplib::Response& response) {
    ServeStoredResponse(context, background, request, response, StoredResponseAction::kCancel);
  });
  if (absl::Status status = http->Listen(options.listen); !status.ok()) return status;
  return http;
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::StartProbesAndMetrics(const std::string& listen, ServiceContext& context) {
  std::unique_ptr<HttpServer> http(new HttpServer());
  http->server_ = std::make_unique<DeadlineServer>(kProbeRequestTimeout);
  http->server_->new_task_queue = [] { return new ElasticThreadPool(2, kProbeAndMetricsThreads, kIdleThreadLifetime); };
  ServeHealthRoutes(*http->server_, context);
  ServeMetrics(*http->server_, context);
  if (absl::Status status = http->Listen(listen); !status.ok()) return status;
  return http;
}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Stop() {
  if (server_ != nullptr) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (background_ != nullptr) background_->Stop();  // (their calls have ended where the engine was shut down first)
}

absl::Status HttpServer::ReloadCertificates() {
  return certificates_ == nullptr ? absl::OkStatus() : certificates_->Reload();
}

}  // namespace arach::server::http
