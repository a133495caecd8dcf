// validate, calibrate, show and check: thin orchestration over calibrate/, meshir/ and cost/.
#include "wavel/commands/commands.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>

#include "wavel/calibrate/crossval.hpp"
#include "wavel/calibrate/fit.hpp"
#include "wavel/calibrate/predict.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/text.hpp"
#include "wavel/cost/fit_provenance.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/report/costed_with.hpp"
#include "wavel/common/format.hpp"
#include "wavel/commands/reference_cv.hpp"
#include "wavel/compare/sim_timing_fit.hpp"
#include "wavel/io/results.hpp"
#include "wavel/io/sandboxed_read.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/version_info.hpp"

namespace wavel::driver {

namespace fs = std::filesystem;

namespace {

wafer::WaferParams wafer_named(const std::string& name, const std::string& file) {
  auto w = wafer::find_wafer_preset(name);
  if (!w) throw DataError({Diagnostic{file, 0, 0, "wafer", "unknown wafer preset '" + name + "'"}});
  return *w;
}

void print_validation(std::ostream& out, const calibrate::ReferenceSet& set, const calibrate::ValidationReport& r,
                      const std::string& title) {
  out << title << '\n';
  out << std::left << std::setw(12) << "model" << std::setw(9) << "phase" << std::right << std::setw(6) << "grid"
      << std::setw(8) << "tokens" << std::setw(16) << "measured tok/s" << std::setw(17) << "predicted tok/s"
      << std::setw(10) << "rel err" << "  split\n";
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    const auto& p = set.points[i];
    const auto& q = r.points[i];
    out << std::left << std::setw(12) << p.model << std::setw(9) << workload::to_string(p.phase) << std::right
        << std::setw(6) << p.grid_pes << std::setw(8) << p.tokens() << std::setw(16) << std::fixed
        << std::setprecision(1) << q.measured << std::setw(17) << q.predicted
        << std::setw(9) << std::setprecision(1) << 100.0 * q.rel_error << "%  " << (q.held_out ? "test" : "train")
        << '\n';
  }
  out << std::defaultfloat << "MAPE: all " << percent(r.mape_pct) << ", train (" << r.train_points << " points) "
      << percent(r.train_mape_pct) << ", held-out test (" << r.test_points << " points) " << percent(r.test_mape_pct)
      << '\n';
}

/// A column of a table read from `file`, by name and type (read_table_h5 checked equal lengths).
template <class T>
const std::vector<T>& column_of(const io::Table& table, const std::string& name, const std::string& file) {
  for (const auto& column : table.columns) {
    if (column.name != name) continue;
    if (const auto* values = std::get_if<std::vector<T>>(&column.values)) return *values;
    throw InputDataError("results file '" + file + "': column '" + table.name + "/" + name + "' has the wrong type");
  }
  throw InputDataError("results file '" + file + "': table '" + table.name + "' has no column '" + name + "'");
}

double cv_mape(const CrossValidationReport& cv, const std::string& name) {
  for (const auto& a : cv.attributes) {
    if (a.name == name) return std::get<double>(a.value);
  }
  return std::nan("");
}

}  // namespace

std::vector<io::Attribute> command_provenance(const std::string& command, const std::string& input,
                                              const std::string& params_path, const engine::RunContext& context) {
  return {{"format_version", std::string("wavel-results/1")},
          {"tool_version", std::string(WAVEL_VERSION)},
          {"git_hash", std::string(WAVEL_GIT_HASH)},
          {"command", command},
          {"reference_file", input},
          {"params_file", params_path},
          {"mpi_ranks", std::int64_t{context.ranks}},
          {"slurm_job_id", context.slurm_job_id}};
}

cost::CostParams params_for(const wafer::WaferParams& wafer, const std::string& params_path) {
  cost::CostParams p = cost::default_params(wafer);
  if (!params_path.empty()) p = cost::load_params(params_path, p);
  return p;
}

std::string existing_calibrated_params(const std::string& preset) {
  const std::string path = cost::calibrated_params_path(preset);
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec) ? path : "";
}

std::string default_dir(const std::string& command, const std::string& input) {
  return "results/runs/" + command + "-" + fs::path(input).stem().string();
}

std::string percent(double value) {
  if (!std::isfinite(value)) return "n/a";
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << value << " %";
  return out.str();
}


