// arach-server's options are checked before anything starts; every error names the flag.
#include "server/server_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach::server {
namespace {

using ::testing::HasSubstr;

ServerOptions Valid() {
  ServerOptions o;
  o.model_dir = "some/model";
  return o;
}

std::string ErrorOf(const ServerOptions& o) { return std::string(ResolveServerConfig(o).status().message()); }

TEST(ServerOptions, AValidSetResolves) {
  ServerOptions o = Valid();
  o.default_variant = "arach";
  o.arach_offset = 0.0;
  o.experiment = "base=1,arach@-1=1";
  auto config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->default_variant.arach);
  EXPECT_EQ(config->default_variant.arach_offset, 0.0f);
  ASSERT_TRUE(config->experiment.has_value());
  EXPECT_EQ(config->experiment->arms[1].variant.arach_offset, -1.0f) << "an arm's own offset wins";
  EXPECT_EQ(config->device, DeviceKind::kCpu);
  EXPECT_EQ(config->options.load.weight_dtype, WeightDTypeChoice::kAuto) << "the binaries' default";
  EXPECT_EQ(config->options.load.kv_cache_dtype, KvDTypeChoice::kAuto) << "the binaries' default";
  o.weight_dtype = "bf16";
  o.kv_cache_dtype = "f16";
  EXPECT_EQ(ResolveServerConfig(o)->options.load.weight_dtype, WeightDTypeChoice::kBF16);
  EXPECT_EQ(ResolveServerConfig(o)->options.load.kv_cache_dtype, KvDTypeChoice::kF16);
}

TEST(ServerOptions, TheServedNameDefaultsToTheModelFolder) {
  ServerOptions o = Valid();
  o.model_dir = "/models/Qwen3-0.6B/";
  auto config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->options.served_model_name, "Qwen3-0.6B");
  o.served_model_name = "prod-chat";
  EXPECT_EQ(ResolveServerConfig(o)->options.served_model_name, "prod-chat");
  o.served_model_name = "name:arach";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--served_model_name: must not contain ':'"));
  EXPECT_TRUE(Valid().metrics_listen.empty()) << "/metrics is on the HTTP port unless asked";
  EXPECT_EQ(Valid().http.listen, "0.0.0.0:8000");
}

TEST(ServerOptions, HttpThreadsDefaultToWhatTheEngineCanHold) {
  // A stream holds an HTTP connection while it runs or waits in the engine's queue: the default lets every one
  // the engine may hold have one (then the engine's queue answers 429), and 64 more for models, probes, metrics.
  ServerOptions o = Valid();
  o.engine.max_num_seqs = 256;
  o.engine.max_queued_requests = 512;
  auto config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->options.http.threads, 256 + 512 + 64);
  o.http.threads = 10;
  EXPECT_EQ(ResolveServerConfig(o)->options.http.threads, 10) << "as given";
  o.http.threads = -1;
  EXPECT_THAT(ErrorOf(o), HasSubstr("--http_threads"));
}

TEST(ServerOptions, TheHttpRequestTimeoutIsPositiveAndAtMostADay) {
  ServerOptions o = Valid();
  for (double seconds : {0.5, 30.0, 86400.0}) {
    o.http.request_timeout_seconds = seconds;
    EXPECT_TRUE(ResolveServerConfig(o).ok()) << seconds;
  }
  for (double seconds : {0.0, -1.0, 86401.0, std::nan("")}) {
    o.http.request_timeout_seconds = seconds;
    EXPECT_THAT(ErrorOf(o), HasSubstr("--http_request_timeout_seconds")) << seconds;
  }
}

