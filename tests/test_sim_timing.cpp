// The simulator's PE timing: where it comes from (a params file's sim_timing section), how MeshGEMM
// runs it (a task per step and per alignment shift, by hand), and its fit on kernel measurements.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cost_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/calibrate/fit.hpp"
#include "wavel/calibrate/kernels.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/compare/sim_timing_fit.hpp"
#include "wavel/sim/microarch.hpp"
#include "wavel/sim/simulate.hpp"

using namespace wavel;
using calibrate::KernelKind;
using calibrate::KernelPoint;

namespace {

std::string timing_errors(const std::string& text) {
  try {
    cost::parse_pe_timing(text, "p.yaml", {});
  } catch (const DiagnosticError& e) {
    return e.what();
  }
  return "";
}

KernelPoint point(KernelKind kind, std::int64_t side, std::int64_t m, std::int64_t k, std::int64_t n,
                  std::int64_t groups = 0, std::int64_t hops = 0) {
  KernelPoint p;
  p.kind = kind;
  p.side_pes = side;
  p.m = m;
  p.k = k;
  p.n = n;
  p.groups = groups;
  p.hops = hops;
  return p;
}

// One P x P MeshGEMM of P x P matrices (1 x 1 tiles) under `timing`.
double gemm_cycles(std::int64_t side, const wafer::PeTiming& timing, std::int64_t simulated_steps) {
  auto s = test::one_region(side, side);
  auto op = test::op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work.m = op.work.k = op.work.n = side;
  s.ops = {op};
  auto wafer = test::wse3();
  wafer.pe_timing = timing;
  sim::SimOptions options;
  options.max_simulated_steps = simulated_steps;
  return sim::simulate_op(s, 0, wafer, options).cycles;
}

}  // namespace

TEST_CASE("sim_timing in a params file: read over the nominal values, round trip, errors located") {
  const auto timing = cost::parse_pe_timing("alpha_cycles_per_hop: 2\nsim_timing:\n  task_launch_cycles: 80.5\n"
                                            "  stream_latency_cycles: 20\n",
                                            "p.yaml", {});
  CHECK(timing.task_launch_cycles == 80.5);
  CHECK(timing.stream_latency_cycles == 20.0);
  CHECK(timing.kernel_launch_cycles == wafer::PeTiming{}.kernel_launch_cycles);
  // No section: the base, untouched; the cost parameters ignore the section and refuse nothing in it.
  CHECK(cost::parse_pe_timing("alpha_cycles_per_hop: 2\n", "p.yaml", timing).task_launch_cycles == 80.5);
  CHECK(cost::parse_params("sim_timing:\n  task_launch_cycles: 80.5\n", "p.yaml", {}).alpha_cycles_per_hop == 1.0);
  // Written and read back bit for bit.
  wafer::PeTiming odd;
  odd.scalar_op_cycles = 6.430735760781734;
  odd.vector_op_setup_cycles = 0.1 + 0.2;
  odd.kernel_launch_cycles = 1e-3;
  const auto back = cost::parse_pe_timing(cost::pe_timing_to_yaml(odd, "header\nline two"), "w.yaml", {});
  for (const auto& info : wafer::pe_timing_registry()) {
    CAPTURE(info.name);
    CHECK(back.*(info.field) == odd.*(info.field));
  }
  // Errors name the file, line and key; the cost parameters' reader refuses a bad section too.
  const std::string bad = "sim_timing:\n  task_launch_cycles: -1\n  task_lunch_cycles: 3\n";
  const auto message = timing_errors(bad);
  CHECK(message.find("p.yaml:2") != std::string::npos);
  CHECK(message.find("sim_timing.task_launch_cycles") != std::string::npos);
  CHECK(message.find("task_lunch_cycles") != std::string::npos);
  CHECK_THROWS_AS(cost::parse_params(bad, "p.yaml", {}), ConfigError);
  CHECK(timing_errors("sim_timing: [1, 2]\n").find("sim_timing") != std::string::npos);
}

TEST_CASE("the simulator's PE takes its timing from the wafer description") {
  auto wafer = test::wse3();
  wafer.pe_timing.task_launch_cycles = 123.0;
  wafer.pe_timing.scalar_op_cycles = 7.0;
  const auto micro = sim::microarch_for(wafer);
  CHECK(micro.timing.task_launch_cycles == 123.0);
  CHECK(micro.k_iteration_cycles() == 6 * 7.0);
  CHECK(micro.relay_cycles() == 123.0 + wafer.pe_timing.stream_latency_cycles);
}