void print_fitted_parameters(std::ostream& out, const calibrate::CalibrationResult& result) {
  out << std::setprecision(6) << "fitted parameters (shared by every point):\n";
  for (const auto& info : cost::param_registry()) {
    if (std::find(result.fit_names.begin(), result.fit_names.end(), info.name) == result.fit_names.end()) continue;
    out << "  " << std::left << std::setw(24) << info.name << std::right << std::setw(12) << result.start.*(info.field)
        << " -> " << std::setw(12) << result.fitted.*(info.field) << ' ' << info.units << '\n';
  }
}

std::vector<std::string> default_fit_names() {
  // Start from the WSE-3 kernel file. What no kernel measurement pins: the launch cost an end-to-end
  // layer pays per op. And what the WSE-2 fabric and ISA may do differently from WSE-3, where
  // the kernels were timed: the hop latency and the k-iteration set-up (WSE-2 has no kernel data).
  return {"alpha_cycles_per_hop", "gemm_k_cycles", "scalar_op_cycles"};
}

void validate_command(const std::string& reference_path, const std::string& given_params,
                      const std::string& output_dir, const engine::RunContext& context, std::ostream& out) {
  const std::string text = engine::read_file_on_root(reference_path, context.comm, "reference file");
  if (config::looks_like_sweep_config(text)) {
    throw UsageError("'" + reference_path + "' is a sweep config (it has workloads:), not a reference file of measured "
                     "points; to compare the model with the simulator on its schedules run 'wavel-dse calibrate " +
                     reference_path + "', to sweep it 'wavel-dse " + reference_path + "'");
  }
  const auto set = calibrate::load_reference(reference_path);  // again, with the reference file's 16 MiB cap
  const auto wafer = wafer_named(set.wafer, reference_path);
  const std::string params_path = given_params.empty() ? existing_calibrated_params(wafer.preset) : given_params;
  const auto params = params_for(wafer, params_path);
  const auto predict = calibrate::waferllm_predictor(wafer);
  const auto report = calibrate::validate(set, predict, params);
  const auto cv = cross_validation_report(set, predict, params, default_fit_names());
  const std::string dir = output_dir.empty() ? default_dir("validate", reference_path) : output_dir;
  const engine::OutputDirLock lock = engine::make_output_dir(dir, context.comm);
  const auto table = calibrate::validation_table(set, report);
  auto attrs = command_provenance("validate", reference_path, params_path, context);
  attrs.push_back({"mape_pct", report.mape_pct});
  attrs.push_back({"train_mape_pct", report.train_mape_pct});
  attrs.push_back({"test_mape_pct", report.test_mape_pct});
  attrs.insert(attrs.end(), cv.attributes.begin(), cv.attributes.end());
  std::vector<io::Table> tables{table};
  tables.insert(tables.end(), cv.tables.begin(), cv.tables.end());
  io::write_result_files({(fs::path(dir) / "results.h5").string(), attrs, tables,
                          {{(fs::path(dir) / "validation.csv").string(), io::csv_text(table)}}},
                         context.comm);
  if (context.rank != 0) return;
  print_validation(out, set, report,
                   "Validation of WaferLLM's schedule against " + set.source + " (" + set.wafer + "), params: " +
                       (params_path.empty() ? "built-in defaults" : params_path) +
                       (given_params.empty() && !params_path.empty() ? " (the calibrated file for " + set.wafer + ")" : ""));
  out << '\n' << cv.text;
  std::cerr << cv.warnings << "written: " << dir << "/validation.csv, " << dir << "/results.h5\n";
}

