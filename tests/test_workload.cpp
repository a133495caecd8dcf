// Tests of the per-layer op graphs: op order, FLOPs and bytes against hand-computed values.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/workload/workload.hpp"

using wavel::workload::build_workload;
using wavel::workload::find_model_preset;
using wavel::workload::Layer;
using wavel::workload::ModelSpec;
using wavel::workload::Op;
using wavel::workload::OpKind;
using wavel::workload::Phase;
using wavel::workload::Workload;
using wavel::workload::WorkloadShape;

namespace {

ModelSpec preset(const std::string& name) {
  auto model = find_model_preset(name);
  REQUIRE_MESSAGE(model.has_value(), "no preset " << name);
  return *model;
}

WorkloadShape shape(Phase phase, std::int64_t requests, std::int64_t input, std::int64_t output) {
  WorkloadShape s;
  s.phase = phase;
  s.concurrent_requests = requests;
  s.input_tokens = input;
  s.output_tokens = output;
  return s;
}

const Layer& layer(const Workload& w, const std::string& name) {
  for (const auto& l : w.layers) {
    if (l.name == name) return l;
  }
  FAIL("no layer " << name);
  return w.layers.front();
}

const Op& op(const Layer& l, const std::string& name) {
  for (const auto& o : l.ops) {
    if (o.name == name) return o;
  }
  FAIL("no op " << name << " in " << l.name);
  return l.ops.front();
}

bool has_op(const Layer& l, const std::string& name) {
  for (const auto& o : l.ops) {
    if (o.name == name) return true;
  }
  return false;
}

std::vector<std::string> op_names(const Layer& l) {
  std::vector<std::string> names;
  for (const auto& o : l.ops) names.push_back(o.name);
  return names;
}

}  // namespace

TEST_CASE("to_string of phases and op kinds") {
  CHECK(wavel::workload::to_string(Phase::prefill) == "prefill");
  CHECK(wavel::workload::to_string(Phase::decode) == "decode");
  CHECK(wavel::workload::to_string(OpKind::expert_matmul) == "expert_matmul");
  CHECK(wavel::workload::to_string(OpKind::lm_head) == "lm_head");
  CHECK(wavel::workload::to_string(OpKind::kv_append) == "kv_append");
}

