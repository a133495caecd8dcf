// Registry of the cost model's free parameters, their defaults, and exact YAML read/write.
#include "wavel/cost/params.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include "wavel/common/error.hpp"
#include "wavel/cost/draws.hpp"
#include "wavel/cost/fit_provenance.hpp"
#include "wavel/common/yaml_schema.hpp"
#include "wavel/common/yaml_tree.hpp"

namespace wavel::cost {

namespace {

std::vector<ParamInfo> build_registry() {
  // Bounds are physical plausibility limits, not fit hints: a fit that runs into one is telling the
  // user the model form is wrong, so they are wide but finite. Efficiencies stay above zero because
  // the cost model divides by them.
  return {
      {"alpha_cycles_per_hop", "cycles/hop", 0.1, 100.0, &CostParams::alpha_cycles_per_hop,
       "latency per hop on a pre-configured route (about 1 cycle per the Cerebras SDK's fabric description)"},
      {"beta_cycles_per_stage", "cycles/stage", 1.0, 1e4, &CostParams::beta_cycles_per_stage,
       "one software routing stage of a reduction tree: receive, add, re-send (tens of cycles; fit it)"},
      {"gemm_step_cycles", "cycles/step", 0.0, 1e5, &CostParams::gemm_step_cycles,
       "MeshGEMM: fixed cost of one compute-and-shift step or alignment shift (task, sync, buffer swap)"},
      {"gemm_k_cycles", "cycles/k-iteration", 0.0, 1e4, &CostParams::gemm_k_cycles,
       "MeshGEMM: one k-iteration of the tile loop (DSD set-up, DSR loads, @map launch)"},
      {"gemm_fmac_issue_cycles", "cycles/instruction", 0.0, 1e3, &CostParams::gemm_fmac_issue_cycles,
       "MeshGEMM: one vector FMAC instruction beyond its ceil(length / FMAC rate) element cycles"},
      {"gemv_fixed_cycles", "cycles/call", 0.0, 1e6, &CostParams::gemv_fixed_cycles,
       "MeshGEMV: fixed cost of one call (local loop set-up, tree start, broadcast); every allreduce call pays it"},
      {"gemv_fmac_issue_cycles", "cycles/instruction", 0.0, 1e3, &CostParams::gemv_fmac_issue_cycles,
       "MeshGEMV and decode attention: one vector FMAC instruction beyond its element cycles"},
      {"shift_fixed_cycles", "cycles/call", 0.0, 1e6, &CostParams::shift_fixed_cycles,
       "neighbour shift: fixed cost of one call"},
      {"shift_hop_cycles", "cycles/hop", 1.0, 1e4, &CostParams::shift_hop_cycles,
       "neighbour shift: one store-and-forward hop of a tile (receive task, DSD set-up)"},
      {"shift_element_cycles", "cycles/element", 0.1, 100.0, &CostParams::shift_element_cycles,
       "neighbour shift: one FP16 element of the tile through the ramp and the link"},
      {"shift_queue_cycles", "cycles/hop", 0.0, 1e4, &CostParams::shift_queue_cycles,
       "neighbour shift: a hop on which the row's other tiles are still in flight ahead (waiting for the next PE's one-tile buffer); the first min(hops, tiles in the row) hops"},
      {"scalar_op_cycles", "cycles/instruction", 0.5, 50.0, &CostParams::scalar_op_cycles,
       "one scalar instruction (a loop's loads, stores, multiplies; WaferLLM's MeshGEMM k-iteration runs 6: gemm_k_cycles / 6); divisions cost the wafer's scalar_division_cycles"},
      {"route_switch_cycles", "cycles/switch", 0.0, 1e6, &CostParams::route_switch_cycles,
       "re-configuring routes at run time (allreduce axis switch)"},
  };
}

std::vector<std::string> registry_names() {
  std::vector<std::string> names;
  for (const auto& p : param_registry()) names.push_back(p.name);
  return names;
}

// Keys a params file may hold: every parameter, and the uncertainty section calibrate writes.
std::vector<std::string> file_keys() {
  std::vector<std::string> keys = registry_names();
  keys.emplace_back("uncertainty");
  keys.emplace_back("sim_timing");
  keys.emplace_back("fits");
  return keys;
}

// Shortest text that parses back to the same double (std::to_chars guarantees the round trip).
std::string exact_double(double value) {
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (result.ec != std::errc()) throw InternalError("cannot format a double");
  return std::string(buffer, result.ptr);
}

}  // namespace

const std::vector<ParamInfo>& param_registry() {
  static const std::vector<ParamInfo> registry = build_registry();
  return registry;
}

CostParams default_params(const wafer::WaferParams& wafer) {
  CostParams params;
  params.alpha_cycles_per_hop = wafer.alpha_cycles_per_hop;
  params.beta_cycles_per_stage = wafer.beta_cycles_per_stage;
  return params;
}

std::string data_dir() {
  if (const char* env = std::getenv("WAVEL_DATA_DIR"); env != nullptr && *env != '\0') return env;
  return WAVEL_DATA_DIR;
}

std::string calibrated_params_path(const std::string& wafer_preset) {
  const auto wafer = wafer::find_wafer_preset(wafer_preset);  // the preset table names its file
  return wafer && !wafer->calibrated_params.empty() ? data_dir() + "/" + wafer->calibrated_params : "";
}

static std::string read_params_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw InputMissingError("cannot read params file '" + path + "'");
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) throw InputMissingError("error while reading params file '" + path + "'");
  return text.str();
}

