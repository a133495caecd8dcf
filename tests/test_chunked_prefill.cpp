// Chunked prefill (issue 37): one chunk's op graph, the pipeline of chunks in the model and the
// simulator by hand, MeshIR, the search's choice, and why chunks lose on WaferLLM's MeshGEMM when a
// PE's tokens fit one vector issue.
#include <doctest/doctest.h>

#include <algorithm>

#include "cost_fixtures.hpp"
#include "search_fixtures.hpp"
#include "sim_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/deploy/pipeline.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sim/detail/compose.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/workload/model.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::round_params;
using wavel::test::two_stages;
using wavel::test::wse3;

namespace {

const workload::Op& op_named(const workload::Layer& layer, const std::string& name) {
  const auto it = std::find_if(layer.ops.begin(), layer.ops.end(), [&](const workload::Op& o) { return o.name == name; });
  REQUIRE(it != layer.ops.end());
  return *it;
}

workload::Workload tiny(std::int64_t requests, std::int64_t prompt) {
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-llama/config.json").string());
  return workload::build_workload(model, {workload::Phase::prefill, requests, prompt, 0});
}

}  // namespace

TEST_CASE("chunked prefill: one chunk's op graph by hand (LLaMA-3-8B, 2 requests of 2048 tokens in 4 chunks)") {
  const auto model = *workload::find_model_preset("llama3-8b");
  const auto whole = workload::build_workload(model, {workload::Phase::prefill, 2, 2048, 0});
  const auto chunk = workload::chunk_prompt(whole, 4);
  CHECK(chunk.shape.prompt_chunks == 4);
  CHECK(chunk.tokens_per_step == 2 * 512);
  // Chunk c of 512 tokens attends to (c + 1) x 512 keys: 512, 1024, 1536, 2048, mean 1280.
  CHECK(chunk.context_tokens == 1280);
  const auto& layer = chunk.layers[1];
  CHECK(op_named(layer, "q_proj").m == 2 * 512);
  const auto& scores = op_named(layer, "attn_scores");
  CHECK(scores.m == 512);
  CHECK(scores.n == 1280);
  // The whole prompt's KV cache stays resident: the same bytes as unchunked.
  CHECK(chunk.kv_cache_bytes == whole.kv_cache_bytes);
  CHECK(layer.kv_cache_bytes == whole.layers[1].kv_cache_bytes);
  // One chunk is the whole prompt; its FLOPs in linear ops are a quarter.
  CHECK(workload::chunk_prompt(whole, 1).tokens_per_step == whole.tokens_per_step);
  CHECK(op_named(layer, "q_proj").flops * 4 == op_named(whole.layers[1], "q_proj").flops);
  // Micro-batches of chunks keep the whole prompts' KV of every request.
  const auto part = workload::split_requests(chunk, 2);
  CHECK(part.tokens_per_step == 512);
  CHECK(part.kv_cache_bytes == whole.kv_cache_bytes);
  // Counts that do not divide the prompt, and decode, are refused with the key.
  const auto refused = [&](const workload::WorkloadShape& shape) {
    try {
      workload::build_workload(model, shape);
    } catch (const DataError& e) {
      return std::string(e.what()).find("prompt_chunks") != std::string::npos;
    }
    return false;
  };
  workload::WorkloadShape bad{workload::Phase::prefill, 1, 2048, 0};
  bad.prompt_chunks = 3;
  CHECK(refused(bad));
  bad.prompt_chunks = 0;
  CHECK(refused(bad));
  workload::WorkloadShape decode{workload::Phase::decode, 1, 2048, 128};
  decode.prompt_chunks = 2;
  CHECK(refused(decode));
}

TEST_CASE("chunked prefill: the model's pipeline rule by hand") {
  // pass 100, slowest stage 30; 2 micro-batches of 1 request, 4 chunks each: 8 units.
  const auto c = cost::pipeline(100, 30, 2, 4, 2, 1e9, false, 1000);
  // The last unit ends at 100 + 7 x 30 = 310; micro-batch 0's last chunk (unit 3) at 190, micro-batch
  // 1's (unit 7) at 310: mean TTFT 250.
  CHECK(c.latency_s == doctest::Approx(250e-9));
  CHECK(c.tokens_per_s == doctest::Approx(2.0 * 1000.0 / 310e-9));
  // One chunk is the rule without chunks.
  const auto one = cost::pipeline(100, 30, 2, 1, 2, 1e9, false, 1000);
  CHECK(one.latency_s == doctest::Approx(115e-9));
  CHECK(one.tokens_per_s == doctest::Approx(2.0 * 1000.0 / 130e-9));
  // Decode has no prompt to chunk: the count is ignored.
  CHECK(cost::pipeline(100, 30, 2, 4, 2, 1e9, true, 1000).latency_s == doctest::Approx(100e-9));
}

