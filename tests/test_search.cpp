// CUT/TUNE search: the incremental evaluator agrees with the cost model, fronts are valid and
// deterministic, the baselines are never beaten by their own seeds, and Pareto utilities by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <tuple>

#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/search/search.hpp"

using namespace wavel;

namespace {

workload::Workload tiny(workload::Phase phase, std::int64_t requests) {
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-llama/config.json").string());
  return workload::build_workload(model, {phase, requests, 128, 32});
}

wafer::WaferParams small_wafer(std::int64_t w, std::int64_t h) {
  auto wafer = *wafer::find_wafer_preset("wse3");
  wafer.grid_w_pes = w;
  wafer.grid_h_pes = h;
  return wafer;
}

search::SearchOptions small_options() {
  search::SearchOptions o;
  o.cut_ratios = {0.5};
  o.strip_counts = {3};
  o.max_cut_depth = 2;
  o.group_scales = {1.0, 2.0};
  o.used_fractions = {1.0, 0.5};
  return o;
}

std::vector<std::pair<std::string, meshir::Schedule>> seeds_for(const workload::Workload& w,
                                                                const wafer::WaferParams& wafer,
                                                                const cost::CostParams& params) {
  std::vector<std::pair<std::string, meshir::Schedule>> seeds{{"fullchip", baselines::build_fullchip(w, wafer)}};
  if (auto s = baselines::build_waferllm_tuned(w, wafer, params)) seeds.emplace_back("waferllm", *s);
  return seeds;
}

}  // namespace

TEST_CASE("the incremental plan evaluator equals the full cost model") {
  const auto wafer = small_wafer(48, 48);
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    const auto w = tiny(phase, 4);
    for (std::int64_t mb : {1, 2, 4}) {
      search::PlanEvaluator ev(w, wafer, params, mb);
      const int blocks = ev.blocks();
      // Three leaves: a 24-wide column, then two 24 x 24 squares, splitting the blocks unevenly; the
      // first and last use their bottom corners (the transfers run between the used rectangles).
      const std::vector<search::Leaf> leaves{
          {meshir::Rect{0, 0, 24, 48}, 24, 36, 1 % static_cast<int>(ev.tunes().size()), 0, 3, 0, 12},
          {meshir::Rect{24, 0, 24, 24}, 24, 24, 0, 3, blocks - 4},
          {meshir::Rect{24, 24, 24, 24}, 18, 18, static_cast<int>(ev.tunes().size()) - 1, blocks - 4, blocks, 6, 6}};
      ev.prepare(leaves);
      const auto fast = ev.evaluate(leaves);
      const auto schedule = ev.build(leaves);
      const auto full = cost::evaluate(schedule, wafer, params, phase == workload::Phase::decode, 128);
      CAPTURE(mb);
      REQUIRE(full.sram_headroom >= 0.0);
      CHECK(fast.tokens_per_s == doctest::Approx(full.tokens_per_s).epsilon(1e-12));
      CHECK(fast.latency_s == doctest::Approx(full.latency_s).epsilon(1e-12));
      CHECK(fast.pes == full.pes_used);
      CHECK(meshir::verify(schedule, "plan", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
                .empty());
    }
  }
}

TEST_CASE("front schedules verify, reproduce their objectives and include no dominated point") {
  const auto wafer = small_wafer(24, 24);
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    const auto w = tiny(phase, 4);
    const auto result = search::search_setting(w, wafer, params, small_options(), seeds_for(w, wafer, params));
    REQUIRE(!result.front.empty());
    for (const auto& p : result.front) {
      const auto c = cost::evaluate(p.schedule, wafer, params, phase == workload::Phase::decode, 128);
      CHECK(c.tokens_per_s == p.objectives.tokens_per_s);
      CHECK(c.latency_s == p.objectives.latency_s);
      CHECK(c.sram_headroom >= 0.0);
      CHECK(meshir::verify(p.schedule, "front", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
                .empty());
      CHECK(meshir::print(meshir::parse(meshir::print(p.schedule), "front")) == meshir::print(p.schedule));
      for (const auto& q : result.front) CHECK_FALSE(search::dominates(q.objectives, p.objectives));
    }
    CHECK(result.hypervolume > 0.0);
    CHECK(result.hypervolume <= 1.0);
    CHECK(std::log10(static_cast<double>(result.stats.nodes_visited)) + 2.0 <= result.stats.exhaustive_tree_log10);
  }
}

