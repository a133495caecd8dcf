// Tests of model presets, parameter counts and HF config.json import with located diagnostics.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/workload/model.hpp"

using wavel::workload::find_model_preset;
using wavel::workload::load_hf_config;
using wavel::workload::ModelSpec;
using wavel::workload::parameter_count;

namespace {

ModelSpec preset(const std::string& name) {
  auto model = find_model_preset(name);
  REQUIRE_MESSAGE(model.has_value(), "no preset " << name);
  return *model;
}

std::string hf_path(const std::string& relative) {
  return wavel::test::source_path("tests/data/hf/" + relative).string();
}

/// Every field that the op graph depends on, compared one by one for readable failures.
void check_same_shape(const ModelSpec& a, const ModelSpec& b) {
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.num_heads == b.num_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn == b.ffn);
  CHECK(a.vocab == b.vocab);
  CHECK(a.tie_embeddings == b.tie_embeddings);
  CHECK(a.qkv_bias == b.qkv_bias);
  CHECK(a.qk_norm == b.qk_norm);
  CHECK(a.dtype_bytes == b.dtype_bytes);
  REQUIRE(a.moe.has_value() == b.moe.has_value());
  if (a.moe) {
    CHECK(a.moe->num_experts == b.moe->num_experts);
    CHECK(a.moe->experts_per_token == b.moe->experts_per_token);
    CHECK(a.moe->expert_ffn == b.moe->expert_ffn);
    CHECK(a.moe->num_shared_experts == b.moe->num_shared_experts);
    CHECK(a.moe->shared_expert_ffn == b.moe->shared_expert_ffn);
    CHECK(a.moe->first_dense_layers == b.moe->first_dense_layers);
  }
  REQUIRE(a.mla.has_value() == b.mla.has_value());
  if (a.mla) {
    CHECK(a.mla->kv_lora_rank == b.mla->kv_lora_rank);
    CHECK(a.mla->q_lora_rank == b.mla->q_lora_rank);
    CHECK(a.mla->qk_nope_head_dim == b.mla->qk_nope_head_dim);
    CHECK(a.mla->qk_rope_head_dim == b.mla->qk_rope_head_dim);
    CHECK(a.mla->v_head_dim == b.mla->v_head_dim);
  }
}

/// A directory of this rank's own inside a scratch dir, so ranks never write the same file.
std::filesystem::path rank_dir(const std::string& test_name) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto dir = wavel::test::scratch_dir(test_name) / ("rank" + std::to_string(rank));
  std::filesystem::create_directories(dir);
  return dir;
}

/// The DataError thrown by loading `path`, or a failed check.
wavel::DataError data_error_of(const std::string& path) {
  try {
    load_hf_config(path);
  } catch (const wavel::DataError& e) {
    return e;
  }
  FAIL("expected a DataError from " << path);
  return wavel::DataError({});
}

}  // namespace

TEST_CASE("model presets: all eight domain models, in a stable order") {
  const std::vector<std::string> expected{"llama3-8b",    "llama2-13b",    "codellama-34b", "llama3-70b",
                                          "qwen2-72b",    "mixtral-8x7b",  "qwen3-30b-a3b", "deepseek-v2-lite"};
  CHECK(wavel::workload::model_preset_names() == expected);
  for (const auto& name : expected) {
    const ModelSpec m = preset(name);
    CHECK(m.name == name);
    CHECK(m.source == "preset");
    CHECK(m.dtype_bytes == 2);
    CHECK_FALSE(m.tie_embeddings);
  }
  CHECK_FALSE(find_model_preset("llama3-8B").has_value());
  CHECK_FALSE(find_model_preset("").has_value());
}

