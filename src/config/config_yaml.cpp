// The resolved config as YAML (what a dry run prints and results.h5 stores): every key with the value
// in effect, numbers in their shortest exact form.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <filesystem>

#include "wavel/config/config.hpp"
#include "detail/keys.hpp"
#include "detail/wafer_keys.hpp"

namespace wavel::config {

namespace fs = std::filesystem;

bool looks_like_sweep_config(const std::string& text) {
  return text.rfind("workloads:", 0) == 0 || text.find("\nworkloads:") != std::string::npos;
}

std::string describe_params(const Config& config) {
  const CostConfig& c = config.cost;
  if (c.params_file == kBuiltinParams || c.params_path.empty()) return "built-in default parameters, uncalibrated";
  if (c.params_file.empty()) return "the calibrated " + config.wafer.preset + " parameters, " + c.params_path;
  if (c.params_from_data_dir) {
    return "parameters from " + c.params_file + " in the tool's data directory";
  }
  return "parameters from " + c.params_file;
}

std::string format_double(double value) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value);  // shortest exact form
  return std::string(text, result.ptr);
}

std::string to_yaml(const Config& c, bool absolute_paths) {
  const auto path_text = [&](const std::string& given, const std::string& opened) {
    if (!absolute_paths || opened.empty() || opened == "preset") return given;
    std::error_code ec;
    const fs::path absolute = fs::absolute(opened, ec);
    return ec ? given : absolute.lexically_normal().string();
  };
  YAML::Emitter out;
  const auto num = [](double x) { return format_double(x); };
  out << YAML::BeginMap;
  out << YAML::Key << "wafer" << YAML::Value << YAML::BeginMap;
  const auto& w = c.wafer;
  out << YAML::Key << "preset" << YAML::Value << w.preset;
  for (const auto& k : detail::wafer_keys()) {
    out << YAML::Key << k.name << YAML::Value;
    if (k.integer) {
      out << static_cast<std::int64_t>(k.get(w));
    } else {
      out << num(k.get(w));
    }
  }
  out << YAML::Key << "defective_pes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& pe : c.wafer_sweep.listed_defects) out << YAML::Flow << YAML::BeginSeq << pe.x << pe.y << YAML::EndSeq;
  out << YAML::EndSeq;
  out << YAML::Key << "defect_rate" << YAML::Value << num(c.wafer_sweep.defect_rate);
  out << YAML::Key << "defect_seed" << YAML::Value << c.wafer_sweep.defect_seed;
  out << YAML::Key << "sweep_mode" << YAML::Value << (c.wafer_sweep.one_at_a_time ? "one_at_a_time" : "product");
  out << YAML::Key << "sweep" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, values] : c.wafer_sweep.axes) {
    out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (double x : values) out << num(x);
    out << YAML::EndSeq;
  }
  out << YAML::EndMap;
  out << YAML::EndMap;
  detail::write_keys(out, "energy", detail::energy_keys(), c, c.energy);

  const auto& a = c.workloads;
  out << YAML::Key << "workloads" << YAML::Value << YAML::BeginMap;
  if (!a.cases.empty()) {
    out << YAML::Key << "cases" << YAML::Value << YAML::BeginSeq;
    for (const auto& k : a.cases) {
      const auto& m = a.models.at(k.model_index);
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "model" << YAML::Value << path_text(m.given, m.spec.source)
          << YAML::Key << "phase" << YAML::Value << std::string(workload::to_string(k.shape.phase)) << YAML::Key
          << "concurrent_requests" << YAML::Value << k.shape.concurrent_requests << YAML::Key << "input_tokens"
          << YAML::Value << k.shape.input_tokens;
      if (k.shape.phase == workload::Phase::decode) out << YAML::Key << "output_tokens" << YAML::Value << k.shape.output_tokens;
      out << YAML::Key << "wafers" << YAML::Value << k.wafers << YAML::EndMap;
    }
    out << YAML::EndSeq;
  } else {
    out << YAML::Key << "models" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (const auto& m : a.models) out << path_text(m.given, m.spec.source);
    out << YAML::EndSeq;
    out << YAML::Key << "phases" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (auto p : a.phases) out << std::string(workload::to_string(p));
    out << YAML::EndSeq;
    out << YAML::Key << "concurrent_requests" << YAML::Value << YAML::Flow << a.concurrent_requests;
    if (a.lengths.empty()) {
      out << YAML::Key << "input_tokens" << YAML::Value << YAML::Flow << a.input_tokens;
      out << YAML::Key << "output_tokens" << YAML::Value << YAML::Flow << a.output_tokens;
    } else {
      out << YAML::Key << "lengths" << YAML::Value << YAML::Flow << YAML::BeginSeq;
      for (const auto& [in, o] : a.lengths) out << YAML::Flow << YAML::BeginSeq << in << o << YAML::EndSeq;
      out << YAML::EndSeq;
    }
  }
  detail::write_key_values(out, detail::workload_keys(), c, a);
  out << YAML::EndMap;

 out << YAML::Key << "cost" << YAML::Value << YAML::BeginMap;
  if (!c.cost.params_file.empty()) {
    out << YAML::Key << "params_file" << YAML::Value << path_text(c.cost.params_file, c.cost.params_path);
  }
  out << YAML::Key << "draws" << YAML::Value << c.cost.draws;
  out << YAML::Key << "pinned" << YAML::Value << YAML::Flow << c.cost.pinned;
  for (const auto& info : cost::param_registry()) {
    out << YAML::Key << info.name << YAML::Value << num(c.cost.params.*(info.field));
  }
  out << YAML::EndMap;

  detail::write_keys(out, "baselines", detail::baselines_keys(), c, c.baselines);
  detail::write_keys(out, "search", detail::search_keys(), c, c.search);
  detail::write_keys(out, "cluster", detail::cluster_keys(), c, c.cluster);
  detail::write_keys(out, "sim", detail::sim_keys(), c, c.sim);
  detail::write_keys(out, "output", detail::output_keys(), c, c.output);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace wavel::config
