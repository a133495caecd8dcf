// `calibrate CONFIG.yaml`: fit the cost model to the simulator on a stratified sample of the ops of
// the schedules a sweep produces (baselines and search fronts), with a held-out part.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "wavel/baselines/baselines.hpp"
#include "wavel/calibrate/fit.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/driver/commands.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/version_info.hpp"

namespace wavel::driver {

namespace fs = std::filesystem;

namespace {

// One simulated op: where it lives, and the simulator's time for it.
struct OpSample {
  const meshir::Schedule* schedule = nullptr;
  int op = 0;
  std::string kernel;
  std::string phase;
  std::int64_t used_pes = 0;
  double sim_cycles = 0;
};

// Spearman rank correlation (average ranks for ties); NaN for fewer than two points.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = a.size();
  if (n < 2) return std::nan("");
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return v[i] < v[j]; });
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n;) {
      std::size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i + j) / 2.0) + 1.0;
      i = j + 1;
    }
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ma += ra[i];
    mb += rb[i];
  }
  ma /= static_cast<double>(n);
  mb /= static_cast<double>(n);
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : std::nan("");
}

double held_out_spearman(const calibrate::ValidationReport& r) {
  std::vector<double> predicted, measured;
  for (const auto& p : r.points) {
    if (!p.held_out) continue;
    predicted.push_back(p.predicted_tokens_per_s);
    measured.push_back(p.measured_tokens_per_s);
  }
  return spearman(predicted, measured);
}

}  // namespace

std::vector<std::string> default_sim_fit_names() {
  return {"alpha_cycles_per_hop", "beta_cycles_per_stage", "gemm_efficiency", "step_overhead_cycles",
          "kernel_overhead_cycles"};
}