TEST_CASE("model presets: shape details from the HF configs") {
  CHECK(preset("qwen2-72b").qkv_bias);
  CHECK_FALSE(preset("llama3-70b").qkv_bias);

  const ModelSpec qwen3 = preset("qwen3-30b-a3b");
  CHECK(qwen3.qk_norm);
  CHECK(qwen3.head_dim == 128);  // 32 heads x 128 = 4096 != hidden 2048
  REQUIRE(qwen3.moe);
  CHECK(qwen3.moe->num_experts == 128);
  CHECK(qwen3.moe->experts_per_token == 8);
  CHECK(qwen3.moe->expert_ffn == 768);
  CHECK(qwen3.moe->num_shared_experts == 0);

  const ModelSpec ds = preset("deepseek-v2-lite");
  REQUIRE(ds.mla);
  CHECK(ds.mla->kv_lora_rank == 512);
  CHECK(ds.mla->q_lora_rank == 0);
  REQUIRE(ds.moe);
  CHECK(ds.moe->first_dense_layers == 1);
  CHECK(ds.moe->shared_expert_ffn == 2 * 1408);
}

TEST_CASE("parameter_count: presets within 0.5 % of published totals") {
  const std::vector<std::pair<std::string, double>> published{
      {"llama3-8b", 8.03e9},     {"llama2-13b", 13.02e9},   {"codellama-34b", 33.74e9},
      {"llama3-70b", 70.55e9},   {"qwen2-72b", 72.71e9},    {"mixtral-8x7b", 46.70e9},
      {"qwen3-30b-a3b", 30.53e9}, {"deepseek-v2-lite", 15.71e9}};
  for (const auto& entry : published) {
    const std::string& name = entry.first;  // a structured binding cannot be captured (INFO) before C++20
    const double total = entry.second;
    const double count = static_cast<double>(parameter_count(preset(name)));
    INFO(name << ": " << count);
    CHECK(std::abs(count - total) / total < 0.005);
  }
}

