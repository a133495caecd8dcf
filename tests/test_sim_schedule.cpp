// Simulator on whole ops and schedules: seeded sampling against full simulation with its stated
// error, MeshGEMM step extrapolation, the pipeline by hand, determinism, traces, agreement statistics.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "cost_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/compare/sim_agreement.hpp"
#include "wavel/sim/detail/compose.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/sim/trace.hpp"
#include "wavel/workload/workload.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::wse3;

namespace {

meshir::Schedule gemm(std::int64_t w, std::int64_t h, std::int64_t m, std::int64_t k, std::int64_t n) {
  auto s = one_region(w, h);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work.m = m;
  op.work.k = k;
  op.work.n = n;
  op.work.flops = 2 * m * k * n;
  s.ops = {op};
  return s;
}

workload::Workload llama3(workload::Phase phase, std::int64_t requests) {
  return workload::build_workload(*workload::find_model_preset("llama3-8b"), {phase, requests, 512, 128});
}

// A strict recursive-descent JSON checker: true when `text` is exactly one well-formed JSON value.
class JsonChecker {
 public:
  explicit JsonChecker(const std::string& text) : t_(text) {}
  bool valid() {
    skip();
    if (!value()) return false;
    skip();
    return i_ == t_.size();
  }

 private:
  void skip() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\n' || t_[i_] == '\t' || t_[i_] == '\r')) ++i_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (t_.compare(i_, w.size(), w) != 0) return false;
    i_ += w.size();
    return true;
  }
  bool string() {
    if (i_ >= t_.size() || t_[i_] != '"') return false;
    for (++i_; i_ < t_.size(); ++i_) {
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i_;
        if (i_ >= t_.size()) return false;
        continue;
      }
      if (c == '"') {
        ++i_;
        return true;
      }
    }
    return false;
  }
  bool number() {
    const std::size_t start = i_;
    if (i_ < t_.size() && t_[i_] == '-') ++i_;
    while (i_ < t_.size() && (std::isdigit(static_cast<unsigned char>(t_[i_])) || t_[i_] == '.' || t_[i_] == 'e' ||
                              t_[i_] == 'E' || t_[i_] == '+' || t_[i_] == '-')) {
      ++i_;
    }
    return i_ > start;
  }
  bool value() {
    skip();
    if (i_ >= t_.size()) return false;
    const char c = t_[i_];
    if (c == '{') {
      ++i_;
      skip();
      if (i_ < t_.size() && t_[i_] == '}') return ++i_, true;
      for (;;) {
        skip();
        if (!string()) return false;
        skip();
        if (i_ >= t_.size() || t_[i_] != ':') return false;
        ++i_;
        if (!value()) return false;
        skip();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < t_.size() && t_[i_] == '}') return ++i_, true;
        return false;
      }
    }
    if (c == '[') {
      ++i_;
      skip();
      if (i_ < t_.size() && t_[i_] == ']') return ++i_, true;
      for (;;) {
        if (!value()) return false;
        skip();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < t_.size() && t_[i_] == ']') return ++i_, true;
        return false;
      }
    }
    if (c == '"') return string();
    if (c == 't') return literal("true");
    if (c == 'f') return literal("false");
    if (c == 'n') return literal("null");
    return number();
  }
  const std::string& t_;
  std::size_t i_ = 0;
};

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

}  // namespace

