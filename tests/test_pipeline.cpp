// Pipelines over several wafers (issue 23): stage workloads, the split, the joined MeshIR schedule,
// its cost derived by hand, its text form, the verifier's refusals and the simulator's link.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <tuple>
#include <set>
#include <string>
#include <vector>

#include "cost_fixtures.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/deploy/pipeline.hpp"
#include "wavel/engine/detail/messages.hpp"
#include "wavel/sweep/sweep_job.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

using namespace wavel;

namespace {

workload::ModelSpec four_layer_llama() {
  auto m = *workload::find_model_preset("llama3-8b");
  m.num_layers = 4;
  return m;
}

// Two wafers of 2 layers each, Full-Chip on both at `mb` micro-batches, joined.
struct TwoWafers {
  workload::ModelSpec model = four_layer_llama();
  workload::WorkloadShape shape{workload::Phase::decode, 8, 2048, 128};
  deploy::PipelinePlan plan;
  std::vector<workload::Workload> parts;
  std::vector<meshir::Schedule> stages;
  meshir::Schedule joined;

  explicit TwoWafers(std::int64_t mb) {
    const auto wafer = test::wse3();
    plan.wafers = {{0, 2, true, false, 0}, {2, 2, false, true, 0}};
    plan.part_of = {0, 1};
    plan.parts = plan.wafers;
    for (const auto& p : plan.parts) parts.push_back(deploy::part_workload(model, shape, p, workload::MoeRouting{}));
    for (const auto& w : parts) stages.push_back(baselines::build_fullchip(w, wafer, mb));
    joined = deploy::join_stages(plan, {&stages[0], &stages[1]}, {&parts[0], &parts[1]}, wafer::cluster_preset("cs3"),
                                 4, true, "pipe");
  }
};

}  // namespace

TEST_CASE("a pipeline stage holds its layers, named by their place in the model") {
  const auto model = four_layer_llama();
  const workload::WorkloadShape shape{workload::Phase::prefill, 2, 512, 0};
  const auto whole = workload::build_workload(model, shape);
  const auto first = workload::stage_workload(model, shape, 0, 1, true, false);
  const auto middle = workload::stage_workload(model, shape, 1, 2, false, false);
  const auto last = workload::stage_workload(model, shape, 3, 1, false, true);
  CHECK(first.layers.front().name == "embed");
  CHECK(first.layers.back().name == "layer.0");
  CHECK(middle.layers.size() == 2);
  CHECK(middle.layers.front().name == "layer.1");
  CHECK(last.layers.front().name == "layer.3");
  CHECK(last.layers.back().name == "head");
  CHECK(first.flops + middle.flops + last.flops == whole.flops);
  CHECK(first.param_bytes + middle.param_bytes + last.param_bytes == whole.param_bytes);
  CHECK(first.kv_cache_bytes + middle.kv_cache_bytes + last.kv_cache_bytes == whole.kv_cache_bytes);
  // Micro-batches keep the part (split_requests rebuilds the workload).
  const auto half = workload::split_requests(middle, 2);
  CHECK(half.layers.size() == 2);
  CHECK(half.layers.front().name == "layer.1");
  // A tied head away from the embedding holds its own copy of the matrix.
  auto tied = model;
  tied.tie_embeddings = true;
  const auto tied_last = workload::stage_workload(tied, shape, 3, 1, false, true);
  const auto tied_whole = workload::build_workload(tied, shape);
  CHECK(tied_last.layers.back().param_bytes == tied_whole.layers.back().param_bytes + tied.vocab * tied.hidden * 2);
  // MoE: the leading dense layers stay in the part that holds them.
  const auto moe = *workload::find_model_preset("deepseek-v2-lite");
  const auto moe_first = workload::stage_workload(moe, shape, 0, 3, true, false);
  const auto moe_later = workload::stage_workload(moe, shape, 3, 3, false, false);
  CHECK_FALSE(moe_first.layers[1].is_moe);
  CHECK(moe_first.layers[2].is_moe);
  CHECK(moe_later.layers[0].is_moe);
  CHECK_THROWS_AS(workload::stage_workload(model, shape, 3, 2, false, true), InternalError);
}

