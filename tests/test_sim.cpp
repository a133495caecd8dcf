// Mesh simulator: closed forms computed by hand, fidelity and sampling consistency, determinism,
// agreement with the analytic cost model, and well-formed trace JSON.
#include <doctest/doctest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "cost_fixtures.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/sim/kernels.hpp"
#include "wavel/sim/network.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/sim/trace.hpp"
#include "wavel/workload/workload.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::round_params;
using wavel::test::wse3;

namespace {

// alpha 1, beta 30, 4 bytes per cycle per link, ramps modelled.
sim::NetworkConfig mesh(std::int64_t w, std::int64_t h) {
  sim::NetworkConfig c;
  c.width_pes = w;
  c.height_pes = h;
  c.alpha_cycles_per_hop = 1.0;
  c.beta_cycles_per_stage = 30.0;
  c.link_bytes_per_cycle = 4;
  return c;
}

sim::SendSpec message(std::int64_t src, std::int64_t dst, std::int64_t bytes) {
  sim::SendSpec s;
  s.src_pe = src;
  s.dst_pe = dst;
  s.bytes = bytes;
  return s;
}


// The 8x8 GEMV of test_cost.cpp: reduce along x in groups of 4, 16-byte messages.
meshir::Schedule gemv_8x8() {
  auto s = one_region(8, 8);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemv);
  op.reduce_axis = meshir::Axis::x;
  op.group = 4;
  op.work = {1, 1, 64, 64, 0, 0, 0, 0, 0};
  s.ops = {op};
  return s;
}