TEST_CASE("sim: sampled lines against the full region, within the stated sampling error") {
  // A 12x8 region: every kernel is simulated once on a seeded sample of its lines and once in full.
  // Lines whose share of a dimension differs (100 outputs over 8 rows: 4 rows take 13, 4 take 12)
  // are both sampled, so the slowest line is seen; lines of one class finish together, and the
  // spread among them is the stated sampling error.
  auto s = one_region(12, 8);
  s.regions.push_back(meshir::Rect{20, 0, 12, 8});
  auto gemv = op_on(s.regions[0], meshir::Kernel::meshgemv);
  gemv.name = "gemv";
  gemv.work.m = 1;
  gemv.work.k = 96;
  gemv.work.n = 100;
  auto gemv_y = gemv;
  gemv_y.name = "gemv_y";
  gemv_y.reduce_axis = meshir::Axis::y;
  auto norm = op_on(s.regions[0], meshir::Kernel::allreduce);
  norm.name = "norm";
  norm.work.m = 10;
  norm.work.flops = 96 * 300;
  norm.rounds = 2;
  norm.group = 3;
  auto elt = op_on(s.regions[0], meshir::Kernel::elementwise);
  elt.name = "elt";
  elt.work.flops = 96 * 1000;
  auto kv = op_on(s.regions[0], meshir::Kernel::kv_shift);
  kv.name = "kv";
  kv.work.output_bytes = 96 * 64;
  auto move = op_on(s.regions[0], meshir::Kernel::transfer);
  move.name = "move";
  move.to_region = 1;
  move.work.input_bytes = 8 * 400 + 3;
  auto relayout = op_on(s.regions[0], meshir::Kernel::relayout);
  relayout.name = "relayout";
  relayout.work.input_bytes = 96 * 40;
  s.ops = {gemv, gemv_y, norm, elt, kv, move, relayout};
  for (std::uint64_t seed : {1u, 7u}) {
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      CAPTURE(s.ops[i].name);
      CAPTURE(seed);
      sim::SimOptions o;
      o.seed = seed;
      const auto sampled = sim::simulate_op(s, static_cast<int>(i), wse3(), o);
      CHECK_FALSE(sampled.sample.full_region);
      CHECK(sampled.sample.rule.rfind("sampled: ", 0) == 0);
      CHECK(sampled.sample.op_pes == 96);
      CHECK(sampled.sample.lines_sampled <= std::max<std::int64_t>(3, 2));
      o.full_region_when_small = true;
      o.full_region_max_pes = 96;
      const auto full = sim::simulate_op(s, static_cast<int>(i), wse3(), o);
      CHECK(full.sample.full_region);
      CHECK(full.sample.scale_factor == 1.0);
      CHECK(std::abs(sampled.cycles - full.cycles) <= sampled.sampling_error * full.cycles + 1e-9);
      CHECK(static_cast<double>(full.messages) == doctest::Approx(sampled.represented_messages).epsilon(0.15));
    }
  }
  // The sampled lines come from both work classes of the uneven GEMV.
  const auto g = sim::simulate_op(s, 0, wse3(), {});
  CHECK(g.sample.lines_total == 8);
  CHECK(g.sample.rule.find("along x") != std::string::npos);
  sim::SimOptions one;
  one.full_region_when_small = true;
  one.full_region_max_pes = 95;  // one PE too few: sampled again
  CHECK_FALSE(sim::simulate_op(s, 0, wse3(), one).sample.full_region);
}

TEST_CASE("sim: MeshGEMM sample, full region and step extrapolation agree") {
  // A folded sample stands for the perpendicular ring under lock-step: within 2 cycles of the full
  // region (its ring ends have 1-hop edges, the fold always crosses 2).
  for (const auto& s : {gemm(4, 4, 64, 64, 64), gemm(8, 8, 64, 64, 64), gemm(8, 8, 8, 512, 8), gemm(8, 4, 64, 64, 64),
                        gemm(4, 8, 64, 64, 64)}) {
    sim::SimOptions o;
    const auto sampled = sim::simulate_op(s, 0, wse3(), o);
    o.full_region_when_small = true;
    const auto whole = sim::simulate_op(s, 0, wse3(), o);
    CHECK(std::abs(sampled.cycles - whole.cycles) <= 2.0);
    CHECK(sampled.represented_messages == static_cast<double>(whole.messages));
    CHECK(whole.colours_max <= 4);
  }
  // 24 steps: simulating 4 and extrapolating at the last step's period matches all 24 to 1 cycle.
  const auto big = gemm(24, 24, 96, 480, 96);
  sim::SimOptions all;
  all.max_simulated_steps = 64;
  sim::SimOptions few;
  few.max_simulated_steps = 4;
  const auto a = sim::simulate_op(big, 0, wse3(), all);
  const auto b = sim::simulate_op(big, 0, wse3(), few);
  CHECK(a.sample.steps_simulated == 24);
  CHECK(b.sample.steps_simulated == 4);
  CHECK(b.sample.steps_total == 24);
  CHECK(b.sample.rule.find("4 of 24 steps") != std::string::npos);
  CHECK(std::abs(a.cycles - b.cycles) <= 1.0);
}