TEST_CASE("a 2-wafer decode pipeline derived by hand: the wafers, the link, the token's return") {
  const auto wafer = test::wse3();
  const auto params = test::round_params();
  const TwoWafers p(1);
  REQUIRE_NOTHROW(meshir::verify_or_throw(p.joined, meshir::VerifyOptions{"pipe", {}, {}}));
  const auto joined = cost::evaluate(p.joined, wafer, params, true, 2048);
  const auto s0 = cost::evaluate(p.stages[0], wafer, params, true, 2048);
  const auto s1 = cost::evaluate(p.stages[1], wafer, params, true, 2048);
  // The activation of 8 requests (8 x 4096 x 2 B = 65536 B) leaves the whole grid at its west edge
  // (0 hops), crosses 150 GB/s (65536 / 150e9 x 1.1e9 = 480.58 cycles, slower than the 755 lanes of
  // the mesh, 65536 / 3020 = 21.7) after 5 us (5500 cycles), plus the set-up of its two on-wafer
  // legs (2 x shift_fixed, 50).
  const double crossing = 5500.0 + 65536.0 / 150e9 * 1.1e9 + 100.0;
  // The sampled tokens (8 x 4 B) go back to the first wafer: 32 / 150e9 x 1.1e9 = 0.2347 cycles.
  const double token_return = 5500.0 + 32.0 / 150e9 * 1.1e9 + 100.0;
  double relayouts = 0, link = 0, back = 0;
  for (std::size_t i = 0; i < p.joined.ops.size(); ++i) {
    const auto& op = p.joined.ops[i];
    if (op.name.find("relayout-for-link") != std::string::npos) relayouts += joined.ops[i].total_cycles;
    if (op.name == "link.0-1") link = joined.ops[i].total_cycles;
    if (op.name == "link.tokens") back = joined.ops[i].total_cycles;
  }
  CHECK(link == doctest::Approx(crossing).epsilon(1e-12));
  CHECK(back == doctest::Approx(token_return).epsilon(1e-12));
  // One micro-batch: TPOT is the two wafers' passes, each as on its own wafer, and the crossings.
  const double tpot_cycles = s0.pass_cycles + crossing + relayouts + s1.pass_cycles + token_return;
  CHECK(joined.latency_s == doctest::Approx(tpot_cycles / 1.1e9).epsilon(1e-12));
  CHECK(joined.tokens_per_s == doctest::Approx(8.0 / joined.latency_s).epsilon(1e-12));
  // Each wafer's PEs count once per wafer.
  CHECK(joined.pes_used == s0.pes_used + s1.pes_used);
}

