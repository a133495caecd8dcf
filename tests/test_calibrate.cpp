// Calibration: reference files, the held-out split, params files, the log-space fit and validation.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "wavel/calibrate/crossval.hpp"
#include "wavel/calibrate/fit.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/io/results.hpp"
#include "wavel/wafer/wafer.hpp"

using wavel::calibrate::ReferencePoint;
using wavel::calibrate::ReferenceSet;
using wavel::cost::CostParams;
using wavel::workload::Phase;

namespace {

std::string reference_path() {
  return wavel::test::source_path("tests/data/reference/waferllm_measured.yaml").string();
}

// Every formatted diagnostic of a reference text, one per line; "" if it parses.
std::string reference_errors(const std::string& text) {
  try {
    wavel::calibrate::parse_reference(text, "ref.yaml");
  } catch (const wavel::DataError& e) {
    CHECK(e.code() == wavel::ExitCode::data_error);
    return e.what();
  }
  return "";
}

std::string params_errors(const std::string& text) {
  try {
    wavel::cost::parse_params(text, "params.yaml", CostParams{});
  } catch (const wavel::ConfigError& e) {
    CHECK(e.code() == wavel::ExitCode::config);
    return e.what();
  }
  return "";
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

bool same_bits(const CostParams& a, const CostParams& b) {
  for (const auto& info : wavel::cost::param_registry()) {
    if (!same_bits(a.*info.field, b.*info.field)) return false;
  }
  return true;
}

// A stand-in cost model with the shape of the real one: compute that shrinks with the region's area,
// hops that grow with its side, and routing stages that grow with the square root of the side
// (a two-level reduction tree). Each parameter leaves a distinct fingerprint across grid sizes.
double synthetic_tpr(const ReferencePoint& point, const CostParams& p) {
  const double side = static_cast<double>(point.grid_pes);
  const double layers = point.model == "llama2-13b" ? 40.0 : 32.0;
  const double clock_hz = 1.1e9;
  if (point.phase == Phase::decode) {
    const double work = 4.0e8 + 2.0e4 * static_cast<double>(point.context_tokens);
    const double cycles = work / (side * side) * (p.scalar_op_cycles / 3.0) + p.alpha_cycles_per_hop * 4.0 * side +
                          p.beta_cycles_per_stage * 2.0 * std::sqrt(side) + p.gemv_fixed_cycles * 7.0;
    return clock_hz / (layers * cycles);
  }
  const double tokens = static_cast<double>(point.input_tokens);
  const double work = 3.0e6 * tokens;
  const double cycles = work * (p.gemm_k_cycles / 40.0) / (side * side) + p.alpha_cycles_per_hop * 2.0 * side * 8.0 +
                        p.beta_cycles_per_stage * std::sqrt(side) * 3.0 + p.gemv_fixed_cycles * 7.0;
  return tokens * clock_hz / (layers * cycles);
}

ReferencePoint make_point(const std::string& model, Phase phase, std::int64_t tokens, std::int64_t grid,
                          int line) {
  ReferencePoint p;
  p.model = model;
  p.phase = phase;
  (phase == Phase::decode ? p.context_tokens : p.input_tokens) = tokens;
  p.grid_pes = grid;
  p.line = line;
  p.column = 5;
  return p;
}

// Measurements that `synthetic_tpr` reproduces exactly at `truth`.
ReferenceSet synthetic_set(const CostParams& truth) {
  ReferenceSet set;
  set.file = "synthetic.yaml";
  set.source = "synthetic";
  set.wafer = "wse2";
  int line = 1;
  for (std::int64_t grid : {240, 360, 480, 600, 720}) {
    set.points.push_back(make_point("llama3-8b", Phase::decode, 4096, grid, line++));
  }
  for (std::int64_t grid : {300, 420, 540, 660}) {
    set.points.push_back(make_point("llama2-13b", Phase::decode, 2048, grid, line++));
  }
  for (std::int64_t grid : {360, 480, 600, 720}) {
    set.points.push_back(make_point("llama3-8b", Phase::prefill, 4096, grid, line++));
  }
  for (auto& p : set.points) p.tpr_tokens_per_s = synthetic_tpr(p, truth);
  return set;
}

}  // namespace

TEST_CASE("the published WaferLLM reference file loads with positions") {
  const auto set = wavel::calibrate::load_reference(reference_path());
  CHECK(set.wafer == "wse2");
  CHECK(set.source.find("WaferLLM") != std::string::npos);
  REQUIRE(set.points.size() == 12);  // LLaMA-3-8B and LLaMA-2-13B, three grids per phase
  const auto& first = set.points[0];
  CHECK(first.model == "llama3-8b");
  CHECK(first.phase == Phase::decode);
  CHECK(first.context_tokens == 4096);
  CHECK(first.input_tokens == 0);
  CHECK(first.tokens() == 4096);
  CHECK(first.grid_pes == 420);
  CHECK(first.tpr_tokens_per_s == 2699.9);
  CHECK(first.line == 11);
  CHECK(first.column == 5);
  const auto& last = set.points[5];
  CHECK(last.phase == Phase::prefill);
  CHECK(last.input_tokens == 4096);
  CHECK(last.context_tokens == 0);
  CHECK(last.grid_pes == 720);
  CHECK(last.tpr_tokens_per_s == 27686.5);
  CHECK(last.line == 16);
}

TEST_CASE("a missing reference file is InputMissingError") {
  try {
    wavel::calibrate::load_reference("/nonexistent/reference.yaml");
    FAIL("expected an error");
  } catch (const wavel::InputMissingError& e) {
    CHECK(e.code() == wavel::ExitCode::no_input);
    CHECK(std::string(e.what()).find("/nonexistent/reference.yaml") != std::string::npos);
  }
}

TEST_CASE("every problem in a reference file is reported at once with line:col") {
  const std::string text =
      "source: test\n"
      "wafer: wse2\n"
      "points:\n"
      "  - {model: llama3-8b, phase: decode, context_tokens: 4096, grid: 420, tpr_tokens_per_s: 2699.9, gird: 1}\n"
      "  - {model: llama3-8b, phase: prefil, input_tokens: 4096, grid: 480, tpr_tokens_per_s: 20320.6}\n"
      "  - {model: llama3-8b, phase: decode, context_tokens: 4096, input_tokens: 4096, grid: 540, tpr_tokens_per_s: 1}\n"
      "  - {model: llama3-8b, phase: decode, context_tokens: 4096, grid: 660, tpr_tokens_per_s: -3}\n"
      "  - {model: lama3-8b, phase: decode, context_tokens: 4096, grid: 660, tpr_tokens_per_s: 3}\n"
      "  - {model: llama3-8b, phase: prefill, context_tokens: 4096, grid: 800, tpr_tokens_per_s: 3}\n"
      "  - {model: llama3-8b, phase: decode, context_tokens: 0, tpr_tokens_per_s: 3}\n"
      "kernels:\n"
      "  - {kernel: meshgemv, time_s: 1.2e-6}\n";
  const std::string errors = reference_errors(text);
  const std::vector<std::string> expected{
      "ref.yaml:4:98: error: points[0].gird: unknown key; did you mean 'grid'?",
      "ref.yaml:5:31: error: points[1].phase: unknown value 'prefil'; did you mean 'prefill'?",
      "ref.yaml:6:61: error: points[2].input_tokens: give exactly one of context_tokens (decode) or input_tokens "
      "(prefill), not both",
      "ref.yaml:7:90: error: points[3].tpr_tokens_per_s: must be >= 1e-06, got -3",
      "ref.yaml:8:13: error: points[4].model: unknown model 'lama3-8b'; did you mean 'llama3-8b'? (presets: "
      "llama3-8b, llama2-13b, codellama-34b, llama3-70b, qwen2-72b, mixtral-8x7b, qwen3-30b-a3b, "
      "deepseek-v2-lite)",
      "ref.yaml:9:40: error: points[5].context_tokens: not allowed for a prefill point; give input_tokens",
      "ref.yaml:9:68: error: points[5].grid: a region of 800 x 800 PEs does not fit the wse2 kernel rectangle "
      "(largest square side 750)",
      "ref.yaml:10:5: error: points[6].grid: missing required key",
      "ref.yaml:10:55: error: points[6].context_tokens: must be >= 1, got 0",
  };
  std::string joined;
  for (const auto& e : expected) joined += (joined.empty() ? "" : "\n") + e;
  CHECK(errors == joined);
}

TEST_CASE("reference file structure errors") {
  SUBCASE("unknown and missing top-level keys") {
    const std::string errors = reference_errors(
        "source: x\n"
        "wafr: wse2\n"
        "points:\n"
        "  - {model: llama3-8b, phase: decode, context_tokens: 1, grid: 10, tpr_tokens_per_s: 1}\n");
    CHECK(errors.find("ref.yaml:1:1: error: wafer: missing required key") != std::string::npos);
    CHECK(errors.find("ref.yaml:2:1: error: wafr: unknown key; did you mean 'wafer'?") != std::string::npos);
  }
  SUBCASE("an unknown wafer and an empty point list") {
    const std::string errors = reference_errors("source: x\nwafer: wse4\npoints: []\n");
    CHECK(errors.find("ref.yaml:2:8: error: wafer: unknown value 'wse4'") != std::string::npos);
    CHECK(errors.find("ref.yaml:3:9: error: points: expected a non-empty list of measurements") != std::string::npos);
  }
  SUBCASE("a YAML syntax error is a data error too") {
    const std::string errors = reference_errors("source: x\npoints: [\n");
    CHECK(errors.find("ref.yaml:") == 0);
    CHECK(errors.find("invalid YAML") != std::string::npos);
  }
  SUBCASE("kernels may hold anything") {
    CHECK(reference_errors("source: x\nwafer: wse3\n"
                           "points:\n  - {model: llama2-13b, phase: prefill, input_tokens: 8, grid: 1, "
                           "tpr_tokens_per_s: 1e3}\n"
                           "kernels: {free: [form, 1, {x: y}]}\n") == "");
  }
}

TEST_CASE("the held-out split keeps interior grids of each (model, phase) group") {
  const auto set = wavel::calibrate::load_reference(reference_path());
  const std::vector<bool> mask = wavel::calibrate::held_out_mask(set);
  // decode 420 / 540 / 660 and prefill 480 / 600 / 720: the middle grid of each is held out.
  CHECK(mask == std::vector<bool>{false, true, false, false, true, false, false, true, false, false, true, false});

  SUBCASE("order in the file does not matter, groups under 3 points train, and the last point never tests") {
    ReferenceSet shuffled;
    int line = 1;
    for (std::int64_t grid : {700, 100, 500, 300, 200, 600}) {
      shuffled.points.push_back(make_point("llama3-8b", Phase::decode, 64, grid, line++));
    }
    for (std::int64_t grid : {400, 300}) {
      shuffled.points.push_back(make_point("llama3-8b", Phase::prefill, 64, grid, line++));
    }
    shuffled.points.push_back(make_point("llama2-13b", Phase::decode, 64, 300, line++));
    // Sorted decode grids 100 200 300 500 600 700: ranks 1 and 3 (200, 500) are held out; rank 5 is last.
    CHECK(wavel::calibrate::held_out_mask(shuffled) ==
          std::vector<bool>{false, false, true, false, true, false, false, false, false});
  }
}

TEST_CASE("the params registry describes every field once") {
  const auto& registry = wavel::cost::param_registry();
  CHECK(registry.size() == sizeof(CostParams) / sizeof(double));
  const CostParams defaults;
  for (std::size_t i = 0; i < registry.size(); ++i) {
    const auto& info = registry[i];
    CAPTURE(info.name);
    CHECK(!info.units.empty());
    CHECK(!info.description.empty());
    CHECK(info.min_value < info.max_value);
    CHECK(defaults.*info.field >= info.min_value);
    CHECK(defaults.*info.field <= info.max_value);
    for (std::size_t j = 0; j < i; ++j) {
      CHECK(registry[j].name != info.name);
      CHECK(registry[j].field != info.field);
    }
  }
  auto wafer = *wavel::wafer::find_wafer_preset("wse2");
  wafer.alpha_cycles_per_hop = 1.5;
  wafer.beta_cycles_per_stage = 44.0;
  const CostParams p = wavel::cost::default_params(wafer);
  CHECK(p.alpha_cycles_per_hop == 1.5);
  CHECK(p.beta_cycles_per_stage == 44.0);
  CHECK(p.gemm_k_cycles == defaults.gemm_k_cycles);
}

TEST_CASE("params YAML round-trips bit for bit, with units in comments" * doctest::test_suite("mpi")) {
  CostParams p;
  p.alpha_cycles_per_hop = 0.1 + 0.2;
  p.beta_cycles_per_stage = 1.0 / 3.0 * 100.0;
  p.gemm_k_cycles = 0.7000000000000001;
  p.gemv_fmac_issue_cycles = 1e-2;
  p.scalar_op_cycles = std::nextafter(6.4, 7.0);
  p.gemm_step_cycles = 0.0;
  p.gemv_fixed_cycles = 999999.9999999999;
  p.route_switch_cycles = 5e-324;  // smallest subnormal
  const std::string text = wavel::cost::params_to_yaml(p, "fitted by test\nsecond line");
  CHECK(text.rfind("# fitted by test\n# second line\n", 0) == 0);
  CHECK(text.find("alpha_cycles_per_hop: 0.30000000000000004") != std::string::npos);
  CHECK(text.find("# [cycles/hop]") != std::string::npos);
  CHECK(text.find("# [cycles/stage]") != std::string::npos);
  const CostParams back = wavel::cost::parse_params(text, "round.yaml", CostParams{});
  CHECK(same_bits(back, p));

  const CostParams defaults;
  CHECK(same_bits(wavel::cost::parse_params(wavel::cost::params_to_yaml(defaults, ""), "d.yaml", p), defaults));
  // A partial file overrides only what it names; an empty one nothing.
  const CostParams partial = wavel::cost::parse_params("beta_cycles_per_stage: 55\n", "p.yaml", p);
  CHECK(partial.beta_cycles_per_stage == 55.0);
  CHECK(same_bits(partial.alpha_cycles_per_hop, p.alpha_cycles_per_hop));
  CHECK(same_bits(wavel::cost::parse_params("", "empty.yaml", p), p));

  const auto dir = wavel::test::scratch_dir("calibrate_params");
  const auto path = (dir / "params.yaml").string();
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) wavel::io::write_file_atomically(path, text);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(same_bits(wavel::cost::load_params(path, CostParams{}), p));
  CHECK_THROWS_AS(wavel::cost::load_params((dir / "missing.yaml").string(), p), wavel::InputMissingError);
}