TEST_CASE("sim: fidelity levels agree on small kernels") {
  // Packets pipeline through cut-through routers, so an uncontended message takes the same time
  // split or whole; contended ones interleave, but links stay work-conserving. Stated tolerance: 5%.
  std::vector<meshir::Schedule> cases{gemm(4, 4, 64, 64, 64), gemm(8, 8, 8, 512, 8)};
  {
    auto s = one_region(9, 9);
    auto op = op_on(s.regions[0], meshir::Kernel::allreduce);
    op.group = 3;
    op.rounds = 2;
    op.work.m = 36;
    op.work.flops = 9 * 9 * 100;
    s.ops = {op};
    cases.push_back(s);
  }
  for (const auto& s : cases) {
    sim::SimOptions o;
    o.full_region_when_small = true;
    const double whole = sim::simulate_op(s, 0, wse3(), o).cycles;
    o.fidelity = sim::Fidelity::packet;
    o.packet_wavelets = 2;
    const auto packets = sim::simulate_op(s, 0, wse3(), o);
    o.fidelity = sim::Fidelity::wavelet;
    const auto wavelets = sim::simulate_op(s, 0, wse3(), o);
    CHECK(packets.cycles == doctest::Approx(whole).epsilon(0.05));
    CHECK(wavelets.cycles == doctest::Approx(whole).epsilon(0.05));
    CHECK(wavelets.events > packets.events);
  }
}

TEST_CASE("sim: the pipeline of micro-batches over stages, by hand") {
  // Three steps: op 0 on stage 0 (100 cycles), a transfer fed from stage 0 into stage 1 (10, links
  // only), op 2 on stage 1 (50). Two micro-batches.
  auto s = wavel::test::two_stages();
  s.microbatches = 2;
  s.concurrent_requests = 2;
  const std::vector<double> cycles{100, 10, 50};
  // Decode: micro-batch 0 ends its tokens at 160, 360, 560, 760; micro-batch 1 waits for stage 0:
  // 260, 460, 660, 860. The steady period is 200 = 2 turns of the busiest stage (stage 0, 100),
  // longer than one pass (160).
  const auto d = sim::run_pipeline(s, cycles, 1e9, true, 0);
  CHECK(d.pass_cycles == 160.0);
  CHECK(d.bottleneck_stage_cycles == 100.0);
  CHECK(d.latency_s == doctest::Approx(200e-9));
  CHECK(d.tokens_per_s == doctest::Approx(2.0 / 200e-9));
  CHECK(d.op_start_cycles == std::vector<double>{0, 100, 110});
  // Prefill of 10 tokens: micro-batches end at 160 and 260; mean TTFT 210, all done at 260.
  const auto p = sim::run_pipeline(s, cycles, 1e9, false, 10);
  CHECK(p.latency_s == doctest::Approx(210e-9));
  CHECK(p.tokens_per_s == doctest::Approx(10.0 * 2.0 / 260e-9));
  // A layer subset standing for 3x the layers: every step takes 3x (none is `once`).
  s.layer_scale = 3;
  s.microbatches = 1;
  CHECK(sim::run_pipeline(s, cycles, 1e9, true, 0).latency_s == doctest::Approx(480e-9));
}

TEST_CASE("sim: a LLaMA-3-8B layer sample: every op simulated, reused ops identical, deterministic") {
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto s = baselines::build_waferllm_layer_sample(llama3(workload::Phase::decode, 4), wafer, 120);
  sim::SimOptions o;
  o.record_trace = true;
  const auto a = sim::simulate(s, wafer, true, 512, o);
  const auto b = sim::simulate(s, wafer, true, 512, o);
  CHECK(a.layer_scale == s.layer_scale);
  CHECK(a.ops_reused > 0);
  CHECK(a.ops_simulated + a.ops_reused == static_cast<std::int64_t>(s.ops.size()));
  CHECK(a.relays == 0);
  CHECK(a.latency_s > 0);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CAPTURE(s.ops[i].name);
    CHECK(a.ops[i].cycles > 0);
    CHECK(a.ops[i].cycles == b.ops[i].cycles);
    CHECK(a.ops[i].events == b.ops[i].events);
    CHECK(a.ops[i].spans.size() == b.ops[i].spans.size());
    const int from = a.ops[i].reused_from;
    if (from >= 0) CHECK(a.ops[i].cycles == a.ops[static_cast<std::size_t>(from)].cycles);
  }
  CHECK(a.latency_s == b.latency_s);
  CHECK(sim::schedule_trace_json(s, a, wafer.clock_hz) == sim::schedule_trace_json(s, b, wafer.clock_hz));
  // The reduce axis alternates between GEMVs of a region: the routers re-configure (colour switch).
  double switches = 0;
  for (const auto& r : a.ops) switches += r.colour_switch_cycles;
  CHECK(switches > 0);
}