void calibrate_command(const std::string& reference_path, const std::string& params_path,
                       const std::vector<std::string>& fit_names, const std::string& output_dir,
                       const engine::RunContext& context, std::ostream& out) {
  const auto set = calibrate::load_reference(reference_path);
  const auto wafer = wafer_named(set.wafer, reference_path);
  const auto start = params_for(wafer, params_path);
  const auto names = fit_names.empty() ? default_fit_names() : fit_names;
  const auto predict = calibrate::waferllm_predictor(wafer);
  const auto result = calibrate::calibrate(set, predict, start, names);
  const auto uncertainty = calibrate::estimate_uncertainty(set, predict, result, calibrate::held_out_mask(set));
  const auto cv = cross_validation_report(set, predict, start, names);
  const std::string warnings = bound_warnings(result);
  const std::string dir = output_dir.empty() ? default_dir("calibrate", reference_path) : output_dir;
  const engine::OutputDirLock lock = engine::make_output_dir(dir, context.comm);

  std::ostringstream header;
  header << "Fitted by: wavel-dse calibrate " << reference_path;
  if (!params_path.empty()) header << " --params " << params_path;
  header << " --fit ";
  for (std::size_t i = 0; i < result.fit_names.size(); ++i) header << (i ? "," : "") << result.fit_names[i];
  header << "\nTool: " << WAVEL_VERSION << " (git " << WAVEL_GIT_HASH << ")\n"
         << "Reference: " << set.source << " (" << set.wafer << ", " << set.points.size() << " points)\n"
         << "Least squares in log space on " << result.after.train_points << " training points; MAPE train "
         << percent(result.after.train_mape_pct) << ", held-out test " << percent(result.after.test_mape_pct);
  header << "\nCross-validation: leave-one-model-out MAPE " << percent(cv_mape(cv, "cv_model_mape_pct"))
         << ", leave-one-grid-out MAPE " << percent(cv_mape(cv, "cv_grid_mape_pct"));
  if (const auto w = bound_warnings(result); !w.empty()) header << '\n' << w.substr(0, w.size() - 1);
  std::vector<cost::FitStep> fits = params_path.empty() ? std::vector<cost::FitStep>{} : cost::load_fits(params_path);
  fits.push_back({set.wafer, "end to end: " + set.source, result.fit_names});
  const std::string pairing = cost::generation_pairing_problem(fits);
  if (!pairing.empty()) header << "\nwarning: " << pairing;
  std::string method = uncertainty.method;
  if (!uncertainty.fixed.empty()) method += "; held at a bound:";
  for (const auto& name : uncertainty.fixed) method += " " + name;
  std::string params_text = cost::params_to_yaml(result.fitted, header.str()) +
                            cost::uncertainty_to_yaml({uncertainty.names, uncertainty.ln_covariance, method});
  // The simulator's level 2: from the start file's timing (nominal where it has none), end-to-end
  // points fit only what kernel runs cannot pin.
  wafer::WaferParams sim_wafer = wafer;
  if (!params_path.empty()) sim_wafer.pe_timing = cost::load_pe_timing(params_path, sim_wafer.pe_timing);
  const SimTimingFit sim_fit = fit_sim_timing_end_to_end(set, sim_wafer);
  const auto held = calibrate::held_out_mask(set);
  auto sim_mape = [&](const std::vector<double>& simulated, bool held_out) {
    std::vector<double> p, m;
    for (std::size_t i = 0; i < set.points.size(); ++i) {
      if (held[i] != held_out) continue;
      p.push_back(simulated[i]);
      m.push_back(set.points[i].tpr_tokens_per_s);
    }
    return p.empty() ? std::nan("") : calibrate::mape_pct(p, m);
  };
  const double sim_train_before = sim_mape(sim_fit.simulated_start, false), sim_test_before = sim_mape(sim_fit.simulated_start, true);
  const double sim_train = sim_mape(sim_fit.simulated, false), sim_test = sim_mape(sim_fit.simulated, true);
  std::ostringstream sim_summary;
  sim_summary << "MAPE train " << percent(sim_train_before) << " -> " << percent(sim_train) << ", held-out test "
              << percent(sim_test_before) << " -> " << percent(sim_test);
  std::ostringstream sim_header;
  sim_header << "The simulator's PE timing: " << (params_path.empty() ? std::string("nominal") : "as in " + params_path)
             << ", then fitted end to end through the simulator's own schedules:";
  for (const auto* info : sim_fit.fitted_names) sim_header << " " << info->name;
  sim_header << "\nSimulator against the reference: " << sim_summary.str() << '\n' << sim_timing_bound_warnings(sim_fit);
  params_text += cost::pe_timing_to_yaml(sim_fit.fitted, sim_header.str()) + cost::fits_to_yaml(fits);

  auto validation = calibrate::validation_table(set, result.after);
  validation.columns.push_back({"sim_tokens_per_s_start", "tokens/s", sim_fit.simulated_start});
  validation.columns.push_back({"sim_tokens_per_s", "tokens/s", sim_fit.simulated});
  const auto fitted = calibrate::calibration_table(result);
  auto attrs = command_provenance("calibrate", reference_path, params_path, context);
  attrs.push_back({"params_yaml", params_text});
  attrs.push_back({"train_mape_pct_before", result.before.train_mape_pct});
  attrs.push_back({"test_mape_pct_before", result.before.test_mape_pct});
  attrs.push_back({"train_mape_pct", result.after.train_mape_pct});
  attrs.push_back({"test_mape_pct", result.after.test_mape_pct});
  attrs.push_back({"sim_train_mape_pct_before", sim_train_before});
  attrs.push_back({"sim_test_mape_pct_before", sim_test_before});
  attrs.push_back({"sim_train_mape_pct", sim_train});
  attrs.push_back({"sim_test_mape_pct", sim_test});
  attrs.insert(attrs.end(), cv.attributes.begin(), cv.attributes.end());
  std::vector<io::Table> tables{validation, fitted};
  tables.insert(tables.end(), cv.tables.begin(), cv.tables.end());
  io::write_result_files({(fs::path(dir) / "results.h5").string(), attrs, tables,
                          {{(fs::path(dir) / "params.yaml").string(), params_text},
                           {(fs::path(dir) / "validation.csv").string(), io::csv_text(validation)},
                           {(fs::path(dir) / "calibration.csv").string(), io::csv_text(fitted)}}},
                         context.comm);
  if (context.rank != 0) return;
  print_validation(out, set, result.before, "Before fitting (start parameters):");
  out << '\n';
  print_validation(out, set, result.after, "After fitting:");
  out << '\n';
  print_fitted_parameters(out, result);
  out << static_cast<const calibrate::SolveStats&>(result) << '\n';
  out << '\n' << cv.text;
  std::cerr << warnings << cv.warnings;
  if (!pairing.empty()) std::cerr << "warning: " << pairing << '\n';
  out << "parameter uncertainty: " << uncertainty.method << " (written to params.yaml)\n";
  out << "\nsimulator (WaferLLM's schedules simulated; its timing fitted the same way):\n";
  print_sim_timing_fit(out, sim_fit);
  out << "  " << sim_summary.str() << '\n';
  std::cerr << sim_timing_bound_warnings(sim_fit);
  std::cerr << "written: " << dir << "/params.yaml (use with --params), validation.csv, calibration.csv, results.h5\n";
}