TEST_CASE("params file errors are located config errors") {
  const std::string errors = params_errors(
      "alpha_cycles_per_hop: 1\n"
      "beta_cycles_per_stag: 30\n"
      "scalar_op_cycles: 60\n"
      "gemv_fixed_cycles: fast\n"
      "alpha_cycles_per_hop: 2\n"
      "gemm_step_cycles: -1\n");
  CHECK(errors ==
        "params.yaml:2:1: error: beta_cycles_per_stag: unknown key; did you mean 'beta_cycles_per_stage'?\n"
        "params.yaml:3:19: error: scalar_op_cycles: must be <= 50, got 60\n"
        "params.yaml:4:20: error: gemv_fixed_cycles: expected a number, got 'fast'\n"
        "params.yaml:5:1: error: alpha_cycles_per_hop: duplicate key (first given at line 1)\n"
        "params.yaml:6:19: error: gemm_step_cycles: must be >= 0, got -1");
  CHECK(params_errors("[1, 2]\n").find("params.yaml:1:1: error: expected a map") == 0);
  // Keys of earlier versions say what replaced them.
  const std::string removed = params_errors("alpha_cycles_per_hop: 1\nkernel_overhead_cycles: 247\nelementwise_efficiency: 0.5\n");
  CHECK(removed.find("params.yaml:2:1: error: kernel_overhead_cycles: was removed: a uniform per-op launch has no "
                     "hardware cause") == 0);
  CHECK(removed.find("params.yaml:3:1: error: elementwise_efficiency: was removed: elementwise ops run at the FMAC's "
                     "port-bound rate") != std::string::npos);
  CHECK(removed.find("unknown key") == std::string::npos);
}