TEST_CASE("sim: trace JSON is well-formed, with one track per region and per sampled PE" * doctest::test_suite("mpi")) {
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto s = baselines::build_waferllm_layer_sample(llama3(workload::Phase::decode, 1), wafer, 60);
  sim::SimOptions o;
  o.record_trace = true;
  o.trace_max_pes = 4;
  const auto r = sim::simulate(s, wafer, true, 512, o);
  const std::string text = sim::schedule_trace_json(s, r, wafer.clock_hz);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const auto path = test::scratch_dir("sim-trace") / ("trace-rank" + std::to_string(rank) + ".json");
  {
    std::ofstream out(path);
    out << text;
  }
  const std::string back = test::read_text(path);
  CHECK(back == text);
  CHECK(JsonChecker(back).valid());
  CHECK(back.rfind("{\"traceEvents\":[", 0) == 0);
  const std::size_t x_events = count(back, "\"ph\":\"X\"");
  CHECK(x_events > s.ops.size());
  for (const char* key : {"\"ts\":", "\"dur\":", "\"pid\":", "\"tid\":", "\"name\":", "\"cat\":"}) {
    CHECK(count(back, key) >= x_events);
  }
  CHECK(count(back, "\"process_name\"") == s.regions.size());
  CHECK(count(back, "\"thread_name\"") == 1 + 4);  // the op lane and 4 sampled PEs
  auto named = s;
  named.ops[0].name = "a\"b\\c\n";
  CHECK(JsonChecker(sim::schedule_trace_json(named, r, wafer.clock_hz)).valid());
  CHECK(JsonChecker(sim::op_trace_json(s.ops[1], r.ops[1], wafer.clock_hz)).valid());
  CHECK_FALSE(JsonChecker("{\"traceEvents\":[{\"a\":1,}]}").valid());  // the checker does reject
}

TEST_CASE("sim: agreement statistics and candidate samples") {
  // Ranks 1..4 against 2,1,4,3: d = (1,1,1,1), rho = 1 - 6 * 4 / (4 * 15) = 0.6.
  CHECK(driver::spearman({1, 2, 3, 4}, {2, 1, 4, 3}) == doctest::Approx(0.6));
  CHECK(driver::spearman({1, 2, 3}, {10, 20, 30}) == doctest::Approx(1.0));
  CHECK(std::isnan(driver::spearman({1}, {1})));
  // |110 - 100| / 100 and |90 - 100| / 100: 10 %.
  CHECK(driver::mape_pct({110, 90}, {100, 100}) == doctest::Approx(10.0));
  const auto ok = driver::agreement("x", "meshgemv", {1, 2, 3}, {1.05, 2.1, 3.1});
  CHECK(ok.meets_targets);
  CHECK(ok.differs.empty());
  const auto bad = driver::agreement("x", "meshgemv", {3, 2, 1}, {1, 2, 3});
  CHECK_FALSE(bad.meets_targets);
  CHECK(bad.differs.find("K-tree") != std::string::npos);
  const auto c = sim::sample_candidates(100, 8, 1);
  CHECK(c.indices == sim::sample_candidates(100, 8, 1).indices);
  CHECK(c.indices.size() == 8);
  CHECK(std::is_sorted(c.indices.begin(), c.indices.end()));
  CHECK(sim::sample_candidates(100, 8, 2).indices != c.indices);
  CHECK(sim::sample_candidates(5, 8, 1).indices == std::vector<std::size_t>{0, 1, 2, 3, 4});
}