TEST_CASE("chunked prefill: the simulator runs chunks in order, a micro-batch's first token with its last chunk") {
  auto s = two_stages();
  const std::vector<double> cycles{100, 10, 50};
  // One request, 3 chunks: stage 0 takes the chunks at 0, 100, 200; the last leaves it at 300, crosses
  // (10) and ends on stage 1 at 360 = pass 160 + 2 x 100.
  s.prompt_chunks = 3;
  const auto one = sim::run_pipeline(s, cycles, 1e9, false, 30);
  CHECK(one.latency_s == doctest::Approx(360e-9));
  CHECK(one.tokens_per_s == doctest::Approx(30.0 / 360e-9));
  // Two micro-batches of one request, 2 chunks each: units end at 160, 260, 360, 460; micro-batch 0's
  // first token at 260, micro-batch 1's at 460: mean TTFT 360, all done at 460.
  s.prompt_chunks = 2;
  s.microbatches = 2;
  s.concurrent_requests = 2;
  const auto two = sim::run_pipeline(s, cycles, 1e9, false, 30);
  CHECK(two.latency_s == doctest::Approx(360e-9));
  CHECK(two.tokens_per_s == doctest::Approx(2.0 * 30.0 / 460e-9));
  // The model's rule gives the same on this pipeline (pass 160, slowest stage 100).
  const auto model = cost::pipeline(160, 100, 2, 2, 2, 1e9, false, 30);
  CHECK(model.latency_s == doctest::Approx(two.latency_s));
  CHECK(model.tokens_per_s == doctest::Approx(two.tokens_per_s));
  // Decode ignores the count, as the model does.
  s.microbatches = 1;
  s.concurrent_requests = 1;
  const auto d = sim::run_pipeline(s, cycles, 1e9, true, 0);
  s.prompt_chunks = 1;
  CHECK(sim::run_pipeline(s, cycles, 1e9, true, 0).latency_s == d.latency_s);
}

TEST_CASE("chunked prefill: MeshIR writes prompt_chunks when set, reads it back, and verifies it") {
  auto s = two_stages();
  CHECK(meshir::print(s).find("prompt_chunks") == std::string::npos);  // absent = 1
  s.prompt_chunks = 4;
  const std::string text = meshir::print(s);
  CHECK(text.find("prompt_chunks 4\n") != std::string::npos);
  const auto back = meshir::parse(text, "chunks");
  CHECK(back.prompt_chunks == 4);
  CHECK(meshir::print(back) == text);
  s.prompt_chunks = 0;
  const auto problems = meshir::verify(s, "chunks", {}, [](const meshir::PlacedOp&) { return 0; });
  CHECK(std::any_of(problems.begin(), problems.end(), [](const Diagnostic& d) { return d.key_path == "prompt_chunks"; }));
  // A chunk of 64 tokens in 4 chunks attends to 64 .. 256 keys: its own and the earlier chunks'.
  auto scores = op_on(s.regions[0], meshir::Kernel::gemm_t);
  scores.name = "scores";
  scores.attention = meshir::AttentionRole::scores;
  scores.work.batch = 8;
  scores.work.heads = 8;
  scores.work.m = 64;
  scores.work.k = 64;
  s.ops = {scores};
  s.prompt_chunks = 4;
  const auto keys_refused = [&](std::int64_t keys) {
    s.ops[0].work.n = keys;
    const auto found = meshir::verify(s, "chunks", {}, [](const meshir::PlacedOp&) { return 0; });
    return std::any_of(found.begin(), found.end(), [](const Diagnostic& d) {
      return d.key_path == "ops[0].work" && d.message.find("chunks 0 to its own") != std::string::npos;
    });
  };
  CHECK_FALSE(keys_refused(160));  // the mean of 64, 128, 192, 256
  CHECK_FALSE(keys_refused(64));
  CHECK_FALSE(keys_refused(256));
  CHECK(keys_refused(63));   // fewer keys than its own tokens
  CHECK(keys_refused(257));  // keys of a later chunk
  s.prompt_chunks = 1;
  CHECK_FALSE(keys_refused(1000));  // whole prompts: the rule is not the chunks'
}

TEST_CASE("chunked prefill: a PE's MeshGEMM loop costs as much for a chunk as for the prompt while its tokens fit one issue") {
  // WaferLLM's tile loop runs its vector FMACs along the PE's Mt tokens: on 64 x 64 with 256 rows
  // Mt = 4 (one WSE-3 issue of 4 FP16 FMACs), with 64 rows Mt = 1, and the same instructions run.
  // Four chunks of 64 rows cost four times the prompt's loop: chunks only pay where a PE's tokens
  // fill many issues or the prompt's buffers do not fit.
  const auto params = round_params();
  const auto gemm = [&](std::int64_t m) {
    auto s = one_region(64, 64);
    auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
    op.work.m = m;
    op.work.k = 4096;
    op.work.n = 4096;
    op.work.flops = 2 * m * 4096 * 4096;
    s.ops = {op};
    return s;
  };
  const auto whole = gemm(256), chunk = gemm(64);
  const auto model_whole = cost::op_cost(whole, whole.ops[0], wse3(), params);
  const auto model_chunk = cost::op_cost(chunk, chunk.ops[0], wse3(), params);
  CHECK(model_chunk.compute_cycles == model_whole.compute_cycles);
  CHECK(model_chunk.total_cycles == doctest::Approx(model_whole.total_cycles).epsilon(0.01));  // the alignment's bytes differ
  const auto options = wavel::test::round_options();
  const double sim_whole = sim::simulate_op(whole, 0, wse3(), options).cycles;
  const double sim_chunk = sim::simulate_op(chunk, 0, wse3(), options).cycles;
  CHECK(sim_chunk > 0.9 * sim_whole);  // a quarter of the rows, nearly all of the time
}

