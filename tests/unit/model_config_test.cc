#include "engine/model/model_config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace arach {
namespace {

using ::testing::HasSubstr;

TEST(ModelConfig, Gpt2ClassicKeys) {
  auto c = ParseModelConfig(R"({"model_type":"gpt2","n_embd":768,"n_layer":12,"n_head":12,"n_positions":1024,
      "vocab_size":50257,"n_inner":null,"activation_function":"gelu_new","bos_token_id":50256,"eos_token_id":50256})", "c.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->arch, Architecture::kGpt2);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->intermediate_size, 3072);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_TRUE(c->learned_positions);
  EXPECT_EQ(c->activation, Activation::kGeluTanh);
  EXPECT_EQ(c->eos_token_ids, std::vector<int>{50256});
}

TEST(ModelConfig, NeoxAcceptsClassicAndNewerRotaryKeys) {
  const std::string common = R"("model_type":"gpt_neox","hidden_size":512,"num_hidden_layers":6,"num_attention_heads":8,
      "intermediate_size":2048,"max_position_embeddings":2048,"vocab_size":50304)";
  auto classic = ParseModelConfig("{" + common + R"(,"rotary_pct":0.25,"rotary_emb_base":10000})", "c.json");
  auto newer = ParseModelConfig("{" + common + R"(,"partial_rotary_factor":0.25,"rope_theta":20000})", "c.json");
  auto nested = ParseModelConfig("{" + common + R"(,"rope_parameters":{"partial_rotary_factor":0.5,"rope_theta":500,"rope_type":"default"}})", "c.json");
  ASSERT_TRUE(classic.ok() && newer.ok() && nested.ok());
  EXPECT_EQ(classic->rope.rotary_dim, 16);
  EXPECT_EQ(classic->rope.theta, 10000.0);
  EXPECT_EQ(newer->rope.rotary_dim, 16);
  EXPECT_EQ(newer->rope.theta, 20000.0);
  EXPECT_EQ(nested->rope.rotary_dim, 32);
  EXPECT_EQ(nested->rope.theta, 500.0);
  EXPECT_TRUE(classic->parallel_residual);
  EXPECT_FALSE(classic->tie_word_embeddings);
  EXPECT_EQ(classic->activation, Activation::kGeluErf);
}

TEST(ModelConfig, LlamaGqaAndRopeScaling) {
  auto c = ParseModelConfig(R"({"model_type":"llama","hidden_size":2048,"num_hidden_layers":16,"num_attention_heads":32,
      "num_key_value_heads":8,"intermediate_size":8192,"vocab_size":128256,"max_position_embeddings":131072,
      "rope_theta":500000.0,"eos_token_id":[128001,128008,128009],"bos_token_id":128000,
      "rope_scaling":{"factor":32.0,"high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"}})",
                            "c.json");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_EQ(c->rope.scaling, RopeScaling::kLlama3);
  EXPECT_EQ(c->eos_token_ids.size(), 3u);
  const std::vector<float> inv = c->rope.InverseFrequencies();
  ASSERT_EQ(inv.size(), 32u);
  EXPECT_FLOAT_EQ(inv[0], 1.0f);                  // high frequencies unchanged
  EXPECT_LT(inv[31], 1.0 / std::pow(500000.0, 62.0 / 64) / 31);  // low frequencies divided by ~factor
  // The cos/sin table RoPE reads: row p = cos(p * f_i) for the 32 frequencies, then sin(p * f_i).
  const std::vector<float> table = c->rope.CosSinTable(3000);
  ASSERT_EQ(table.size(), 3000u * 64);
  for (int p : {0, 1, 17, 2999}) {
    for (int i : {0, 5, 31}) {
      const double angle = static_cast<double>(static_cast<float>(p) * inv[i]);
      EXPECT_NEAR(table[p * 64 + i], std::cos(angle), 1e-6) << "position " << p << ", frequency " << i;
      EXPECT_NEAR(table[p * 64 + 32 + i], std::sin(angle), 1e-6) << "position " << p << ", frequency " << i;
    }
  }
}