TEST_CASE("validate reports per-point errors and MAPE on each side of the split" * doctest::test_suite("mpi")) {
  const auto set = wavel::calibrate::load_reference(reference_path());
  // Relative error ((grid - 400) / 100)^2 percent: 420 -> 0.04 %, 540 -> 1.96 %, 660 -> 6.76 %,
  // 480 -> 0.64 %, 600 -> 4 %, 720 -> 10.24 %; decode below the measurement, prefill above.
  const wavel::calibrate::Predictor predict = [](const ReferencePoint& p, const CostParams&) {
    const double x = (static_cast<double>(p.grid_pes) - 400.0) / 100.0;
    const double sign = p.phase == Phase::decode ? -1.0 : 1.0;
    return p.tpr_tokens_per_s * (1.0 + sign * x * x / 100.0);
  };
  const auto report = wavel::calibrate::validate(set, predict, CostParams{});
  REQUIRE(report.points.size() == 12);
  // The same grids for both models, so the errors repeat.
  const std::vector<double> rel{-0.0004, -0.0196, -0.0676, 0.0064, 0.04, 0.1024};
  for (std::size_t i = 0; i < 12; ++i) {
    CAPTURE(i);
    CHECK(report.points[i].measured == set.points[i].tpr_tokens_per_s);
    CHECK(report.points[i].rel_error == doctest::Approx(rel[i % 6]).epsilon(1e-12));
  }
  CHECK(report.train_points == 8);
  CHECK(report.test_points == 4);
  CHECK(report.train_mape_pct == doctest::Approx((0.04 + 6.76 + 0.64 + 10.24) / 4).epsilon(1e-12));
  CHECK(report.test_mape_pct == doctest::Approx((1.96 + 4.0) / 2).epsilon(1e-12));
  CHECK(report.mape_pct == doctest::Approx(23.64 / 6).epsilon(1e-12));  // twice the same six errors

  SUBCASE("tables: the CSV header starts with the six agreed columns") {
    const auto table = wavel::calibrate::validation_table(set, report);
    CHECK(table.rows() == 12);
    const auto dir = wavel::test::scratch_dir("calibrate_validation");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const auto csv = (dir / "validation.csv").string();
    if (rank == 0) wavel::io::write_csv(csv, table);
    MPI_Barrier(MPI_COMM_WORLD);
    const std::string text = wavel::test::read_text(csv);
    CHECK(text.rfind("model,phase,grid,measured_tokens_per_s,predicted_tokens_per_s,rel_error,", 0) == 0);
    CHECK(text.find("\nllama3-8b,decode,540,2501.5,") != std::string::npos);
    for (const auto& column : table.columns) {
      CAPTURE(column.name);
      CHECK(!(column.units.empty() && column.name != "model" && column.name != "phase"));
    }
    // The same table goes into results.h5 with its units.
    const auto h5 = (dir / "results.h5").string();
    wavel::io::write_results_h5(h5, {}, {table}, MPI_COMM_WORLD);
    const auto back = wavel::io::read_table_h5(h5, "validation");
    REQUIRE(back.columns.size() == table.columns.size());
    CHECK(back.columns[2].units == "PEs");
    CHECK(std::get<std::vector<std::int64_t>>(back.columns[7].values) ==
          std::vector<std::int64_t>{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0});
  }
}