// Why `text` cannot be a text file ("" if it can): an HDF5 signature or NUL bytes.
std::string binary_kind(const std::string& text) {
  if (text.rfind("\x89HDF\r\n\x1a\n", 0) == 0) return "is an HDF5 file (a results.h5?)";
  if (text.find('\0') != std::string::npos) return "holds binary data (NUL bytes)";
  return "";
}

// The run's `costed_on` and `param` lines for a schedule shown from `results_path`, or "" (with a
// note) for a file written before runs stored them.
std::string costed_lines(const std::string& results_path) {
  std::vector<io::Table> tables;
  try {
    tables = io::read_tables_h5_sandboxed(results_path, {"cost_params"});
  } catch (const InputDataError&) {
    std::cerr << "wavel-dse: note: " << results_path << " does not record the parameters its run used (written "
                 "before 0.1.0 stored table cost_params); check and simulate will use the wafer's calibrated ones\n";
    return "";
  }
  meshir::Schedule costed;
  std::string params_file;
  std::int64_t hardware_points = 1;
  attach_costed_with(tables.front(), results_path, costed, params_file, hardware_points);
  if (hardware_points > 1) {  // the MeshIR names the preset only, not a what-if point's other figures
    std::cerr << "wavel-dse: warning: " << results_path << " swept " << hardware_points
              << " hardware points (wafer.sweep); check and simulate re-cost this schedule on the " << costed.costed_on
              << " preset, not on its setting's hardware point\n";
  }
  return "# costed by the run that wrote " + results_path +
         (params_file.empty() ? std::string(" with built-in parameters") : ", parameters from " + params_file) + "\n" +
         meshir::costed_text(costed);
}