TEST_CASE("MeshGEMM in the simulator: every step and every alignment shift wakes a task (by hand)") {
  // 8 x 8 PEs, 1 x 1 tiles: 8 steps and 8 / 2 = 4 alignment shifts, each behind the task that
  // sends it, so each task cycle added to the timing adds 8 + 4 cycles to the op (the tiles' two
  // hops take a few cycles, far less than a 100-cycle task: the tasks stay on the critical path).
  wafer::PeTiming a, b;
  a.task_launch_cycles = 100.0;
  b.task_launch_cycles = 200.0;
  CHECK(gemm_cycles(8, b, 16) - gemm_cycles(8, a, 16) == doctest::Approx(12 * 100.0));
  // 32 x 32: 32 steps and 16 alignment shifts; with 4 of each simulated and the rest extrapolated at
  // the last period, within a cycle of all of them built (5232 against 5231: the start-up transient).
  CHECK(gemm_cycles(32, b, 64) - gemm_cycles(32, a, 64) == doctest::Approx(48 * 100.0));
  CHECK(std::abs(gemm_cycles(32, a, 4) - gemm_cycles(32, a, 64)) <= 1.0);
}

TEST_CASE("the simulator's timing fit recovers a timing it was given") {
  // "Measurements" made by the simulator itself at a known timing; the fit starts from the nominal one.
  std::vector<KernelPoint> points;
  for (const std::int64_t side : {8, 16}) {
    for (const std::int64_t f : {1, 2, 4}) {
      points.push_back(point(KernelKind::meshgemm, side, f * side, side, side));
      points.push_back(point(KernelKind::meshgemm, side, side, f * side, 2 * side));
      points.push_back(point(KernelKind::meshgemv, side, f * side, 0, side, 2));
      points.push_back(point(KernelKind::meshgemv, side, side, 0, f * side, 4));
      points.push_back(point(KernelKind::shift, side, side, 0, f * side, 0, f));
    }
  }
  auto wafer = test::wse3();
  wafer::PeTiming truth;
  truth.scalar_op_cycles = 6.5;
  truth.vector_op_setup_cycles = 2.0;
  truth.task_launch_cycles = 80.0;
  truth.kernel_launch_cycles = 75.0;
  truth.stream_latency_cycles = 15.0;
  truth.router_cycles_per_hop = 0.75;
  wafer.pe_timing = truth;
  const auto measured = driver::simulate_kernel_points(points, wafer);
  for (std::size_t i = 0; i < points.size(); ++i) points[i].mean_cycles = measured[i];
  wafer.pe_timing = wafer::PeTiming{};
  const auto fit = driver::fit_sim_timing(points, std::vector<bool>(points.size(), false), wafer);
  CHECK(fit.fitted_names.size() == 6);
  CHECK(fit.on_bounds.empty());
  for (const auto* info : fit.fitted_names) {
    CAPTURE(info->name);
    CHECK(fit.fitted.*(info->field) == doctest::Approx(truth.*(info->field)).epsilon(1e-4));
  }
  // colour_switch_cycles runs in no kernel point: not fitted, kept.
  CHECK(fit.fitted.colour_switch_cycles == wafer::PeTiming{}.colour_switch_cycles);
}

TEST_CASE("the committed sim_timing predicts the WSE-3 kernel measurements; the nominal timing does not") {
  std::vector<KernelPoint> points;
  for (const char* name : {"meshgemm", "meshgemv", "shift"}) {
    const auto set = calibrate::load_kernel_set(
        test::source_path(std::string("tests/data/reference/wse3_kernels/") + name + ".yaml").string());
    points.insert(points.end(), set.points.begin(), set.points.end());
  }
  const auto held = calibrate::kernel_held_out_mask(points);
  auto wafer = test::wse3();
  wafer.pe_timing = cost::load_pe_timing(test::source_path("configs/params/wse3.yaml").string(), {});
  CHECK(wafer.pe_timing.task_launch_cycles != wafer::PeTiming{}.task_launch_cycles);
  std::vector<double> measured;
  for (const auto& p : points) measured.push_back(p.mean_cycles);
  auto mape_where = [&](const std::vector<double>& predicted, bool held_out) {
    std::vector<double> p, m;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (held[i] != held_out) continue;
      p.push_back(predicted[i]);
      m.push_back(measured[i]);
    }
    return calibrate::mape_pct(p, m);
  };
  const auto fitted = driver::simulate_kernel_points(points, wafer);
  CHECK(mape_where(fitted, true) <= 10.0);
  CHECK(mape_where(fitted, false) <= 10.0);
  wafer.pe_timing = wafer::PeTiming{};
  CHECK(mape_where(driver::simulate_kernel_points(points, wafer), true) >= 40.0);
}