TEST_CASE("the fit recovers known shared parameters from exact synthetic measurements") {
  CostParams truth;
  truth.alpha_cycles_per_hop = 1.37;
  truth.beta_cycles_per_stage = 41.5;
  truth.scalar_op_cycles = 8.65;
  truth.gemm_k_cycles = 52.3;
  const ReferenceSet set = synthetic_set(truth);
  const std::vector<std::string> names{"gemm_k_cycles", "beta_cycles_per_stage", "alpha_cycles_per_hop",
                                       "scalar_op_cycles"};
  const CostParams start;  // the defaults: 1, 30, 38, 6.4
  const auto result = wavel::calibrate::calibrate(set, synthetic_tpr, start, names);
  CHECK(result.converged);
  CHECK(result.fit_names == std::vector<std::string>{"alpha_cycles_per_hop", "beta_cycles_per_stage",
                                                     "gemm_k_cycles", "scalar_op_cycles"});
  for (const auto& info : wavel::cost::param_registry()) {
    CAPTURE(info.name);
    const double want = truth.*info.field;
    const double got = result.fitted.*info.field;
    CHECK(std::abs(got - want) <= 1e-3 * want);
  }
  // Fields not named stay exactly at the start.
  CHECK(same_bits(result.fitted.gemv_fixed_cycles, start.gemv_fixed_cycles));
  CHECK(same_bits(result.fitted.route_switch_cycles, start.route_switch_cycles));
  CHECK(result.before.train_mape_pct > 1.0);
  CHECK(result.after.train_mape_pct < 1e-4);
  CHECK(result.after.test_mape_pct < 1e-4);
  CHECK(result.after.test_points == 4);  // 240..720: 360, 600; 300..660: 420; 360..720: 480
  CHECK(result.objective_final < 1e-12);
  CHECK(result.objective_final < result.objective_start);
  CHECK(result.objective_final == wavel::calibrate::log_objective(set, synthetic_tpr, result.fitted));

  SUBCASE("deterministic: the same inputs give the same bits") {
    const auto again = wavel::calibrate::calibrate(set, synthetic_tpr, start, names);
    CHECK(same_bits(again.fitted, result.fitted));
    CHECK(again.iterations == result.iterations);
  }
  SUBCASE("the evaluation cap stops the solver and says so") {
    wavel::calibrate::FitOptions options;
    options.solver.max_evaluations_per_parameter = 1;
    const auto capped = wavel::calibrate::calibrate(set, synthetic_tpr, start, names, options);
    CHECK_FALSE(capped.converged);
    CHECK(capped.iterations < result.iterations);
    CHECK(capped.objective_final <= capped.objective_start);
  }
  SUBCASE("the minimiser does not depend on the start") {
    CostParams other = start;
    other.alpha_cycles_per_hop = 3.0;
    other.beta_cycles_per_stage = 10.0;
    other.gemm_k_cycles = 120.0;
    other.scalar_op_cycles = 3.0;
    const auto from_other = wavel::calibrate::calibrate(set, synthetic_tpr, other, names);
    CAPTURE(from_other.objective_final);
    CAPTURE(from_other.converged);
    for (const auto& name : names) {
      for (const auto& info : wavel::cost::param_registry()) {
        if (info.name != name) continue;
        CAPTURE(name);
        CHECK(std::abs(from_other.fitted.*info.field - result.fitted.*info.field) <= 1e-6 * (truth.*info.field));
      }
    }
  }
  SUBCASE("calibration table") {
    const auto table = wavel::calibrate::calibration_table(result);
    CHECK(table.rows() == 4);
    REQUIRE(table.columns.size() == 6);
    CHECK(table.columns[0].name == "name");
    CHECK(std::get<std::vector<std::string>>(table.columns[0].values)[1] == "beta_cycles_per_stage");
    CHECK(std::get<std::vector<std::string>>(table.columns[1].values)[1] == "cycles/stage");
    CHECK(std::get<std::vector<double>>(table.columns[3].values)[1] == result.fitted.beta_cycles_per_stage);
    CHECK(std::get<std::vector<double>>(table.columns[5].values)[2] == 1e4);
  }
}