TEST_CASE("a part's crossing legs and the links' own time add up to the joined crossings (WaferLLM squares, by hand)") {
  const auto wafer = test::wse3();
  const auto params = test::round_params();
  auto cluster = wafer::cluster_preset("cs3");
  cluster.io_edge = wafer::Edge::east;  // WaferLLM fills its squares from the west
  const workload::ModelSpec model = four_layer_llama();
  const workload::WorkloadShape shape{workload::Phase::decode, 8, 2048, 128};
  deploy::PipelinePlan plan;
  plan.wafers = {{0, 2, true, false, 0}, {2, 2, false, true, 0}};
  plan.part_of = {0, 1};
  plan.parts = plan.wafers;
  std::vector<workload::Workload> parts;
  std::vector<meshir::Schedule> stages;
  for (const auto& p : plan.parts) {
    parts.push_back(deploy::part_workload(model, shape, p, workload::MoeRouting{}));
    const auto s = baselines::build_waferllm(parts.back(), wafer, 300, 1);
    REQUIRE(s.has_value());
    stages.push_back(*s);
  }
  const auto joined = deploy::join_stages(plan, {&stages[0], &stages[1]}, {&parts[0], &parts[1]}, cluster, 4, true, "pipe");
  const auto c = cost::evaluate(joined, wafer, params, true, 2048);
  search::SearchOptions options;
  options.pipeline_part = true;
  options.io_edge = cluster.io_edge;
  options.link_bytes_per_s = cluster.link_bytes_per_s;
  const double legs0 = search::part_crossings(stages[0], parts[0], options, wafer, params).legs_cycles();
  const double legs1 = search::part_crossings(stages[1], parts[1], options, wafer, params).legs_cycles();
  // East edge, alpha 1 cycle per hop, set-up 50 per leg; every leg's lanes outpace the link. Part 0:
  // the token ids land on its embedding's square, the activation leaves its last square; part 1 the
  // other way round. Each leg's hops: from the square's east side to the grid's.
  const auto hops = [&](const meshir::Rect& r) { return static_cast<double>(wafer.grid_w_pes - (r.x + r.w)); };
  const auto entry = [](const meshir::Schedule& s) { return meshir::used_part(s, s.ops.front().region); };
  CHECK(legs0 == doctest::Approx(100.0 + hops(entry(stages[0])) + hops(stages[0].ops.back().used)).epsilon(1e-12));
  CHECK(legs1 == doctest::Approx(100.0 + hops(entry(stages[1])) + hops(stages[1].ops.back().used)).epsilon(1e-12));
  CHECK(legs0 > 100.0);  // the legs have hops
  // The two crossings: each the link's latency and bytes, plus the legs.
  double links = 0;
  for (std::size_t i = 0; i < joined.ops.size(); ++i) {
    if (meshir::crosses_wafers(joined, joined.ops[i])) links += c.ops[i].total_cycles;
  }
  const double own = 2 * 5500.0 + 65536.0 / 150e9 * 1.1e9 + 32.0 / 150e9 * 1.1e9;
  CHECK(links == doctest::Approx(own + legs0 + legs1).epsilon(1e-12));
  // So the joined pass is each part's pass with its legs, plus the links' own time (no re-layout here).
  const double pass0 = cost::evaluate(stages[0], wafer, params, true, 2048).pass_cycles;
  const double pass1 = cost::evaluate(stages[1], wafer, params, true, 2048).pass_cycles;
  CHECK(c.pass_cycles == doctest::Approx(pass0 + legs0 + pass1 + legs1 + own).epsilon(1e-12));
  // The link's own time for each part's crossing out: its latency and bytes (activation, token ids).
  options.link_latency_s = cluster.link_latency_s;
  CHECK(search::part_crossings(stages[0], parts[0], options, wafer, params).out_link_cycles ==
        doctest::Approx(5500.0 + 65536.0 / 150e9 * 1.1e9).epsilon(1e-12));
  CHECK(search::part_crossings(stages[1], parts[1], options, wafer, params).out_link_cycles ==
        doctest::Approx(5500.0 + 32.0 / 150e9 * 1.1e9).epsilon(1e-12));
  // Outside a pipeline part there are no crossings.
  CHECK(search::part_crossings(stages[0], parts[0], search::SearchOptions{}, wafer, params).legs_cycles() == 0.0);
}

TEST_CASE("two micro-batches keep both wafers busy: the slowest wafer or link sets the round") {
  const auto wafer = test::wse3();
  const auto params = test::round_params();
  const TwoWafers p(2);
  const auto joined = cost::evaluate(p.joined, wafer, params, true, 2048);
  const auto s0 = cost::evaluate(p.stages[0], wafer, params, true, 2048);
  const auto s1 = cost::evaluate(p.stages[1], wafer, params, true, 2048);
  // Each Full-Chip wafer is one stage; 4 requests per micro-batch cross (32768 B: 218.45 cycles on the wire).
  const double crossing = 5500.0 + 32768.0 / 150e9 * 1.1e9 + 200.0;
  const double slowest = std::max({s0.bottleneck_stage_cycles, s1.bottleneck_stage_cycles, crossing});
  CHECK(joined.bottleneck_stage_cycles == doctest::Approx(slowest).epsilon(1e-12));
  CHECK(joined.latency_s == doctest::Approx(std::max(joined.pass_cycles, 2.0 * slowest) / 1.1e9).epsilon(1e-12));
  // Pipelining over the wafers: more tokens/s than one micro-batch through both.
  const TwoWafers one(1);
  CHECK(joined.tokens_per_s > cost::evaluate(one.joined, wafer, params, true, 2048).tokens_per_s);
}

