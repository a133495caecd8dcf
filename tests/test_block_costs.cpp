// Block costs shared between evaluators (the parts of a pipeline, one model on several wafer
// counts): the open-addressing table, the cache's budget, and that a shared cost is the cost.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <set>
#include <vector>

#include "cost_fixtures.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/deploy/pipeline.hpp"
#include "wavel/sweep/sweep_job.hpp"
#include "wavel/search/detail/evaluator.hpp"
#include "wavel/search/search.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

using namespace wavel;
using search::detail::BlockCost;
using search::detail::BlockCostCache;
using search::detail::CostTable;

TEST_CASE("the cost table finds every entry it holds, and only those, across growth") {
  CostTable t(8);
  CHECK(t.find(1, 1, 0) == nullptr);
  for (std::int64_t w = 1; w <= 300; ++w) {
    for (std::int64_t h = 1; h <= 40; h += 3) {
      BlockCost c;
      c.cycles = static_cast<double>(w * 1000 + h);
      t.emplace(w, h, static_cast<int>(w % 7), c);
    }
  }
  CHECK(t.size() == 300 * 14);
  CHECK(t.cost_slots() == 300 * 14 * 8);  // a row of every TUNE per size
  for (std::int64_t w = 1; w <= 300; ++w) {
    for (std::int64_t h = 1; h <= 40; ++h) {
      const BlockCost* c = t.find(w, h, static_cast<int>(w % 7));
      if (h % 3 == 1) {
        REQUIRE(c != nullptr);
        CHECK(c->cycles == static_cast<double>(w * 1000 + h));
      } else {
        CHECK(c == nullptr);
      }
      CHECK(t.find(w, h, static_cast<int>(w % 7) + 1) == nullptr);  // another TUNE of the row
    }
  }
  // An existing key keeps its entry; a second TUNE fills its own place in the row.
  BlockCost other;
  other.cycles = -1;
  t.emplace(5, 1, 5, other);
  CHECK(t.size() == 300 * 14);
  CHECK(t.find(5, 1, 5)->cycles == 5001.0);
  t.emplace(5, 1, 6, other);
  CHECK(t.size() == 300 * 14 + 1);
  CHECK(t.find(5, 1, 6)->cycles == -1.0);
  CHECK(t.find(5, 1, 5)->cycles == 5001.0);
  CHECK(t.find(5, 1, 8) == nullptr);   // past the TUNEs
  CHECK(t.find(5, 1, -1) == nullptr);
  CHECK_THROWS(t.emplace(0, 1, 0, other));
  CHECK_THROWS(t.emplace(1, 1, 8, other));
  BlockCost nan;
  nan.cycles = std::nan("");
  CHECK_THROWS(t.emplace(1, 1, 0, nan));  // NaN marks an absent cost
  CHECK_THROWS(CostTable(0));
}

TEST_CASE("TUNEs that place a block alike share one column of the cost table") {
  // Five TUNEs, three placements: TUNEs 0 and 2 alike, 1 and 4 alike.
  CostTable t(std::vector<int>{0, 1, 0, 2, 1});
  CHECK(t.tunes() == 5);
  BlockCost c;
  c.cycles = 7;
  t.emplace(3, 4, 2, c);
  REQUIRE(t.find(3, 4, 0) != nullptr);
  CHECK(t.find(3, 4, 0)->cycles == 7.0);  // costed once, found under both
  CHECK(t.find(3, 4, 1) == nullptr);
  CHECK(t.find(3, 4, 3) == nullptr);
  c.cycles = 9;
  t.emplace(3, 4, 4, c);
  CHECK(t.find(3, 4, 1)->cycles == 9.0);
  CHECK(t.size() == 2);
  CHECK(t.cost_slots() == 3);  // one row of three columns, not five
  CHECK_THROWS(CostTable(std::vector<int>{0, 2}));   // column 1 unused
  CHECK_THROWS(CostTable(std::vector<int>{0, -1}));
  CHECK_THROWS(CostTable(std::vector<int>{}));
  BlockCostCache cache;
  auto a = cache.table("a", std::vector<int>{0, 1, 0});
  CHECK(cache.table("a", std::vector<int>{0, 1, 0}) == a);
  CHECK_THROWS(cache.table("a", std::vector<int>{0, 1, 2}));  // one content, one placement map
}