meshir::Schedule gemm(std::int64_t w, std::int64_t h, std::int64_t m, std::int64_t k, std::int64_t n) {
  auto s = one_region(w, h);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work = {1, m, k, n, 2 * m * k * n, 0, 0, 0, 0};
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

TEST_CASE("sim: one transfer of B bytes over H hops takes H*alpha + ceil(B/4) cycles") {
  // (1,1) -> (7,3): 6 hops along x, then 2 along y, H = 8. B = 100 bytes = 25 wavelets.
  // Head: 8 hops x 1 cycle; the body streams behind it, one wavelet per cycle: 8 + 25 = 33.
  // The ramps add no latency, only occupancy, so a lone message is the same with or without them.
  for (bool ramps : {true, false}) {
    auto c = mesh(10, 4);
    c.model_ramps = ramps;
    sim::Network net(c);
    const auto m = net.send(message(net.pe_at(1, 1), net.pe_at(7, 3), 100));
    net.run();
    CHECK(net.finish_cycles(m) == 33.0);
    CHECK(net.stats().messages == 1);
    CHECK(net.stats().wavelet_hops == 25 * 8);
    // Events: the injection ramp, 8 links, the ejection ramp.
    CHECK(net.stats().events == (ramps ? 10 : 8));
  }
  {
    // alpha 2.5, 101 bytes = 26 wavelets (rounded up), sent at cycle 5: 5 + 8 * 2.5 + 26 = 51.
    auto c = mesh(10, 4);
    c.alpha_cycles_per_hop = 2.5;
    sim::Network net(c);
    const auto m = net.send(message(net.pe_at(1, 1), net.pe_at(7, 3), 101));
    net.release_at(m, 5.0);
    net.run();
    CHECK(net.finish_cycles(m) == 51.0);
  }
  {
    // The same as a MeshIR transfer between two 4x4 regions whose centres are 8 columns apart:
    // 4 lanes (rows), 1000 bytes -> 250 bytes = 63 wavelets (62.5 rounded up) per lane.
    // Simulated: launch 100 + 8 hops + 63 = 171. The cost model keeps the fractional wavelet: 170.5.
    auto s = one_region(4, 4);
    s.regions.push_back(meshir::Rect{8, 0, 4, 4});
    auto op = op_on(s.regions[0], meshir::Kernel::transfer);
    op.to_region = 1;
    op.work.input_bytes = 1000;
    s.ops = {op};
    const auto r = sim::simulate_op(s, 0, wse3(), round_params(), {});
    CHECK(r.cycles == 171.0);
    CHECK(r.sample.scale_factor == 4.0);
    CHECK(r.cycles - cost::op_cost(s, s.ops[0], wse3(), round_params()).total_cycles == doctest::Approx(0.5));
  }
}

TEST_CASE("sim: ring shift on an interleaved ring takes 2*alpha + ceil(B/4)") {
  // The ring visits every position once, and neighbours are at most 2 hops apart.
  CHECK(sim::interleaved_next(0, 6) == 2);
  CHECK(sim::interleaved_next(2, 6) == 4);
  CHECK(sim::interleaved_next(4, 6) == 5);
  CHECK(sim::interleaved_next(5, 6) == 3);
  CHECK(sim::interleaved_next(3, 6) == 1);
  CHECK(sim::interleaved_next(1, 6) == 0);
  CHECK(sim::interleaved_next(4, 5) == 3);
  CHECK(sim::interleaved_next(0, 2) == 1);
  CHECK(sim::interleaved_next(1, 2) == 0);
  for (std::int64_t n = 1; n <= 40; ++n) {
    std::vector<int> seen(static_cast<std::size_t>(n), 0);
    std::int64_t pos = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t next = sim::interleaved_next(pos, n);
      CHECK(std::llabs(next - pos) <= 2);
      ++seen[static_cast<std::size_t>(next)];
      pos = next;
    }
    CHECK(pos == 0);
    CHECK(std::count(seen.begin(), seen.end(), 1) == n);
  }
  // N = 8, B = 64 bytes = 16 wavelets, every PE sends at cycle 0. Two-hop edges deliver at
  // 2 + 16 = 18; the two one-hop edges (the turn 6 -> 7 and 1 -> 0) at 17. No directed link carries
  // two edges and every PE injects and ejects one message, so nothing waits: the shift takes 18.
  sim::Network net(mesh(8, 1));
  const auto arrivals = sim::ring_shift(net, sim::Line{0, 1, 8}, 64, {}, 0);
  net.run();
  std::vector<double> t;
  for (auto a : arrivals) t.push_back(net.finish_cycles(a));
  CHECK(*std::max_element(t.begin(), t.end()) == 18.0);
  CHECK(std::count(t.begin(), t.end(), 17.0) == 2);
  CHECK(std::count(t.begin(), t.end(), 18.0) == 6);
  CHECK(net.colours_max() == 2);  // one colour each way
}

TEST_CASE("sim: K-tree allreduce on a line of 16 with group 4, by hand") {
  // alpha 1, beta 30, 16-byte messages (S = 4 cycles). Groups {0..3} {4..7} {8..11} {12..15},
  // centres at 2, 6, 10, 14; the central root is group 2's, at 10.
  // Level 1, each group: 0 -> 1 arrives at 1 + 4 = 5; PE 1 adds (30) and forwards: 35 + 5 = 40;
  //   3 -> 2 arrived at 5; the centre adds: 40 + 30 = 70. Two stages of (alpha + S + beta).
  // Level 2: root 2 -> root 6 (4 hops): 70 + 4 + 4 = 78, add: 108; 6 -> 10: 108 + 8 = 116;
  //   14 -> 10 arrived at 78; add: 146. Two stages of (4 alpha + S + beta).
  // Broadcast from 10: to 0 (10 hops) 146 + 10 + 4 = 160; to 15 (5 hops) 155. Total 160.
  sim::Network net(mesh(16, 1));
  const auto done = sim::ktree_allreduce(net, sim::Line{0, 1, 16}, 4, 16, {}, 0);
  net.run();
  CHECK(net.finish_cycles(done) == 160.0);
  // Messages: 3 per group, 3 between roots, 2 broadcast copies.
  CHECK(net.stats().messages == 17);
  // Wavelet-hops: 12 x 4 x 1 + 3 x 4 x 4 + 4 x (10 + 5) = 156.
  CHECK(net.stats().wavelet_hops == 156);
  const auto shape = sim::ktree_shape(16, 4);
  CHECK(shape.level1_stages == 2);
  CHECK(shape.level2_stages == 2);
  CHECK(shape.root == 10);
  CHECK(shape.broadcast_hops == 10);
  // The cost model's closed form: 4 beta + (2 + 2 * 4 + 16 / 2) alpha + 5 S = 120 + 18 + 20 = 158.
  // It takes the broadcast as P/2 = 8 hops; from the actual root at 10 it is 10 hops: +2.
}