TEST_CASE("a multi-wafer schedule round-trips through its text form; the verifier refuses what cannot run") {
  const TwoWafers p(1);
  const std::string text = meshir::print(p.joined);
  CHECK(text.find("wafers 2 link_bytes_per_s 150000000000 link_latency_ns 5000 io_edge west") != std::string::npos);
  CHECK(text.find(" wafer 1\n") != std::string::npos);
  const auto back = meshir::parse(text, "pipe.meshir");
  CHECK(meshir::print(back) == text);
  CHECK(back.region_wafers == p.joined.region_wafers);
  REQUIRE_NOTHROW(meshir::verify_or_throw(back, meshir::VerifyOptions{"pipe.meshir", {}, {}}));
  const auto refused = [](const meshir::Schedule& s, const std::string& needle) {
    try {
      meshir::verify_or_throw(s, meshir::VerifyOptions{"bad.meshir", {}, {}});
    } catch (const DataError& e) {
      return std::string(e.what()).find(needle) != std::string::npos;
    }
    return false;
  };
  auto off = back;
  off.region_wafers.back() = 5;
  CHECK(refused(off, "lies on wafer 5"));
  auto no_link = back;
  no_link.link_bytes_per_s = 0;
  CHECK(refused(no_link, "link_bytes_per_s"));
  // Only a transfer crosses between systems.
  auto dispatch = back;
  for (auto& op : dispatch.ops) {
    if (op.name == "link.0-1") op.kernel = meshir::Kernel::moe_dispatch;
  }
  CHECK(refused(dispatch, "only a transfer crosses"));
  // Both wafers' Full-Chip regions are the whole grid: the same coordinates on two wafers.
  CHECK(back.regions.front() == back.regions.back());
  CHECK(back.region_wafers.front() != back.region_wafers.back());
  // A mistyped header is reported with its line.
  std::string bad = text;
  bad.replace(bad.find("io_edge west"), 12, "io_edge up");
  CHECK_THROWS_AS(meshir::parse(bad, "bad.meshir"), DataError);
}

TEST_CASE("the split keeps every wafer within its SRAM, and says when no split can") {
  const auto wafer = test::wse3();
  const auto params = cost::default_params(wafer);
  const auto model = *workload::find_model_preset("llama3-70b");
  const workload::WorkloadShape shape{workload::Phase::decode, 1, 2048, 128};
  // 141 GB over 4 wafers is 35.3 GB each, more than 0.9 x 38.6 GB of data SRAM (43.6 GB less 5,616
  // bytes a PE reserved for code): 5 wafers.
  CHECK_FALSE(deploy::plan_pipeline(model, shape, 4, workload::MoeRouting{}, wafer, params, 0.9).fits);
  const auto plan = deploy::plan_pipeline(model, shape, 5, workload::MoeRouting{}, wafer, params, 0.9);
  REQUIRE(plan.fits);
  REQUIRE(plan.wafers.size() == 5);
  std::int64_t layers = 0;
  for (std::size_t w = 0; w < 5; ++w) {
    const auto part = deploy::part_workload(model, shape, plan.wafers[w], workload::MoeRouting{});
    CHECK(static_cast<double>(part.param_bytes + part.kv_cache_bytes) <= 0.9 * static_cast<double>(wafer.total_sram_data_bytes()));
    CHECK(plan.wafers[w].first_layer == layers);
    layers += plan.wafers[w].layers;
  }
  CHECK(layers == 80);
  CHECK(plan.wafers.front().embedding);
  CHECK(plan.wafers.back().head);
  // Alike middle wafers share one part (one search).
  CHECK(plan.parts.size() <= 3);
  // 141 GB of weights do not fit two wafers' 2 x 0.9 x 38.6 GB.
  const auto two = deploy::plan_pipeline(model, shape, 2, workload::MoeRouting{}, wafer, params, 0.9);
  CHECK_FALSE(two.fits);
  CHECK(two.na_reason.find("SRAM") != std::string::npos);
  CHECK_THROWS_AS(deploy::plan_pipeline(four_layer_llama(), shape, 5, workload::MoeRouting{}, wafer, params, 0.9), InputDataError);
}