void show_command(const std::string& results_path, std::int64_t setting, const std::string& schedule,
                  const engine::RunContext& context, std::ostream& out) {
  engine::on_root_agreed(context.comm, 0, [&] {
    // The file may come from anyone: read in a sandboxed child, as libhdf5 can crash on forged files.
    // The texts of a large sweep exceed what one read may take: the index first, then one text.
    io::TablePart index;
    index.columns = {"setting_id", "schedule"};
    const io::Table table = std::move(io::read_tables_h5_sandboxed(results_path, {"schedules"}, {}, index).front());
    const auto& ids = column_of<std::int64_t>(table, "setting_id", results_path);
    const auto& names = column_of<std::string>(table, "schedule", results_path);
    std::string available;
    std::vector<std::pair<std::int64_t, std::string>> listing;
    if (!schedule.empty() && setting < 0) {  // a schedule name alone is ambiguous: every setting has one
      const std::set<std::int64_t> distinct(ids.begin(), ids.end());
      throw UsageError("--schedule " + schedule + " needs --setting N: this file stores schedules of " +
                       std::to_string(distinct.size()) + (distinct.size() == 1 ? " setting" : " settings") +
                       " (list them with 'wavel-dse show " + results_path + "')");
    }
    if (setting >= 0 && std::find(ids.begin(), ids.end(), setting) == ids.end()) {
      std::int64_t lo = 0, hi = -1;
      if (!ids.empty()) {
        lo = *std::min_element(ids.begin(), ids.end());
        hi = *std::max_element(ids.begin(), ids.end());
      }
      throw DataError({Diagnostic{results_path, 0, 0, "schedules",
                                  "no setting " + std::to_string(setting) + " in this file" +
                                      (ids.empty() ? std::string(" (it stores no schedules)")
                                                   : " (its settings: " + std::to_string(lo) + ".." + std::to_string(hi) + ")")}});
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (setting >= 0 && ids[i] != setting) continue;
      if (!schedule.empty() && names[i] == schedule) {
        io::TablePart row;
        row.columns = {"meshir"};
        row.first_row = i;
        row.rows = 1;
        const io::Table one = std::move(io::read_tables_h5_sandboxed(results_path, {"schedules"}, {}, row).front());
        const auto& text = column_of<std::string>(one, "meshir", results_path);
        if (text.size() != 1) throw InputDataError(results_path + ": schedules/meshir is shorter than its index");
        out << text.front() << costed_lines(results_path);
        return;
      }
      available += "  --setting " + std::to_string(ids[i]) + " --schedule " + names[i] + "\n";
      // The listing: one line per setting, its schedules in stored order.
      if (listing.empty() || listing.back().first != ids[i]) listing.push_back({ids[i], ""});
      listing.back().second += " " + names[i];
    }
    if (schedule.empty()) {
      out << "stored schedules" << (setting >= 0 ? " of setting " + std::to_string(setting) : "")
          << " (print one with --setting N --schedule NAME; wavel is the best of the front, front.N its N-th point):\n";
      for (const auto& [id, line] : listing) out << "  setting " << id << ":" << line << '\n';
      return;
    }

    throw DataError({Diagnostic{results_path, 0, 0, "schedules",
                                "no schedule '" + schedule + "' for setting " + std::to_string(setting) +
                                    (available.empty() ? std::string("; this file stores none for it")
                                                       : "; stored:\n" + available)}});
  });
}

CheckedSchedule load_checked_schedule(const std::string& meshir_path, const std::string& wafer_preset,
                                      const std::string& params_path, const engine::RunContext& context) {
  const std::string text = engine::read_file_on_root(meshir_path, context.comm, "MeshIR file");
  if (const std::string kind = binary_kind(text); !kind.empty()) {
    throw DataError({Diagnostic{meshir_path, 0, 0, "meshir",
                                "not a MeshIR text file: it " + kind +
                                    (kind.find("HDF5") != std::string::npos
                                         ? "; print a schedule it stores with 'wavel-dse show " + meshir_path +
                                               " --setting N --schedule NAME > FILE.meshir'"
                                         : std::string())}});
  }
  const auto parsed = meshir::parse_with_lines(text, meshir_path);
  CheckedSchedule c;
  c.schedule = parsed.schedule;
  const auto& s = c.schedule;
  // The wafer: --wafer, else the one the run costed it on, else WSE-3.
  const std::string preset = !wafer_preset.empty() ? wafer_preset : !s.costed_on.empty() ? s.costed_on : "wse3";
  c.wafer = wafer_named(preset, meshir_path);
  // The schedule names the grid it was built for; the preset supplies clock, SIMD and links.
  c.wafer.grid_w_pes = s.grid_w_pes;
  c.wafer.grid_h_pes = s.grid_h_pes;
  c.wafer.sram_per_pe_bytes = s.sram_per_pe_bytes;
  c.wafer.sram_reserved_per_pe_bytes = s.sram_reserved_per_pe_bytes;
  c.wafer.routable_colours = s.colours;
  c.wafer.defective_pes.clear();
  for (const auto& [x, y] : s.defective_pes) c.wafer.defective_pes.push_back({x, y});
  meshir::VerifyOptions options{meshir_path, parsed.lines, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); }};
  meshir::verify_or_throw(s, options);
  // Parameters: --params, else the schedule's own (a run's, carried by `show`), else the wafer's
  // calibrated file, else the built-in values; stderr says which (stdout holds only the report).
  std::string source;
  if (!params_path.empty()) {
    c.params = params_for(c.wafer, params_path);
    c.wafer.pe_timing = cost::load_pe_timing(params_path, c.wafer.pe_timing);
    source = "'" + params_path + "' (--params)";
  } else if (!s.costed_params.empty()) {
    c.params = cost::default_params(c.wafer);
    apply_costed_params(parsed, meshir_path, c.params, c.wafer.pe_timing);
    source = "the schedule's own 'param' lines (what the run that stored it used)";
  } else if (const std::string calibrated = existing_calibrated_params(c.wafer.preset); !calibrated.empty()) {
    c.params = params_for(c.wafer, calibrated);
    c.wafer.pe_timing = cost::load_pe_timing(calibrated, c.wafer.pe_timing);
    source = "the calibrated ones for " + c.wafer.preset + ", '" + calibrated + "'";
  } else {
    c.params = cost::default_params(c.wafer);
    source = "built-in defaults for the " + c.wafer.preset + " preset (no calibrated file found)";
  }
  c.params_source = source;
  if (context.rank == 0) std::cerr << "wavel-dse: cost-model parameters: " << source << '\n';
  // A schedule with MeshGEMMs is a prefill; its prompt length is the GEMM rows per request.
  const std::int64_t per_batch = (s.concurrent_requests + s.microbatches - 1) / std::max<std::int64_t>(1, s.microbatches);
  for (const auto& op : s.ops) {
    if (op.kernel == meshir::Kernel::meshgemm || op.kernel == meshir::Kernel::gemm_t) {
      c.decode = false;
      c.prompt_tokens = std::max(c.prompt_tokens, op.work.m / std::max<std::int64_t>(1, per_batch));
    }
  }
  return c;
}

