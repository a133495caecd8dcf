// The layer WaferLLM's runs timed: its configurations derived as its scripts set them, its op list,
// a whole decode layer costed by hand, scalar loops and fused GEMVs by hand, the width check, and
// the generation pairing of every committed params file.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>

#include "cost_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/calibrate/predict.hpp"
#include "wavel/calibrate/waferllm_layer.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/detail/collectives.hpp"
#include "wavel/cost/fit_provenance.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::round_params;

namespace {

calibrate::ReferencePoint point(const std::string& model, workload::Phase phase, std::int64_t grid) {
  calibrate::ReferencePoint p;
  p.model = model;
  p.phase = phase;
  p.grid_pes = grid;
  (phase == workload::Phase::decode ? p.context_tokens : p.input_tokens) = 4096;
  return p;
}

wafer::WaferParams wse2() { return *wafer::find_wafer_preset("wse2"); }

}  // namespace

TEST_CASE("WaferLLM's run configurations are derived as its scripts set them") {
  const auto llama8b = *workload::find_model_preset("llama3-8b");
  // Decode/WSE-2/model_config/llama8B_4k_1_{420,540,660}.json: dim, ffn_dim, seq_len and group_num.
  const std::map<std::int64_t, std::array<std::int64_t, 4>> published{
      {420, {4200, 14700, 4200, 20}}, {540, {4320, 14580, 4320, 20}}, {660, {4620, 14520, 4620, 22}},
      {360, {4320, 14400, 4320, 18}}, {600, {4200, 14400, 4200, 24}}, {720, {4320, 14400, 4320, 24}}};
  for (const auto& entry : published) {
    const std::int64_t grid = entry.first;  // a structured binding cannot be captured (CAPTURE) before C++20
    const auto& want = entry.second;
    CAPTURE(grid);
    const auto run = calibrate::waferllm_run(point("llama3-8b", workload::Phase::decode, grid), llama8b);
    CHECK(run.dim == want[0]);
    CHECK(run.ffn_dim == want[1]);
    CHECK(run.seq_len == want[2]);
    CHECK(run.group_num == want[3]);
    CHECK(run.layers == 32);
  }
  // Prefill pads the prompt the same way: 4096 tokens on 480 PEs run as 9 a PE.
  const auto prefill = calibrate::waferllm_run(point("llama3-8b", workload::Phase::prefill, 480), llama8b);
  CHECK(prefill.seq_len == 4320);
  // A point's own keys win (WaferLLM's P = 240 run used dim 4080, below the model's 4096).
  auto own = point("llama3-8b", workload::Phase::decode, 240);
  own.dim = 4080;
  own.group_num = 15;
  const auto run = calibrate::waferllm_run(own, llama8b);
  CHECK(run.dim == 4080);
  CHECK(run.group_num == 15);
  CHECK(run.ffn_dim == 14400);
  // MoE and latent attention were never run by WaferLLM: refused, not approximated.
  CHECK_THROWS_AS(calibrate::waferllm_run(point("mixtral-8x7b", workload::Phase::decode, 420),
                                          *workload::find_model_preset("mixtral-8x7b")),
                  DataError);
}