TEST_CASE("the simulator crosses the link as its own element") {
  const auto wafer = test::wse3();
  const TwoWafers p(1);
  sim::SimOptions options;
  const auto simulated = sim::simulate(p.joined, wafer, true, 2048, options);
  const auto modelled = cost::evaluate(p.joined, wafer, test::round_params(), true, 2048);
  for (std::size_t i = 0; i < p.joined.ops.size(); ++i) {
    if (!meshir::crosses_wafers(p.joined, p.joined.ops[i])) continue;
    // The 5 us latency, the framed bytes and the two mesh legs; near the model's crossing.
    CHECK(simulated.ops[i].total_cycles > 5500.0);
    CHECK(simulated.ops[i].total_cycles == doctest::Approx(modelled.ops[i].total_cycles).epsilon(0.1));
  }
}

TEST_CASE("a pipeline's parts are searched as separate problems: tasks per part, incumbents per part and count") {
  const auto config = config::parse_config(
      "wafer:\n  preset: wse3\n  grid_w_pes: 16\n  grid_h_pes: 16\n"
      "workloads:\n  models: [llama3-8b]\n  phases: [decode]\n  concurrent_requests: [2]\n"
      "  lengths: [[128, 32]]\n  layer_subset: false\n"
      "cluster:\n  wafers: [1, 4]\n"
      "search:\n  max_cut_depth: 1\n",
      "p.yaml", {});
  const auto settings = config::expand_sweep(config);
  REQUIRE(settings.size() == 2);
  CHECK(settings[1].wafers == 4);
  const driver::SweepJob job(config, settings);
  const auto& plan = job.plan();
  using Kind = driver::SweepTask::Kind;
  // One part on one wafer; three distinct parts over four (first, middle twice, last).
  const auto parts = driver::setting_parts(config, settings[1]);
  REQUIRE(parts.size() == 3);
  // One set for the one-wafer setting; per part of the pipeline, its seeds' set and one per count
  // (2 requests: 1 or 2 micro-batches).
  CHECK(plan.slots == 1 + 3 * 3);
  std::map<std::size_t, std::set<std::tuple<std::size_t, std::size_t, int, std::int64_t>>> owners;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = job.tasks()[i];
    if (t.kind == Kind::finish) continue;
    const std::int64_t mb = t.kind == Kind::piece ? t.piece.microbatches : 0;
    // One wafer: every schedule of the setting may prune any other. A pipeline part: only its own count's.
    owners[plan.tasks[i].slot].emplace(t.setting, t.part, static_cast<int>(t.kind), t.setting == 0 ? 0 : mb);
  }
  CHECK(owners.size() == plan.slots);
  for (const auto& [slot, tasks] : owners) {
    CHECK(tasks.size() == (slot == 0 ? 2u : 1u));  // setting 0: its baselines and its pieces
  }
  // The finishing task of the 4-wafer setting reads every part's baselines and pieces.
  const auto finish = std::find_if(job.tasks().begin(), job.tasks().end(), [](const auto& t) {
    return t.kind == Kind::finish && t.setting == 1;
  });
  REQUIRE(finish != job.tasks().end());
  std::set<std::size_t> fed;
  for (std::size_t in : plan.inputs[static_cast<std::size_t>(finish - job.tasks().begin())]) fed.insert(job.tasks()[in].part);
  CHECK(fed == std::set<std::size_t>{0, 1, 2});
}