TEST_CASE("the best schedule is at least as fast as both baselines") {
  const auto wafer = small_wafer(32, 32);
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    for (std::int64_t requests : {1, 4}) {
      const auto w = tiny(phase, requests);
      const auto seeds = seeds_for(w, wafer, params);
      const auto result = search::search_setting(w, wafer, params, small_options(), seeds);
      REQUIRE(!result.front.empty());
      for (const auto& [name, schedule] : seeds) {
        const auto c = cost::evaluate(schedule, wafer, params, phase == workload::Phase::decode, 128);
        if (c.sram_headroom >= 0) CHECK(result.front.front().objectives.tokens_per_s >= c.tokens_per_s);
      }
    }
  }
}

TEST_CASE("results do not depend on the Kokkos execution space") {
  const auto wafer = small_wafer(24, 24);
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 4);
  auto options = small_options();
  const auto parallel = search::search_setting(w, wafer, params, options, {});
  options.serial = true;
  const auto serial = search::search_setting(w, wafer, params, options, {});
  REQUIRE(parallel.front.size() == serial.front.size());
  for (std::size_t i = 0; i < parallel.front.size(); ++i) {
    CHECK(parallel.front[i].objectives.tokens_per_s == serial.front[i].objectives.tokens_per_s);
    CHECK(meshir::print(parallel.front[i].schedule) == meshir::print(serial.front[i].schedule));
  }
  CHECK(parallel.stats.nodes_visited == serial.stats.nodes_visited);
}

TEST_CASE("a raised stop flag abandons the search; lowered, the search gives its usual result") {
  const auto wafer = small_wafer(24, 24);
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 4);
  auto options = small_options();
  const auto plain = search::search_setting(w, wafer, params, options, {});
  std::atomic<int> stop{SIGTERM};
  options.stop_flag = &stop;
  CHECK_THROWS_AS(search::search_setting(w, wafer, params, options, {}), search::Cancelled);
  stop.store(0);
  const auto again = search::search_setting(w, wafer, params, options, {});
  REQUIRE(again.front.size() == plain.front.size());
  for (std::size_t i = 0; i < plain.front.size(); ++i) {
    CHECK(meshir::print(again.front[i].schedule) == meshir::print(plain.front[i].schedule));
  }
  CHECK(again.stats.nodes_visited == plain.stats.nodes_visited);
}

TEST_CASE("pareto front and hypervolume by hand") {
  using search::Objectives;
  const std::vector<Objectives> points{
      {10, 1.0, 100, 0}, {5, 0.5, 100, 1}, {10, 1.0, 100, 2}, {4, 2.0, 100, 3}, {6, 1.0, 50, 4}};
  const auto front = search::pareto_front(points);
  // {4, 2.0, 100} is dominated by the first point; the duplicate of id 0 goes.
  REQUIRE(front.size() == 3);
  CHECK(front[0].id == 0);
  CHECK(front[1].id == 4);
  CHECK(front[2].id == 1);
  // One point (throughput 10, latency 1, 100 PEs) against reference latency 2, 200 PEs:
  // box 10 x 2 x 200; dominated 10 x 1 x 100 -> 1/4.
  CHECK(search::normalized_hypervolume({{10, 1.0, 100, 0}}, {2.0, 200}) == doctest::Approx(0.25));
}

TEST_CASE("transfers into a larger region verify (a mover's output lies in its destination)") {
  const auto wafer = small_wafer(32, 32);
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 2);
  search::PlanEvaluator ev(w, wafer, params, 1);
  const int half = ev.blocks() / 2;
  // A narrow first stage hands its activation to a wide second one.
  const std::vector<search::Leaf> leaves{{meshir::Rect{0, 0, 8, 32}, 8, 32, 0, 0, half},
                                         {meshir::Rect{8, 0, 24, 32}, 24, 32, 0, half, ev.blocks()}};
  const auto s = ev.build(leaves);
  CHECK(meshir::verify(s, "plan", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); }).empty());
}

