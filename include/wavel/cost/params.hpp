// The cost model's free parameters: each has a name, units, a default, bounds, and one home here.
#pragma once

#include <string>
#include <vector>

#include "wavel/wafer/wafer.hpp"

namespace wavel::cost {

/// Free parameters of the physical cost model. alpha and beta start from the wafer config;
/// a params file (--params) overrides any of them.
struct CostParams {
  // Kernel constants, each a per-instruction or per-loop software cost of WaferLLM's CSL kernels as
  // they run; pinned by the WSE-3 kernel measurements (configs/params/wse3-kernels.yaml).
  double alpha_cycles_per_hop = 1.0;        ///< latency per hop on a pre-configured route
  double beta_cycles_per_stage = 30.0;      ///< one software routing stage (receive, add, re-send)
  double gemm_step_cycles = 80.0;           ///< MeshGEMM: fixed cost of one compute-and-shift step (task, sync, buffer swap)
  double gemm_k_cycles = 38.0;              ///< MeshGEMM: one k-iteration of the tile loop (DSD set-up, DSR loads, @map launch)
  double gemm_fmac_issue_cycles = 2.0;      ///< MeshGEMM: one vector FMAC instruction beyond its element cycles
  double gemv_fixed_cycles = 145.0;         ///< MeshGEMV: fixed cost of one call (local loop set-up, tree start, broadcast)
  double gemv_fmac_issue_cycles = 1.0;      ///< MeshGEMV and decode attention: one vector FMAC beyond its element cycles
  double shift_fixed_cycles = 50.0;         ///< neighbour shift: fixed cost of one call
  double shift_hop_cycles = 73.0;           ///< neighbour shift: one store-and-forward hop of a tile (task, DSDs)
  double shift_element_cycles = 1.0;        ///< neighbour shift: one FP16 element through the ramp and link
  double shift_queue_cycles = 15.0;         ///< neighbour shift: a hop on which the row's other tiles are still ahead
  // Costs the kernels do not show; WaferLLM's WSE-2 end-to-end layers pin them (configs/params/wse2-waferllm.yaml).
  double scalar_op_cycles = 6.4;            ///< one scalar instruction (exp, SiLU, rsqrt loops): WSE-3's gemm_k_cycles / 6
  double route_switch_cycles = 50.0;        ///< re-configuring routes at run time (allreduce axis switch)
};

/// Description of one parameter, for files, messages and fitting.
struct ParamInfo {
  std::string name;
  std::string units;
  double min_value;
  double max_value;
  double CostParams::*field;
  std::string description;
};

/// Every parameter, in a stable order.
const std::vector<ParamInfo>& param_registry();

/// Defaults, with alpha and beta taken from the wafer.
CostParams default_params(const wafer::WaferParams& wafer);

/// The tool's data directory: $WAVEL_DATA_DIR when set, else the `configs/` of the source tree it
/// was built from.
std::string data_dir();

/// The committed parameters calibrated for a wafer preset (its WaferParams::calibrated_params under
/// data_dir()): what every command uses unless told otherwise. "" for a preset with none; the file
/// may be absent (a moved binary): callers check.
std::string calibrated_params_path(const std::string& wafer_preset);

/// Overrides `base` with the values in a params YAML file (map of name: value; unknown names and
/// out-of-range values are ConfigErrors with file:line:col). Throws InputMissingError if unreadable.
CostParams load_params(const std::string& path, const CostParams& base);

/// Same, from text (file label used in messages).
CostParams parse_params(const std::string& text, const std::string& file_label, const CostParams& base);

/// YAML text of all parameters with units in comments, preceded by `header_comment` lines.
std::string params_to_yaml(const CostParams& params, const std::string& header_comment);

/// Joint uncertainty of fitted parameters: a normal distribution of ln p around ln of the file's
/// values, written by `calibrate` under the key `uncertainty` of a params file.
struct ParamUncertaintySpec {
  std::vector<std::string> names;                  ///< registry names, registry order
  std::vector<std::vector<double>> ln_covariance;  ///< names.size() squared, symmetric
  std::string method;                              ///< how it was estimated, in words
};

/// The `uncertainty:` section (YAML text, appended after params_to_yaml's output).
std::string uncertainty_to_yaml(const ParamUncertaintySpec& spec);

/// The simulator's PE timing from a params file's `sim_timing` section over `base` (absent: base).
/// The cost model never reads it; the file carries it so that a sweep's model and simulator come
/// from one calibration. Errors name the file, line and key.
wafer::PeTiming parse_pe_timing(const std::string& text, const std::string& file_label, const wafer::PeTiming& base);
wafer::PeTiming load_pe_timing(const std::string& path, const wafer::PeTiming& base);
/// The section as YAML: `sim_timing:` and a line per constant with its units, meaning and bounds.
std::string pe_timing_to_yaml(const wafer::PeTiming& timing, const std::string& header_comment);

/// Reads the `uncertainty` section of a params file's text; std::nullopt-like empty names when absent.
/// ConfigError (file:line:col) for unknown names, a non-square or asymmetric matrix or a negative variance.
ParamUncertaintySpec parse_uncertainty(const std::string& text, const std::string& file_label);

/// Same, from a file (InputMissingError if unreadable).
ParamUncertaintySpec load_uncertainty(const std::string& path);

}  // namespace wavel::cost
