// The cost model's free parameters: each has a name, units, a default, bounds, and one home here.
#pragma once

#include <string>
#include <vector>

#include "wavel/wafer/wafer.hpp"

namespace wavel::cost {

/// Free parameters of the physical cost model. alpha and beta start from the wafer config;
/// a params file (--params) overrides any of them.
struct CostParams {
  double alpha_cycles_per_hop = 1.0;        ///< latency per hop on a pre-configured route
  double beta_cycles_per_stage = 30.0;      ///< one software routing stage (receive, add, re-send)
  double gemm_efficiency = 0.7;             ///< fraction of SIMD peak reached by local GEMM tiles
  double gemv_efficiency = 0.5;             ///< fraction of SIMD peak reached by local GEMV tiles
  double elementwise_efficiency = 0.5;      ///< fraction of SIMD peak for elementwise work
  double step_overhead_cycles = 20.0;       ///< fixed cost of one compute-and-shift step (sync, DSD setup)
  double kernel_overhead_cycles = 100.0;    ///< fixed cost of launching one kernel on a region
  double route_switch_cycles = 50.0;        ///< re-configuring routes at run time (allreduce axis switch)
  double vector_setup_cycles = 2.0;         ///< setup of one vector FMAC instruction (DSD load, loop branch)
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

/// Reads the `uncertainty` section of a params file's text; std::nullopt-like empty names when absent.
/// ConfigError (file:line:col) for unknown names, a non-square or asymmetric matrix or a negative variance.
ParamUncertaintySpec parse_uncertainty(const std::string& text, const std::string& file_label);

/// Same, from a file (InputMissingError if unreadable).
ParamUncertaintySpec load_uncertainty(const std::string& path);

}  // namespace wavel::cost