TEST_CASE("chunked prefill is a search choice: the space without chunks is a subset, chunked schedules verify and cost alike") {
  auto wafer = wse3();
  wafer.grid_w_pes = 16;
  wafer.grid_h_pes = 16;
  const auto params = cost::default_params(wafer);
  auto options = wavel::test::one_level_options();
  // A 512-token prompt's buffers do not fit the 16 x 16 grid whole; in chunks they do.
  const auto w = tiny(1, 512);
  const auto without = search::search_setting(w, wafer, params, options, {});
  options.prompt_chunks = {1, 2, 4};
  CHECK(search::prompt_chunk_choices(w.shape, options) == std::vector<std::int64_t>{1, 2, 4});
  const auto with = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!with.front.empty());
  const double best_without = without.front.empty() ? 0.0 : without.front.front().objectives.tokens_per_s;
  CHECK(with.front.front().objectives.tokens_per_s > best_without);
  bool chunked = false;
  for (const auto& p : with.front) {
    const auto c = cost::evaluate(p.schedule, wafer, params, false, 512);
    CHECK(c.tokens_per_s == p.objectives.tokens_per_s);
    CHECK(c.latency_s == p.objectives.latency_s);
    CHECK(c.sram_headroom >= 0.0);
    CHECK(p.schedule.prompt_chunks == p.prompt_chunks);
    CHECK(meshir::verify(p.schedule, "front", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); })
              .empty());
    CHECK(meshir::print(meshir::parse(meshir::print(p.schedule), "front")) == meshir::print(p.schedule));
    chunked = chunked || p.prompt_chunks > 1;
  }
  CHECK(chunked);
  // Where the prompt fits whole, the space with chunks holds the space without: never a slower best.
  const auto fits = tiny(1, 128);
  auto plain = wavel::test::one_level_options();
  const double old_best = search::search_setting(fits, wafer, params, plain, {}).front.front().objectives.tokens_per_s;
  plain.prompt_chunks = {1, 2, 4};
  CHECK(search::search_setting(fits, wafer, params, plain, {}).front.front().objectives.tokens_per_s >= old_best);
  // Decode: one choice, no chunks.
  auto decode_shape = w.shape;
  decode_shape.phase = workload::Phase::decode;
  CHECK(search::prompt_chunk_choices(decode_shape, options) == std::vector<std::int64_t>{1});
}

TEST_CASE("chunked prefill over two wafers: the joined pipeline keeps the chunks, refuses a mix, and streams them") {
  auto model = *workload::find_model_preset("llama3-8b");
  model.num_layers = 4;
  const workload::WorkloadShape shape{workload::Phase::prefill, 1, 2048, 0};
  deploy::PipelinePlan plan;
  plan.wafers = {{0, 2, true, false, 0}, {2, 2, false, true, 0}};
  plan.part_of = {0, 1};
  plan.parts = plan.wafers;
  std::vector<workload::Workload> parts;
  for (const auto& p : plan.parts) {
    parts.push_back(workload::chunk_prompt(deploy::part_workload(model, shape, p, workload::MoeRouting{}), 2));
  }
  std::vector<meshir::Schedule> stages;
  for (const auto& w : parts) stages.push_back(baselines::build_fullchip(w, wse3()));
  CHECK(stages[0].prompt_chunks == 2);  // a schedule built from a chunk's workload carries the count
  const auto joined = deploy::join_stages(plan, {&stages[0], &stages[1]}, {&parts[0], &parts[1]},
                                          wafer::cluster_preset("cs3"), 4, false, "pipe");
  CHECK(joined.prompt_chunks == 2);
  // Two chunks through two wafers: the second ends one slowest stage after the first.
  const auto c = cost::evaluate(joined, wse3(), round_params(), false, 2048);
  CHECK(c.latency_s == doctest::Approx((c.pass_cycles + c.bottleneck_stage_cycles) / wse3().clock_hz).epsilon(1e-12));
  CHECK(c.bottleneck_stage_cycles < c.pass_cycles);
  stages[1].prompt_chunks = 1;
  CHECK_THROWS_AS(deploy::join_stages(plan, {&stages[0], &stages[1]}, {&parts[0], &parts[1]},
                                      wafer::cluster_preset("cs3"), 4, false, "pipe"),
                  InternalError);
}