TEST_CASE("the fit stays inside the registry bounds") {
  CostParams truth;
  truth.scalar_op_cycles = 65.0;  // impossible: the best in-bounds value is the upper bound, 50
  const ReferenceSet set = synthetic_set(truth);
  const auto result = wavel::calibrate::calibrate(set, synthetic_tpr, CostParams{}, {"scalar_op_cycles"});
  CHECK(result.fitted.scalar_op_cycles <= 50.0);
  CHECK(result.fitted.scalar_op_cycles > 49.75);
  CHECK(wavel::calibrate::parameters_on_bounds(result) == std::vector<std::string>{"scalar_op_cycles"});
  // Every fold of the cross-validation ends there too, and its warning says which bound (issue 40).
  const auto messages = wavel::calibrate::bound_messages(result);
  REQUIRE(messages.size() == 1);
  CHECK(messages[0].find("scalar_op_cycles ended on its upper bound, 50 cycles") == 0);
  const auto cv = wavel::calibrate::cross_validate(set, synthetic_tpr, CostParams{}, {"scalar_op_cycles"},
                                                   wavel::calibrate::FoldBy::model);
  REQUIRE(cv.folds > 0);
  REQUIRE(cv.bound_warnings.size() == static_cast<std::size_t>(cv.folds));
  for (const auto& w : cv.bound_warnings) {
    CAPTURE(w);
    CHECK(w.find(": scalar_op_cycles ended on its upper bound, 50 cycles") != std::string::npos);
    CHECK(w.find("(allowed ") != std::string::npos);
  }
}

