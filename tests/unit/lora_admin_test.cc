// The rules of loading and unloading LoRA adapters while serving (server/lora_admin.h), shared by HTTP and gRPC, and
// HTTP's reader of the route bodies (server/http/lora_admin.h).
#include "server/lora_admin.h"

#include "gtest/gtest.h"
#include "server/http/lora_admin.h"

namespace arach::server {
namespace {

TEST(LoraAdminRequest, ANameAndForALoadAPathAreRequiredNamingTheField) {
  EXPECT_TRUE(CheckLoraAdminRequest({"sql", "/adapters/sql", false}, /*load=*/true, "gpt2").ok());
  EXPECT_TRUE(CheckLoraAdminRequest({"sql", "", false}, /*load=*/false, "gpt2").ok()) << "an unload names no path";
  EXPECT_EQ(CheckLoraAdminRequest({"", "/a", false}, true, "gpt2").message(), "lora_name: required (a non-empty name)");
  EXPECT_EQ(CheckLoraAdminRequest({"sql", "", false}, true, "gpt2").message(), "lora_path: required (a non-empty string)");
  for (const char* name : {"sql:arach", "a,b"}) {
    const absl::Status refused = CheckLoraAdminRequest({name, "/a", false}, true, "gpt2");
    EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(refused.message(), "lora_name: must not contain ':' (NAME:VARIANT names a variant) or ','") << name;
  }
  EXPECT_EQ(CheckLoraAdminRequest({"gpt2", "/a", false}, true, "gpt2").message(), "lora_name: is the served model's name");
}

TEST(LoraAdminRequest, HttpBodiesAreReadWithTheirTypesChecked) {
  const absl::StatusOr<LoraAdminRequest> load =
      http::ParseLoraAdminRequest(R"({"lora_name": "sql", "lora_path": "/adapters/sql", "load_inplace": true})", true);
  ASSERT_TRUE(load.ok()) << load.status();
  EXPECT_EQ(load->lora_name, "sql");
  EXPECT_EQ(load->lora_path, "/adapters/sql");
  EXPECT_TRUE(load->load_inplace);
  EXPECT_FALSE(http::ParseLoraAdminRequest(R"({"lora_name": "sql", "lora_path": "/a"})", true)->load_inplace);
  EXPECT_EQ(http::ParseLoraAdminRequest(R"({"lora_name": 7})", false).status().message(), "lora_name: must be a string");
  EXPECT_EQ(http::ParseLoraAdminRequest(R"({"lora_name": "a", "lora_path": "/a", "load_inplace": "yes"})", true).status().message(),
            "load_inplace: must be true or false");
  EXPECT_EQ(http::ParseLoraAdminRequest(R"({"lora_name": "a", "lora_path": "/a"})", false).status().message(),
            "lora_path: is not a parameter of this route") << "an unload takes no path";
  EXPECT_FALSE(http::ParseLoraAdminRequest("[]", true).ok());
  EXPECT_FALSE(http::ParseLoraAdminRequest("{", true).ok());
}

}  // namespace
}  // namespace arach::server
