// Full-Chip and WaferLLM schedules: they verify, round-trip through text, and follow the published trends.
#include <doctest/doctest.h>

#include <algorithm>

#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/calibrate/crossval.hpp"
#include "wavel/calibrate/predict.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/commands/commands.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"

using namespace wavel;

namespace {

workload::Workload make(const char* model, workload::Phase phase, std::int64_t requests, std::int64_t input) {
  return workload::build_workload(*workload::find_model_preset(model), {phase, requests, input, 128});
}

void check_valid_and_round_trips(const meshir::Schedule& s) {
  const auto problems = meshir::verify(s, "built", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); });
  std::string text;
  for (const auto& d : problems) text += d.format() + "\n";
  CHECK_MESSAGE(problems.empty(), s.name << ":\n" << text);
  const std::string printed = meshir::print(s);
  const meshir::Schedule back = meshir::parse(printed, "printed");
  CHECK(meshir::print(back) == printed);
  REQUIRE(back.ops.size() == s.ops.size());
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const auto& a = s.ops[i];
    const auto& b = back.ops[i];
    CHECK((a.name == b.name && a.kernel == b.kernel && a.region == b.region && a.used == b.used &&
           a.in_layout == b.in_layout && a.out_layout == b.out_layout && a.reduce_axis == b.reduce_axis &&
           a.group == b.group && a.rounds == b.rounds && a.to_region == b.to_region && a.inputs == b.inputs &&
           a.step == b.step && a.stage == b.stage && a.work.flops == b.work.flops &&
           a.work.kv_cache_bytes == b.work.kv_cache_bytes));
  }
}

}  // namespace

TEST_CASE("baseline schedules verify and round-trip through MeshIR text") {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::default_params(wafer);
  for (const char* model : {"llama3-8b", "llama2-13b", "deepseek-v2-lite"}) {
    for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
      for (std::int64_t requests : {1, 8}) {
        const std::string name = model;
        CAPTURE(name);
        CAPTURE(requests);
        const auto w = make(model, phase, requests, 2048);
        const auto full = baselines::build_fullchip(w, wafer);
        CHECK(full.regions.size() == 1);
        if (cost::evaluate(full, wafer, params, phase == workload::Phase::decode, 2048).sram_headroom >= 0) {
          check_valid_and_round_trips(full);
        }
        const auto tuned = baselines::build_waferllm_tuned(w, wafer, params);
        // Square regions waste SRAM: only LLaMA-3-8B is guaranteed to fit at every point here.
        if (name == "llama3-8b") REQUIRE(tuned.has_value());
        if (!tuned) continue;
        check_valid_and_round_trips(*tuned);
        CHECK(cost::evaluate(*tuned, wafer, params, phase == workload::Phase::decode, 2048).sram_headroom >= 0);
      }
    }
  }
}

TEST_CASE("WaferLLM decode alternates the allreduce axis and so needs no re-layout") {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto s = baselines::build_waferllm(make("llama3-8b", workload::Phase::decode, 1, 2048), wafer, 360);
  REQUIRE(s.has_value());
  int gemvs = 0, relayouts = 0;
  const meshir::PlacedOp* previous = nullptr;
  for (const auto& op : s->ops) {
    if (op.kernel == meshir::Kernel::relayout) ++relayouts;
    if (op.kernel != meshir::Kernel::meshgemv) continue;
    ++gemvs;
    // Q/K/V and gate/up are one fused GEMV each; every other GEMV consumes the previous one's axis.
    if (previous != nullptr && op.name.find("attn_scores") == std::string::npos) {
      CHECK_MESSAGE(op.reduce_axis != previous->reduce_axis, op.name);
    }
    previous = &op;
  }
  CHECK(gemvs > 6 * 32);  // qkv, scores, values, o, gate_up, down per layer
  CHECK(relayouts == 0);
}

TEST_CASE("decode TPR falls and prefill TPR rises with the region side, from the physics") {
  // WaferLLM's published trend on WSE-2 (shared/reference): decode 420 > 540 > 660, prefill 480 < 600 < 720.
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto predict = calibrate::waferllm_predictor(wafer);
  const auto params = cost::default_params(wafer);
  auto point = [](workload::Phase phase, std::int64_t grid) {
    calibrate::ReferencePoint p;
    p.model = "llama3-8b";
    p.phase = phase;
    (phase == workload::Phase::decode ? p.context_tokens : p.input_tokens) = 4096;
    p.grid_pes = grid;
    return p;
  };
  const double d420 = predict(point(workload::Phase::decode, 420), params);
  const double d540 = predict(point(workload::Phase::decode, 540), params);
  const double d660 = predict(point(workload::Phase::decode, 660), params);
  CHECK(d420 > d540);
  CHECK(d540 > d660);
  const double p480 = predict(point(workload::Phase::prefill, 480), params);
  const double p600 = predict(point(workload::Phase::prefill, 600), params);
  const double p720 = predict(point(workload::Phase::prefill, 720), params);
  CHECK(p480 < p600);
  CHECK(p600 < p720);
}