TEST_CASE("sim: K-tree allreduce of an 8x8 MeshGEMV with group 4, by hand and against the cost model") {
  // Launch 100, local GEMV 16 cycles (see test_cost.cpp), then a line of 8 in groups of 4:
  // level 1 as above, 70; level 2: root 2 -> root 6: 70 + 4 + 4 = 78, add: 108;
  // broadcast from 6: to 0 (6 hops) 108 + 6 + 4 = 118. Total 100 + 16 + 118 = 234.
  // The cost model streams the tree (collectives.cpp): 3 stages x beta 30, 2 + 4 + 8/2 = 10 hops, and
  // the busiest link carries fan-in (2 + 1) x S = 12 wavelets: 100 + 16 + 90 + 10 + 12 = 228.
  const auto s = gemv_8x8();
  const auto p = round_params();
  const auto r = sim::simulate_op(s, 0, wse3(), p, {});
  CHECK(r.cycles == 234.0);
  CHECK(cost::op_cost(s, s.ops[0], wse3(), p).total_cycles == doctest::Approx(228.0));
  CHECK(r.sample.scale_factor == 8.0);
  CHECK(r.sample.sampled_pes == 8);
  CHECK(r.sample.rule.find("1 of 8") != std::string::npos);
  // Per line: 3 + 3 level-1 messages, 1 between roots, 2 broadcast copies = 9.
  CHECK(r.messages == 9);
  CHECK(r.represented_messages == 72.0);
  // The full region: 8 lines side by side on disjoint links, so the same time and 8x the messages.
  sim::SimOptions full;
  full.full_region_when_small = true;
  const auto f = sim::simulate_op(s, 0, wse3(), p, full);
  CHECK(f.sample.full_region);
  CHECK(f.cycles == 234.0);
  CHECK(f.messages == 72);
  CHECK(static_cast<double>(f.wavelet_hops) == r.represented_wavelet_hops);
  // Colours: level 1, level 2 and the broadcast, as cost::colours_needed counts.
  CHECK(f.colours_max <= cost::colours_needed(s.ops[0]));
}

TEST_CASE("sim: an odd group serialises on the centre's ejection ramp") {
  // Line of 9, group 3, S = 4. Level 1: 0 -> 1 and 2 -> 1 both reach PE 1's router at cycle 1;
  // PE 1's ramp takes one wavelet per cycle, so the second is in at 1 + 4 + 4 = 9; add: 39.
  // Level 2 (roots 1, 4, 7, central 4): both 3-hop messages reach 4 at 39 + 3 = 42, in at 46 and 50;
  // add: 80. Broadcast 4 hops each way: 88. Without ramp occupancy: 35, then 72, then 80.
  for (bool ramps : {true, false}) {
    auto c = mesh(9, 1);
    c.model_ramps = ramps;
    sim::Network net(c);
    const auto done = sim::ktree_allreduce(net, sim::Line{0, 1, 9}, 3, 16, {}, 0);
    net.run();
    CHECK(net.finish_cycles(done) == (ramps ? 88.0 : 80.0));
  }
}