CostParams load_params(const std::string& path, const CostParams& base) {
  return parse_params(read_params_file(path), path, base);
}

ParamUncertaintySpec load_uncertainty(const std::string& path) {
  return parse_uncertainty(read_params_file(path), path);
}

CostParams parse_params(const std::string& text, const std::string& file_label, const CostParams& base) {
  const yaml::Node root = yaml::parse_yaml(text, file_label);
  yaml::Validator v;
  CostParams params = base;
  // Parameters of earlier versions, named with what replaced them rather than as unknown keys.
  static const std::pair<const char*, const char*> removed[] = {
      {"kernel_overhead_cycles",
       "was removed: a uniform per-op launch has no hardware cause; WaferLLM's layers are straight-line code, "
       "and what it stood for is now costed as scalar loops (scalar_op_cycles, the wafer's scalar_division_cycles), "
       "MeshGEMV and allreduce calls (gemv_fixed_cycles) and route switches; regenerate the file with calibrate"},
      {"elementwise_efficiency",
       "was removed: elementwise ops run at the FMAC's port-bound rate (the wafer's SRAM ports) plus their scalar "
       "loops; regenerate the file with calibrate"}};
  std::vector<std::string> allowed = file_keys();
  if (root.kind == yaml::Node::Kind::map) {
    for (std::size_t i = 0; i < root.entries.size(); ++i) {
      for (const auto& [key, why] : removed) {
        if (root.entries[i].first != key) continue;
        v.error(root.key_sources[i], key, why);
        allowed.emplace_back(key);
      }
    }
  }
  if (v.check_map(root, "", allowed)) {
    for (const auto& info : param_registry()) {
      const yaml::Node* node = root.find(info.name);
      if (node == nullptr) continue;
      if (auto value = v.number(*node, info.name, info.min_value, info.max_value)) params.*info.field = *value;
    }
  }
  v.throw_if_errors();
  // The other sections are checked with the values, so every command refuses a bad one up front.
  if (root.kind == yaml::Node::Kind::map && root.find("uncertainty") != nullptr) parse_uncertainty(text, file_label);
  if (root.kind == yaml::Node::Kind::map && root.find("sim_timing") != nullptr) parse_pe_timing(text, file_label, {});
  if (root.kind == yaml::Node::Kind::map && root.find("fits") != nullptr) parse_fits(text, file_label);
  return params;
}

wafer::PeTiming load_pe_timing(const std::string& path, const wafer::PeTiming& base) {
  return parse_pe_timing(read_params_file(path), path, base);
}

wafer::PeTiming parse_pe_timing(const std::string& text, const std::string& file_label, const wafer::PeTiming& base) {
  const yaml::Node root = yaml::parse_yaml(text, file_label);
  const yaml::Node* section = root.kind == yaml::Node::Kind::map ? root.find("sim_timing") : nullptr;
  wafer::PeTiming timing = base;
  if (section == nullptr) return timing;
  yaml::Validator v;
  std::vector<std::string> names;
  for (const auto& info : wafer::pe_timing_registry()) names.push_back(info.name);
  if (v.check_map(*section, "sim_timing", names)) {
    for (const auto& info : wafer::pe_timing_registry()) {
      const yaml::Node* node = section->find(info.name);
      if (node == nullptr) continue;
      if (auto value = v.number(*node, "sim_timing." + info.name, info.min_value, info.max_value)) {
        timing.*info.field = *value;
      }
    }
  }
  v.throw_if_errors();
  return timing;
}