namespace {

// A setting run as the hub runs it, one task after another, each piece given the incumbents its
// slot holds by then (`forward` or reversed piece order; `shared` false: none at all). Returns the
// finished front's schedules and the incumbent prunings.
std::pair<std::vector<std::string>, std::int64_t> run_in_order(const config::Config& config,
                                                               const config::Setting& setting, bool shared,
                                                               bool forward) {
  const std::vector<config::Setting> settings{setting};
  driver::SweepJob job(config, settings);
  const auto& plan = job.plan();
  using Kind = driver::SweepTask::Kind;
  std::vector<std::string> slots(plan.slots), results(plan.tasks.size());
  std::vector<std::size_t> order;
  for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
    if (job.tasks()[t].kind == Kind::piece) order.push_back(t);
  }
  if (!forward) std::reverse(order.begin(), order.end());
  std::int64_t pruned = 0;
  wavel::engine::TaskCounters c;
  for (std::size_t t = 0; t < plan.tasks.size(); ++t) {
    if (job.tasks()[t].kind != Kind::baselines) continue;
    results[t] = job.run(t, slots[plan.tasks[t].slot], c, nullptr);
    job.merge(slots[plan.tasks[t].slot], c.found);
  }
  for (std::size_t t : order) {
    results[t] = job.run(t, shared ? slots[plan.tasks[t].slot] : std::string(), c, nullptr);
    job.merge(slots[plan.tasks[t].slot], c.found);
    Unpacker u(results[t]);
    pruned += driver::detail::unpack_stats(u).pruned_incumbent;
  }
  const std::size_t finish = plan.tasks.size() - 1;
  REQUIRE(plan.tasks[finish].finishing);
  const std::string bytes =
      job.run(finish, wavel::engine::detail::task_input(plan, finish, results, slots[plan.tasks[finish].slot]), c, nullptr);
  Unpacker u(bytes);
  const auto s = driver::unpack_setting(u);
  std::vector<std::string> front;
  for (const auto& f : s.front) front.push_back(f.meshir);
  return {front, pruned};
}

}  // namespace

TEST_CASE("a pipeline's front does not depend on the order incumbents arrive in") {
  // The finish picks each part's best candidate per micro-batch count. Incumbents of another
  // count, or picks that keep the first of two equally fast candidates, would let pruning (which
  // depends on what has arrived) change them.
  const auto config = config::parse_config(
      "wafer:\n  preset: wse3\n  grid_w_pes: 24\n  grid_h_pes: 24\n"
      "workloads:\n  models: [models/tiny-llama/config.json]\n  phases: [decode]\n  concurrent_requests: [8]\n"
      "  lengths: [[128, 32]]\n"
      "cluster:\n  wafers: [2]\n"
      "search:\n  max_cut_depth: 2\n  root_chunks: 4\n",
      std::string(WAVEL_SOURCE_DIR) + "/configs/p.yaml", {});
  const auto settings = config::expand_sweep(config);
  REQUIRE(settings.size() == 1);
  REQUIRE(settings[0].wafers == 2);
  const auto alone = run_in_order(config, settings[0], false, true);
  const auto forward = run_in_order(config, settings[0], true, true);
  const auto backward = run_in_order(config, settings[0], true, false);
  REQUIRE(!alone.first.empty());
  CHECK(alone.second == 0);
  // The incumbents did prune, in both orders, and changed nothing.
  CHECK(forward.second > 0);
  CHECK(backward.second > 0);
  CHECK(forward.first == alone.first);
  CHECK(backward.first == alone.first);
}