TEST_CASE("sim: k messages through one saturated link take k*ceil(B/4) after the first head arrives") {
  // Sources x = 0..4 on a row, all to x = 6, 64 bytes (S = 16) each: they share the links 4 -> 5 -> 6.
  // The nearest source (x = 4) is 2 hops away: its head arrives at 2, then the link and the
  // destination's ramp stay busy: deliveries at 2 + 16 j, j = 1..5; the last at 2 + 5 * 16 = 82.
  // Ties at a link break by message id, so the farther sources queue behind the nearer ones.
  for (auto fidelity : {sim::Fidelity::message, sim::Fidelity::packet, sim::Fidelity::wavelet}) {
    CAPTURE(sim::to_string(fidelity));
    auto c = mesh(7, 1);
    c.fidelity = fidelity;
    c.packet_wavelets = 4;
    sim::Network net(c);
    std::vector<sim::ItemId> sent;
    for (int x = 0; x < 5; ++x) sent.push_back(net.send(message(x, 6, 64)));
    net.run();
    std::vector<double> t;
    for (auto m : sent) t.push_back(net.finish_cycles(m));
    std::sort(t.begin(), t.end());
    // The link works without a gap at every fidelity, so the last tail is the same.
    CHECK(t.back() == 82.0);
    if (fidelity == sim::Fidelity::message) CHECK(t == std::vector<double>{18, 34, 50, 66, 82});
    CHECK(net.stats().wavelet_hops == 16 * (6 + 5 + 4 + 3 + 2));
  }
}

TEST_CASE("sim: fidelity levels agree on small kernels") {
  // Packets pipeline through cut-through routers, so an uncontended message takes the same time
  // split or whole; contended ones interleave, but links stay work-conserving. Stated tolerance: 1%.
  const auto p = round_params();
  std::vector<meshir::Schedule> cases{gemv_8x8(), gemm(4, 4, 64, 64, 64), gemm(8, 8, 8, 512, 8)};
  {
    auto s = one_region(9, 9);
    auto op = op_on(s.regions[0], meshir::Kernel::allreduce);
    op.group = 3;
    op.rounds = 2;
    op.work = {1, 36, 0, 0, 9 * 9 * 100, 0, 0, 0, 0};
    s.ops = {op};
    cases.push_back(s);
  }
  for (const auto& s : cases) {
    CAPTURE(s.ops[0].kernel == meshir::Kernel::meshgemm);
    sim::SimOptions o;
    o.full_region_when_small = true;
    const double whole = sim::simulate_op(s, 0, wse3(), p, o).cycles;
    o.fidelity = sim::Fidelity::packet;
    o.packet_wavelets = 2;
    const auto packets = sim::simulate_op(s, 0, wse3(), p, o);
    o.fidelity = sim::Fidelity::wavelet;
    const auto wavelets = sim::simulate_op(s, 0, wse3(), p, o);
    CHECK(packets.cycles == doctest::Approx(whole).epsilon(0.01));
    CHECK(wavelets.cycles == doctest::Approx(whole).epsilon(0.01));
    CHECK(wavelets.events > packets.events);
  }
}