std::string pe_timing_to_yaml(const wafer::PeTiming& timing, const std::string& header_comment) {
  std::string out;
  std::istringstream header(header_comment);
  for (std::string line; std::getline(header, line);) out += line.empty() ? "#\n" : "# " + line + "\n";
  out += "sim_timing:\n";
  std::size_t width = 0;
  std::vector<std::string> values;
  for (const auto& info : wafer::pe_timing_registry()) {
    values.push_back("  " + info.name + ": " + exact_double(timing.*info.field));
    width = std::max(width, values.back().size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto& info = wafer::pe_timing_registry()[i];
    out += values[i] + std::string(width - values[i].size() + 2, ' ') + "# [" + info.units + "] " +
           info.description + "; bounds " + exact_double(info.min_value) + " .. " + exact_double(info.max_value) +
           "\n";
  }
  return out;
}

std::string params_to_yaml(const CostParams& params, const std::string& header_comment) {
  std::string out;
  std::istringstream header(header_comment);
  for (std::string line; std::getline(header, line);) out += line.empty() ? "#\n" : "# " + line + "\n";

  std::size_t width = 0;
  std::vector<std::string> values;
  for (const auto& info : param_registry()) {
    values.push_back(info.name + ": " + exact_double(params.*info.field));
    width = std::max(width, values.back().size());
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto& info = param_registry()[i];
    out += values[i] + std::string(width - values[i].size() + 2, ' ') + "# [" + info.units + "] " +
           info.description + "; bounds " + exact_double(info.min_value) + " .. " + exact_double(info.max_value) +
           "\n";
  }
  return out;
}

}  // namespace wavel::cost

namespace wavel::cost {

std::string uncertainty_to_yaml(const ParamUncertaintySpec& spec) {
  std::string out = "# Joint normal distribution of ln p around ln of the values above (run: cost.draws)\nuncertainty:\n";
  out += "  method: \"" + spec.method + "\"\n  names: [";
  for (std::size_t i = 0; i < spec.names.size(); ++i) out += (i ? ", " : "") + spec.names[i];
  out += "]\n  ln_covariance:\n";
  for (const auto& row : spec.ln_covariance) {
    out += "    - [";
    for (std::size_t j = 0; j < row.size(); ++j) out += (j ? ", " : "") + exact_double(row[j]);
    out += "]\n";
  }
  return out;
}

ParamUncertaintySpec parse_uncertainty(const std::string& text, const std::string& file_label) {
  const yaml::Node root = yaml::parse_yaml(text, file_label);
  ParamUncertaintySpec spec;
  const yaml::Node* u = root.kind == yaml::Node::Kind::map ? root.find("uncertainty") : nullptr;
  if (u == nullptr) return spec;
  yaml::Validator v;
  if (!v.check_map(*u, "uncertainty", {"method", "names", "ln_covariance"})) v.throw_if_errors();
  if (const yaml::Node* m = u->find("method")) spec.method = v.string(*m, "uncertainty.method").value_or("");
  const yaml::Node* names = u->find("names");
  const yaml::Node* cov = u->find("ln_covariance");
  if (names == nullptr || cov == nullptr) {
    v.error(u->where, "uncertainty", "needs both names and ln_covariance");
    v.throw_if_errors();
  }
  spec.names = v.axis(*names, "uncertainty.names",
                      [&v](const yaml::Node& n, const std::string& path) { return v.choice(n, path, registry_names()); });
  const std::size_t p = spec.names.size();
  if (cov->kind != yaml::Node::Kind::sequence || cov->items.size() != p) {
    v.error(cov->where, "uncertainty.ln_covariance", "expected " + std::to_string(p) + " rows, one per name");
  } else {
    for (std::size_t i = 0; i < p; ++i) {
      const yaml::Node& row = cov->items[i];
      const std::string path = "uncertainty.ln_covariance[" + std::to_string(i) + "]";
      if (row.kind != yaml::Node::Kind::sequence || row.items.size() != p) {
        v.error(row.where, path, "expected a row of " + std::to_string(p) + " numbers");
        continue;
      }
      std::vector<double> values;
      for (std::size_t j = 0; j < p; ++j) {
        values.push_back(v.number(row.items[j], path + "[" + std::to_string(j) + "]", -1e6, 1e6).value_or(0.0));
      }
      if (values[i] < 0) v.error(row.items[i].where, path, "a variance must not be negative");
      spec.ln_covariance.push_back(std::move(values));
    }
    for (std::size_t i = 0; i < spec.names.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (spec.names[i] == spec.names[j]) {
          v.error(names->kind == yaml::Node::Kind::sequence && i < names->items.size() ? names->items[i].where
                                                                                         : names->where,
                  "uncertainty.names", "'" + spec.names[i] + "' is named twice");
        }
      }
    }
    for (std::size_t i = 0; i < spec.ln_covariance.size() && spec.ln_covariance.size() == p; ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        const double a = spec.ln_covariance[i][j], b = spec.ln_covariance[j][i];
        if (std::abs(a - b) > 1e-9 * std::max({1.0, std::abs(a), std::abs(b)})) {
          v.error(cov->items[i].where, "uncertainty.ln_covariance", "the matrix must be symmetric");
        }
      }
    }
  }
  if (v.diagnostics().empty() && !covariance_factor(spec.ln_covariance)) {
    v.error(cov->where, "uncertainty.ln_covariance", "the covariance is not positive semi-definite");
  }
  v.throw_if_errors();
  return spec;
}

}  // namespace wavel::cost