TEST_CASE("the expert CUT places expert groups on strips, every strip in the same steps") {
  const auto wafer = small_wafer(32, 32);
  const auto params = cost::default_params(wafer);
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-moe/config.json").string());
  const auto w = workload::build_workload(model, {workload::Phase::decode, 8, 128, 32});
  const std::int64_t routed = 8 * 2;  // requests x top-k
  for (std::int64_t groups : {2, 4}) {
    meshir::Schedule s = baselines::build_fullchip(w, wafer);
    const meshir::Rect grid{0, 0, 32, 32};
    s.regions = {grid};
    s.ops.clear();
    meshir::Placer placer(s, true, workload::MoeRouting{1.25});
    meshir::Tune tune;
    tune.expert_groups = groups;
    for (const auto& layer : w.layers) placer.place(layer, 0, grid, 0, tune);
    CHECK(meshir::verify(s, "moe", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); }).empty());
    // One strip region per group and layer, each a 1/groups slice of the grid.
    CHECK(static_cast<std::int64_t>(s.regions.size()) == 1 + groups * model.num_layers);
    std::int64_t dispatches = 0;
    for (const auto& op : s.ops) {
      if (op.kernel == meshir::Kernel::moe_dispatch) {
        ++dispatches;
        // Capacity factor 1.25 over the mean share, never more than every token for its experts.
        const std::int64_t rows = std::min<std::int64_t>(8 * std::min<std::int64_t>(2, 8 / groups),
                                                         static_cast<std::int64_t>(std::ceil(1.25 * routed / groups)));
        CHECK(op.work.m == rows);
        // Each token travels once to a strip holding any of its experts: of 8 tokens with 2 of 8
        // experts, a strip of 4 experts sees 1 - C(4,2)/C(8,2) = 22/28 of them (x 1.25: all 8), a
        // strip of 2 experts 1 - C(6,2)/C(8,2) = 13/28 (x 1.25: 4.64, so 5); 256 FP16 features each.
        CHECK(op.work.input_bytes == (groups == 2 ? 8 : 5) * 256 * 2);
        CHECK(op.to_region > 0);
        CHECK(s.regions[static_cast<std::size_t>(op.to_region)].pes() == 32 * 32 / groups);
      }
      if (op.name.find("expert_gate_up.g") != std::string::npos) {
        CHECK(op.work.weight_bytes == 8 * 256 * 2 * 512 * 2 / groups);  // experts/groups experts, FP16
      }
    }
    CHECK(dispatches == groups * model.num_layers);
    // The strips hold the same expert bytes per PE as one region holding all experts would.
    meshir::Schedule one = s;
    one.regions = {grid};
    one.ops.clear();
    meshir::Placer whole(one, true, workload::MoeRouting{1.25});
    for (const auto& layer : w.layers) whole.place(layer, 0, grid, 0, meshir::Tune{});
    const auto split_pe = meshir::resident_bytes_per_pe_max(s);
    const auto whole_pe = meshir::resident_bytes_per_pe_max(one);
    CHECK(split_pe >= whole_pe);
    CHECK(split_pe <= whole_pe + whole_pe / 50);  // rounding per strip only
  }
}