TEST_CASE("the simulator runs each form of a vector mix at its own width and SRAM bytes (by hand)") {
  using wafer::VectorForm;
  const auto w2 = *wafer::find_wafer_preset("wse2");
  const auto micro = sim::microarch_for(w2);
  // 10 elements on WSE-2: @fmaxh into a scalar issues 1 lane: 10 cycles; a sum into a scalar
  // issues 4 (3 cycles) and reads 20 B through 8 B of ports (3); a two-vector add reads 40 B (5).
  CHECK(micro.vector_form_cycles(VectorForm::fp16_max, 10) == doctest::Approx(10.0));
  CHECK(micro.vector_form_cycles(VectorForm::fp16_sum, 10) == doctest::Approx(3.0));
  CHECK(micro.vector_form_cycles(VectorForm::fp16_vv, 10) == doctest::Approx(5.0));
  CHECK(micro.vector_form_cycles(VectorForm::fp16_fill, 10) == doctest::Approx(5.0));  // 20 B through the 4 B write port

  // An elementwise op of 1 x 40 on a 4 x 1 strip (10 elements a PE), reading and writing 20 B a PE:
  // without a mix its 10 flops take the write port's 5 cycles; a max into a scalar adds its 10.
  auto s = test::one_region(1, 4);
  auto op = test::op_on(s.regions[0], meshir::Kernel::elementwise);
  op.in_layout.on_x = meshir::Dim::tokens;
  op.in_layout.on_y = meshir::Dim::features;
  op.in_layout.part_y = 4;
  op.out_layout = op.in_layout;
  op.work.m = 1;
  op.work.n = 40;
  op.work.flops = 40;
  op.work.input_bytes = op.work.output_bytes = 80;
  s.ops = {op};
  sim::SimOptions options;
  const double flops_only = sim::simulate_op(s, 0, w2, options).cycles;
  s.ops[0].work.vector[static_cast<std::size_t>(VectorForm::fp16_max)] = 1;
  const double with_max = sim::simulate_op(s, 0, w2, options).cycles;
  CHECK(with_max - flops_only == doctest::Approx(10.0 - 5.0));
  s.ops[0].work.vector[static_cast<std::size_t>(VectorForm::fp16_max)] = 0;
  s.ops[0].work.vector[static_cast<std::size_t>(VectorForm::fp16_vv)] = 1;
  CHECK(sim::simulate_op(s, 0, w2, options).cycles == doctest::Approx(flops_only));  // the same work, as a mix
}

TEST_CASE("the simulator runs a grouped GEMM as one MeshGEMM per expert, one after another (issue 38)") {
  // Two experts of 32 rows on 8 x 8: twice one expert's MeshGEMM of 32 rows (its steps and alignment
  // shifts, as the simulator runs them), not one MeshGEMM of 64 rows against one expert's tile.
  auto s = test::one_region(8, 8);
  auto op = test::op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work.m = 32;
  op.work.k = op.work.n = 64;
  op.work.flops = 2 * 32 * 64 * 64;
  s.ops = {op};
  const auto wafer = test::wse3();
  sim::SimOptions options;
  options.max_simulated_steps = 64;  // every step simulated
  const double one = sim::simulate_op(s, 0, wafer, options).cycles;
  s.ops[0].work.m = 64;
  s.ops[0].work.products = 2;
  const double grouped = sim::simulate_op(s, 0, wafer, options).cycles;
  s.ops[0].work.products = 1;
  const double single_tile = sim::simulate_op(s, 0, wafer, options).cycles;
  CHECK(grouped == doctest::Approx(2.0 * one).epsilon(0.05));
  CHECK(grouped > 1.5 * single_tile);
}
