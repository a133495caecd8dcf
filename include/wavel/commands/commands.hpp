// The inspection and calibration subcommands: validate, calibrate, show, check.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "wavel/calibrate/fit.hpp"
#include "wavel/config/config.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/engine/runtime.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::driver {

/// config::parse_config on every rank, the model files read once: rank 0 parses first and sends the
/// texts it read to the others. A failure on rank 0 is thrown on every rank (rank 0 has the message).
config::Config parse_config_on_ranks(const std::string& text, const std::string& file,
                                     const std::vector<std::string>& overrides, MPI_Comm comm);

/// `validate REFERENCE.yaml`: predicts every reference point with WaferLLM's schedule and writes
/// validation.csv and results.h5 (group `validation`) under `output_dir`. Prints MAPE.
void validate_command(const std::string& reference_path, const std::string& params_path,
                      const std::string& output_dir, const engine::RunContext& context, std::ostream& out);

/// `calibrate REFERENCE.yaml`: fits `fit_names` (shared by all points) by least squares in log space
/// on the training split; writes params.yaml, calibration.csv, validation.csv and results.h5.
void calibrate_command(const std::string& reference_path, const std::string& params_path,
                       const std::vector<std::string>& fit_names, const std::string& output_dir,
                       const engine::RunContext& context, std::ostream& out);

/// `show results.h5 --setting N --schedule NAME`: prints a stored schedule's MeshIR
/// (without --schedule: lists the stored schedules).
void show_command(const std::string& results_path, std::int64_t setting, const std::string& schedule,
                  const engine::RunContext& context, std::ostream& out);

/// A parsed, verified schedule with the wafer and parameters to score it, and its phase.
struct CheckedSchedule {
  meshir::Schedule schedule;
  wafer::WaferParams wafer;
  cost::CostParams params;
  std::string params_source;        ///< which parameters, for the reports
  bool decode = true;               ///< false when the schedule has MeshGEMM/GEMM-T ops
  std::int64_t prompt_tokens = 0;   ///< prefill: GEMM rows per request
};

/// The calibrated params file of a wafer preset (cost::calibrated_params_path) if it exists, else "".
std::string existing_calibrated_params(const std::string& preset);

/// Reads (on rank 0), parses and verifies a MeshIR file; the preset ("" = the file's `costed_on`,
/// else wse3) supplies clock, SIMD and links,
/// the file its grid, SRAM, colours and defects. Verification failures throw DataError (exit 65).
CheckedSchedule load_checked_schedule(const std::string& meshir_path, const std::string& wafer_preset,
                                      const std::string& params_path, const engine::RunContext& context);

/// `check FILE.meshir`: verifies a schedule against `wafer_preset` (grid, SRAM and colours from the
/// file) and prints its cost with a per-op breakdown. Verification failures throw DataError.
void check_command(const std::string& meshir_path, const std::string& wafer_preset, const std::string& params_path,
                   const engine::RunContext& context, std::ostream& out);

/// `simulate FILE.meshir`: verifies like `check`, simulates the schedule (sampled, see
/// sim::SimOptions), prints simulated against analytic cycles per op and for the schedule, and
/// writes a Chrome/Perfetto trace to `trace_path` (atomically) when it is not empty.
void simulate_command(const std::string& meshir_path, const std::string& wafer_preset, const std::string& params_path,
                      const std::string& trace_path, const engine::RunContext& context, std::ostream& out);

/// Defaults for `wafer`, overridden by the params file at `params_path` if it is not empty.
cost::CostParams params_for(const wafer::WaferParams& wafer, const std::string& params_path);

/// Root attributes every validate/calibrate results.h5 carries (format, tool, git hash, input, ranks, job).
std::vector<io::Attribute> command_provenance(const std::string& command, const std::string& input,
                                              const std::string& params_path, const engine::RunContext& context);

/// results/runs/<command>-<input stem>.
std::string default_dir(const std::string& command, const std::string& input);

/// "12.34 %", or "n/a" for a NaN.
std::string percent(double value);

/// `calibrate KERNEL.yaml...`: fits the kernel constants (kernel_fit_names, or `fit_names`) to WSE-3
/// kernel measurement files on `wafer_preset`, holds out one grid side per kernel, cross-validates
/// leaving each grid side out in turn, and writes params.yaml, kernel_validation.csv, calibration.csv
/// and results.h5.
void calibrate_kernels_command(const std::vector<std::string>& kernel_paths, const std::string& wafer_preset,
                               const std::string& params_path, const std::vector<std::string>& fit_names,
                               const std::string& output_dir, const engine::RunContext& context, std::ostream& out);

/// Prints each fitted parameter: start value -> fitted value, units.
void print_fitted_parameters(std::ostream& out, const calibrate::CalibrationResult& result);

/// Default fitted parameters of `calibrate`: shared by every model and point.
std::vector<std::string> default_fit_names();

/// `calibrate CONFIG.yaml`: builds the baselines and search fronts of every setting, simulates them
/// (with the config's parameters), samples up to 8 distinct ops per (kernel, phase, power-of-two
/// region size) stratum, and fits `fit_names` to the simulated op times by least squares in log
/// space, holding out part of each stratum group; reports MAPE and Spearman rank correlation on the
/// held-out ops before and after, and writes params.yaml, sim_pairs.csv, calibration.csv, results.h5.
void calibrate_against_sim_command(const std::string& config_path, const std::string& params_path,
                                   const std::vector<std::string>& fit_names, const std::string& output_dir,
                                   const engine::RunContext& context, std::ostream& out);

/// Default fitted parameters of `calibrate CONFIG.yaml`.
std::vector<std::string> default_sim_fit_names();

}  // namespace wavel::driver