TEST_CASE("sim: MeshGEMM sample, full region and step extrapolation agree") {
  const auto p = round_params();
  // Compute-bound 4x4 (test_cost.cpp): 4 steps of 20 + 1024, launch 100, skew 2 rounds of
  // 2 hops + 128 cycles. The cost model says 4536; the simulated ring is 1 cycle faster because its
  // turn-around edges are 1 hop, and two skew rounds in a row cross at most 3 hops, not 4.
  for (bool full : {false, true}) {
    sim::SimOptions o;
    o.full_region_when_small = full;
    CHECK(sim::simulate_op(gemm(4, 4, 64, 64, 64), 0, wse3(), p, o).cycles == 4535.0);
  }
  CHECK(cost::op_cost(gemm(4, 4, 64, 64, 64), gemm(4, 4, 64, 64, 64).ops[0], wse3(), p).total_cycles ==
        doctest::Approx(4536.0));
  // A folded sample stands for the perpendicular ring under lock-step: within 2 cycles of the full
  // region (its ring ends have 1-hop edges, the fold always crosses 2).
  for (const auto& s : {gemm(8, 8, 64, 64, 64), gemm(8, 8, 8, 512, 8), gemm(8, 4, 64, 64, 64), gemm(4, 8, 64, 64, 64)}) {
    sim::SimOptions o;
    const auto sampled = sim::simulate_op(s, 0, wse3(), p, o);
    o.full_region_when_small = true;
    const auto whole = sim::simulate_op(s, 0, wse3(), p, o);
    CHECK(std::abs(sampled.cycles - whole.cycles) <= 2.0);
    CHECK(sampled.represented_messages == static_cast<double>(whole.messages));
    CHECK(whole.colours_max <= cost::colours_needed(s.ops[0]));
  }
  // 24 steps: simulating 4 and extrapolating at the last step's period matches all 24 to 1 cycle.
  const auto big = gemm(24, 24, 96, 480, 96);
  sim::SimOptions all;
  all.max_simulated_steps = 64;
  sim::SimOptions few;
  few.max_simulated_steps = 4;
  const auto a = sim::simulate_op(big, 0, wse3(), p, all);
  const auto b = sim::simulate_op(big, 0, wse3(), p, few);
  CHECK(a.sample.steps_simulated == 24);
  CHECK(b.sample.steps_simulated == 4);
  CHECK(b.sample.steps_total == 24);
  CHECK(b.sample.rule.find("4 of 24 steps") != std::string::npos);
  CHECK(std::abs(a.cycles - b.cycles) <= 1.0);
}

TEST_CASE("sim: sampling records the rule and the scale factor of every kernel") {
  const auto p = round_params();
  auto s = one_region(12, 8);
  s.regions.push_back(meshir::Rect{20, 0, 12, 8});
  auto gemv = op_on(s.regions[0], meshir::Kernel::meshgemv);
  gemv.name = "gemv";
  gemv.work = {1, 1, 96, 64, 0, 0, 0, 0, 0};
  auto gemv_y = gemv;
  gemv_y.name = "gemv_y";
  gemv_y.reduce_axis = meshir::Axis::y;
  auto elt = op_on(s.regions[0], meshir::Kernel::elementwise);
  elt.name = "elt";
  elt.work.flops = 96 * 1000;
  auto kv = op_on(s.regions[0], meshir::Kernel::kv_shift);
  kv.name = "kv";
  kv.work.output_bytes = 96 * 64;
  auto move = op_on(s.regions[0], meshir::Kernel::transfer);
  move.name = "move";
  move.to_region = 1;
  move.work.input_bytes = 8 * 400;
  s.ops = {gemv, gemv_y, elt, kv, move};
  sim::SimOptions o;
  std::vector<sim::OpSimResult> r;
  for (int i = 0; i < 5; ++i) r.push_back(sim::simulate_op(s, i, wse3(), p, o));
  CHECK(r[0].sample.scale_factor == 8.0);   // 8 rows of 12 PEs
  CHECK(r[0].sample.sampled_pes == 12);
  CHECK(r[1].sample.scale_factor == 12.0);  // 12 columns of 8 PEs
  CHECK(r[1].sample.sampled_pes == 8);
  CHECK(r[1].sample.rule.find("along y") != std::string::npos);
  CHECK(r[2].sample.scale_factor == 96.0);  // one PE of 96
  CHECK(r[2].sample.sampled_pes == 1);
  CHECK(r[3].sample.scale_factor == 12.0);  // one column of 8
  CHECK(r[4].sample.scale_factor == 8.0);   // 8 lanes (rows), 20 columns apart
  CHECK(r[4].sample.sampled_pes == 21);
  // kv_shift by hand: launch 100, 64 bytes = 16 wavelets over 1 hop: 117 (the cost model: the same).
  CHECK(r[3].cycles == 117.0);
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK_FALSE(r[static_cast<std::size_t>(i)].sample.full_region);
    CHECK(r[static_cast<std::size_t>(i)].sample.op_pes == 96);
    CHECK(r[static_cast<std::size_t>(i)].sample.rule.rfind("sampled: ", 0) == 0);
  }
  // The full region when small: same times, the represented counts become the simulated ones.
  o.full_region_when_small = true;
  o.full_region_max_pes = 96;
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    const auto f = sim::simulate_op(s, i, wse3(), p, o);
    CHECK(f.sample.full_region);
    CHECK(f.sample.scale_factor == 1.0);
    CHECK(f.cycles == r[static_cast<std::size_t>(i)].cycles);
    CHECK(static_cast<double>(f.messages) == r[static_cast<std::size_t>(i)].represented_messages);
  }
  o.full_region_max_pes = 95;  // one PE too few: sampled again
  CHECK_FALSE(sim::simulate_op(s, 0, wse3(), p, o).sample.full_region);
}