TEST_CASE("calibration refuses what it cannot do honestly") {
  const auto set = wavel::calibrate::load_reference(reference_path());
  SUBCASE("fewer training points than parameters") {
    try {
      wavel::calibrate::calibrate(set, synthetic_tpr, CostParams{},
                                  {"alpha_cycles_per_hop", "beta_cycles_per_stage", "gemm_step_cycles",
                                   "gemm_k_cycles", "gemm_fmac_issue_cycles", "gemv_fixed_cycles",
                                   "scalar_op_cycles", "shift_fixed_cycles", "route_switch_cycles"});
      FAIL("expected a DataError");
    } catch (const wavel::DataError& e) {
      CHECK(e.code() == wavel::ExitCode::data_error);
      CHECK(std::string(e.what()).find("only 8 training points") != std::string::npos);
      CHECK(std::string(e.what()).find("9 parameters") != std::string::npos);
    }
  }
  SUBCASE("unknown, repeated and out-of-bounds parameters") {
    CHECK_THROWS_WITH_AS(wavel::calibrate::calibrate(set, synthetic_tpr, CostParams{}, {"beta_cycles_per_stag"}),
                         doctest::Contains("did you mean 'beta_cycles_per_stage'?"), wavel::UsageError);
    CHECK_THROWS_AS(
        wavel::calibrate::calibrate(set, synthetic_tpr, CostParams{}, {"gemm_k_cycles", "gemm_k_cycles"}),
        wavel::UsageError);
    CostParams bad;
    bad.alpha_cycles_per_hop = 0.0;
    CHECK_THROWS_AS(wavel::calibrate::calibrate(set, synthetic_tpr, bad, {"alpha_cycles_per_hop"}), wavel::UsageError);
  }
  SUBCASE("a start the model cannot predict") {
    const wavel::calibrate::Predictor zero = [](const ReferencePoint&, const CostParams&) { return 0.0; };
    CHECK_THROWS_WITH_AS(wavel::calibrate::calibrate(set, zero, CostParams{}, {"alpha_cycles_per_hop"}),
                         doctest::Contains(":11:5: error: points[0]: the cost model predicts 0"), wavel::DataError);
  }
  SUBCASE("no parameters: the start, evaluated") {
    const auto result = wavel::calibrate::calibrate(set, synthetic_tpr, CostParams{}, {});
    CHECK(same_bits(result.fitted, CostParams{}));
    CHECK(result.iterations == 0);
    CHECK(result.after.mape_pct == result.before.mape_pct);
  }
}

TEST_CASE("a bound warning names the bound, the value and the range (issue 40)") {
  CHECK(wavel::calibrate::bound_warning("alpha_cycles_per_hop", 0.1, {0.1, 100}, "cycles/hop") ==
        "alpha_cycles_per_hop ended on its lower bound, 0.1 cycles/hop (allowed 0.1 .. 100): the model's form, not the "
        "data, decided it");
  CHECK(wavel::calibrate::bound_warning("x", 100, {0.1, 100}, "s").find("its upper bound, 100 s") != std::string::npos);
}