TEST_CASE("the timed layers' op lists: fusions, skewed inputs, scalar loops, no KV append") {
  const auto llama13b = *workload::find_model_preset("llama2-13b");
  const auto decode = calibrate::waferllm_reference_schedule(point("llama2-13b", workload::Phase::decode, 420), wse2());
  std::string names;
  for (const auto& op : decode.ops) names += op.name + " ";
  CHECK(names ==
        "attn_norm qkv_proj rope attn_scores softmax attn_values o_proj attn_residual mlp_norm gate_up_proj act "
        "down_proj mlp_residual ");
  CHECK(decode.layer_scale == llama13b.num_layers);
  CHECK(decode.regions.front() == meshir::Rect{0, 0, 420, 420});
  const auto& qkv = decode.ops[1];
  CHECK(qkv.work.fused == 3);
  CHECK(qkv.work.k == 5460);  // 5120 padded to 13 x 420
  CHECK(qkv.work.n == 3 * 5460);
  CHECK(qkv.group == 21);  // 20 groups of 21
  CHECK(decode.ops[10].work.scalar_elements == 5460);  // SiLU over dim_p_pe, as the loop's bound reads
  CHECK(decode.ops[10].work.scalar_divisions == 1);
  CHECK(decode.ops[4].rounds == 2);
  for (const auto& op : decode.ops) CHECK(op.kernel != meshir::Kernel::kv_shift);
  REQUIRE_NOTHROW(meshir::verify_or_throw(decode, meshir::VerifyOptions{"decode", {}, {}}));

  const auto prefill = calibrate::waferllm_reference_schedule(point("llama2-13b", workload::Phase::prefill, 600), wse2());
  std::map<std::string, bool> skewed;
  for (const auto& op : prefill.ops) {
    if (op.kernel == meshir::Kernel::meshgemm) skewed[op.name] = op.input_skewed;
  }
  CHECK(skewed == std::map<std::string, bool>{{"q_proj", false}, {"k_proj", true}, {"v_proj", true},
                                                {"attn_values", false}, {"o_proj", false}, {"up_proj", false},
                                                {"gate_proj", true}, {"down_proj", false}});
  REQUIRE_NOTHROW(meshir::verify_or_throw(prefill, meshir::VerifyOptions{"prefill", {}, {}}));
  // The MeshIR text carries the new fields and reads them back.
  const auto back = meshir::parse(meshir::print(prefill), "prefill.meshir");
  REQUIRE(back.ops.size() == prefill.ops.size());
  for (std::size_t i = 0; i < back.ops.size(); ++i) {
    CHECK(back.ops[i].input_skewed == prefill.ops[i].input_skewed);
    CHECK(back.ops[i].work.scalar_elements == prefill.ops[i].work.scalar_elements);
    CHECK(back.ops[i].work.scalar_instructions == prefill.ops[i].work.scalar_instructions);
  }
  const auto decode_back = meshir::parse(meshir::print(decode), "decode.meshir");
  CHECK(decode_back.ops[1].work.fused == 3);
}