TEST_CASE("MoE search: expert CUTs are in the space and every front schedule verifies") {
  const auto wafer = small_wafer(32, 32);
  const auto params = cost::default_params(wafer);
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-moe/config.json").string());
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    const auto w = workload::build_workload(model, {phase, 8, 128, 32});
    auto options = small_options();
    options.expert_groups = {1, 4};
    const auto result = search::search_setting(w, wafer, params, options, seeds_for(w, wafer, params));
    REQUIRE(!result.front.empty());
    for (const auto& p : result.front) {
      CHECK(meshir::verify(p.schedule, "front", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
                .empty());
    }
    // Restricted to expert CUTs only, the search still finds valid schedules with strip regions.
    options.expert_groups = {4};
    const auto cut = search::search_setting(w, wafer, params, options, {});
    REQUIRE(!cut.front.empty());
    bool strips = false;
    for (const auto& op : cut.front.front().schedule.ops) strips = strips || op.name.find("expert_down.g3") != std::string::npos;
    CHECK(strips);
    CHECK(meshir::verify(cut.front.front().schedule, "cut", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
              .empty());
  }
}

TEST_CASE("the plan evaluator equals the cost model under a layer subset (decoder blocks scaled, embedding and head once)") {
  const auto wafer = small_wafer(48, 48);
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    auto w = tiny(phase, 4);
    w.layer_scale = 8;
    search::PlanEvaluator ev(w, wafer, params, 2);
    const int blocks = ev.blocks();
    const std::vector<search::Leaf> leaves{{meshir::Rect{0, 0, 16, 48}, 16, 48, 0, 0, 1},
                                           {meshir::Rect{16, 0, 32, 48}, 32, 36, 0, 1, blocks - 1},
                                           {meshir::Rect{0, 0, 16, 48}, 16, 24, 0, blocks - 1, blocks}};
    ev.prepare(leaves);
    const auto fast = ev.evaluate(leaves);
    const auto full = cost::evaluate(ev.build(leaves), wafer, params, phase == workload::Phase::decode, 128);
    REQUIRE(full.sram_headroom >= 0.0);
    CHECK(fast.tokens_per_s == doctest::Approx(full.tokens_per_s).epsilon(1e-12));
    CHECK(fast.latency_s == doctest::Approx(full.latency_s).epsilon(1e-12));
  }
}

TEST_CASE("without seeds the search alone is at least as fast as both baselines (square layouts hold WaferLLM's)") {
  const auto wafer = small_wafer(32, 32);
  const auto params = cost::default_params(wafer);
  auto options = small_options();
  options.square_step_pes = 8;
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    for (std::int64_t requests : {1, 4}) {
      const auto w = tiny(phase, requests);
      const auto result = search::search_setting(w, wafer, params, options, {});
      REQUIRE(!result.front.empty());
      for (const auto& p : result.front) CHECK(p.source == "search");
      const auto waferllm = baselines::build_waferllm_tuned(w, wafer, params, baselines::waferllm_sides(wafer, 8));
      const auto fullchip = baselines::build_fullchip_tuned(w, wafer, params);
      for (const auto* s : {waferllm ? &*waferllm : nullptr, fullchip ? &*fullchip : nullptr}) {
        if (s == nullptr) continue;
        const auto c = cost::evaluate(*s, wafer, params, phase == workload::Phase::decode, 128);
        CAPTURE(s->name);
        CHECK(result.front.front().objectives.tokens_per_s >= c.tokens_per_s);
      }
    }
  }
}

TEST_CASE("search.objectives selects what the front compares") {
  const auto wafer = small_wafer(24, 24);
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::prefill, 4);
  auto options = small_options();
  const auto all = search::search_setting(w, wafer, params, options, {});
  options.objectives = search::ObjectiveSet{true, false, false};
  const auto throughput = search::search_setting(w, wafer, params, options, {});
  REQUIRE(throughput.front.size() == 1);
  CHECK(all.front.size() > 1);
  CHECK(throughput.front.front().objectives.tokens_per_s == all.front.front().objectives.tokens_per_s);
  // The tree is counted exactly, far beyond any integer type for real settings.
  CHECK(std::isfinite(all.stats.exhaustive_tree_log10));
  CHECK(all.stats.exhaustive_tree_log10 > std::log10(static_cast<double>(all.stats.nodes_visited)));
}

TEST_CASE("with a defective PE every front schedule verifies (no used rectangle holds it)") {
  auto wafer = small_wafer(24, 24);
  wafer.defective_pes = {wafer::PeCoord{2, 3}};
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 2);
  auto options = small_options();
  options.square_step_pes = 8;
  const auto result = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!result.front.empty());
  for (const auto& p : result.front) {
    CHECK(meshir::verify(p.schedule, "front", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
              .empty());
  }
}