void check_command(const std::string& meshir_path, const std::string& wafer_preset, const std::string& params_path,
                   const engine::RunContext& context, std::ostream& out) {
  const CheckedSchedule checked = load_checked_schedule(meshir_path, wafer_preset, params_path, context);
  const auto& s = checked.schedule;
  const bool prefill = !checked.decode;
  const auto cost = cost::evaluate(s, checked.wafer, checked.params, checked.decode, checked.prompt_tokens);
  if (context.rank != 0) return;
  out << "schedule '" << printable(s.name) << "': " << s.ops.size() << " ops, " << s.regions.size() << " regions, verified OK\n";
  out << std::left << std::setw(5) << "op" << std::setw(34) << "name" << std::setw(13) << "kernel" << std::right
      << std::setw(7) << "region" << std::setw(6) << "step" << std::setw(12) << "compute" << std::setw(10)
      << "hops" << std::setw(12) << "stages" << std::setw(11) << "links" << std::setw(10) << "overhead"
      << std::setw(13) << "total cyc" << '\n';
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const auto& op = s.ops[i];
    const auto& c = cost.ops[i];
    out << std::left << std::setw(5) << i << std::setw(34) << op.name.substr(0, 33) << std::setw(13)
        << meshir::to_string(op.kernel) << std::right << std::setw(7) << op.region << std::setw(6) << op.step
        << std::fixed << std::setprecision(0) << std::setw(12) << c.compute_cycles << std::setw(10) << c.hop_cycles
        << std::setw(12) << c.stage_cycles << std::setw(11) << c.link_cycles << std::setw(10) << c.overhead_cycles
        << std::setw(13) << c.total_cycles << std::defaultfloat << '\n';
  }
  out << std::setprecision(6) << "SRAM per PE by region:";
  for (std::size_t r = 0; r < s.regions.size(); ++r) {
    out << ' ' << r << ':' << meshir::resident_bytes_per_pe(s, static_cast<int>(r)) << 'B';
  }
  out << " of " << s.sram_per_pe_bytes - s.sram_reserved_per_pe_bytes << "B for data (" << s.sram_per_pe_bytes << "B less "
      << s.sram_reserved_per_pe_bytes << "B reserved)\n";
  out << "PREDICTED (parameters: " << checked.params_source << "): "
      << (prefill ? "TTFT " : "TPOT ") << human(cost.latency_s, "s") << ", " << human(cost.tokens_per_s, "tok/s") << ", "
      << cost.pes_used << " PEs, SRAM headroom " << std::setprecision(3) << 100.0 * cost.sram_headroom << " %"
      << (s.layer_scale > 1 ? ", costs scaled x" + std::to_string(s.layer_scale) + " (layer subset)" : "") << '\n';
}

}  // namespace wavel::driver
