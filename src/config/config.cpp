// The config schema: wafer, workloads and cost sections, and the one pass that validates them all
// (the run sections: sections.cpp).
#include "wavel/config/config.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>

#include "wavel/cost/draws.hpp"
#include "wavel/config/hardware.hpp"
#include "wavel/common/yaml_schema.hpp"
#include "wavel/common/yaml_tree.hpp"
#include "detail/read.hpp"
#include "detail/keys.hpp"
#include "detail/wafer_keys.hpp"

namespace wavel::config {
using namespace wavel::yaml;  // the YAML tree and its validator (common/)
using namespace detail;       // the key readers and the section readers of sections.cpp

namespace fs = std::filesystem;

namespace {

constexpr double kMaxSettings = 100000;  ///< settings in one sweep (docs/cli.md, Input limits)


void read_wafer(Validator& v, const Node& node, wafer::WaferParams& w) {
  const std::string path = "wafer";
  std::vector<std::string> allowed{wafer_other_keys().front().key};  // preset
  for (const auto& k : wafer_keys()) allowed.push_back(k.name);
  for (std::size_t i = 1; i < wafer_other_keys().size(); ++i) allowed.push_back(wafer_other_keys()[i].key);
  v.check_map(node, path, allowed);
  std::string preset = "wse3";
  if (present(node, "preset")) {
    if (auto p = v.choice(child_or_null(node, "preset"), "wafer.preset", wafer::wafer_preset_names())) preset = *p;
  }
  w = *wafer::find_wafer_preset(preset);
  for (const auto& k : wafer_keys()) {
    if (k.read_by_hand || !present(node, k.name)) continue;
    const Node& n = child_or_null(node, k.name);
    const std::string key_path = join_key(path, k.name);
    if (k.integer) {
      if (auto x = v.integer(n, key_path, static_cast<std::int64_t>(k.lo), static_cast<std::int64_t>(k.hi))) {
        k.set(w, static_cast<double>(*x));
      }
    } else if (auto x = v.number(n, key_path, k.lo, k.hi, k.lo_exclusive)) {
      k.set(w, *x);
    }
  }
  w.grid_w_pes = w.max_grid_w_pes();
  w.grid_h_pes = w.max_grid_h_pes();
  for (const char* border : {"io_border_cols", "io_border_rows"}) {
    if (present(node, border) && (w.max_grid_w_pes() < 1 || w.max_grid_h_pes() < 1)) {
      v.error(child_or_null(node, border).where, join_key(path, border), "leaves no usable PEs on the fabric");
    }
  }
  const struct {
    const char* key;
    std::int64_t& value;
    std::int64_t max;
  } grid_sides[] = {{"grid_w_pes", w.grid_w_pes, w.max_grid_w_pes()}, {"grid_h_pes", w.grid_h_pes, w.max_grid_h_pes()}};
  for (const auto& side : grid_sides) {
    if (!present(node, side.key)) continue;
    const Node& n = child_or_null(node, side.key);
    if (auto value = v.integer(n, join_key(path, side.key), 1)) {
      if (*value > side.max) {
        v.error(n.where, join_key(path, side.key),
                "grid larger than the wafer: " + std::to_string(*value) + " PEs, but the " + preset +
                    " fabric leaves at most " + std::to_string(side.max));
      } else {
        side.value = *value;
      }
    }
  }
  if (w.sram_reserved_per_pe_bytes >= w.sram_per_pe_bytes) {
    const char* key = present(node, "sram_reserved_per_pe_bytes") ? "sram_reserved_per_pe_bytes" : "sram_per_pe_bytes";
    v.error(child_or_null(node, key).where, join_key(path, key),
            "leaves no SRAM for data: " + std::to_string(w.sram_reserved_per_pe_bytes) + " of " +
                std::to_string(w.sram_per_pe_bytes) + " bytes per PE are reserved for code, stack and task table");
  }

  if (present(node, "defective_pes")) {
    const Node& list = child_or_null(node, "defective_pes");
    const std::string list_path = "wafer.defective_pes";
    if (list.kind != Node::Kind::sequence) {
      if (list.kind != Node::Kind::null) v.error(list.where, list_path, "expected a list of [x, y] pairs");
    } else {
      std::set<std::pair<std::int64_t, std::int64_t>> seen;
      for (std::size_t i = 0; i < list.items.size(); ++i) {
        const Node& item = list.items[i];
        const std::string item_path = list_path + "[" + std::to_string(i) + "]";
        if (item.kind != Node::Kind::sequence || item.items.size() != 2) {
          v.error(item.where, item_path, "expected an [x, y] pair");
          continue;
        }
        auto x = v.integer(item.items[0], item_path + ".x", 0, w.grid_w_pes - 1);
        auto y = v.integer(item.items[1], item_path + ".y", 0, w.grid_h_pes - 1);
        if (!x || !y) continue;
        if (!seen.emplace(*x, *y).second) {
          v.error(item.where, item_path, "PE listed twice");
          continue;
        }
        w.defective_pes.push_back(wafer::PeCoord{*x, *y});
      }
    }
  }
}

// Paths in the file are relative to the file; paths from --set to the working directory.
fs::path resolve_input_path(const std::string& given, const Node& node, const std::string& config_file) {
  fs::path resolved = given;
  if (resolved.is_relative() && node.where.file.rfind("--set", 0) != 0) {
    resolved = fs::path(config_file).parent_path() / resolved;
  }
  return resolved;
}

// The parse's model texts (parse_config's `texts`), or none.
thread_local InputTexts* g_texts = nullptr;

std::optional<ModelChoice> read_model(Validator& v, const Node& node, const std::string& path,
                                      const std::string& config_file) {
  auto given = v.string(node, path);
  if (!given) return std::nullopt;
  if (auto preset = workload::find_model_preset(*given)) return ModelChoice{*given, *preset};

  const bool looks_like_path = given->find('/') != std::string::npos ||
                               (given->size() > 5 && given->compare(given->size() - 5, 5, ".json") == 0);
  if (!looks_like_path) {
    const std::string suggestion = did_you_mean(*given, workload::model_preset_names());
    std::string names;
    for (const auto& n : workload::model_preset_names()) names += (names.empty() ? "" : ", ") + n;
    v.error(node.where, path,
            "unknown model '" + *given + "'" +
                (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?") +
                " (presets: " + names + "; or give a path to a HF config.json)");
    return std::nullopt;
  }
  fs::path resolved = resolve_input_path(*given, node, config_file);
  std::error_code ec;
  if (fs::is_directory(resolved, ec)) resolved /= "config.json";
  if (!fs::is_regular_file(resolved, ec)) {
    v.error(node.where, path, "model file not found: " + resolved.string());
    return std::nullopt;
  }
  try {
    const std::string file = resolved.string();
    if (g_texts == nullptr) return ModelChoice{*given, workload::load_hf_config(file)};
    auto it = g_texts->find(file);
    if (it == g_texts->end()) it = g_texts->emplace(file, workload::read_hf_config_text(file)).first;
    return ModelChoice{*given, workload::parse_hf_config(it->second, file)};
  } catch (const DiagnosticError& e) {
    v.error(node.where, path, "invalid HF config " + resolved.string() + ":");
    for (const auto& d : e.diagnostics()) {
      v.error(Source{d.file, d.line, d.column}, d.key_path, d.message);
    }
  } catch (const Error& e) {
    v.error(node.where, path, e.what());
  }
  return std::nullopt;
}

// workloads.cases: settings one by one; their models become the models list, in order of first use.
void read_cases(Validator& v, const Node& node, WorkloadAxes& axes, const std::string& file) {
  for (const char* key : {"models", "phases", "concurrent_requests", "input_tokens", "output_tokens", "lengths"}) {
    if (present(node, key)) {
      v.error(child_or_null(node, key).where, join_key("workloads", key),
              "give either workloads.cases (settings one by one) or the sweep axes, not both");
    }
  }
  const Node& list = child_or_null(node, "cases");
  if (list.kind != Node::Kind::sequence || list.items.empty()) {
    v.error(list.where, "workloads.cases", "expected a list of settings, each a map with model and phase");
    return;
  }
  for (std::size_t i = 0; i < list.items.size(); ++i) {
    const Node& item = list.items[i];
    const std::string p = "workloads.cases[" + std::to_string(i) + "]";
    if (!v.check_map(item, p, {"model", "phase", "concurrent_requests", "input_tokens", "output_tokens", "wafers"})) continue;
    if (!present(item, "model") || !present(item, "phase")) {
      v.error(item.where, p, "a case needs a model and a phase");
      continue;
    }
    auto model = read_model(v, child_or_null(item, "model"), p + ".model", file);
    auto phase = v.choice_of(child_or_null(item, "phase"), p + ".phase", workload::kPhaseNames);
    WorkloadCase c;
    for (const auto& [a, target] : {std::pair<const IntAxis&, std::int64_t&>{kRequestsAxis, c.shape.concurrent_requests},
                                    {kInputTokensAxis, c.shape.input_tokens},
                                    {kOutputTokensAxis, c.shape.output_tokens}}) {
      target = a.fallback;
      read_int(v, item, p, a.key, target, 1, a.max());
    }
    read_int(v, item, p, "wafers", c.wafers, 1, wafer::kMaxWafers);
    if (!model || !phase) continue;
    c.shape.phase = *phase;
    if (c.shape.phase == workload::Phase::prefill) c.shape.output_tokens = 0;  // prefill never reads it
    if (c.wafers > model->spec.num_layers) {
      v.error(item.where, p + ".wafers",
              "model '" + model->spec.name + "' has " + std::to_string(model->spec.num_layers) +
                  " decoder layers: it cannot be split over " + std::to_string(c.wafers) + " wafers");
      continue;
    }
    const auto same = std::find_if(axes.models.begin(), axes.models.end(),
                                   [&](const ModelChoice& m) { return m.given == model->given; });
    c.model_index = static_cast<std::size_t>(same - axes.models.begin());
    if (same == axes.models.end()) axes.models.push_back(*model);
    axes.cases.push_back(c);
  }
}

void read_workloads(Validator& v, const Node& root, const Node& node, WorkloadAxes& axes, const std::string& file) {
  const std::string path = "workloads";
  if (!present(root, "workloads")) {
    v.error(root.where, path, "missing required section (it lists the models and shapes to sweep)");
    return;
  }
  std::vector<std::string> allowed;
  for (const auto& k : workload_axis_keys()) allowed.push_back(k.key);
  for (const auto& k : names_of(workload_keys())) allowed.push_back(k);
  if (!v.check_map(node, path, allowed)) return;
  if (present(node, "cases")) {
    read_cases(v, node, axes, file);
  } else if (!present(node, "models")) {
    v.error(node.where, "workloads.models", "missing required key (a preset name or a HF config.json path)");
  } else {
    axes.models = v.axis(child_or_null(node, "models"), "workloads.models",
                         [&](const Node& n, const std::string& p) { return read_model(v, n, p, file); });
  }
  if (present(node, "phases")) {
    axes.phases = v.axis(child_or_null(node, "phases"), "workloads.phases",
                         [&](const Node& n, const std::string& p) { return v.choice_of(n, p, workload::kPhaseNames); });
  } else {
    axes.phases = {workload::Phase::prefill, workload::Phase::decode};
  }
  for (const auto& [a, values] : {std::pair<const IntAxis&, std::vector<std::int64_t>&>{kRequestsAxis, axes.concurrent_requests},
                                  {kInputTokensAxis, axes.input_tokens},
                                  {kOutputTokensAxis, axes.output_tokens}}) {
    if (!present(node, a.key)) {
      values = {a.fallback};
      continue;
    }
    values = v.axis(child_or_null(node, a.key), join_key(path, a.key),
                    [&, &a = a](const Node& n, const std::string& p) { return v.integer(n, p, 1, a.max()); });
  }
  if (present(node, "lengths")) {
    const Node& n = child_or_null(node, "lengths");
    for (const char* key : {"input_tokens", "output_tokens"}) {
      if (present(node, key)) v.error(child_or_null(node, key).where, join_key(path, key), "give either lengths or input_tokens/output_tokens, not both");
    }
    axes.lengths = v.axis(n, "workloads.lengths",
                          [&](const Node& item, const std::string& p) -> std::optional<std::pair<std::int64_t, std::int64_t>> {
                            if (item.kind != Node::Kind::sequence || item.items.size() != 2) {
                              v.error(item.where, p, "expected a pair [input_tokens, output_tokens]");
                              return std::nullopt;
                            }
                            const auto in = v.integer(item.items[0], p + "[0]", 1, kInputTokensAxis.max());
                            const auto out = v.integer(item.items[1], p + "[1]", 1, kOutputTokensAxis.max());
                            if (!in || !out) return std::nullopt;
                            return std::make_pair(*in, *out);
                          });
  }
  const std::string none;
  read_present_keys(v, node, path, workload_keys(), axes, KeyContext{wafer::WaferParams{}, none});
}

// A model's config.json keys the cost model does not include: refused where they change the
// prediction (a sliding window only past its width), noted otherwise.
void check_unmodelled(Validator& v, const WorkloadAxes& axes, std::vector<std::string>& notes) {
  std::int64_t longest = 0;  // the longest context any setting reaches
  const auto max_of = [](const std::vector<std::int64_t>& xs) { return xs.empty() ? 0 : *std::max_element(xs.begin(), xs.end()); };
  longest = max_of(axes.input_tokens) + max_of(axes.output_tokens);
  for (const auto& [in, out] : axes.lengths) longest = std::max(longest, in + out);
  for (const auto& c : axes.cases) longest = std::max(longest, c.shape.input_tokens + c.shape.output_tokens);
  for (std::size_t i = 0; i < axes.models.size(); ++i) {
    for (const auto& key : axes.models[i].spec.unmodelled) {
      const Diagnostic& d = key.where;
      const bool wrong = key.changes_prediction && (key.from_context_tokens == 0 || longest > key.from_context_tokens);
      if (wrong && !axes.allow_unmodelled_keys) {
        v.error(Source{d.file, d.line, d.column}, d.key_path,
                d.message + "; the prediction would be wrong (set workloads.allow_unmodelled_keys: true to run anyway)");
      } else {
        notes.push_back(d.file + ":" + std::to_string(d.line) + ": " + d.key_path + ": " + d.message +
                        (wrong ? " (allowed by workloads.allow_unmodelled_keys)" : ""));
      }
    }
  }
}

void read_cost_values(Validator& v, const Node& node, const std::string& path, CostConfig& c);

void read_cost(Validator& v, const Node& node, const wafer::WaferParams& wafer, CostConfig& c,
               const std::string& file) {
  const std::string path = "cost";
  std::vector<std::string> allowed;
  for (const auto& k : cost_other_keys()) allowed.push_back(k.key);
  std::vector<std::string> names;
  for (const auto& info : cost::param_registry()) names.push_back(info.name);
  allowed.insert(allowed.end(), names.begin(), names.end());
  v.check_map(node, path, allowed);
  c.params = cost::default_params(wafer);
  read_int(v, node, path, "draws", c.draws, 0, kMaxDraws);
  const bool empty_list = present(node, "pinned") && child_or_null(node, "pinned").kind == Node::Kind::sequence &&
                          child_or_null(node, "pinned").items.empty();
  if (present(node, "pinned") && !empty_list) {
    c.pinned = v.axis(child_or_null(node, "pinned"), "cost.pinned",
                      [&](const Node& n, const std::string& p) { return v.choice(n, p, names); });
  }
  const auto load = [&](const fs::path& resolved, const Source& where) {
    c.params_path = resolved.string();
    try {
      c.params = cost::load_params(resolved.string(), c.params);
      c.uncertainty = cost::load_uncertainty(resolved.string());
      c.sim_timing = cost::load_pe_timing(resolved.string(), c.sim_timing);
    } catch (const DiagnosticError& e) {
      for (const auto& d : e.diagnostics()) v.error(Source{d.file, d.line, d.column}, d.key_path, d.message);
    } catch (const Error& e) {
      v.error(where, "cost.params_file", e.what());
    }
  };
  std::error_code ec;
  if (present(node, "params_file")) {
    const Node& n = child_or_null(node, "params_file");
    if (auto given = v.string(n, "cost.params_file")) {
      c.params_file = *given;
      if (*given == kBuiltinParams) return read_cost_values(v, node, path, c);
      fs::path resolved = resolve_input_path(*given, n, file);
      // A relative name not next to the config is looked up in the tool's data directory, so a
      // copied config (params_file: params/wse3.yaml) works from anywhere.
      const fs::path in_data = fs::path(cost::data_dir()) / *given;
      if (!fs::is_regular_file(resolved, ec) && fs::path(*given).is_relative() && fs::is_regular_file(in_data, ec)) {
        resolved = in_data;
        c.params_from_data_dir = true;
      }
      if (!fs::is_regular_file(resolved, ec)) {
        v.error(n.where, "cost.params_file",
                "params file not found: " + resolved.string() +
                    (fs::path(*given).is_relative() ? " (nor " + in_data.string() + " in the tool's data directory)" : ""));
      } else {
        load(resolved, n.where);
      }
    }
  } else if (const std::string calibrated = cost::calibrated_params_path(wafer.preset); !calibrated.empty()) {
    // No file named: the committed calibrated parameters of the preset, not the uncalibrated values.
    if (fs::is_regular_file(calibrated, ec)) {
      load(calibrated, Source{file, 0, 0});
    } else {
      v.error(Source{file, 0, 0}, "cost.params_file",
              "no cost.params_file given and the calibrated parameters for " + wafer.preset + " are missing: " +
                  calibrated + " (set WAVEL_DATA_DIR to the tool's configs/ directory, name a params file, or write "
                  "'params_file: " + kBuiltinParams + "' for the uncalibrated built-in values)");
    }
  }
  read_cost_values(v, node, path, c);
}

// The parameter values set in the section itself, over the file's; each one is then pinned.
void read_cost_values(Validator& v, const Node& node, const std::string& path, CostConfig& c) {
  std::vector<std::string> pinned = c.pinned;
  for (const auto& info : cost::param_registry()) {
    read_double(v, node, path, info.name, c.params.*(info.field), info.min_value, info.max_value);
    if (present(node, info.name)) pinned.push_back(info.name);  // a value set here is not the fit's
  }
  c.uncertainty = cost::pin(c.uncertainty, pinned);
}


}  // namespace

Config parse_config(const std::string& text, const std::string& file, const std::vector<std::string>& overrides,
                    InputTexts* texts) {
  struct Scope {
    explicit Scope(InputTexts* t) { g_texts = t; }
    ~Scope() { g_texts = nullptr; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  } scope(texts);
  Validator v;
  Node root = parse_yaml(text, file);  // a syntax error leaves nothing to validate
  for (std::size_t i = 0; i < overrides.size(); ++i) {
    try {
      apply_override(root, overrides[i], static_cast<int>(i) + 1);
    } catch (const ConfigError& e) {
      for (const auto& d : e.diagnostics()) v.error(Source{d.file, d.line, d.column}, d.key_path, d.message);
    }
  }
  Config config;
  config.file = file;
  config.text = text;
  config.overrides = overrides;
  if (root.kind != Node::Kind::map) {
    v.error(root.where, "", root.kind == Node::Kind::null ? "the config is empty" : "the config must be a map");
    v.throw_if_errors();
  }
  // A Hugging Face config.json given as the sweep: say what it is instead of one error per key.
  if (!present(root, "workloads") && (present(root, "model_type") || present(root, "hidden_size"))) {
    v.error(root.where, "",
            "this is a model file (a Hugging Face config.json), not a sweep config; name it in one: "
            "'workloads: {models: [" + file + "]}' (configs/quickstart.yaml is a complete example)");
    v.throw_if_errors();
  }
  v.check_map(root, "", {"wafer", "workloads", "cost", "baselines", "cluster", "search", "sim", "output", "energy"});
  read_wafer(v, child_or_null(root, "wafer"), config.wafer);
  read_wafer_sweep(v, child_or_null(root, "wafer"), config.wafer, config.wafer_sweep);
  read_energy(v, child_or_null(root, "energy"), config.wafer, config.energy);
  read_cost(v, child_or_null(root, "cost"), config.wafer, config.cost, file);
  config.wafer.pe_timing = config.cost.sim_timing;  // the simulator's, from the same calibration
  read_baselines(v, child_or_null(root, "baselines"), config.wafer, config.baselines);
  read_cluster(v, child_or_null(root, "cluster"), config.wafer, config.cluster);
  read_workloads(v, root, child_or_null(root, "workloads"), config.workloads, file);
  check_unmodelled(v, config.workloads, config.notes);
  read_search(v, child_or_null(root, "search"), config.wafer, config.search);
  read_sim(v, child_or_null(root, "sim"), config.wafer, config.sim);
  read_output(v, child_or_null(root, "output"), config.wafer, config.output, file);
  // A pipeline gives each wafer at least one decoder layer (cases check their own).
  for (const auto& m : config.workloads.models) {
    for (const std::int64_t wafers : config.cluster.wafers) {
      // max_wafers: each model to its depth; cases carry their own wafer counts.
      if (wafers > m.spec.num_layers && config.cluster.max_wafers == 0 && config.workloads.cases.empty()) {
        v.error(child_or_null(child_or_null(root, "cluster"), "wafers").where, "cluster.wafers",
                "model '" + m.spec.name + "' has " + std::to_string(m.spec.num_layers) +
                    " decoder layers: it cannot be split over " + std::to_string(wafers) +
                    " wafers (each needs at least one; split the sweep into configs)");
      }
    }
  }
  if (!config.workloads.cases.empty()) {
    for (const char* key : {"wafers", "max_wafers"}) {
      if (present(child_or_null(root, "cluster"), key)) {
        v.error(child_or_null(child_or_null(root, "cluster"), key).where, join_key("cluster", key),
                "with workloads.cases each case gives its own wafers");
      }
    }
  }
  // The sweep is the product of the axes: bound it before anything expands it.
  const auto& a = config.workloads;
  const double lengths = a.lengths.empty() ? static_cast<double>(a.input_tokens.size()) * a.output_tokens.size()
                                           : static_cast<double>(a.lengths.size());
  std::size_t hardware_points_count = 1;
  if (v.diagnostics().empty()) {
    // The base wafer carries its random defects; each hardware point its own.
    WaferSweep no_axes = config.wafer_sweep;
    no_axes.axes.clear();
    config.wafer = hardware_points(config.wafer, config.cost.params, no_axes).front().wafer;
    config.hardware = hardware_points(config.wafer, config.cost.params, config.wafer_sweep);
    hardware_points_count = config.hardware.size();
  }
  const double settings = (a.cases.empty() ? static_cast<double>(a.models.size()) * a.phases.size() *
                                                  a.concurrent_requests.size() * lengths *
                                                  static_cast<double>(config.cluster.wafers.size())
                                            : static_cast<double>(a.cases.size())) *
                          static_cast<double>(hardware_points_count);
  if (settings > kMaxSettings) {
    v.error(child_or_null(root, "workloads").where, "workloads",
            "the sweep has " + format_double(settings) + " settings; the limit is " +
                std::to_string(static_cast<std::int64_t>(kMaxSettings)) + " (split it into several configs)");
  }
  v.throw_if_errors();
  if (!config.wafer_sweep.axes.empty()) {
    // A point's configuration does not carry the other points: 1000 points of 8,900 random
    // defects each would otherwise be copied 1000 times.
    Config shell = config;
    shell.hardware.clear();
    std::vector<Config> variants;
    variants.reserve(config.hardware.size());
    for (const auto& point : config.hardware) {
      Config c = shell;
      c.wafer = point.wafer;
      c.cost.params = point.params;
      for (const auto& [key, value] : point.values) {
        // A hardware latency swept is not the fitted value any more: it leaves the draws.
        if (key == "alpha_cycles_per_hop") c.cost.uncertainty = cost::pin(c.cost.uncertainty, {key});
      }
      variants.push_back(std::move(c));
    }
    config.at_hardware = std::move(variants);
  }
  return config;
}

}  // namespace wavel::config