TEST(ServerOptions, ErrorsNameTheFlag) {
  ServerOptions o = Valid();
  o.model_dir.clear();
  EXPECT_THAT(ErrorOf(o), HasSubstr("--model"));
  o = Valid();
  o.device = "tpu";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--device: device \"tpu\""));
  o = Valid();
  o.weight_dtype = "f8";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--weight_dtype: weight dtype \"f8\" is not one of auto, f32, f16, bf16, int8"));
  o = Valid();
  o.kv_cache_dtype = "fp8";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--kv_cache_dtype: KV cache dtype \"fp8\" is not one of auto, f32, f16, bf16"));
  o = Valid();
  o.drain_announce_ms = -1;
  EXPECT_THAT(ErrorOf(o), HasSubstr("--drain_announce_ms: must not be negative"));
  o = Valid();
  o.drain_grace_seconds = -1;
  EXPECT_THAT(ErrorOf(o), HasSubstr("--drain_grace_seconds: must not be negative"));
  for (const char* name : {"r_1", "pod 1", "ü"}) {  // a router reads the name between the id's underscores
    o = Valid();
    o.replica_name = name;
    EXPECT_THAT(ErrorOf(o), HasSubstr("--replica_name: must be at most 63 letters, digits, '-' and '.'")) << name;
  }
  o = Valid();
  o.replica_name = std::string(64, 'a');
  EXPECT_THAT(ErrorOf(o), HasSubstr("--replica_name"));
  o = Valid();
  o.replica_name = "arach-serve-7c9f.2";
  EXPECT_TRUE(ResolveServerConfig(o).ok());
  o = Valid();
  o.arach_offset = NAN;  // with the base default it would go unused, but it is still malformed
  EXPECT_THAT(ErrorOf(o), HasSubstr("--arach_offset: must be a finite number"));
  o = Valid();
  o.default_variant = "skip";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--default_variant"));
  EXPECT_THAT(ErrorOf(o), HasSubstr("--adapter"));
  o = Valid();
  o.experiment = "base=1,arach+skip=1";
  EXPECT_THAT(ErrorOf(o), HasSubstr("experiment arm \"arach+skip\""));
  o.load.adapter = "a.safetensors";
  EXPECT_TRUE(ResolveServerConfig(o).ok()) << "with an adapter the skip arms can run";
  o = Valid();
  o.experiment = "base=1";
  o.experiment_file = "e.json";
  EXPECT_THAT(ErrorOf(o), HasSubstr("not both"));
  o = Valid();
  o.grpc.tls.cert = "c.pem";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--tls_cert and --tls_key go together"));
  o = Valid();
  o.grpc.tls.client_ca = "ca.pem";
  EXPECT_THAT(ErrorOf(o), HasSubstr("--tls_client_ca"));
  for (double rate : {-0.1, 1.5, std::nan("")}) {
    o = Valid();
    o.diagnostics_sample_rate = rate;
    EXPECT_THAT(ErrorOf(o), HasSubstr("--diagnostics_sample_rate: must be between 0 and 1")) << rate;
  }
  o = Valid();
  o.diagnostics_sample_rate = 1.0;
  EXPECT_TRUE(ResolveServerConfig(o).ok());
  o = Valid();
  o.engine.unhealthy_after_failed_steps = -1;
  EXPECT_THAT(ErrorOf(o), HasSubstr("--unhealthy_after_failed_steps: must not be negative"));
  o = Valid();
  o.engine.stall_timeout = std::chrono::milliseconds(-1);
  EXPECT_THAT(ErrorOf(o), HasSubstr("--engine_stall_seconds: must not be negative"));
  for (const char* origin : {"app.example.com", "https://app.example.com/", "ftp://x", "https://", "https://a b"}) {
    o = Valid();
    o.http.cors_allowed_origins = {"*", origin};
    EXPECT_THAT(ErrorOf(o), HasSubstr(absl::StrCat("--cors_allowed_origins: '", origin, "' is neither an origin"))) << origin;
  }
  o = Valid();
  o.http.cors_allowed_origins = {"*", "https://app.example.com", "http://localhost:3000"};
  EXPECT_TRUE(ResolveServerConfig(o).ok());
}

TEST(ServerOptions, LoraModulesResolveIntoTheLoadOptionsAndMayNotTakeTheModelsName) {
  ServerOptions o = Valid();
  o.lora_modules = {"sql=/adapters/sql", "chat=/adapters/chat"};
  auto config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  ASSERT_EQ(config->options.load.lora_modules.size(), 2u);
  EXPECT_EQ(config->options.load.lora_modules[1].name, "chat");
  EXPECT_EQ(config->options.load.lora_modules[1].path, "/adapters/chat");
  o.lora_modules = {"model=/adapters/x"};  // the folder's name is the served name
  EXPECT_THAT(ErrorOf(o), HasSubstr("lora_modules"));
  EXPECT_THAT(ErrorOf(o), HasSubstr("served model's name"));
  o.lora_modules = {"sql"};
  EXPECT_THAT(ErrorOf(o), HasSubstr("--lora_modules"));
}

TEST(ServerOptions, LoraLimitsResolveIntoTheLoadOptionsAndBoundTheStartUpAdapters) {
  ServerOptions o = Valid();
  o.lora_modules = {"sql=/adapters/sql", "chat=/adapters/chat"};
  auto config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->options.load.lora_limits.max_loras, 8) << "the flag's default";
  EXPECT_EQ(config->options.load.lora_limits.max_rank, 64);
  EXPECT_FALSE(config->options.load.lora_runtime_loading) << "no memory kept without --allow_runtime_lora_updating";
  o.allow_runtime_lora_updating = true;
  o.max_lora_rank = 16;
  config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_TRUE(config->options.load.lora_runtime_loading);
  EXPECT_EQ(config->options.load.lora_limits.max_rank, 16);
  o.max_loras = 1;
  EXPECT_EQ(ErrorOf(o), "--lora_modules: 2 adapters are more than --max_loras 1");
  o.max_cpu_loras = 2;  // more registered than the device holds: they swap
  config = ResolveServerConfig(o);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->options.load.lora_limits.max_cpu_loras, 2);
  EXPECT_TRUE(config->options.load.lora_limits.swaps());
  EXPECT_EQ(config->options.load.lora_limits.max_rank, 16);
  o.lora_modules.push_back("third=/adapters/third");
  EXPECT_EQ(ErrorOf(o), "--lora_modules: 3 adapters are more than --max_cpu_loras 2");
  o.max_loras = 3;
  EXPECT_EQ(ErrorOf(o), "--max_cpu_loras: must be 0 (--max_loras) or at least --max_loras 3");
  o.max_cpu_loras = 0;
  o.max_loras = 0;
  EXPECT_EQ(ErrorOf(o), "--max_loras: must be 1 or more");
  o = Valid();
  o.max_lora_rank = 0;
  EXPECT_EQ(ErrorOf(o), "--max_lora_rank: must be 1 or more");
}

}  // namespace
}  // namespace arach::server
