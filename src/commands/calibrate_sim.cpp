// `calibrate CONFIG.yaml`: how far the cost model is from the independent simulator before any
// fitting (MAPE and Spearman per setting over its front and baselines, and per kernel), then a fit of
// the model's free parameters to a stratified sample of simulated ops and what it changes. The
// simulations are spread over the MPI ranks; every rank ends with the same results.
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "wavel/baselines/baselines.hpp"
#include "wavel/calibrate/fit.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/cost/fit_provenance.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/commands/commands.hpp"
#include "wavel/commands/reference_cv.hpp"
#include "wavel/compare/sim_agreement.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/version_info.hpp"

namespace wavel::driver {

namespace fs = std::filesystem;

namespace {

// One schedule of a setting: its front point or baseline.
struct Entry {
  meshir::Schedule schedule;
  std::int64_t setting = 0;
  std::string label;  // "front.0", "fullchip", "waferllm"; over several wafers "part1.front.0"
  std::string phase;
  bool decode = true;
  std::int64_t prompt_tokens = 0;
};

// The simulator's answer for one schedule (identical on every rank after the exchange).
struct Outcome {
  double latency_s = 0;
  double tokens_per_s = 0;
  std::vector<double> op_cycles;   // each op alone (no colour switch, no contention)
  std::vector<char> own;           // the op was simulated, not reused from an identical one
  std::string error;               // non-empty: the simulation failed with this message
};

// Schedule s is simulated by rank s mod ranks, then broadcast from there: the results do not
// depend on the number of ranks.
std::vector<Outcome> simulate_distributed(const std::vector<Entry>& entries, const config::Config& config,
                                          const engine::RunContext& context) {
  sim::SimOptions options;
  options.model_ramps = config.sim.model_ramps;
  options.seed = static_cast<std::uint64_t>(config.search.seed);
  std::vector<Outcome> out(entries.size());
  for (std::size_t s = 0; s < entries.size(); ++s) {
    if (static_cast<int>(s % static_cast<std::size_t>(context.ranks)) != context.rank) continue;
    try {
      const auto r = sim::simulate(entries[s].schedule, config.wafer, entries[s].decode, entries[s].prompt_tokens, options);
      out[s].latency_s = r.latency_s;
      out[s].tokens_per_s = r.tokens_per_s;
      for (const auto& op : r.ops) {
        out[s].op_cycles.push_back(op.cycles);
        out[s].own.push_back(op.reused_from < 0 ? 1 : 0);
      }
    } catch (const std::exception& e) {
      out[s].error = e.what();
    }
  }
  for (std::size_t s = 0; s < entries.size(); ++s) {
    const int owner = static_cast<int>(s % static_cast<std::size_t>(context.ranks));
    Outcome& o = out[s];
    long long error_size = static_cast<long long>(o.error.size());
    MPI_Bcast(&error_size, 1, MPI_LONG_LONG, owner, context.comm);
    if (error_size > 0) {
      o.error.resize(static_cast<std::size_t>(error_size));
      MPI_Bcast(o.error.data(), static_cast<int>(error_size), MPI_CHAR, owner, context.comm);
      continue;
    }
    const std::size_t ops = entries[s].schedule.ops.size();
    std::vector<double> buffer(2 + 2 * ops, 0.0);
    if (context.rank == owner) {
      buffer[0] = o.latency_s;
      buffer[1] = o.tokens_per_s;
      for (std::size_t i = 0; i < ops; ++i) {
        buffer[2 + i] = o.op_cycles[i];
        buffer[2 + ops + i] = o.own[i];
      }
    }
    MPI_Bcast(buffer.data(), static_cast<int>(buffer.size()), MPI_DOUBLE, owner, context.comm);
    o.latency_s = buffer[0];
    o.tokens_per_s = buffer[1];
    o.op_cycles.assign(buffer.begin() + 2, buffer.begin() + 2 + static_cast<std::ptrdiff_t>(ops));
    o.own.resize(ops);
    for (std::size_t i = 0; i < ops; ++i) o.own[i] = buffer[2 + ops + i] != 0.0 ? 1 : 0;
  }
  for (std::size_t s = 0; s < entries.size(); ++s) {
    if (!out[s].error.empty()) {
      throw DataError({Diagnostic{"", 0, 0, "sim",
                                  "setting " + std::to_string(entries[s].setting) + ", schedule '" + entries[s].label +
                                      "' could not be simulated: " + out[s].error}});
    }
  }
  return out;
}

// One distinct simulated op.
struct OpSample {
  std::size_t entry = 0;
  int op = 0;
  std::string kernel;
  std::string phase;
  std::int64_t used_pes = 0;
  double sim_cycles = 0;
};

double held_out_spearman(const calibrate::ValidationReport& r) {
  std::vector<double> predicted, measured;
  for (const auto& p : r.points) {
    if (!p.held_out) continue;
    predicted.push_back(p.predicted);
    measured.push_back(p.measured);
  }
  return spearman(predicted, measured);
}

// The fitted sample's rows (op cycles, training and held out) go in the same table as the schedules'
// and kernels', so each MAPE is printed once, with one definition.
void append_sample_agreements(const calibrate::CalibrationResult& result, std::vector<Agreement>* before,
                              std::vector<Agreement>* after) {
  for (const bool held : {false, true}) {
    std::vector<double> model_b, model_a, sim;
    for (std::size_t i = 0; i < result.before.points.size(); ++i) {
      if (result.before.points[i].held_out != held) continue;
      model_b.push_back(result.before.points[i].predicted);
      model_a.push_back(result.after.points[i].predicted);
      sim.push_back(result.before.points[i].measured);
    }
    const std::string scope = held ? "sampled ops, held out" : "sampled ops, training";
    for (auto [rows, model] : {std::pair{before, &model_b}, std::pair{after, &model_a}}) {
      Agreement a = agreement(scope, "", *model, sim);
      if (!a.meets_targets) a.differs = "the kernels above, 8 ops per (kernel, phase, size) stratum";
      rows->push_back(a);
    }
  }
}

// Per-setting (schedule latencies) and per-kernel (op cycles) agreement of the model at `params`.
std::vector<Agreement> agreements(const std::vector<Entry>& entries, const std::vector<Outcome>& sims,
                                  const std::vector<OpSample>& ops, const config::Config& config,
                                  const cost::CostParams& params, std::vector<double>* model_latency) {
  std::map<std::int64_t, std::pair<std::vector<double>, std::vector<double>>> by_setting;
  std::vector<double> all_model, all_sim;
  if (model_latency) model_latency->clear();
  for (std::size_t s = 0; s < entries.size(); ++s) {
    const double m = cost::evaluate(entries[s].schedule, config.wafer, params, entries[s].decode,
                                    entries[s].prompt_tokens).latency_s;
    if (model_latency) model_latency->push_back(m);
    by_setting[entries[s].setting].first.push_back(m);
    by_setting[entries[s].setting].second.push_back(sims[s].latency_s);
    all_model.push_back(m);
    all_sim.push_back(sims[s].latency_s);
  }
  std::vector<Agreement> out;
  out.push_back(agreement("all schedules", "", all_model, all_sim));
  for (const auto& [setting, pairs] : by_setting) {
    out.push_back(agreement("setting " + std::to_string(setting) + " (front and baselines)", "", pairs.first, pairs.second));
  }
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_kernel;
  for (const OpSample& o : ops) {
    const auto& schedule = entries[o.entry].schedule;
    const double m = cost::op_cost(schedule, schedule.ops[static_cast<std::size_t>(o.op)], config.wafer, params).total_cycles;
    by_kernel[o.kernel].first.push_back(m);
    by_kernel[o.kernel].second.push_back(o.sim_cycles);
  }
  for (const auto& [kernel, pairs] : by_kernel) out.push_back(agreement("kernel " + kernel, kernel, pairs.first, pairs.second));
  return out;
}

void print_agreements(std::ostream& out, const std::vector<Agreement>& before, const std::vector<Agreement>& after) {
  out << std::left << std::setw(40) << "scope" << std::right << std::setw(6) << "n" << std::setw(12) << "MAPE %"
      << std::setw(10) << "Spearman" << std::setw(14) << "fitted MAPE" << std::setw(10) << "Spearman"
      << "  targets (MAPE <= 10 %, Spearman >= 0.95) before fitting\n";
  for (std::size_t i = 0; i < before.size(); ++i) {
    const Agreement& a = before[i];
    out << std::left << std::setw(40) << a.scope.substr(0, 39) << std::right << std::setw(6) << a.pairs << std::fixed
        << std::setprecision(2) << std::setw(12) << a.mape_pct << std::setw(10) << a.spearman << std::setw(14)
        << after[i].mape_pct << std::setw(10) << after[i].spearman << "  " << (a.meets_targets ? "met" : "MISSED")
        << std::defaultfloat << '\n';
  }
  for (const Agreement& a : before) {
    if (!a.meets_targets) out << "  missed, " << a.scope << ": " << a.differs << '\n';
  }
}

}  // namespace

std::vector<std::string> default_sim_fit_names() {
  return {"alpha_cycles_per_hop", "beta_cycles_per_stage", "gemm_step_cycles", "gemm_k_cycles",
          "scalar_op_cycles"};
}

void calibrate_against_sim_command(const std::string& config_path, const std::string& params_path,
                                   const std::vector<std::string>& fit_names, const std::string& output_dir,
                                   const engine::RunContext& context, std::ostream& out) {
  const std::string text = engine::read_file_on_root(config_path, context.comm);
  std::vector<std::string> overrides;
  if (!params_path.empty()) overrides.push_back("cost.params_file=" + params_path);
  const config::Config config = parse_config_on_ranks(text, config_path, overrides, context.comm);
  const auto& start = config.cost.params;

  // Schedules of every setting: the search front and the placed baselines (every rank builds the
  // same ones; the search is deterministic), on the workloads the run searches: its layer subset
  // (scaled), its MoE capacity factor, and over several wafers each distinct part on its own wafer.
  std::vector<Entry> entries;
  for (const auto& setting : config::expand_sweep(config)) {
    // The config's wafer throughout: hardware sweep axes are not applied.
    const auto parts = setting_parts(config, setting);
    for (std::size_t part = 0; part < parts.size(); ++part) {
      const auto& w = parts[part];
      const bool decode = setting.shape.phase == workload::Phase::decode;
      std::vector<std::pair<std::string, meshir::Schedule>> seeds{{"fullchip", baselines::build_fullchip(w, config.wafer)}};
      if (auto s = baselines::build_waferllm_tuned(w, config.wafer, start)) seeds.emplace_back("waferllm", *s);
      const auto found = search::search_setting(w, config.wafer, start, config.search.options(), seeds);
      const std::string prefix = parts.size() > 1 ? "part" + std::to_string(part) + "." : "";
      auto add = [&](const std::string& label, const meshir::Schedule& schedule) {
        entries.push_back(Entry{schedule, setting.id, prefix + label, std::string(workload::to_string(setting.shape.phase)),
                                decode, setting.shape.input_tokens});
      };
      for (std::size_t i = 0; i < found.front.size(); ++i) add("front." + std::to_string(i), found.front[i].schedule);
      for (const auto& [name, schedule] : seeds) {
        if (cost::evaluate(schedule, config.wafer, start, decode, setting.shape.input_tokens).sram_headroom < 0) continue;
        add(name, schedule);
      }
    }
  }
  if (entries.empty()) throw DataError({Diagnostic{config_path, 0, 0, "workloads", "no schedule to simulate"}});
  const std::vector<Outcome> sims = simulate_distributed(entries, config, context);

  // Every distinct simulated op once.
  std::vector<OpSample> all;
  for (std::size_t s = 0; s < entries.size(); ++s) {
    for (std::size_t i = 0; i < entries[s].schedule.ops.size(); ++i) {
      if (!sims[s].own[i] || !(sims[s].op_cycles[i] > 0)) continue;
      const auto& op = entries[s].schedule.ops[i];
      all.push_back(OpSample{s, static_cast<int>(i), std::string(meshir::to_string(op.kernel)), entries[s].phase,
                             op.used.pes(), sims[s].op_cycles[i]});
    }
  }
  std::vector<double> model_latency_before, model_latency_after;
  auto before = agreements(entries, sims, all, config, start, &model_latency_before);

  // The fit: a stratified sample by (kernel, phase, power-of-two region size), 8 per stratum.
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
  if (samples.empty()) throw DataError({Diagnostic{config_path, 0, 0, "workloads", "no op was simulated"}});
  // The held-out split is the reference one (groups of kernel and phase, ordered by size), applied to
  // the sampled ops; the fit and every MAPE are on op cycles, the quantity the simulator measured.
  calibrate::ReferenceSet split;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    calibrate::ReferencePoint p;
    p.model = samples[i].kernel;
    p.phase = samples[i].phase == "decode" ? workload::Phase::decode : workload::Phase::prefill;
    p.grid_pes = samples[i].used_pes;
    split.points.push_back(p);
  }
  calibrate::LogFitProblem problem;
  problem.held_out = calibrate::held_out_mask(split);
  calibrate::PointSource source{config_path, {}, {}};
  for (std::size_t i = 0; i < samples.size(); ++i) {
    problem.measured.push_back(samples[i].sim_cycles);
    source.lines.push_back(0);
    source.columns.push_back(0);
  }
  const auto wafer = config.wafer;
  problem.predict = [&samples, &entries, wafer](std::size_t i, const cost::CostParams& params) {
    const OpSample& s = samples[i];
    const auto& schedule = entries[s.entry].schedule;
    return cost::op_cost(schedule, schedule.ops[static_cast<std::size_t>(s.op)], wafer, params).total_cycles;
  };
  const auto names = fit_names.empty() ? default_sim_fit_names() : fit_names;
  const auto result = calibrate::calibrate(problem, source, start, names, {});
  auto after = agreements(entries, sims, all, config, result.fitted, &model_latency_after);
  append_sample_agreements(result, &before, &after);