void calibrate_against_sim_command(const std::string& config_path, const std::string& params_path,
                                   const std::vector<std::string>& fit_names, const std::string& output_dir,
                                   const RunContext& context, std::ostream& out) {
  const std::string text = read_file_on_root(config_path, context.comm);
  std::vector<std::string> overrides;
  if (!params_path.empty()) overrides.push_back("cost.params_file=" + params_path);
  const config::Config config = config::parse_config(text, config_path, overrides);
  const auto& start = config.cost.params;

  // Schedules of every setting: the placed baselines and the search front. Every rank builds the
  // same ones (calibration runs are small), so the fit is identical everywhere.
  std::vector<meshir::Schedule> schedules;
  std::vector<std::string> phases;
  std::vector<bool> decodes;
  std::vector<std::int64_t> prompts;
  for (const auto& setting : config::expand_sweep(config)) {
    const auto w = workload::build_workload(config.workloads.models.at(setting.model_index).spec, setting.shape);
    std::vector<std::pair<std::string, meshir::Schedule>> seeds{{"fullchip", baselines::build_fullchip(w, config.wafer)}};
    if (auto s = baselines::build_waferllm_tuned(w, config.wafer, start)) seeds.emplace_back("waferllm", *s);
    const auto found = search::search_setting(w, config.wafer, start, search::options_from(config.search), seeds);
    for (const auto& p : found.front) {
      schedules.push_back(p.schedule);
      phases.emplace_back(workload::to_string(setting.shape.phase));
      decodes.push_back(setting.shape.phase == workload::Phase::decode);
      prompts.push_back(setting.shape.input_tokens);
    }
    for (const auto& [name, schedule] : seeds) {
      if (cost::evaluate(schedule, config.wafer, start, setting.shape.phase == workload::Phase::decode,
                         setting.shape.input_tokens).sram_headroom < 0) {
        continue;
      }
      schedules.push_back(schedule);
      phases.emplace_back(workload::to_string(setting.shape.phase));
      decodes.push_back(setting.shape.phase == workload::Phase::decode);
      prompts.push_back(setting.shape.input_tokens);
    }
  }
  // Simulate them (the simulator runs with the start parameters) and keep each distinct op once.
  std::vector<OpSample> all;
  sim::SimOptions options;
  options.model_ramps = config.sim.model_ramps;
  for (std::size_t s = 0; s < schedules.size(); ++s) {
    const auto simulated = sim::simulate(schedules[s], config.wafer, start, decodes[s], prompts[s], options);
    for (std::size_t i = 0; i < schedules[s].ops.size(); ++i) {
      if (simulated.ops[i].reused_from >= 0 || simulated.ops[i].cycles <= 0) continue;
      const auto& op = schedules[s].ops[i];
      all.push_back(OpSample{&schedules[s], static_cast<int>(i), std::string(meshir::to_string(op.kernel)),
                             phases[s], op.used.pes(), simulated.ops[i].cycles});
    }
  }
  // Stratify by (kernel, phase, power-of-two region size); a counter-based sample of each stratum.
  std::map<std::tuple<std::string, std::string, int>, std::vector<std::size_t>> strata;
  for (std::size_t i = 0; i < all.size(); ++i) {
    const int size_class = static_cast<int>(std::floor(std::log2(static_cast<double>(std::max<std::int64_t>(1, all[i].used_pes)))));
    strata[{all[i].kernel, all[i].phase, size_class}].push_back(i);
  }
  constexpr std::size_t kPerStratum = 8;
  std::vector<OpSample> samples;
  for (const auto& [key, members] : strata) {
    const auto pick = sim::sample_candidates(members.size(), kPerStratum, static_cast<std::uint64_t>(config.search.seed));
    for (std::size_t j : pick.indices) samples.push_back(all[members[j]]);
  }
  if (samples.empty()) throw DataError({Diagnostic{config_path, 0, 0, "workloads", "no schedule to simulate"}});

  // Each sample becomes a "measurement" whose rate is 1e9 / cycles, so the reference fitter (least
  // squares in log space, held-out split by kernel/phase group and size) applies unchanged.
  calibrate::ReferenceSet set;
  set.file = config_path;
  set.source = "wavel-dse simulator on the schedules of " + config_path;
  set.wafer = config.wafer.preset;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    calibrate::ReferencePoint p;
    p.model = samples[i].kernel;
    p.phase = samples[i].phase == "decode" ? workload::Phase::decode : workload::Phase::prefill;
    p.grid_pes = samples[i].used_pes;
    p.line = static_cast<int>(i);
    (p.phase == workload::Phase::decode ? p.context_tokens : p.input_tokens) = 1;
    p.tpr_tokens_per_s = 1e9 / samples[i].sim_cycles;
    set.points.push_back(p);
  }
  const auto wafer = config.wafer;
  const calibrate::Predictor predict = [&samples, wafer](const calibrate::ReferencePoint& p, const cost::CostParams& params) {
    const OpSample& s = samples[static_cast<std::size_t>(p.line)];
    return 1e9 / cost::op_cost(*s.schedule, s.schedule->ops[static_cast<std::size_t>(s.op)], wafer, params).total_cycles;
  };
  const auto names = fit_names.empty() ? default_sim_fit_names() : fit_names;
  const auto result = calibrate::calibrate(set, predict, start, names);

  const std::string dir = output_dir.empty() ? "results/runs/calibrate-sim-" + fs::path(config_path).stem().string() : output_dir;
  const OutputDirLock lock = make_output_dir(dir, context.comm);
  // The pairs with their features, before and after the fit.
  std::vector<std::string> kernel, phase;
  std::vector<std::int64_t> pes, op, held;
  std::vector<double> sim_cycles, model_before, model_after;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    kernel.push_back(samples[i].kernel);
    phase.push_back(samples[i].phase);
    pes.push_back(samples[i].used_pes);
    op.push_back(samples[i].op);
    held.push_back(result.after.points[i].held_out ? 1 : 0);
    sim_cycles.push_back(samples[i].sim_cycles);
    model_before.push_back(1e9 / result.before.points[i].predicted_tokens_per_s);
    model_after.push_back(1e9 / result.after.points[i].predicted_tokens_per_s);
  }
  const io::Table pairs{"sim_calibration_pairs",
                        {{"kernel", "", kernel},
                         {"phase", "", phase},
                         {"used_pes", "PEs", pes},
                         {"op", "1", op},
                         {"held_out", "bool", held},
                         {"sim_cycles", "cycles", sim_cycles},
                         {"model_cycles_before", "cycles", model_before},
                         {"model_cycles_after", "cycles", model_after}}};
  const double rho_before = held_out_spearman(result.before), rho_after = held_out_spearman(result.after);
  std::ostringstream header;
  header << "Fitted by: wavel-dse calibrate " << config_path << " --fit ";
  for (std::size_t i = 0; i < result.fit_names.size(); ++i) header << (i ? "," : "") << result.fit_names[i];
  header << "\nTool: " << WAVEL_VERSION << " (git " << WAVEL_GIT_HASH << ")\n"
         << "Against the simulator: " << samples.size() << " sampled ops, " << result.after.test_points
         << " held out; held-out MAPE " << result.before.test_mape_pct << " % -> " << result.after.test_mape_pct
         << " %, Spearman " << rho_before << " -> " << rho_after;
  const std::string params_text = cost::params_to_yaml(result.fitted, header.str());
  std::vector<io::Attribute> attrs{{"format_version", std::string("wavel-results/1")},
                                   {"tool_version", std::string(WAVEL_VERSION)},
                                   {"git_hash", std::string(WAVEL_GIT_HASH)},
                                   {"command", std::string("calibrate (simulator)")},
                                   {"config_file", config_path},
                                   {"config_text", text},
                                   {"params_yaml", params_text},
                                   {"test_mape_pct_before", result.before.test_mape_pct},
                                   {"test_mape_pct", result.after.test_mape_pct},
                                   {"test_spearman_before", rho_before},
                                   {"test_spearman", rho_after},
                                   {"mpi_ranks", std::int64_t{context.ranks}}};
  const auto fitted = calibrate::calibration_table(result);
  io::write_results_h5((fs::path(dir) / "results.h5").string(), attrs, {pairs, fitted}, context.comm);
  on_root_agreed(context.comm, 0, [&] {
    io::write_file_atomically((fs::path(dir) / "params.yaml").string(), params_text);
    io::write_csv((fs::path(dir) / "sim_pairs.csv").string(), pairs);
    io::write_csv((fs::path(dir) / "calibration.csv").string(), fitted);
  });
  if (context.rank != 0) return;
  out << "calibration against the simulator: " << schedules.size() << " schedules, " << all.size()
      << " distinct ops simulated, " << samples.size() << " sampled from " << strata.size()
      << " strata (kernel, phase, power-of-two region size)\n";
  out << std::setprecision(4) << "held-out (" << result.after.test_points << " ops): MAPE " << result.before.test_mape_pct
      << " % -> " << result.after.test_mape_pct << " %, Spearman " << rho_before << " -> " << rho_after
      << "; training (" << result.after.train_points << " ops): MAPE " << result.before.train_mape_pct << " % -> "
      << result.after.train_mape_pct << " %\n";
  print_fitted_parameters(out, result);
  out << "written: " << dir << "/params.yaml (run again with --params), sim_pairs.csv, calibration.csv, results.h5\n";
}

}  // namespace wavel::driver