TEST_CASE("a WaferLLM decode layer on 4 x 4 PEs of a WSE-2, by hand") {
  // dim 16, ffn 32, 8 cached tokens, 2 groups of 2: a PE holds 4 features, 8 FFN columns, 2 context
  // entries. WSE-2 FMACs run 2 elements a cycle; a division costs 50 cycles; round_params: alpha 1,
  // beta 30, gemv_fixed 40, one issue cycle per vector instruction, 6 cycles per scalar instruction.
  // A reduction over 4 PEs in groups of 2: 2 stages, 5 hops, fan-in 2: 65 + 2 x wavelets.
  calibrate::WaferllmRun run;
  run.grid = 4;
  run.dim = 16;
  run.ffn_dim = 32;
  run.seq_len = 8;
  run.group_num = 2;
  run.layers = 1;
  const auto s = calibrate::waferllm_layer_schedule(run, wse2());
  const auto cost = cost::evaluate(s, wse2(), round_params(), true, 8);
  const std::map<std::string, double> by_hand{
      // On 4 features: x*x and the weight scale as two-vector multiplies (2 a cycle: 4), the row
      // sum into a scalar (4 a cycle: 1), the 1/sqrt scale by a scalar (write port: 2 a cycle, 2);
      // 1/sqrt(x/d): 2 instructions and 3 divisions (162); a one-wavelet reduction (67) and its call (40).
      {"attn_norm", 7 + 162 + 67 + 40},
      // 3 fused GEMVs: 3 x 4 FMACs of 4 outputs, 3 cycles each (36); one reduction of 12 outputs (6
      // wavelets: 77) and its call.
      {"qkv_proj", 36 + 77 + 40},
      {"rope", 24 / 2},  // 6 vector ops x 4 features
      // 4 FMACs along the 2 context entries (2 cycles each); the scores' reduction (8 B: 69).
      {"attn_scores", 8 + 69 + 40},
      // On 2 entries: 3 scalar scales (2 a cycle: 3), @fmaxh into a scalar (1 wide on WSE-2: 2), the
      // sum (4 a cycle: 0.5); fast_exp on each (5 instructions: 60), two reductions.
      {"softmax", 5.5 + 60 + 2 * (67 + 40)},
      // 2 FMACs along the 4 features (3 cycles each); a 16-byte reduction (73).
      {"attn_values", 6 + 73 + 40},
      {"o_proj", 12 + 69 + 40},
      {"attn_residual", 2},
      {"mlp_norm", 7 + 162 + 67 + 40},
      // 2 fused GEMVs: 2 x 4 FMACs of 8 outputs (5 cycles each); a 32-byte reduction (81).
      {"gate_up_proj", 40 + 81 + 40},
      // times up on 8 columns (4 cycles); SiLU on dim / P = 4 elements: 7 instructions and a division.
      {"act", 4 + 4 * (7 * 6 + 50)},
      {"down_proj", 24 + 69 + 40},
      {"mlp_residual", 2}};
  double sum = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    CAPTURE(s.ops[i].name);
    REQUIRE(by_hand.count(s.ops[i].name) == 1);
    CHECK(cost.ops[i].total_cycles == doctest::Approx(by_hand.at(s.ops[i].name)));
    sum += by_hand.at(s.ops[i].name);
  }
  CHECK(sum == 2023.5);
  CHECK(cost.pass_cycles == doctest::Approx(2023.5));  // straight-line code: no launch, no route switch
  CHECK(cost.tpr_tokens_per_s == doctest::Approx(1.1e9 / 2023.5));
}

TEST_CASE("a scalar loop by hand: the PE's rows and its share of each row") {
  const auto s = one_region(4, 8);
  auto op = op_on(s.regions[0], meshir::Kernel::elementwise);
  op.work.m = 16;
  op.work.n = 32;
  op.work.scalar_elements = 32;  // SiLU over the FFN columns
  op.work.scalar_instructions = 7;
  op.work.scalar_divisions = 1;
  // Tokens along X (4 parts: 4 rows a PE), features along Y (8 parts: 4 columns a PE).
  op.in_layout = {meshir::Dim::tokens, meshir::Dim::features, 4, 8, 1, 1, 0, 0};
  const auto w3 = test::wse3();
  CHECK(cost::detail::scalar_loop_cycles(op, w3, round_params()) == doctest::Approx(16 * (7 * 6.0 + 50.0)));
  // Decode's layout copies the row along X: each PE runs its 4 columns of all 16 rows.
  op.in_layout = {meshir::Dim::none, meshir::Dim::features, 1, 8, 1, 1, 0, 0};
  CHECK(cost::detail::scalar_loop_cycles(op, w3, round_params()) == doctest::Approx(64 * (7 * 6.0 + 50.0)));
  // The division is the wafer's figure.
  auto slow = w3;
  slow.scalar_division_cycles = 100.0;
  CHECK(cost::detail::scalar_loop_cycles(op, slow, round_params()) == doctest::Approx(64 * (7 * 6.0 + 100.0)));
  CHECK(cost::op_cost(s, op, w3, round_params()).compute_cycles ==
        doctest::Approx(cost::detail::scalar_loop_cycles(op, w3, round_params())));  // no flops: the loop alone
}