TEST_CASE("a layer-subset schedule is labelled and scaled") {
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto w = make("llama3-8b", workload::Phase::decode, 1, 4096);
  const auto s = baselines::build_waferllm_layer_sample(w, wafer, 420);
  CHECK(s.layer_scale == 32);
  CHECK(s.regions.size() == 1);
  const auto params = cost::default_params(wafer);
  const auto cost = cost::evaluate(s, wafer, params, true, 4096);
  auto one = s;
  one.layer_scale = 1;
  CHECK(cost.latency_s == doctest::Approx(32.0 * cost::evaluate(one, wafer, params, true, 4096).latency_s));
  CHECK_THROWS_AS(baselines::build_waferllm_layer_sample(w, wafer, 800), DataError);
}

TEST_CASE("cross-validated on the shared reference, the calibration predicts points it did not see") {
  const auto set = calibrate::load_reference(wavel::test::source_path("tests/data/reference/waferllm_measured.yaml").string());
  const auto wafer = *wafer::find_wafer_preset(set.wafer);
  const auto params = cost::load_params(wavel::test::source_path("configs/params/wse2-waferllm.yaml").string(),
                                        cost::default_params(wafer));
  const auto predict = calibrate::waferllm_predictor(wafer);
  const std::vector<std::string> fit = wavel::driver::default_fit_names();
  // Each fold refits from the kernel-level file (the first level of calibration), so the committed
  // end-to-end values do not leak into the test.
  const auto kernels = cost::load_params(wavel::test::source_path("configs/params/wse3-kernels.yaml").string(),
                                         cost::default_params(wafer));
  const auto by_model = calibrate::cross_validate(set, predict, kernels, fit, calibrate::FoldBy::model);
  CHECK(by_model.folds == 2);
  CHECK(by_model.mape_pct <= 5.0);
  CHECK(by_model.max_abs_error_pct <= 10.0);
  const auto by_grid = calibrate::cross_validate(set, predict, kernels, fit, calibrate::FoldBy::grid);
  CHECK(by_grid.folds == 6);
  CHECK(by_grid.mape_pct <= 5.0);
  // The committed file is the fit on the training split: its held-out points stay within 5 %.
  CHECK(calibrate::validate(set, predict, params).test_mape_pct <= 5.0);
}

TEST_CASE("the decode-falls / prefill-rises trends come out of the physics with the committed parameters") {
  const auto set = calibrate::load_reference(wavel::test::source_path("tests/data/reference/waferllm_measured.yaml").string());
  const auto wafer = *wafer::find_wafer_preset(set.wafer);
  const auto params = cost::load_params(wavel::test::source_path("configs/params/wse2-waferllm.yaml").string(),
                                        cost::default_params(wafer));
  const auto report = calibrate::validate(set, calibrate::waferllm_predictor(wafer), params);
  // Points come in threes of rising grid per (model, phase).
  for (std::size_t i = 0; i + 2 < set.points.size(); i += 3) {
    const double a = report.points[i].predicted, c = report.points[i + 2].predicted;
    if (set.points[i].phase == workload::Phase::decode) {
      CHECK(c < a);
    } else {
      CHECK(c > a);
    }
  }
}

TEST_CASE("with defective PEs, Full-Chip takes the largest clean rectangle and WaferLLM skips dirty slots") {
  auto wafer = *wafer::find_wafer_preset("wse3");
  wafer.defective_pes = {{700, 10}, {100, 1000}};
  const auto w = make("llama3-8b", workload::Phase::decode, 1, 2048);
  const auto full = baselines::build_fullchip(w, wafer);
  REQUIRE(full.regions.size() == 1);
  // Right of x = 100 and below y = 10 avoids both: 654 x 1163 = 760,602 PEs, more than 755 x 989
  // (between the rows) or 700 x 1000 (above and left of both).
  CHECK(full.regions[0] == meshir::Rect{101, 11, 654, 1163});
  check_valid_and_round_trips(full);
  const auto tuned = baselines::build_waferllm_tuned(w, wafer, cost::default_params(wafer));
  REQUIRE(tuned.has_value());
  check_valid_and_round_trips(*tuned);
}