TEST_CASE("the cache hands out one table per content and drops unheld ones, oldest first, past its budget") {
  BlockCostCache cache(10);
  auto a = cache.table("a", 1);
  CHECK(cache.table("a", 1) == a);
  CHECK_THROWS(cache.table("a", 2));  // one content, one TUNE list
  CHECK(cache.table("b", 1) != a);
  for (int i = 1; i <= 8; ++i) a->emplace(i, 1, 0, BlockCost{});
  {
    auto b = cache.table("b", 1);
    for (int i = 1; i <= 8; ++i) b->emplace(i, 1, 0, BlockCost{});
  }
  auto c = cache.table("c", 1);  // most recent: c, b, a
  for (int i = 1; i <= 8; ++i) c->emplace(i, 1, 0, BlockCost{});
  a.reset();
  cache.trim();  // 24 entries: a (oldest, unheld) goes, then b; c is held
  CHECK(cache.tables() == 1);
  CHECK(cache.table("c", 1) == c);
  CHECK(cache.table("a", 1)->size() == 0);  // a new, empty table
  c.reset();
  cache.trim();  // 8 entries: within budget
  CHECK(cache.table("c", 1)->size() == 8);
}

TEST_CASE("a pipeline's parts share their decoder blocks' costs, and a shared cost equals a private one") {
  auto model = *workload::find_model_preset("llama3-8b");
  model.num_layers = 4;
  const workload::WorkloadShape shape{workload::Phase::decode, 4, 512, 64};
  deploy::PipelinePlan plan;
  plan.wafers = {{0, 2, true, false, 0}, {2, 2, false, true, 0}};
  plan.part_of = {0, 1};
  plan.parts = plan.wafers;
  const auto first = deploy::part_workload(model, shape, plan.parts[0], workload::MoeRouting{});
  const auto last = deploy::part_workload(model, shape, plan.parts[1], workload::MoeRouting{});
  const auto whole = workload::build_workload(model, shape);
  const auto wafer = test::wse3();
  const auto params = cost::default_params(wafer);
  BlockCostCache cache;
  search::PlanEvaluator ev_first(first, wafer, params, 2), ev_last(last, wafer, params, 2), ev_whole(whole, wafer, params, 2),
      ev_private(last, wafer, params, 2);
  ev_first.impl().share_tables(cache);
  ev_last.impl().share_tables(cache);
  ev_whole.impl().share_tables(cache);
  // Every decoder block of the last part on three rectangles and every TUNE.
  const auto& blocks = ev_last.impl().blocks;
  const auto want = [&](search::PlanEvaluator& ev) {
    std::vector<search::detail::TableKey> keys;
    for (const auto& b : ev.impl().blocks) {
      if (!b.ops.decoder) continue;
      for (auto [w, h] : {std::pair<std::int64_t, std::int64_t>{60, 40}, {33, 90}, {120, 120}}) {
        for (int t = 0; t < static_cast<int>(ev.tunes().size()); ++t) keys.emplace_back(b.type, w, h, t);
      }
    }
    return keys;
  };
  ev_first.impl().ensure(want(ev_first));
  REQUIRE(ev_first.impl().computed > 0);
  ev_last.impl().ensure(want(ev_last));
  ev_whole.impl().ensure(want(ev_whole));
  CHECK(ev_last.impl().computed == 0);   // the first part costed the same blocks
  CHECK(ev_whole.impl().computed == 0);  // and so did it for the whole model on one wafer
  ev_private.impl().ensure(want(ev_private));
  CHECK(ev_private.impl().computed == ev_first.impl().computed);
  for (const auto& b : blocks) {
    if (!b.ops.decoder) continue;
    for (int t = 0; t < static_cast<int>(ev_last.tunes().size()); ++t) {
      const auto& shared = ev_last.impl().get(b.type, 33, 90, t);
      const auto& own = ev_private.impl().get(b.type, 33, 90, t);
      CHECK(shared.cycles == own.cycles);
      CHECK(shared.resident == own.resident);
      CHECK(shared.buffers == own.buffers);
    }
  }
  // A decode MLP block does not read the context: another length shares it (attention differs).
  const auto longer = deploy::part_workload(model, workload::WorkloadShape{workload::Phase::decode, 4, 4096, 64},
                                            plan.parts[1], workload::MoeRouting{});
  search::PlanEvaluator ev_longer(longer, wafer, params, 2);
  ev_longer.impl().share_tables(cache);
  ev_longer.impl().ensure(want(ev_longer));
  CHECK(ev_longer.impl().computed > 0);
  CHECK(ev_longer.impl().computed < ev_first.impl().computed);
  // Another request count is other blocks: nothing shared.
  const auto more = deploy::part_workload(model, workload::WorkloadShape{workload::Phase::decode, 8, 512, 64},
                                          plan.parts[1], workload::MoeRouting{});
  search::PlanEvaluator ev_more(more, wafer, params, 2);
  ev_more.impl().share_tables(cache);
  ev_more.impl().ensure(want(ev_more));
  CHECK(ev_more.impl().computed == ev_first.impl().computed);
}

