// The validated run configuration: wafer, workload sweep axes, search and output settings.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "wavel/cost/energy.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/wafer/cluster.hpp"
#include "wavel/search/options.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::config {

/// A model as the config names it, resolved to its shape.
struct ModelChoice {
  std::string given;            ///< the text in the config (preset name or path)
  workload::ModelSpec spec;
};

/// One setting listed by hand (workloads.cases) instead of the product of the axes.
struct WorkloadCase {
  std::size_t model_index = 0;  ///< into WorkloadAxes::models
  workload::WorkloadShape shape;
  std::int64_t wafers = 1;
};

/// Sweep axes; the settings are their cartesian product (see sweep.hpp), or the listed cases.
struct WorkloadAxes {
  std::vector<ModelChoice> models;
  std::vector<workload::Phase> phases;
  std::vector<std::int64_t> concurrent_requests;
  std::vector<std::int64_t> input_tokens;
  std::vector<std::int64_t> output_tokens;
  /// (input, output) pairs swept instead of the product of input_tokens and output_tokens.
  std::vector<std::pair<std::int64_t, std::int64_t>> lengths;
  /// Settings listed one by one (model, phase, requests, lengths, wafers): when given, the sweep is
  /// these (on every hardware point) and the axes above are not used.
  std::vector<WorkloadCase> cases;
  double moe_capacity_factor = workload::kDefaultMoeCapacityFactor;  ///< an expert group serves at most this x its expected rows
  double moe_routing_skew = 0.0;      ///< Zipf exponent of the experts' loads (0: uniform)
  [[nodiscard]] workload::MoeRouting moe() const { return {moe_capacity_factor, moe_routing_skew}; }
  bool layer_subset = true;           ///< a setting that does not fit runs as a labelled subset of layers
  double layer_subset_max_fill = 0.9; ///< fraction of wafer SRAM above which the subset method applies
  bool allow_unmodelled_keys = false; ///< run models whose config.json has keys that change the prediction
};

/// CUT/TUNE search settings (validated now; used by the search).
struct SearchConfig : search::SearchOptions {
  std::vector<std::string> objective_names{"throughput", "latency", "pes"};  ///< as given; SearchOptions::objectives from them
  double checkpoint_interval_s = 0;             ///< 0: only on signals
  bool seed_baselines = true;                   ///< the baselines enter the front as seeds

  /// What the search takes (the config's keys without the driver's).
  [[nodiscard]] const search::SearchOptions& options() const { return *this; }
};

/// Where and what to write.
struct OutputConfig {
  std::string dir;              ///< default: results/runs/<config stem> (relative to the working dir)
  bool hdf5 = true;             ///< write results.h5
  bool csv = true;              ///< write summary.csv
  std::string progress = "auto";  ///< auto (only on a terminal), always, never
  std::string table = "narrow";   ///< the printed settings table: narrow (the headline columns) or wide (all)
};

/// `cost.params_file` value that asks for the built-in (uncalibrated) parameter values.
inline constexpr const char* kBuiltinParams = "builtin";

/// Cost-model parameters: defaults (alpha and beta from the wafer), then the params file, then
/// keys given inline in the `cost` section.
struct CostConfig {
  std::string params_file;      ///< as given; "" = none (the preset's calibrated file); relative to the config
                                ///< file, then to cost::data_dir(); kBuiltinParams = the built-in values
  std::string params_path;      ///< the file opened for it (params_file resolved)
  bool params_from_data_dir = false;  ///< params_file was not beside the config but in cost::data_dir()
  cost::CostParams params;      ///< resolved values
  cost::ParamUncertaintySpec uncertainty;  ///< from the params file, pinned parameters conditioned out
  std::int64_t draws = 64;      ///< parameter draws per setting for the 90 % intervals (0: none)
  std::vector<std::string> pinned;  ///< held at their value in the draws (as listed; config values are pinned too)
  wafer::PeTiming sim_timing;   ///< the params file's sim_timing section (the simulator's PE; nominal without)
};