TEST_CASE("sim: a schedule is composed exactly as cost::evaluate composes it") {
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto params = cost::default_params(wafer);
  // The composition stand-in reproduces evaluate from the cost model's own op totals, bit for bit,
  // on a layer sample (layer_scale) and on pipelined multi-region schedules (stages, micro-batches).
  std::vector<std::pair<meshir::Schedule, bool>> cases;
  cases.emplace_back(baselines::build_waferllm_layer_sample(llama3(workload::Phase::decode, 1), wafer, 120), true);
  cases.emplace_back(*baselines::build_waferllm(llama3(workload::Phase::decode, 8), wafer, 360), true);
  cases.emplace_back(*baselines::build_waferllm(llama3(workload::Phase::prefill, 2), wafer, 600), false);
  for (const auto& entry : cases) {
    const meshir::Schedule& s = entry.first;
    const bool decode = entry.second;
    CAPTURE(s.name);
    const auto c = cost::evaluate(s, wafer, params, decode, 512);
    const auto switches = cost::route_switch_cycles(s, params);
    std::vector<double> totals;
    for (std::size_t i = 0; i < s.ops.size(); ++i) {
      const double own = cost::op_cost(s, s.ops[i], wafer, params).total_cycles + switches[i];
      CHECK(own == c.ops[i].total_cycles);
      totals.push_back(c.ops[i].total_cycles);
    }
    const auto k = cost::compose(s, totals, wafer.clock_hz, decode, 512);
    CHECK(k.pass_cycles == c.pass_cycles);
    CHECK(k.bottleneck_stage_cycles == c.bottleneck_stage_cycles);
    CHECK(k.latency_s == c.latency_s);
    CHECK(k.tokens_per_s == c.tokens_per_s);
    CHECK(k.tpr_tokens_per_s == c.tpr_tokens_per_s);
  }
  // The layer sample stands for all 32 layers; identical ops are simulated once.
  const auto& sample = cases[0].first;
  const auto r = sim::simulate(sample, wafer, params, true, 512, {});
  CHECK(r.layer_scale == 32);
  CHECK(r.scale_rule.find("x32") != std::string::npos);
  CHECK(r.ops_reused > 0);
  CHECK(r.ops_simulated + r.ops_reused == static_cast<std::int64_t>(sample.ops.size()));
  double pass = 0;
  for (std::size_t i = 0; i < sample.ops.size(); ++i) {
    pass = std::max(pass, r.op_start_cycles[i] + r.ops[i].total_cycles);
    const int from = r.ops[i].reused_from;
    if (from >= 0) {
      CHECK(r.ops[i].cycles == r.ops[static_cast<std::size_t>(from)].cycles);
      CHECK(r.ops[i].events == 0);
    }
  }
  CHECK(r.pass_cycles == doctest::Approx(32.0 * pass));
}