TEST_CASE("one model's groups at one micro-batch count form a family over its lengths, parts and wafer counts") {
  const auto config = config::parse_config(
      "wafer:\n  preset: wse3\n  grid_w_pes: 16\n  grid_h_pes: 16\n"
      "workloads:\n  models: [llama3-8b]\n  phases: [decode]\n  concurrent_requests: [2]\n"
      "  lengths: [[128, 32], [256, 32]]\n  layer_subset: false\n"
      "cluster:\n  wafers: [1, 2]\n"
      "search:\n  max_cut_depth: 1\n",
      "p.yaml", {});
  const auto settings = config::expand_sweep(config);
  REQUIRE(settings.size() == 4);  // wafers 1, 2 x two lengths
  const driver::SweepJob job(config, settings);
  const auto& plan = job.plan();
  using Kind = driver::SweepTask::Kind;
  REQUIRE(plan.group_family.size() == plan.groups);
  std::set<std::size_t> seen;
  for (std::size_t i = 0; i < plan.tasks.size(); ++i) {
    const auto& t = job.tasks()[i];
    const std::size_t f = plan.group_family[plan.tasks[i].group];
    if (t.kind == Kind::finish) {
      CHECK(f == wavel::engine::Plan::kNoFamily);
      continue;
    }
    REQUIRE(f < plan.families.size());
    // Every other group of the family: same phase, requests and micro-batches, any length, wafer
    // count and part.
    for (const std::size_t g : plan.families[f]) {
      for (std::size_t j = 0; j < plan.tasks.size(); ++j) {
        if (plan.tasks[j].group != g) continue;
        const auto& u = job.tasks()[j];
        CHECK(settings[u.setting].shape.concurrent_requests == settings[t.setting].shape.concurrent_requests);
        CHECK(u.kind == t.kind);
        CHECK(u.piece.microbatches == t.piece.microbatches);
      }
    }
    if (t.kind == Kind::piece && settings[t.setting].wafers == 2) seen.insert(f);
  }
  // Two micro-batch counts; each family holds, for both lengths, the 1-wafer group and both parts' groups.
  CHECK(seen.size() == 2);
  for (const std::size_t f : seen) CHECK(plan.families[f].size() == 6);
}

TEST_CASE("a TUNE the placer ignores for a block shares the column of the one it equals, and that cost is the cost") {
  // DeepSeek-V2-Lite decode: attention blocks have nothing to cut or split, MoE blocks have both.
  auto model = *workload::find_model_preset("deepseek-v2-lite");
  model.num_layers = 2;
  const auto w = workload::build_workload(model, {workload::Phase::decode, 4, 512, 64});
  const auto wafer = test::wse3();
  const auto params = cost::default_params(wafer);
  search::PlanEvaluator ev(w, wafer, params, 1, {1.0}, {1, 2, 4}, search::TuneKinds{true, true});
  auto& impl = ev.impl();
  const int tunes = static_cast<int>(ev.tunes().size());
  std::vector<search::detail::TableKey> keys;
  std::set<int> types;
  for (const auto& b : impl.blocks) types.insert(b.type);
  for (const int type : types) {
    for (int t = 0; t < tunes; ++t) keys.emplace_back(type, 60, 48, t);
  }
  impl.ensure(keys);
  CHECK(impl.computed < static_cast<std::int64_t>(keys.size()));
  bool some_copied = false, some_own = false;
  for (const int type : types) {
    const auto& same = impl.same_placement[static_cast<std::size_t>(type)];
    for (int t = 0; t < tunes; ++t) {
      (same[static_cast<std::size_t>(t)] == t ? some_own : some_copied) = true;
      const auto& stored = impl.get(type, 60, 48, t);
      const auto fresh = impl.compute(type, 60, 48, t);
      CHECK(stored.cycles == fresh.cycles);
      CHECK(stored.resident == fresh.resident);
      CHECK(stored.buffers == fresh.buffers);
      CHECK(stored.first_axis == fresh.first_axis);
      CHECK(stored.last_axis == fresh.last_axis);
    }
  }
  CHECK(some_copied);
  CHECK(some_own);
  // One row per size: a block with copies holds fewer columns than TUNEs.
  bool narrower = false;
  for (const int type : types) narrower = narrower || impl.tables[static_cast<std::size_t>(type)]->cost_slots() < static_cast<std::size_t>(tunes);
  CHECK(narrower);
}