TEST_CASE("at fixed tokens per PE a wider model's prefill GEMM never costs less per FLOP") {
  // The per-k-iteration and per-step costs, and the alignment shifts (steps without compute),
  // amortise over wider tiles; without them the FMAC rate sets a floor per FLOP that no width
  // undercuts (a rate absorbed into gemm_k_cycles would let wide models run faster per FLOP).
  auto p = round_params();
  p.gemm_k_cycles = 0.0;
  p.gemm_step_cycles = 0.0;
  for (const char* preset : {"wse2", "wse3"}) {
    CAPTURE(preset);
    const auto wafer = *wafer::find_wafer_preset(preset);
    const std::int64_t side = 16;
    const auto s = one_region(side, side);
    double previous = 0.0;
    for (std::int64_t width = 256; width <= 4096; width *= 2) {
      auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
      op.work.m = 9 * side;  // 9 tokens a PE, as WaferLLM's 8B prefill at P = 480
      op.work.k = width;
      op.work.n = width;
      op.input_skewed = true;
      const double per_flop = cost::op_cost(s, op, wafer, p).total_cycles / (2.0 * op.work.m * width * width);
      CHECK(per_flop >= previous * (1.0 - 1e-12));
      previous = per_flop;
    }
    // And the floor is the FMAC rate's: 9 tokens at 2 (WSE-2) or 4 (WSE-3) a cycle plus one issue,
    // per 2 x 9 FLOP of one output column and k.
    const double rate = static_cast<double>(cost::detail::fmac_elements_per_cycle(wafer));
    CHECK(previous >= (std::ceil(9.0 / rate) + 1.0) / 18.0 / (side * side) * (1.0 - 1e-12));
  }
}

TEST_CASE("no committed params file pairs one generation's constants with the other's hop cost") {
  const auto dir = wavel::test::source_path("configs/params");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    CAPTURE(entry.path().string());
    const auto fits = cost::load_fits(entry.path().string());
    CHECK_FALSE(fits.empty());  // every committed file says what it was fitted on
    CHECK(cost::generation_pairing_problem(fits).empty());
    ++files;
  }
  CHECK(files >= 3);
  // The file WSE-3 sweeps use was fitted on WSE-3 kernels alone.
  for (const auto& step : cost::load_fits(wavel::test::source_path("configs/params/wse3.yaml").string())) {
    CHECK(step.wafer == "wse3");
  }
  // The old construction: WSE-2's end-to-end constants beside WSE-3's hop cost.
  const std::vector<cost::FitStep> mixed{{"wse3", "kernels", {"alpha_cycles_per_hop", "gemm_k_cycles"}},
                                         {"wse2", "end to end", {"scalar_op_cycles"}}};
  CHECK(cost::generation_pairing_problem(mixed).find("step 2 fitted wse2 measurements") == 0);
  // Refitting the hop cost on WSE-2 after the WSE-3 kernels is consistent (the WSE-2 file).
  const std::vector<cost::FitStep> refit{{"wse3", "kernels", {"alpha_cycles_per_hop", "gemm_k_cycles"}},
                                         {"wse2", "end to end", {"alpha_cycles_per_hop", "scalar_op_cycles"}}};
  CHECK(cost::generation_pairing_problem(refit).empty());
  // The section round-trips and its errors are located.
  const std::string text = "alpha_cycles_per_hop: 1\n" + cost::fits_to_yaml(refit);
  const auto back = cost::parse_fits(text, "p.yaml");
  REQUIRE(back.size() == 2);
  CHECK(back[1].wafer == "wse2");
  CHECK(back[1].names == refit[1].names);
  CHECK(back[0].data == "kernels");
  CHECK_THROWS_WITH_AS(cost::parse_fits("fits:\n  - {wafer: wse9, data: x, names: [alpha_cycles_per_hop]}\n", "p.yaml"),
                       doctest::Contains("p.yaml:2:13: error: fits[0].wafer: unknown value 'wse9'"), ConfigError);
  CHECK_THROWS_WITH_AS(cost::parse_params("fits:\n  - {wafer: wse2, data: x, names: [alpha]}\n", "p.yaml", {}),
                       doctest::Contains("fits[0].names[0]"), ConfigError);
}