TEST_CASE("sim: simulated and analytic costs of baseline ops stay within a stated factor") {
  // The cost model now streams its K-trees, splits attention by head and charges tile shape and the
  // operand ramp; the simulator still reduces store-and-forward, is head-blind and takes compute from
  // plain FLOPs (issue 12 replaces it). Measured on these ops: the simulator is 0.45x (prefill GEMMs,
  // no ramp or tile-shape term) to 4.7x (decode attention scores, head-blind) the model, and the
  // schedule's tokens/s within 0.87x-1.40x. Stated bounds: 1/4..8 per op, 1/2..2 per schedule; an op
  // outside them means one side has lost a term, not a calibration drift.
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto params = cost::default_params(wafer);
  for (auto phase : {workload::Phase::decode, workload::Phase::prefill}) {
    for (std::int64_t side : {120, 360}) {
      const bool decode = phase == workload::Phase::decode;
      const auto s = baselines::build_waferllm_layer_sample(llama3(phase, 1), wafer, side);
      const auto c = cost::evaluate(s, wafer, params, decode, 512);
      for (bool ramps : {false, true}) {
        CAPTURE(decode);
        CAPTURE(side);
        CAPTURE(ramps);
        sim::SimOptions o;
        o.model_ramps = ramps;
        const auto r = sim::simulate(s, wafer, params, decode, 512, o);
        for (std::size_t i = 0; i < s.ops.size(); ++i) {
          CAPTURE(s.ops[i].name);
          const double ratio = r.ops[i].total_cycles / c.ops[i].total_cycles;
          CHECK(ratio > 0.25);
          CHECK(ratio < 8.0);
        }
        const double schedule_ratio = r.tokens_per_s / c.tokens_per_s;
        CHECK(schedule_ratio > 0.5);
        CHECK(schedule_ratio < 2.0);
      }
    }
  }
}

TEST_CASE("sim: runs are deterministic, bit for bit") {
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto params = cost::default_params(wafer);
  const auto s = baselines::build_waferllm_layer_sample(llama3(workload::Phase::decode, 4), wafer, 120);
  sim::SimOptions o;
  o.record_trace = true;
  o.fidelity = sim::Fidelity::packet;
  const auto a = sim::simulate(s, wafer, params, true, 512, o);
  const auto b = sim::simulate(s, wafer, params, true, 512, o);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].cycles == b.ops[i].cycles);
    CHECK(a.ops[i].events == b.ops[i].events);
    CHECK(a.ops[i].wavelet_hops == b.ops[i].wavelet_hops);
    CHECK(a.ops[i].spans.size() == b.ops[i].spans.size());
  }
  CHECK(a.latency_s == b.latency_s);
  CHECK(a.events == b.events);
  CHECK(sim::schedule_trace_json(s, a, wafer.clock_hz) == sim::schedule_trace_json(s, b, wafer.clock_hz));
}

TEST_CASE("sim: trace JSON is well-formed, with one track per region and per sampled PE") {
  const auto wafer = *wafer::find_wafer_preset("wse2");
  const auto params = cost::default_params(wafer);
  const auto s = baselines::build_waferllm_layer_sample(llama3(workload::Phase::decode, 1), wafer, 60);
  sim::SimOptions o;
  o.record_trace = true;
  o.trace_max_pes = 4;
  const auto r = sim::simulate(s, wafer, params, true, 512, o);
  const std::string text = sim::schedule_trace_json(s, r, wafer.clock_hz);
  // Written and read back from this rank's own file in the scratch directory.
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
  CHECK(back.find("\"displayTimeUnit\":\"ns\"") != std::string::npos);
  // One op-lane event per op, plus the sampled PEs' tasks and messages; every X event has its keys.
  const std::size_t x_events = count(back, "\"ph\":\"X\"");
  CHECK(x_events > s.ops.size());
  for (const char* key : {"\"ts\":", "\"dur\":", "\"pid\":", "\"tid\":", "\"name\":", "\"cat\":"}) {
    CHECK(count(back, key) >= x_events);
  }
  CHECK(count(back, "\"process_name\"") == s.regions.size());
  CHECK(count(back, "\"thread_name\"") == 1 + 4);  // the op lane and 4 sampled PEs
  CHECK(back.find("layer.0.q_proj") != std::string::npos);
  // A hostile op name is escaped.
  auto named = s;
  named.ops[0].name = "a\"b\\c\n";
  CHECK(JsonChecker(sim::schedule_trace_json(named, r, wafer.clock_hz)).valid());
  CHECK(JsonChecker(sim::op_trace_json(s.ops[1], r.ops[1], wafer.clock_hz)).valid());
  CHECK_FALSE(JsonChecker("{\"traceEvents\":[{\"a\":1,}]}").valid());  // the checker does reject
}