TEST_CASE("search.seed moves root CUT options between pieces, never the front") {
  const auto wafer = small_wafer(24, 24);
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 4);
  auto options = small_options();
  options.root_chunks = 3;
  const auto one = search::search_setting(w, wafer, params, options, {});
  options.seed = 7;
  const auto seven = search::search_setting(w, wafer, params, options, {});
  REQUIRE(one.front.size() == seven.front.size());
  for (std::size_t i = 0; i < one.front.size(); ++i) {
    CHECK(one.front[i].objectives.tokens_per_s == seven.front[i].objectives.tokens_per_s);
    CHECK(one.front[i].objectives.latency_s == seven.front[i].objectives.latency_s);
    CHECK(one.front[i].objectives.pes == seven.front[i].objectives.pes);
  }
}

TEST_CASE("a defect in a region's top-left corner: the leaf uses another corner, and its MeshIR checks") {
  auto wafer = small_wafer(24, 24);
  wafer.defective_pes = {wafer::PeCoord{0, 0}};
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 2);
  auto options = small_options();
  options.max_cut_depth = 0;  // every footprint is one leaf, and every footprint holds PE (0,0)
  options.square_step_pes = 0;
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto result = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!result.front.empty());
  for (const auto& p : result.front) {
    bool moved = true;
    for (const auto& op : p.schedule.ops) moved = moved && (op.used.x > 0 || op.used.y > 0);
    CHECK(moved);
    // What `wavel-dse check` does: parse the printed text and verify it.
    CHECK(meshir::verify(meshir::parse(meshir::print(p.schedule), "front.meshir"), "front.meshir", {}, colours).empty());
    CHECK(cost::evaluate(p.schedule, wafer, params, true, 128).tokens_per_s == p.objectives.tokens_per_s);
  }
  // Every free corner is at least as good as the first one.
  options.all_anchors = true;
  const auto all = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!all.front.empty());
  CHECK(all.front.front().objectives.tokens_per_s >= result.front.front().objectives.tokens_per_s);
  for (const auto& p : all.front) CHECK(meshir::verify(p.schedule, "all", {}, colours).empty());
}

TEST_CASE("SRAM footprints: the fewest-PE schedule is not tied to fractions of the grid") {
  // Tiny decode at 2 requests on 16 x 16 needs more than the 12 x 12 (3/4) footprint and less than
  // the grid; a fill of 0.75 adds a full-width strip and a rectangle of the grid's aspect in between.
  auto wafer = small_wafer(16, 16);
  wafer.sram_reserved_per_pe_bytes = 0;  // the sizes below are chosen for all 48 KiB
  const auto params = cost::default_params(wafer);
  const auto w = tiny(workload::Phase::decode, 2);
  auto options = small_options();
  options.used_fractions = {1.0};
  options.square_step_pes = 0;  // squares of 15 x 15 would sit between the fractions too
  const auto plain = search::search_setting(w, wafer, params, options, {});
  options.sram_footprints = {0.75};
  CHECK(search::search_pieces(w, wafer, options).size() > search::search_pieces(w, wafer, small_options()).size());
  const auto sram = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!plain.front.empty());
  REQUIRE(!sram.front.empty());
  auto fewest = [](const search::SearchResult& r) {
    std::int64_t pes = r.front.front().objectives.pes;
    for (const auto& p : r.front) pes = std::min(pes, p.objectives.pes);
    return pes;
  };
  CHECK(fewest(plain) == 16 * 16);
  CHECK(fewest(sram) < 16 * 16);
  CHECK(fewest(sram) > 12 * 12);
  // A wider space: never a slower best schedule.
  CHECK(sram.front.front().objectives.tokens_per_s >= plain.front.front().objectives.tokens_per_s);
  for (const auto& p : sram.front) {
    CHECK(meshir::verify(p.schedule, "front", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
              .empty());
    CHECK(cost::evaluate(p.schedule, wafer, params, true, 128).sram_headroom >= 0.0);
  }
}

TEST_CASE("prefill MeshGEMMs that read one input reuse its alignment, as WaferLLM's K, V and gate do") {
  const auto w = tiny(workload::Phase::prefill, 1);
  meshir::Schedule s;
  s.grid_w_pes = s.grid_h_pes = 16;
  s.regions = {meshir::Rect{0, 0, 16, 16}};
  meshir::Placer placer(s, /*decode=*/false);
  placer.place(w.layers[1], 0, s.regions[0], 0, meshir::Tune{});
  std::map<std::string, bool> skewed;
  for (const auto& op : s.ops) {
    if (op.kernel == meshir::Kernel::meshgemm) skewed[op.name.substr(op.name.rfind('.') + 1)] = op.input_skewed;
  }
  CHECK_FALSE(skewed.at("q_proj"));  // the first aligns the normed input
  CHECK(skewed.at("k_proj"));
  CHECK(skewed.at("v_proj"));
  CHECK_FALSE(skewed.at("gate_proj"));
  CHECK(skewed.at("up_proj"));
  CHECK_FALSE(skewed.at("o_proj"));
  CHECK_FALSE(skewed.at("down_proj"));
}