TEST_CASE("request grouping: no baseline serves R requests slower than as groups of a divisor R'") {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    for (std::int64_t requests : {4, 6}) {
      const auto w = make("llama3-8b", phase, requests, 1024);
      const bool decode = phase == workload::Phase::decode;
      const auto tps = [&](const std::optional<meshir::Schedule>& s) {
        return s ? cost::evaluate(*s, wafer, params, decode, 1024).tokens_per_s : 0.0;
      };
      const double full = tps(baselines::build_fullchip_tuned(w, wafer, params));
      const double wafer_llm = tps(baselines::build_waferllm_tuned(w, wafer, params));
      REQUIRE(full > 0.0);
      REQUIRE(wafer_llm > 0.0);
      for (std::int64_t groups : workload::request_divisors(requests)) {
        CAPTURE(requests);
        CAPTURE(groups);
        // One group of R / groups requests with every request's KV cache resident: groups served in
        // turn deliver exactly this group's throughput.
        const auto group = workload::split_requests(w, groups);
        CHECK(full >= tps(baselines::build_fullchip_tuned(group, wafer, params)) * (1.0 - 1e-12));
        CHECK(wafer_llm >= tps(baselines::build_waferllm_tuned(group, wafer, params)) * (1.0 - 1e-12));
      }
    }
  }
}

TEST_CASE("a baseline that cannot be placed says why") {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::default_params(wafer);
  // Qwen2-72B's 145 GB of weights fit no square side and not the whole grid either.
  const auto w = make("qwen2-72b", workload::Phase::decode, 1, 2048);
  std::string full_reason, wafer_reason;
  CHECK_FALSE(baselines::build_fullchip_tuned(w, wafer, params, &full_reason).has_value());
  CHECK(full_reason.find("per PE over the whole grid") != std::string::npos);
  CHECK_FALSE(baselines::build_waferllm_tuned(w, wafer, params, {}, &wafer_reason).has_value());
  CHECK(wafer_reason.find("no square side from 15 to 750 PEs") != std::string::npos);
  // WaferLLM's own sides are tried besides the 15-PE grid; sides off the grid are dropped.
  const auto sides = baselines::waferllm_sides(wafer, 60, {375, 9999});
  CHECK(std::find(sides.begin(), sides.end(), 375) != sides.end());
  CHECK(sides.back() == 720);
  CHECK(baselines::waferllm_sides(wafer, 15).size() == 50);
}

TEST_CASE("a grid shorter than WaferLLM's side step tunes over its largest square (it crashed on sides 1 to 14)") {
  auto wafer = *wafer::find_wafer_preset("wse3");
  for (const std::int64_t side : {1, 7, 14}) {
    wafer.grid_w_pes = side;
    wafer.grid_h_pes = 16;
    const auto sides = baselines::waferllm_sides(wafer, 15);
    REQUIRE(sides.size() == 1);
    CHECK(sides.front() == side);
    const auto params = cost::default_params(wafer);
    std::string why;
    const auto w = make("llama3-8b", workload::Phase::decode, 1, 128);
    CHECK_FALSE(baselines::build_waferllm_tuned(w, wafer, params, {}, &why).has_value());  // 8B on <= 224 PEs
    CHECK(why.find("no square side from " + std::to_string(side) + " to " + std::to_string(side)) != std::string::npos);
  }
}

TEST_CASE("Full-Chip is the strongest single-region schedule: its TUNEs are never slower than WaferLLM's kernels as they are") {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    const bool decode = phase == workload::Phase::decode;
    const auto w = make("llama3-8b", phase, 4, 1024);
    const auto tunes = baselines::fullchip_tunes(w);
    // Decode: as is, and with SiLU.mul split; prefill: as is, and with Q/K/V and gate/up fused.
    REQUIRE(tunes.size() == 2);
    CHECK(tunes[0] == meshir::Tune{});
    CHECK(tunes[1].split_epilogues == decode);
    CHECK(tunes[1].fuse == !decode);
    const auto tuned = baselines::build_fullchip_tuned(w, wafer, params);
    REQUIRE(tuned.has_value());
    check_valid_and_round_trips(*tuned);
    const double best = cost::evaluate(*tuned, wafer, params, decode, 1024).tokens_per_s;
    for (std::int64_t mb : workload::request_divisors(4)) {
      for (const auto& t : tunes) {
        const auto s = baselines::build_fullchip(w, wafer, mb, t);
        CHECK(best >= cost::evaluate(s, wafer, params, decode, 1024).tokens_per_s * (1.0 - 1e-12));
      }
    }
    // Here the other TUNE wins: the split loop, or the fused MeshGEMMs.
    bool other = false;
    for (const auto& op : tuned->ops) {
      other = other || (decode ? op.kernel == meshir::Kernel::allgather : op.name.find("qkv_proj") != std::string::npos);
    }
    CHECK(other);
  }
}