TEST_CASE("sim: colour budget, tasks on one PE, dependency errors") {
  // A K-tree needs 3 colours at some routers; with 2 the simulator refuses (it does not relay).
  auto wafer = wse3();
  wafer.routable_colours = 2;
  const auto s = gemv_8x8();
  try {
    (void)sim::simulate_op(s, 0, wafer, round_params(), {});
    FAIL("expected a colour error");
  } catch (const DataError& e) {
    REQUIRE(!e.diagnostics().empty());
    CHECK(e.diagnostics()[0].key_path == "ops.op.colours");
    CHECK(e.diagnostics()[0].message.find("routable colours") != std::string::npos);
  }
  {
    // Two 10-cycle tasks ready at once on one PE run one after the other, by id; a third waits for
    // a message (1 hop, 8 bytes: 1 + 2 = 3) and the second task: 20 + 5 = 25.
    sim::Network net(mesh(2, 1));
    const auto a = net.task(0, 10);
    const auto b = net.task(0, 10);
    const auto m = net.send(message(1, 0, 8));
    const auto c = net.task(0, 5);
    net.after(c, m);
    net.after(c, b);
    net.after(c, sim::kNoItem);
    net.run();
    CHECK(net.finish_cycles(a) == 10.0);
    CHECK(net.finish_cycles(b) == 20.0);
    CHECK(net.finish_cycles(m) == 3.0);
    CHECK(net.finish_cycles(c) == 25.0);
    CHECK(net.makespan_cycles() == 25.0);
    CHECK_THROWS_AS(net.run(), InternalError);
  }
  {
    sim::Network net(mesh(2, 1));
    const auto a = net.join();
    const auto b = net.join();
    net.after(a, b);
    net.after(b, a);
    CHECK_THROWS_AS(net.run(), InternalError);
  }
  sim::Network net(mesh(2, 1));
  CHECK_THROWS_AS(net.send(message(0, 5, 8)), InternalError);
  auto bad = message(0, 1, 8);
  bad.colour = 64;
  CHECK_THROWS_AS(net.send(bad), InternalError);
  CHECK_THROWS_AS(sim::simulate_op(s, 3, wse3(), round_params(), {}), InternalError);
  for (auto f : {sim::Fidelity::message, sim::Fidelity::packet, sim::Fidelity::wavelet}) {
    CHECK(sim::parse_fidelity(sim::to_string(f)) == f);
  }
  CHECK_FALSE(sim::parse_fidelity("flit").has_value());
}

TEST_CASE("sim: candidate samples are deterministic") {
  const auto a = sim::sample_candidates(100, 8, 1);
  const auto b = sim::sample_candidates(100, 8, 1);
  CHECK(a.indices == b.indices);
  CHECK(a.indices.size() == 8);
  CHECK(std::is_sorted(a.indices.begin(), a.indices.end()));
  CHECK(a.rule.find("8 of 100") != std::string::npos);
  CHECK(sim::sample_candidates(100, 8, 2).indices != a.indices);
  CHECK(sim::sample_candidates(5, 8, 1).indices == std::vector<std::size_t>{0, 1, 2, 3, 4});
}