TEST_CASE("fusion is a TUNE choice: prefill Q/K/V and gate/up as one MeshGEMM each, cheaper than apart") {
  const auto w = tiny(workload::Phase::prefill, 1);
  const auto& layer = w.layers[1];
  const auto fused = workload::fuse_shared_inputs(layer, workload::Phase::prefill);
  REQUIRE(fused.ops.size() + 3 == layer.ops.size());
  const auto find = [](const workload::Layer& l, const std::string& name) {
    for (const auto& op : l.ops) {
      if (op.name == name) return op;
    }
    FAIL("no op " << name);
    return workload::Op{};
  };
  const auto q = find(layer, "q_proj"), k = find(layer, "k_proj"), v = find(layer, "v_proj");
  const auto qkv = find(fused, "qkv_proj");
  CHECK(qkv.n == q.n + k.n + v.n);
  CHECK(qkv.fused == 1);  // one product of summed width, not products sharing a reduction
  CHECK(qkv.weight_bytes == q.weight_bytes + k.weight_bytes + v.weight_bytes);
  CHECK(find(fused, "gate_up_proj").n == 2 * w.model.ffn);
  // Decode already has WaferLLM's fused reductions: nothing more to fuse for a dense model.
  const auto decode = tiny(workload::Phase::decode, 1);
  CHECK(workload::fuse_shared_inputs(decode.layers[1], workload::Phase::decode).ops.size() == decode.layers[1].ops.size());

  // Costed on one 16 x 16 square: the fused block is cheaper, and its qkv_proj costs what a MeshGEMM
  // of the summed width costs.
  const auto wafer = small_wafer(16, 16);
  const auto params = cost::default_params(wafer);
  const auto block_cost = [&](const workload::Layer& l) {
    meshir::Schedule s;
    s.grid_w_pes = s.grid_h_pes = 16;
    s.sram_per_pe_bytes = wafer.sram_per_pe_bytes;
    s.colours = wafer.routable_colours;
    s.regions = {meshir::Rect{0, 0, 16, 16}};
    meshir::Placer placer(s, false);
    placer.place(l, 0, s.regions[0], 0, meshir::Tune{});
    return std::make_pair(s, cost::evaluate(s, wafer, params, false, 128));
  };
  const auto [apart_s, apart] = block_cost(layer);
  const auto [fused_s, together] = block_cost(fused);
  CHECK(together.pass_cycles < apart.pass_cycles);
  double apart_qkv = 0, fused_qkv = 0;
  for (std::size_t i = 0; i < apart_s.ops.size(); ++i) {
    const auto& name = apart_s.ops[i].name;
    if (name.find("q_proj") != std::string::npos || name.find("k_proj") != std::string::npos ||
        name.find("v_proj") != std::string::npos) {
      apart_qkv += apart.ops[i].total_cycles;
    }
  }
  for (std::size_t i = 0; i < fused_s.ops.size(); ++i) {
    if (fused_s.ops[i].name.find("qkv_proj") != std::string::npos) fused_qkv = together.ops[i].total_cycles;
  }
  CHECK(fused_qkv > 0);
  CHECK(fused_qkv < apart_qkv);

  // The search offers both; its best is never slower than the space without fusion, and here it fuses.
  auto options = small_options();
  const auto with = search::search_setting(w, wafer, params, options, {});
  options.fusion = false;
  const auto without = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!with.front.empty());
  REQUIRE(!without.front.empty());
  CHECK(with.front.front().objectives.tokens_per_s > without.front.front().objectives.tokens_per_s);
  bool uses_fused = false;
  for (const auto& op : with.front.front().schedule.ops) uses_fused = uses_fused || op.name.find("qkv_proj") != std::string::npos;
  CHECK(uses_fused);
  for (const auto& p : with.front) {
    CHECK(meshir::verify(p.schedule, "fused", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); }).empty());
  }
}