TEST_CASE("parameter_count: LLaMA-3-8B exactly") {
  // embedding 128256 x 4096 = 525,336,576, and the LM head the same;
  // per layer q,o 2 x 4096^2 = 33,554,432; k,v 2 x 4096 x 1024 = 8,388,608;
  //   MLP 3 x 4096 x 14336 = 176,160,768; norms 2 x 4096 = 8,192; sum 218,112,000;
  // 32 layers 6,979,584,000 + 2 x 525,336,576 + final norm 4,096 = 8,030,261,248.
  CHECK(parameter_count(preset("llama3-8b")) == 8'030'261'248LL);

  ModelSpec tied = preset("llama3-8b");
  tied.tie_embeddings = true;
  CHECK(parameter_count(tied) == 8'030'261'248LL - 525'336'576LL);
}

TEST_CASE("parameter_count: DeepSeek-V2-Lite exactly (MLA, dense first layer, shared experts)") {
  // attention: q 2048 x 16 x 192 = 6,291,456; kv_a 2048 x 576 = 1,179,648; kv_a_norm 512;
  //   kv_b 512 x 16 x 256 = 2,097,152; o 2048 x 2048 = 4,194,304; total 13,763,072 (+ norms 4,096).
  // MoE MLP: router 2048 x 64 = 131,072; experts 64 x 3 x 2048 x 1408 = 553,648,128;
  //   shared 3 x 2048 x 2816 = 17,301,504.  Dense MLP: 3 x 2048 x 10944 = 67,239,936.
  const std::int64_t attention = 13'763'072 + 4'096;
  const std::int64_t moe_layer = attention + 131'072 + 553'648'128 + 17'301'504;
  const std::int64_t dense_layer = attention + 67'239'936;
  const std::int64_t ends = 2 * 102'400LL * 2'048 + 2'048;
  CHECK(parameter_count(preset("deepseek-v2-lite")) == 26 * moe_layer + dense_layer + ends);
}

TEST_CASE("load_hf_config: shipped configs give the presets") {
  for (const std::string name : {"llama3-8b", "mixtral-8x7b", "deepseek-v2-lite"}) {
    INFO(name);
    const std::string path = hf_path(name + "/config.json");
    const ModelSpec loaded = load_hf_config(path);
    CHECK(loaded.name == name);  // stem "config" takes the directory's name
    CHECK(loaded.source == path);
    check_same_shape(loaded, preset(name));
    CHECK(parameter_count(loaded) == parameter_count(preset(name)));
  }
}

TEST_CASE("load_hf_config: defaults and family switches") {
  const auto dir = rank_dir("hf_defaults");
  const auto path = (dir / "qwen-like.json").string();
  {
    std::ofstream out(path);
    // No num_key_value_heads (MHA) and no head_dim (hidden / heads); qwen2 implies QKV biases.
    out << "{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"hidden_size\": 256,\n"
           " \"num_attention_heads\": 4, \"intermediate_size\": 512, \"vocab_size\": 1000,\n"
           " \"tie_word_embeddings\": true, \"num_experts\": null}\n";
  }
  const ModelSpec m = load_hf_config(path);
  CHECK(m.name == "qwen-like");
  CHECK(m.num_kv_heads == 4);
  CHECK(m.head_dim == 64);
  CHECK(m.qkv_bias);
  CHECK_FALSE(m.qk_norm);
  CHECK(m.tie_embeddings);
  CHECK_FALSE(m.moe);
  // 1000 x 256 embedding (tied) + 2 x (4 x 256^2 + 768 bias + 3 x 256 x 512 + 512) + 256
  CHECK(parameter_count(m) == 256'000 + 2 * (262'144 + 768 + 393'216 + 512) + 256);
}

TEST_CASE("load_hf_config: Qwen3-MoE keys (num_experts, moe_intermediate_size, qk_norm)") {
  const auto dir = rank_dir("hf_qwen3_moe");
  const auto path = (dir / "config.json").string();
  {
    std::ofstream out(path);
    out << "{\n  \"model_type\": \"qwen3_moe\",\n  \"num_hidden_layers\": 48,\n  \"hidden_size\": 2048,\n"
           "  \"num_attention_heads\": 32,\n  \"num_key_value_heads\": 4,\n  \"head_dim\": 128,\n"
           "  \"intermediate_size\": 6144,\n  \"moe_intermediate_size\": 768,\n  \"num_experts\": 128,\n"
           "  \"num_experts_per_tok\": 8,\n  \"decoder_sparse_step\": 1,\n  \"mlp_only_layers\": [],\n"
           "  \"tie_word_embeddings\": false,\n  \"vocab_size\": 151936\n}\n";
  }
  const ModelSpec m = load_hf_config(path);
  CHECK(m.name == dir.filename().string());
  check_same_shape(m, preset("qwen3-30b-a3b"));
}

TEST_CASE("load_hf_config: a broken config lists every problem with 1-based locations") {
  const std::string path = hf_path("broken/bad.json");
  const wavel::DataError e = data_error_of(path);
  CHECK(e.code() == wavel::ExitCode::data_error);
  const std::vector<std::string> expected{
      path + ":1:1: error: num_hidden_layers: missing required key",
      path + ":3:3: error: hidden_size: expected a positive integer, got the string \"4096\"",
      path + ":4:3: error: num_attention_heads: expected a positive integer, got 0",
      path + ":5:3: error: num_key_value_heads: expected a positive integer, got 8.5",
      path + ":6:3: error: intermediate_size: expected a positive integer, got -14336",
      path + ":7:3: error: tie_word_embeddings: expected true or false, got the string \"no\"",
      path + ":8:3: error: quantization_config: unsupported: quantized checkpoints are not modelled; "
             "use the unquantized model's config",
  };
  REQUIRE(e.diagnostics().size() == expected.size());
  std::string joined;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK(e.diagnostics()[i].format() == expected[i]);
    CHECK(e.diagnostics()[i].file == path);
    joined += (i == 0 ? "" : "\n") + expected[i];
  }
  CHECK(std::string(e.what()) == joined);
}

TEST_CASE("load_hf_config: unsupported MoE and GQA shapes and duplicate keys") {
  const std::string path = hf_path("broken/moe.json");
  const wavel::DataError e = data_error_of(path);
  const auto& d = e.diagnostics();
  REQUIRE(d.size() == 4);
  CHECK(d[0].line == 6);
  CHECK(d[0].key_path == "num_key_value_heads");
  CHECK(d[0].message == "32 attention heads cannot be shared evenly by 6 KV heads");
  CHECK(d[1].line == 9);
  CHECK(d[1].key_path == "num_experts_per_tok");
  CHECK(d[1].message == "routes each token to 10 experts but there are only 8");
  CHECK(d[2].line == 10);
  CHECK(d[2].key_path == "decoder_sparse_step");
  CHECK(d[3].format() == path + ":12:3: error: vocab_size: duplicate key (JSON parsers disagree on which value wins)");
}

TEST_CASE("load_hf_config: syntax errors and non-objects are located DataErrors") {
  const wavel::DataError syntax = data_error_of(hf_path("broken/syntax.json"));
  REQUIRE(syntax.diagnostics().size() == 1);
  CHECK(syntax.diagnostics()[0].line >= 3);
  CHECK(syntax.diagnostics()[0].message.rfind("not valid JSON: ", 0) == 0);

  const wavel::DataError array = data_error_of(hf_path("broken/array.json"));
  REQUIRE(array.diagnostics().size() == 1);
  CHECK(array.diagnostics()[0].format() ==
        hf_path("broken/array.json") + ":1:1: error: expected a JSON object of model settings, got an array");
}

TEST_CASE("load_hf_config: a missing file is InputMissingError naming the path") {
  const std::string path = hf_path("no-such-model/config.json");
  try {
    load_hf_config(path);
    FAIL("expected InputMissingError");
  } catch (const wavel::InputMissingError& e) {
    CHECK(e.code() == wavel::ExitCode::no_input);
    CHECK(std::string(e.what()).find(path) != std::string::npos);
  }
  CHECK_THROWS_AS(load_hf_config(hf_path("llama3-8b")), wavel::InputMissingError);  // a directory
}

TEST_CASE("HF keys the model does not cost are named with their effect; tie_word_embeddings follows HF (issue 40)") {
  const std::string base = R"("hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256, "vocab_size": 256000)";
  const auto gemma2 = wavel::workload::parse_hf_config(
      "{\"model_type\": \"gemma2\", " + base +
          R"(, "hidden_activation": "gelu_pytorch_tanh", "sliding_window": 4096, "attn_logit_softcapping": 50.0,
          "final_logit_softcapping": 30.0})",
      "g.json");
  CHECK(gemma2.tie_embeddings);  // Gemma2Config ties by default
  std::map<std::string, const wavel::workload::UnmodelledKey*> by_key;
  for (const auto& k : gemma2.unmodelled) by_key[k.where.key_path] = &k;
  REQUIRE(by_key.size() == 5);
  CHECK(by_key.at("sliding_window")->changes_prediction);
  CHECK(by_key.at("sliding_window")->from_context_tokens == 4096);
  CHECK(by_key.at("sliding_window")->where.line == 2);
  CHECK(by_key.at("attn_logit_softcapping")->changes_prediction);
  CHECK(by_key.at("attn_logit_softcapping")->from_context_tokens == 0);
  CHECK_FALSE(by_key.at("final_logit_softcapping")->changes_prediction);
  CHECK(by_key.at("hidden_activation")->where.message.find("gelu_pytorch_tanh") != std::string::npos);
  CHECK(by_key.count("model_type") == 1);
  // LLaMA's class unties; a disabled or null window and SiLU are not reported.
  const auto llama = wavel::workload::parse_hf_config(
      "{\"model_type\": \"qwen2\", " + base + R"(, "hidden_act": "silu", "sliding_window": 4096, "use_sliding_window": false})",
      "q.json");
  CHECK_FALSE(llama.tie_embeddings);
  CHECK(llama.unmodelled.empty());
  CHECK(wavel::workload::parse_hf_config("{" + base + "}", "x.json").tie_embeddings);  // PretrainedConfig: True
}