  const std::string dir = output_dir.empty() ? "results/runs/calibrate-sim-" + fs::path(config_path).stem().string() : output_dir;
  const engine::OutputDirLock lock = engine::make_output_dir(dir, context.comm);
  // The fitted op pairs, before and after.
  const std::size_t n = samples.size();
  const auto& fit_before = result.before.points;
  const auto& fit_after = result.after.points;
  const io::Table op_pairs{
      "sim_calibration_pairs",
      {io::column("kernel", "", n, [&](std::size_t i) { return samples[i].kernel; }),
       io::column("phase", "", n, [&](std::size_t i) { return samples[i].phase; }),
       io::column("used_pes", "PEs", n, [&](std::size_t i) { return samples[i].used_pes; }),
       io::column("op", "1", n, [&](std::size_t i) { return samples[i].op; }),
       io::column("held_out", "bool", n, [&](std::size_t i) { return fit_after[i].held_out; }),
       io::column("sim_cycles", "cycles", n, [&](std::size_t i) { return samples[i].sim_cycles; }),
       io::column("model_cycles_before", "cycles", n, [&](std::size_t i) { return fit_before[i].predicted; }),
       io::column("model_cycles_after", "cycles", n, [&](std::size_t i) { return fit_after[i].predicted; })}};
  // Every schedule: the model before and after the fit against the simulator.
  const std::size_t m = entries.size();
  const io::Table schedule_pairs{
      "sim_pairs",
      {io::column("setting_id", "1", m, [&](std::size_t s) { return entries[s].setting; }),
       io::column("schedule", "", m, [&](std::size_t s) { return entries[s].label; }),
       io::column("phase", "", m, [&](std::size_t s) { return entries[s].phase; }),
       io::column("sim_latency_s", "s", m, [&](std::size_t s) { return sims[s].latency_s; }),
       io::column("sim_tokens_per_s", "tokens/s", m, [&](std::size_t s) { return sims[s].tokens_per_s; }),
       {"model_latency_s_before", "s", model_latency_before},
       {"model_latency_s_after", "s", model_latency_after}}};
  const std::size_t k = before.size();
  const io::Table agreement_table{
      "sim_agreement",
      {io::column("scope", "", k, [&](std::size_t i) { return before[i].scope; }),
       io::column("kernel", "", k, [&](std::size_t i) { return before[i].kernel; }),
       io::column("pairs", "1", k, [&](std::size_t i) { return before[i].pairs; }),
       io::column("mape_pct_before_fit", "%", k, [&](std::size_t i) { return before[i].mape_pct; }),
       io::column("spearman_before_fit", "1", k, [&](std::size_t i) { return before[i].spearman; }),
       io::column("mape_pct_after_fit", "%", k, [&](std::size_t i) { return after[i].mape_pct; }),
       io::column("spearman_after_fit", "1", k, [&](std::size_t i) { return after[i].spearman; }),
       io::column("meets_targets_before_fit", "bool", k, [&](std::size_t i) { return before[i].meets_targets; }),
       io::column("physics_that_differ", "", k, [&](std::size_t i) { return before[i].differs; })}};
  const double rho_before = held_out_spearman(result.before), rho_after = held_out_spearman(result.after);
  std::ostringstream header;
  header << "Fitted by: wavel-dse calibrate " << config_path << " --fit ";
  for (std::size_t i = 0; i < result.fit_names.size(); ++i) header << (i ? "," : "") << result.fit_names[i];
  header << "\nTool: " << WAVEL_VERSION << " (git " << WAVEL_GIT_HASH << ")\n"
         << "Against the simulator: " << samples.size() << " sampled ops, " << result.after.test_points
         << " held out; held-out MAPE " << result.before.test_mape_pct << " % -> " << result.after.test_mape_pct
         << " %, Spearman " << rho_before << " -> " << rho_after;
  if (const auto w = bound_warnings(result); !w.empty()) header << '\n' << w.substr(0, w.size() - 1);
  header << "\nThese values make the model imitate the simulator; hardware predictions use configs/params/wse3.yaml.";
  std::vector<cost::FitStep> fits =
      config.cost.params_path.empty() ? std::vector<cost::FitStep>{} : cost::load_fits(config.cost.params_path);
  fits.push_back({config.wafer.preset, "the simulator on " + config_path, result.fit_names});
  const std::string params_text =
      cost::params_to_yaml(result.fitted, header.str()) +
      cost::pe_timing_to_yaml(config.cost.sim_timing, "The simulator's PE timing these values were fitted against.") +
      cost::fits_to_yaml(fits);
  std::vector<io::Attribute> attrs{{"format_version", std::string("wavel-results/1")},
                                   {"tool_version", std::string(WAVEL_VERSION)},
                                   {"git_hash", std::string(WAVEL_GIT_HASH)},
                                   {"command", std::string("calibrate (simulator)")},
                                   {"config_file", config_path},
                                   {"config_text", text},
                                   {"params_yaml", params_text},
                                   {"schedules_mape_pct_before_fit", before.front().mape_pct},
                                   {"schedules_spearman_before_fit", before.front().spearman},
                                   {"test_mape_pct_before", result.before.test_mape_pct},
                                   {"test_mape_pct", result.after.test_mape_pct},
                                   {"test_spearman_before", rho_before},
                                   {"test_spearman", rho_after}};
  const auto fitted = calibrate::calibration_table(result);
  io::write_result_files({(fs::path(dir) / "results.h5").string(), attrs,
                          {schedule_pairs, agreement_table, op_pairs, fitted},
                          {{(fs::path(dir) / "params.yaml").string(), params_text},
                           {(fs::path(dir) / "sim_pairs.csv").string(), io::csv_text(op_pairs)},
                           {(fs::path(dir) / "sim_schedules.csv").string(), io::csv_text(schedule_pairs)},
                           {(fs::path(dir) / "sim_agreement.csv").string(), io::csv_text(agreement_table)},
                           {(fs::path(dir) / "calibration.csv").string(), io::csv_text(fitted)}}},
                         context.comm);
  if (context.rank != 0) return;
  out << "calibration against the simulator: " << entries.size() << " schedules (front and baselines of each setting), "
      << all.size() << " distinct ops simulated\n";
  out << "model against simulator before any fitting (schedules: TPOT/TTFT; kernels and sampled ops: op cycles), and after "
         "the fit; MAPE is the mean of |model - sim| / sim:\n";
  print_agreements(out, before, after);
  out << "fitted on the " << result.after.train_points << " training ops of " << samples.size()
      << " sampled from " << strata.size() << " strata (kernel, phase, power-of-two region size); the "
      << result.after.test_points << " held-out ops were not fitted\n";
  print_fitted_parameters(out, result);
  std::cerr << bound_warnings(result);
  std::cerr << "written: " << dir << "/params.yaml (the model fitted to the simulator, not to hardware), "
               "sim_agreement.csv, sim_schedules.csv, sim_pairs.csv, calibration.csv, results.h5\n";
}

}  // namespace wavel::driver