TEST_CASE("MoE prefill: expert GEMMs are grouped over their experts, over a strip's experts under an expert CUT") {
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-moe/config.json").string());
  const auto w = workload::build_workload(model, {workload::Phase::prefill, 1, 64, 0});
  const workload::Layer* moe = nullptr;
  for (const auto& l : w.layers) {
    if (l.is_moe) moe = &l;
  }
  REQUIRE(moe != nullptr);
  const auto experts = model.moe->num_experts;
  for (std::int64_t groups : {std::int64_t{1}, std::int64_t{2}}) {
    meshir::Schedule s;
    s.grid_w_pes = s.grid_h_pes = 16;
    s.regions = {meshir::Rect{0, 0, 16, 16}};
    meshir::Placer placer(s, false);
    meshir::Tune t;
    t.expert_groups = groups;
    placer.place(*moe, 0, s.regions[0], 0, t);
    int grouped = 0;
    for (const auto& op : s.ops) {
      if (op.name.find("expert_gate_up") == std::string::npos && op.name.find("expert_down") == std::string::npos) continue;
      CHECK(op.work.products == experts / groups);
      ++grouped;
    }
    CHECK(grouped == 2 * groups);
  }
  // Decode GEMV rows read their own expert's slice in place: no grouping.
  const auto d = workload::build_workload(model, {workload::Phase::decode, 4, 64, 16});
  meshir::Schedule s;
  s.grid_w_pes = s.grid_h_pes = 16;
  s.regions = {meshir::Rect{0, 0, 16, 16}};
  meshir::Placer placer(s, true);
  for (const auto& l : d.layers) {
    if (l.is_moe) {
      placer.place(l, 0, s.regions[0], 0, meshir::Tune{});
      break;
    }
  }
  for (const auto& op : s.ops) CHECK(op.work.products == 1);
}

TEST_CASE("a pipeline part's front carries its crossing legs, and pruned equals exhaustive with them") {
  const auto wafer = small_wafer(16, 16);
  const auto params = cost::default_params(wafer);
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-llama/config.json").string());
  for (const auto edge : {wafer::Edge::east, wafer::Edge::south}) {
    // A middle part of one layer (two blocks): the activation crosses in and out.
    const auto w = workload::stage_workload(model, {workload::Phase::decode, 4, 128, 32}, 1, 1, false, false);
    auto options = small_options();
    options.group_scales = {1.0};
    options.all_anchors = true;  // used rectangles at every corner: some nearer the I/O edge than others
    options.pipeline_part = true;
    options.objectives = search::ObjectiveSet{};
    options.io_edge = edge;
    options.link_bytes_per_s = 150e9;
    const auto pruned = search::search_setting(w, wafer, params, options, {});
    options.exhaustive = true;
    const auto exhaustive = search::search_setting(w, wafer, params, options, {});
    const auto objectives = [](const search::SearchResult& r) {
      std::vector<std::tuple<double, double, std::int64_t>> out;
      for (const auto& p : r.front) out.emplace_back(p.objectives.tokens_per_s, p.objectives.latency_s, p.objectives.pes);
      std::sort(out.begin(), out.end());
      return out;
    };
    REQUIRE(!pruned.front.empty());
    CHECK(objectives(pruned) == objectives(exhaustive));
    bool hops = false;
    for (const auto& p : pruned.front) {
      // The latency objective is the pass with both legs; each leg is at least its set-up.
      const double legs = search::part_crossings(p.schedule, w, options, wafer, params).legs_cycles();
      CHECK(legs >= 2 * params.shift_fixed_cycles);
      hops = hops || legs > 2 * params.shift_fixed_cycles;
      const auto c = cost::evaluate(p.schedule, wafer, params, true, 128);
      CHECK(p.objectives.latency_s == doctest::Approx((c.pass_cycles + legs) / wafer.clock_hz).epsilon(1e-12));
    }
    CHECK(hops);  // some front schedule lies away from the I/O edge
  }
}