TEST_CASE("workload: LLaMA-3-8B decode, 4 requests, 2048 in, 128 out") {
  const Workload w = build_workload(preset("llama3-8b"), shape(Phase::decode, 4, 2048, 128));
  CHECK(w.tokens_per_step == 4);
  CHECK(w.context_tokens == 2048 + 128 / 2);  // 2112
  CHECK(w.kv_capacity_tokens == 2048 + 128);  // 2176
  REQUIRE(w.layers.size() == 1 + 32 + 1);
  CHECK(w.layers.front().name == "embed");
  CHECK(w.layers[1].name == "layer.0");
  CHECK(w.layers[32].name == "layer.31");
  CHECK(w.layers.back().name == "head");

  const Layer& l0 = layer(w, "layer.0");
  CHECK_FALSE(l0.is_moe);
  // Decode's Q/K/V and gate/up reduce together, as WaferLLM's decode does (fuse_decode_reductions).
  CHECK(op_names(l0) == std::vector<std::string>{"attn_norm", "qkv_proj", "rope", "kv_append", "attn_scores",
                                                 "softmax", "attn_values", "o_proj", "attn_residual", "mlp_norm",
                                                 "gate_up_proj", "act", "down_proj", "mlp_residual"});

  // attn_norm: 4 FLOPs x 4 tokens x 4096 = 65,536; weight 4096 x 2 B.
  CHECK(op(l0, "attn_norm").flops == 65'536);
  CHECK(op(l0, "attn_norm").weight_bytes == 8'192);
  // q: 2 x 4 x 4096 x 4096 = 134,217,728, weight 4096^2 x 2 B = 33,554,432; k and v (GQA, 8 KV
  // heads): 2 x 4 x 4096 x 1024 = 33,554,432 each, weight 8,388,608 each. Fused: n = 4096 + 2 x 1024.
  const Op& q = op(l0, "qkv_proj");
  CHECK(q.kind == OpKind::matmul);
  CHECK(q.fused == 3);
  CHECK(q.m == 4);
  CHECK(q.k == 4096);
  CHECK(q.n == 6144);
  CHECK(q.flops == 134'217'728 + 2 * 33'554'432);
  CHECK(q.weight_bytes == 33'554'432 + 2 * 8'388'608);
  CHECK(q.input_bytes == 32'768);
  CHECK(q.output_bytes == 32'768 + 2 * 8'192);
  CHECK(q.inputs == std::vector<int>{0});
  // rope: (32 + 8) heads x 4 tokens x 128 = 20,480 elements = 10,240 pairs x 6 = 61,440.
  CHECK(op(l0, "rope").flops == 61'440);
  // kv_append: writes K and V of 4 tokens: 4 x 2 x 1024 x 2 B = 16,384.
  CHECK(op(l0, "kv_append").output_bytes == 16'384);
  CHECK(op(l0, "kv_append").flops == 0);

  // attn_scores: batch 4 x 32 = 128, m 1, k 128, n 2112: 2 x 128 x 128 x 2112 = 69,206,016.
  // K cache: 4 requests x 2176 tokens x 8 KV heads x 128 x 2 B = 17,825,792.
  const Op& scores = op(l0, "attn_scores");
  CHECK(scores.batch == 128);
  CHECK(scores.m == 1);
  CHECK(scores.k == 128);
  CHECK(scores.n == 2112);
  CHECK(scores.flops == 69'206'016);
  CHECK(scores.kv_cache_bytes == 17'825'792);
  CHECK(scores.output_bytes == 128 * 2112 * 2);
  CHECK(scores.inputs == std::vector<int>{2, 3});
  CHECK(op(l0, "rope").inputs == std::vector<int>{1});  // Q and K both from qkv_proj
  CHECK(op(l0, "kv_append").inputs == std::vector<int>{2, 1});
  // softmax: 5 x 128 x 2112 = 1,351,680.
  CHECK(op(l0, "softmax").flops == 1'351'680);
  // attn_values: 2 x 128 x 2112 x 128 = 69,206,016; V cache as K.
  CHECK(op(l0, "attn_values").flops == 69'206'016);
  CHECK(op(l0, "attn_values").kv_cache_bytes == 17'825'792);
  // gate and up: 2 x 4 x 4096 x 14336 = 469,762,048 each; weight 4096 x 14336 x 2 B = 117,440,512 each.
  CHECK(op(l0, "gate_up_proj").flops == 2 * 469'762'048LL);
  CHECK(op(l0, "gate_up_proj").weight_bytes == 2 * 117'440'512LL);
  CHECK(op(l0, "gate_up_proj").fused == 2);
  // act: 5 x 4 x 14336 = 286,720, reading gate and up; SiLU a scalar loop over the FFN columns.
  CHECK(op(l0, "act").flops == 286'720);
  CHECK(op(l0, "act").inputs == std::vector<int>{10});
  CHECK(op(l0, "act").scalar_elements == 14336);
  CHECK(op(l0, "mlp_residual").inputs == std::vector<int>{8, 12});

  // Layer: norms 2 x 65,536 + q,o 2 x 134,217,728 + k,v 2 x 33,554,432 + rope 61,440
  //   + scores, values 2 x 69,206,016 + softmax 1,351,680 + residuals 2 x 16,384
  //   + gate, up, down 3 x 469,762,048 + act 286,720 = 1,885,106,176.
  CHECK(l0.flops == 1'885'106'176);
  CHECK(l0.param_bytes == 218'112'000LL * 2);
  CHECK(l0.kv_cache_bytes == 2 * 17'825'792);

  // Head: lm_head for all 4 tokens: 2 x 4 x 4096 x 128256 = 4,202,692,608.
  const Op& lm = op(layer(w, "head"), "lm_head");
  CHECK(lm.m == 4);
  CHECK(lm.flops == 4'202'692'608LL);
  CHECK(lm.weight_bytes == 128'256LL * 4096 * 2);
  // Embedding: no FLOPs, the 128256 x 4096 table.
  const Op& embed = op(layer(w, "embed"), "embedding");
  CHECK(embed.kind == OpKind::embedding);
  CHECK(embed.flops == 0);
  CHECK(embed.weight_bytes == 1'050'673'152LL);

  // Totals: 32 layers + lm_head + final norm 65,536 = 64,526,155,776.
  CHECK(w.flops == 32 * 1'885'106'176LL + 4'202'692'608LL + 65'536);
  CHECK(w.kv_cache_bytes == 32 * 2 * 17'825'792LL);  // 1,140,850,688
  CHECK(w.param_bytes == 8'030'261'248LL * 2);
}

TEST_CASE("workload: LLaMA-3-8B prefill, 2 requests of 512 tokens") {
  const Workload w = build_workload(preset("llama3-8b"), shape(Phase::prefill, 2, 512, 128));
  CHECK(w.tokens_per_step == 1024);
  CHECK(w.context_tokens == 512);
  CHECK(w.kv_capacity_tokens == 512);
  const Layer& l = layer(w, "layer.7");
  // q_proj: 2 x 1024 x 4096 x 4096 = 34,359,738,368.
  CHECK(op(l, "q_proj").flops == 34'359'738'368LL);
  // attn_scores counts the full 512 x 512 square: batch 2 x 32 = 64; 2 x 64 x 512 x 128 x 512 = 4,294,967,296.
  const Op& scores = op(l, "attn_scores");
  CHECK(scores.batch == 64);
  CHECK(scores.m == 512);
  CHECK(scores.n == 512);
  CHECK(scores.flops == 4'294'967'296LL);
  // K cache: 2 x 512 x 1024 x 2 B = 2,097,152.
  CHECK(scores.kv_cache_bytes == 2'097'152);
  // softmax: 5 x 64 x 512 x 512 = 83,886,080; writes 64 x 512 x 512 x 2 B = 33,554,432.
  CHECK(op(l, "softmax").flops == 83'886'080);
  CHECK(op(l, "softmax").output_bytes == 33'554'432);
  // gate_proj: 2 x 1024 x 4096 x 14336 = 120,259,084,288.
  CHECK(op(l, "gate_proj").flops == 120'259'084'288LL);
  // Head: final norm for all 1024 rows (4 x 1024 x 4096 = 16,777,216), logits for 2 rows only:
  // 2 x 2 x 4096 x 128256 = 2,101,346,304.
  const Layer& head = layer(w, "head");
  CHECK(op(head, "final_norm").flops == 16'777'216);
  CHECK(op(head, "lm_head").m == 2);
  CHECK(op(head, "lm_head").flops == 2'101'346'304LL);
}

TEST_CASE("workload: Mixtral MoE ops and expert weight bytes") {
  const Workload w = build_workload(preset("mixtral-8x7b"), shape(Phase::decode, 3, 1024, 64));
  const Layer& l = layer(w, "layer.0");
  CHECK(l.is_moe);
  CHECK(op_names(l) == std::vector<std::string>{"attn_norm", "qkv_proj", "rope", "kv_append",
                                                "attn_scores", "softmax", "attn_values", "o_proj",
                                                "attn_residual", "mlp_norm", "router", "moe_dispatch",
                                                "expert_gate_up", "expert_act", "expert_down", "moe_combine",
                                                "mlp_residual"});
  CHECK_FALSE(has_op(l, "gate_proj"));
  CHECK_FALSE(has_op(l, "shared_gate_up"));
  // router: 2 x 3 x 4096 x 8 = 196,608; weight 4096 x 8 x 2 B = 65,536.
  CHECK(op(l, "router").kind == OpKind::router);
  CHECK(op(l, "router").flops == 196'608);
  CHECK(op(l, "router").weight_bytes == 65'536);
  // dispatch: 3 tokens x top-2 x 4096 x 2 B = 49,152 moved, no FLOPs.
  CHECK(op(l, "moe_dispatch").flops == 0);
  CHECK(op(l, "moe_dispatch").output_bytes == 49'152);
  // gate+up over the 6 routed rows: 2 x 6 x 4096 x 28672 = 1,409,286,144;
  // weights of all 8 experts: 8 x 4096 x 28672 x 2 B = 1,879,048,192.
  const Op& gate_up = op(l, "expert_gate_up");
  CHECK(gate_up.kind == OpKind::expert_matmul);
  CHECK(gate_up.m == 6);
  CHECK(gate_up.flops == 1'409'286'144LL);
  CHECK(gate_up.weight_bytes == 1'879'048'192LL);
  // down: 2 x 6 x 14336 x 4096 = 704,643,072; weight 8 x 14336 x 4096 x 2 B = 939,524,096.
  CHECK(op(l, "expert_down").flops == 704'643'072LL);
  CHECK(op(l, "expert_down").weight_bytes == 939'524'096LL);
  // combine: 2 x 6 x 4096 = 49,152 FLOPs; reads 6 rows, writes 3.
  CHECK(op(l, "moe_combine").flops == 49'152);
  CHECK(op(l, "moe_combine").input_bytes == 6 * 4096 * 2);
  CHECK(op(l, "moe_combine").output_bytes == 3 * 4096 * 2);
  // Layer parameters: attention 41,943,040 + norms 8,192 + router 32,768 + experts 1,409,286,144.
  CHECK(l.param_bytes == 1'451'270'144LL * 2);
}

TEST_CASE("workload: DeepSeek-V2-Lite MLA latent KV cache and shared experts") {
  const Workload w = build_workload(preset("deepseek-v2-lite"), shape(Phase::decode, 4, 2048, 128));
  const Layer& dense = layer(w, "layer.0");
  CHECK_FALSE(dense.is_moe);
  CHECK(has_op(dense, "gate_up_proj"));
  const Layer& l = layer(w, "layer.1");
  CHECK(l.is_moe);
  CHECK(op_names(l) == std::vector<std::string>{"attn_norm", "q_proj", "kv_a_proj", "kv_a_norm", "kv_b_proj",
                                                "rope", "kv_append", "attn_scores", "softmax", "attn_values",
                                                "o_proj", "attn_residual", "mlp_norm", "router", "moe_dispatch",
                                                "expert_gate_up", "expert_act", "expert_down", "moe_combine",
                                                "shared_gate_up", "shared_act", "shared_down", "mlp_residual"});
  // Cached latent: 512 + 64 = 576 values per token; 4 x 2176 x 576 x 2 B = 10,027,008, charged once.
  CHECK(op(l, "attn_scores").kv_cache_bytes == 10'027'008);
  CHECK(op(l, "attn_values").kv_cache_bytes == 0);
  CHECK(l.kv_cache_bytes == 10'027'008);
  CHECK(w.kv_cache_bytes == 27 * 10'027'008LL);
  CHECK(op(l, "kv_append").output_bytes == 4 * 576 * 2);
  // scores at qk width 192: 2 x (4 x 16) x 192 x 2112 = 51,904,512; values at 128: 34,603,008.
  CHECK(op(l, "attn_scores").k == 192);
  CHECK(op(l, "attn_scores").flops == 51'904'512);
  CHECK(op(l, "attn_values").n == 128);
  CHECK(op(l, "attn_values").flops == 34'603'008);
  // kv_a_proj 2048 -> 576; kv_b_proj 512 -> 16 x (128 + 128): 2 x 4 x 512 x 4096 = 16,777,216.
  CHECK(op(l, "kv_a_proj").n == 576);
  CHECK(op(l, "kv_b_proj").flops == 16'777'216);
  CHECK(op(l, "kv_b_proj").weight_bytes == 512 * 4096 * 2);
  // Shared experts (2 x 1408 = 2816 wide) see every token: 2 x 4 x 2048 x 5632 = 92,274,688.
  CHECK(op(l, "shared_gate_up").flops == 92'274'688);
  CHECK(op(l, "mlp_residual").inputs.size() == 3);
  // Top-6 of 64: expert_gate_up over 24 rows.
  CHECK(op(l, "expert_gate_up").m == 24);
}

TEST_CASE("workload: layer parameters sum to parameter_count x dtype for every preset") {
  for (const auto& name : wavel::workload::model_preset_names()) {
    for (const Phase phase : {Phase::prefill, Phase::decode}) {
      INFO(name << " " << wavel::workload::to_string(phase));
      ModelSpec model = preset(name);
      const Workload w = build_workload(model, shape(phase, 2, 256, 32));
      std::int64_t params = 0, flops = 0, kv = 0;
      bool inputs_precede = true;  // producers come earlier in the same layer, or are the layer input
      for (const Layer& l : w.layers) {
        params += l.param_bytes;
        flops += l.flops;
        kv += l.kv_cache_bytes;
        for (std::size_t i = 0; i < l.ops.size(); ++i) {
          for (const int input : l.ops[i].inputs) {
            inputs_precede = inputs_precede && input >= -1 && input < static_cast<int>(i);
          }
          inputs_precede = inputs_precede && !l.ops[i].inputs.empty();
        }
      }
      CHECK(inputs_precede);
      CHECK(params == wavel::workload::parameter_count(model) * 2);
      CHECK(w.param_bytes == params);
      CHECK(w.flops == flops);
      CHECK(w.kv_cache_bytes == kv);

      model.tie_embeddings = true;
      const Workload tied = build_workload(model, shape(phase, 2, 256, 32));
      CHECK(tied.param_bytes == wavel::workload::parameter_count(model) * 2);
    }
  }
}

TEST_CASE("workload: Qwen biases and QK norms land in the op weights") {
  const Workload qwen2 = build_workload(preset("qwen2-72b"), shape(Phase::prefill, 1, 128, 8));
  // k_proj: 8192 x 1024 weights + 1024 bias, 2 B each.
  CHECK(op(layer(qwen2, "layer.0"), "k_proj").weight_bytes == (8192LL * 1024 + 1024) * 2);
  const Workload qwen3 = build_workload(preset("qwen3-30b-a3b"), shape(Phase::decode, 1, 128, 8));
  const Op& qk = op(layer(qwen3, "layer.0"), "qk_norm");
  CHECK(qk.kind == OpKind::norm);
  CHECK(qk.weight_bytes == 2 * 128 * 2);
}

TEST_CASE("workload: impossible shapes are one DataError listing every problem") {
  const ModelSpec model = preset("llama3-8b");
  try {
    build_workload(model, shape(Phase::decode, 0, 0, 0));
    FAIL("expected DataError");
  } catch (const wavel::DataError& e) {
    REQUIRE(e.diagnostics().size() == 3);
    for (const auto& d : e.diagnostics()) CHECK(d.key_path == "workloads");
    CHECK(e.diagnostics()[0].message.find("concurrent_requests") != std::string::npos);
    CHECK(e.diagnostics()[1].message.find("input_tokens") != std::string::npos);
    CHECK(e.diagnostics()[2].message.find("output_tokens") != std::string::npos);
  }
  // Prefill needs no output tokens.
  CHECK_NOTHROW(build_workload(model, shape(Phase::prefill, 1, 16, 0)));
}

TEST_CASE("workload: MLA with a query low-rank projection (DeepSeek-V2 style)") {
  ModelSpec model = preset("deepseek-v2-lite");
  model.mla->q_lora_rank = 1536;
  const Workload w = build_workload(model, shape(Phase::decode, 2, 512, 16));
  const Layer& l = layer(w, "layer.3");
  CHECK_FALSE(has_op(l, "q_proj"));
  // q_a 2048 -> 1536, its norm, q_b 1536 -> 16 x 192 = 3072.
  CHECK(op(l, "q_a_proj").n == 1536);
  CHECK(op(l, "q_a_norm").weight_bytes == 1536 * 2);
  CHECK(op(l, "q_b_proj").weight_bytes == 1536LL * 3072 * 2);
  CHECK(w.param_bytes == wavel::workload::parameter_count(model) * 2);
}