TEST(ModelConfig, MistralAndQwenFamiliesAndTheirSlidingWindows) {
  const std::string common = R"("hidden_size":64,"num_hidden_layers":4,"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":96,"vocab_size":100,"max_position_embeddings":512)";
  auto mistral = ParseModelConfig(R"({"model_type":"mistral",)" + common + R"(,"sliding_window":32})", "c.json");
  ASSERT_TRUE(mistral.ok()) << mistral.status();
  EXPECT_EQ(mistral->arch, Architecture::kMistral);
  EXPECT_EQ(mistral->layer_sliding_window, (std::vector<int>{32, 32, 32, 32}));
  EXPECT_EQ(mistral->UniformSlidingWindow(), 32);
  auto no_window = ParseModelConfig(R"({"model_type":"mistral",)" + common + R"(,"sliding_window":null})", "c.json");
  ASSERT_TRUE(no_window.ok());
  EXPECT_EQ(no_window->SlidingWindow(0), 0);
  // Qwen: only with use_sliding_window, from max_window_layers on (then not every layer: nothing to free).
  auto qwen2 = ParseModelConfig(R"({"model_type":"qwen2",)" + common +
                                    R"(,"use_sliding_window":true,"sliding_window":16,"max_window_layers":2})", "c.json");
  ASSERT_TRUE(qwen2.ok()) << qwen2.status();
  EXPECT_EQ(qwen2->layer_sliding_window, (std::vector<int>{0, 0, 16, 16}));
  EXPECT_EQ(qwen2->UniformSlidingWindow(), 0);
  EXPECT_TRUE(qwen2->qkv_bias);
  auto typed = ParseModelConfig(R"({"model_type":"qwen3","head_dim":32,)" + common +
                                    R"(,"use_sliding_window":true,"sliding_window":8,"layer_types":["sliding_attention","full_attention","sliding_attention","full_attention"]})",
                                "c.json");
  ASSERT_TRUE(typed.ok()) << typed.status();
  EXPECT_EQ(typed->layer_sliding_window, (std::vector<int>{8, 0, 8, 0}));
  EXPECT_EQ(typed->head_dim, 32);
  EXPECT_TRUE(typed->qk_norm);
  auto bad_types = ParseModelConfig(R"({"model_type":"qwen3",)" + common + R"(,"use_sliding_window":true,"sliding_window":8,"layer_types":["x"]})", "c.json");
  EXPECT_THAT(std::string(bad_types.status().message()), HasSubstr("field \"layer_types\""));
}

TEST(ModelConfig, GenerationConfigAddsItsEndOfSequenceIds) {
  auto c = ParseModelConfig(R"({"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"vocab_size":10,"eos_token_id":7})", "c.json");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(MergeGenerationConfig(R"({"eos_token_id":[7, 9]})", "g.json", *c).ok());
  EXPECT_EQ(c->eos_token_ids, (std::vector<int>{7, 9}));
  EXPECT_THAT(std::string(MergeGenerationConfig(R"({"eos_token_id":[12]})", "g.json", *c).message()),
              HasSubstr("g.json: field \"eos_token_id\" id 12 is outside the vocabulary"));
  EXPECT_FALSE(MergeGenerationConfig("[]", "g.json", *c).ok());
}

TEST(ModelConfig, ErrorsNameTheField) {
  struct Case {
    std::string json;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {R"({"model_type":"mamba"})", "field \"model_type\" \"mamba\" is not supported (gpt2, gpt_neox, llama, mistral, qwen2, qwen3)"},
           {R"({"n_embd":1})", "field \"model_type\" is missing"},
           {R"({"model_type":"gpt2","n_layer":2,"n_head":2,"n_positions":8,"vocab_size":10})", "field \"n_embd\" is missing"},
           {R"({"model_type":"gpt2","n_embd":"big","n_layer":2,"n_head":2,"n_positions":8,"vocab_size":10})", "field \"n_embd\" must be an integer"},
           {R"({"model_type":"gpt2","n_embd":10,"n_layer":2,"n_head":3,"n_positions":8,"vocab_size":10})", "field \"n_head\""},
           {R"({"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":3,"intermediate_size":8,"vocab_size":10})", "field \"num_key_value_heads\""},
           {R"({"model_type":"llama","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":8,"vocab_size":10,"rope_scaling":{"rope_type":"yarn","factor":2}})", "\"yarn\" is not supported"},
           {R"({"model_type":"gpt2","n_embd":8,"n_layer":1,"n_head":2,"n_positions":8,"vocab_size":10,"eos_token_id":10})", "field \"eos_token_id\""},
           {R"({"model_type":"gpt_neox","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10,"max_position_embeddings":8,"rope_parameters":{"partial_rotary_factor":"half"}})", "field \"partial_rotary_factor\" must be a number"},
           {R"({"model_type":"gpt_neox","hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"vocab_size":10,"max_position_embeddings":8,"partial_rotary_factor":true})", "field \"partial_rotary_factor\" must be a number"},
           {"not json", "not valid JSON"},
           {"[1, 2]", "dir/config.json: not a JSON object"},
       }) {
    auto config = ParseModelConfig(c.json, "dir/config.json");
    ASSERT_FALSE(config.ok()) << c.json;
    EXPECT_EQ(config.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(config.status().message()), HasSubstr(c.expected)) << c.json;
    EXPECT_THAT(std::string(config.status().message()), HasSubstr("dir/config.json"));
  }
}

}  // namespace
}  // namespace arach