/// How the baseline schedules are built.
struct BaselinesConfig {
  std::int64_t waferllm_region_side_pes = 0;  ///< fixed square side P; 0: tune P like WaferLLM did
  std::int64_t waferllm_side_step_pes = 15;   ///< tuning tries multiples of this that fit the grid
  std::vector<std::int64_t> waferllm_sides;   ///< ... and these sides too (e.g. WaferLLM's own 375, 750)
};

/// Sampled simulation in the main run.
struct SimConfig {
  std::int64_t samples = 1;        ///< schedules simulated per setting: front points first, then baselines
  std::string fidelity = "message";  ///< message, packet or wavelet
  bool model_ramps = true;         ///< PE-router ramps have occupancy
};

/// Hardware what-if axes (section `wafer`, keys `sweep`, `sweep_mode`, `defect_rate`, `defect_seed`).
struct WaferSweep {
  std::vector<std::pair<std::string, std::vector<double>>> axes;  ///< wafer key -> values, hardware_axes() order
  bool one_at_a_time = false;        ///< each value varied alone from the base; else the product of the axes
  double defect_rate = 0;            ///< fraction of grid PEs lost, drawn at random on top of defective_pes
  std::int64_t defect_seed = 1;      ///< seeds the random defect map
  std::vector<wafer::PeCoord> listed_defects;  ///< wafer.defective_pes as written
};

/// One point of the hardware sweep: the wafer and the cost parameters its settings run with.
struct HardwarePoint {
  std::string label;                                   ///< "base" or "key=value,key=value"
  std::vector<std::pair<std::string, double>> values;  ///< the swept keys' values at this point
  wafer::WaferParams wafer;                            ///< random defects included
  cost::CostParams params;                             ///< software constants kept; hardware ones from the wafer
  bool base = false;                                   ///< every swept key at the base wafer's value
};

/// System power and link energy (section `energy`); see cost/energy.hpp.
using EnergyConfig = cost::EnergyParams;

/// A fully validated configuration.
struct Config {
  std::string file;             ///< path as given, used in messages
  std::string text;             ///< the file's bytes
  std::vector<std::string> overrides;  ///< --set arguments, in order
  wafer::WaferParams wafer;
  WorkloadAxes workloads;
  CostConfig cost;
  BaselinesConfig baselines;
  wafer::ClusterParams cluster;  ///< the systems around the wafer (section `cluster`; default: the wafer's)
  SearchConfig search;
  SimConfig sim;
  OutputConfig output;
  WaferSweep wafer_sweep;
  EnergyConfig energy;
  std::vector<HardwarePoint> hardware;  ///< at least one; [0] is the base wafer when nothing is swept
  std::vector<std::string> notes;  ///< what the user should know but need not fix (unmodelled model keys)
  /// One configuration per hardware point (wafer and cost parameters replaced; its own `hardware`
  /// empty), empty without a hardware sweep: settings run under for_hardware(config, setting.hardware).
  std::vector<Config> at_hardware;
};

/// The configuration of hardware point `index`: `config` itself when nothing is swept or when
/// `config` already is one point's.
const Config& for_hardware(const Config& config, std::size_t index);

/// The texts of the model files a config names, by the path opened: filled by one parse and given to
/// another, so that a file is read once (on rank 0) and every rank parses the same bytes.
using InputTexts = std::map<std::string, std::string>;

/// Validates config text (read from `file`) with `overrides` applied on top. Relative model paths
/// are resolved against the directory of `file`. Throws wavel::ConfigError listing every problem.
/// With `texts`, a model file found there is not read again, and each one read is added.
Config parse_config(const std::string& text, const std::string& file, const std::vector<std::string>& overrides,
                    InputTexts* texts = nullptr);

/// The resolved configuration as YAML: every default filled in, presets expanded.
/// With `absolute_paths`, model and params files are written as the absolute paths that were opened,
/// so that the text is valid input wherever it is saved (what --dry-run prints).
std::string to_yaml(const Config& config, bool absolute_paths = false);

/// Shortest decimal text that reads back as exactly `value`.
std::string format_double(double value);

/// True if `text` reads as a sweep config: it has a top-level `workloads:` key.
bool looks_like_sweep_config(const std::string& text);

/// Which cost-model parameters a config's run uses, for its reports: the file named, the preset's
/// calibrated file, or the built-in values.
std::string describe_params(const Config& config);

}  // namespace wavel::config