TEST_CASE("a pipeline's parts are picked for the joined pipeline, not each for itself") {
  using deploy::StageOption;
  // Prefill, 4 micro-batches: a pipeline takes pass + 3 x slowest stage. Alone, part 0's B is faster
  // (130 + 3 x 20 = 190 against 100 + 3 x 40 = 220), but part 1's stage of 60 paces the joined
  // pipeline, so A's shorter pass wins there: 200 + 180 = 380 against 230 + 180 = 410.
  const auto prefill = [](double pass, double stage) { return pass + 3 * stage; };
  const std::vector<std::vector<StageOption>> options{{{100, 40}, {130, 20}}, {{100, 60}}};
  CHECK(deploy::pick_parts(options, {0, 1}, false, prefill) == std::vector<std::size_t>{0, 0});
  // Part 0 on three wafers: its pass counts three times, so B's shorter stage no longer pays either.
  CHECK(deploy::pick_parts({{{100, 40}, {101, 20}}, {{100, 30}}}, {0, 0, 0, 1}, false, prefill) ==
        std::vector<std::size_t>{1, 0});
  CHECK(deploy::pick_parts({{{100, 40}, {101, 20}}, {}}, {0, 1}, false, prefill).empty());
  // A link that outlasts every stage paces the pipeline. Part 0's A is faster alone and on its
  // stages (pass 100 + 100, slowest 40), but its last leaf lies 30 cycles of hops from the I/O edge:
  // the link (own time 45, legs 30 + 5) takes 80, so 200 + 45 + 3 x 80 = 485. B's pass is 10 longer
  // and its leg 5: the link takes 55, 210 + 45 + 3 x 55 = 420.
  const std::vector<std::vector<StageOption>> far{{{100, 40, 0, 30, 45}, {110, 40, 0, 5, 45}}, {{100, 40, 5, 0, 0}}};
  CHECK(deploy::pick_parts(far, {0, 1}, false, prefill) == std::vector<std::size_t>{1, 0});

  // Against every combination, for both pipeline rules, with and without links that can pace.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> cycles(1, 50), count(1, 4), leg(0, 40);
  const auto decode = [](double pass, double stage) { return std::max(pass, 4 * stage); };
  const std::vector<std::size_t> part_of{0, 1, 1, 2};
  for (int trial = 0; trial < 300; ++trial) {
    const bool links = trial % 2 == 1;
    std::vector<std::vector<StageOption>> opts(3);
    for (auto& part : opts) {
      const double own = links ? cycles(rng) : 0.0;  // the link's own time: the same for every option of a part
      for (int i = count(rng); i > 0; --i) {
        const double stage = cycles(rng);
        const double in = links ? leg(rng) : 0.0, out = links ? leg(rng) : 0.0;
        part.push_back(StageOption{stage + cycles(rng) + in + out, stage, in, out, own});  // a stage is part of the pass
      }
    }
    for (const bool token_return : {false, true}) {
      for (const auto& rule : {std::function<double(double, double)>(prefill), std::function<double(double, double)>(decode)}) {
        const auto cost_of = [&](const std::vector<std::size_t>& pick) {
          double pass = 0, slowest = 0;
          const auto at = [&](std::size_t w) -> const StageOption& { return opts[part_of[w]][pick[part_of[w]]]; };
          for (std::size_t w = 0; w < part_of.size(); ++w) {
            pass += at(w).pass_cycles;
            slowest = std::max(slowest, at(w).stage_cycles);
          }
          std::vector<std::pair<std::size_t, std::size_t>> joins{{0, 1}, {1, 2}, {2, 3}};
          if (token_return) joins.emplace_back(3, 0);
          for (const auto& [from, to] : joins) {
            pass += at(from).out_link_cycles;
            slowest = std::max(slowest, at(from).out_link_cycles + at(from).out_leg_cycles + at(to).in_leg_cycles);
          }
          return rule(pass, slowest);
        };
        double best = 1e300;
        for (std::size_t a = 0; a < opts[0].size(); ++a) {
          for (std::size_t b = 0; b < opts[1].size(); ++b) {
            for (std::size_t c = 0; c < opts[2].size(); ++c) best = std::min(best, cost_of({a, b, c}));
          }
        }
        const auto pick = deploy::pick_parts(opts, part_of, token_return, rule);
        REQUIRE(pick.size() == 3);
        CHECK(cost_of(pick) == best);
      }
    }
  }
}
