// Reads and validates reference measurement files, reporting every problem with its position.
#include "wavel/calibrate/reference.hpp"

#include <algorithm>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/common/input_file.hpp"
#include "wavel/common/yaml_schema.hpp"
#include "wavel/common/yaml_tree.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"

namespace wavel::calibrate {

namespace {

using yaml::Node;
using yaml::Validator;

// Ranges of a point (docs/cli.md, Input limits): the config's own token limit and mesh side limit.
constexpr std::int64_t kMaxTokens = std::int64_t{1} << 24;
constexpr std::int64_t kMaxSidePes = 100000;
constexpr double kMaxTokensPerS = 1e15;
// Slower than one token in about 12 days is no measurement of a wafer; it only makes absurd percentages.
constexpr double kMinTokensPerS = 1e-6;

// A reference file is data, not configuration: its problems exit 65, not 78.
[[noreturn]] void throw_data_error(std::vector<Diagnostic> diagnostics) {
  throw_data_error_in_file_order(std::move(diagnostics));
}

std::string preset_list() {
  std::string names;
  for (const auto& n : workload::model_preset_names()) names += (names.empty() ? "" : ", ") + n;
  return names;
}

std::optional<std::string> read_model(Validator& v, const Node& node, const std::string& path) {
  auto name = v.string(node, path);
  if (!name) return std::nullopt;
  if (workload::find_model_preset(*name)) return name;
  const std::string suggestion = yaml::did_you_mean(*name, workload::model_preset_names());
  v.error(node.where, path,
          "unknown model '" + *name + "'" + (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?") +
              " (presets: " + preset_list() + ")");
  return std::nullopt;
}

// Largest square region the wafer's kernel rectangle holds, or 0 if the wafer is unknown.
std::int64_t max_square_side_pes(const std::optional<std::string>& wafer_name) {
  if (!wafer_name) return 0;
  const auto wafer = wafer::find_wafer_preset(*wafer_name);
  if (!wafer) return 0;
  return std::min(wafer->max_grid_w_pes(), wafer->max_grid_h_pes());
}

// Where `key` is written in `map` (its last occurrence): key-level problems point at the key.
yaml::Source key_where(const Node& map, const std::string& key) {
  yaml::Source where = map.where;
  for (std::size_t i = 0; i < map.entries.size(); ++i) {
    if (map.entries[i].first == key) where = map.key_sources[i];
  }
  return where;
}

std::optional<ReferencePoint> read_point(Validator& v, const Node& node, const std::string& path,
                                         std::int64_t max_side_pes, const std::string& wafer_name) {
  if (node.kind != Node::Kind::map) {
    v.error(node.where, path,
            "expected a map with model, phase, grid, tpr_tokens_per_s and context_tokens or input_tokens");
    return std::nullopt;
  }
  v.check_map(node, path, {"model", "phase", "context_tokens", "input_tokens", "grid", "tpr_tokens_per_s", "dim",
                           "ffn_dim", "seq_len", "group_num"});
  bool ok = true;
  auto required = [&](const char* key) -> const Node* {
    const Node* found = node.find(key);
    if (found == nullptr) {
      v.error(node.where, yaml::join_key(path, key), "missing required key");
      ok = false;
    }
    return found;
  };

  ReferencePoint point;
  point.line = node.where.line;
  point.column = node.where.column;

  if (const Node* n = required("model")) {
    if (auto model = read_model(v, *n, yaml::join_key(path, "model"))) point.model = *model; else ok = false;
  }
  std::optional<workload::Phase> phase;
  if (const Node* n = required("phase")) {
    if (auto p = v.choice_of(*n, yaml::join_key(path, "phase"), workload::kPhaseNames)) {
      phase = *p;
      point.phase = *phase;
    } else {
      ok = false;
    }
  }

  // Exactly one token count, and the one that matches the phase: a decode point is defined by its
  // KV-cache length, a prefill point by its prompt length.
  const Node* context = node.find("context_tokens");
  const Node* input = node.find("input_tokens");
  auto read_tokens = [&](const Node& n, const char* key) -> std::optional<std::int64_t> {
    auto tokens = v.integer(n, yaml::join_key(path, key), 1, kMaxTokens);
    if (!tokens) ok = false;
    return tokens;
  };
  if (context != nullptr && input != nullptr) {
    const yaml::Source at_context = key_where(node, "context_tokens");
    const yaml::Source at_input = key_where(node, "input_tokens");
    const bool context_later =
        std::make_pair(at_context.line, at_context.column) > std::make_pair(at_input.line, at_input.column);
    v.error(context_later ? at_context : at_input,
            yaml::join_key(path, context_later ? "context_tokens" : "input_tokens"),
            "give exactly one of context_tokens (decode) or input_tokens (prefill), not both");
    ok = false;
  } else if (!phase) {
    // The phase is unusable, but the count can still be checked so one pass reports everything.
    if (context != nullptr) read_tokens(*context, "context_tokens");
    if (input != nullptr) read_tokens(*input, "input_tokens");
  } else {
    const bool decode = *phase == workload::Phase::decode;
    const char* wanted = decode ? "context_tokens" : "input_tokens";
    const char* other = decode ? "input_tokens" : "context_tokens";
    if ((decode ? input : context) != nullptr) {
      v.error(key_where(node, other), yaml::join_key(path, other),
              "not allowed for a " + std::string(workload::to_string(*phase)) + " point; give " + wanted);
      ok = false;
    } else if (const Node* n = required(wanted)) {
      if (auto tokens = read_tokens(*n, wanted)) (decode ? point.context_tokens : point.input_tokens) = *tokens;
    }
  }

  if (const Node* n = required("grid")) {
    const std::string key = yaml::join_key(path, "grid");
    if (auto grid = v.integer(*n, key, 1, kMaxSidePes)) {
      if (max_side_pes > 0 && *grid > max_side_pes) {
        v.error(n->where, key,
                "a region of " + std::to_string(*grid) + " x " + std::to_string(*grid) + " PEs does not fit the " +
                    wafer_name + " kernel rectangle (largest square side " + std::to_string(max_side_pes) + ")");
        ok = false;
      } else {
        point.grid_pes = *grid;
      }
    } else {
      ok = false;
    }
  }
  if (const Node* n = required("tpr_tokens_per_s")) {
    if (auto tpr = v.number(*n, yaml::join_key(path, "tpr_tokens_per_s"), kMinTokensPerS, kMaxTokensPerS)) {
      point.tpr_tokens_per_s = *tpr;
    } else {
      ok = false;
    }
  }
  // Optional run-configuration keys, checked against the grid once it is known.
  const struct {
    const char* key;
    std::int64_t& value;
  } shape_keys[] = {{"dim", point.dim}, {"ffn_dim", point.ffn_dim}, {"seq_len", point.seq_len}, {"group_num", point.group_num}};
  for (const auto& k : shape_keys) {
    const Node* n = node.find(k.key);
    if (n == nullptr) continue;
    const std::string key = yaml::join_key(path, k.key);
    const auto value = v.integer(*n, key, 1, kMaxTokens);
    if (!value) {
      ok = false;
    } else if (point.grid_pes > 0 && std::string(k.key) != "group_num" && *value % point.grid_pes != 0) {
      v.error(n->where, key, "WaferLLM's kernels split it evenly over the grid: " + std::to_string(*value) +
                                 " is not a multiple of " + std::to_string(point.grid_pes));
      ok = false;
    } else if (point.grid_pes > 0 && std::string(k.key) == "group_num" &&
               (*value > point.grid_pes || point.grid_pes % *value != 0)) {
      v.error(n->where, key, std::to_string(*value) + " groups do not divide the grid side " +
                                 std::to_string(point.grid_pes) + " evenly");
      ok = false;
    } else {
      k.value = *value;
    }
  }
  if (!ok) return std::nullopt;
  return point;
}

}  // namespace

ReferenceSet load_reference(const std::string& path) {
  return parse_reference(read_input_file(path, yaml::kMaxTextBytes, "reference file"), path);
}

ReferenceSet parse_reference(const std::string& text, const std::string& file_label) {
  Validator v;
  const Node root = yaml::parse_data_map(text, file_label, v, {"source", "wafer", "points"}, {"kernels"});
  ReferenceSet set;
  set.file = file_label;
  if (const Node* n = root.find("source")) {
    if (auto s = v.string(*n, "source")) set.source = *s;
  }
  std::optional<std::string> wafer_name;
  if (const Node* n = root.find("wafer")) {
    wafer_name = v.choice(*n, "wafer", wafer::wafer_preset_names());
    if (wafer_name) set.wafer = *wafer_name;
  }
  const std::int64_t max_side = max_square_side_pes(wafer_name);
  if (const Node* n = root.find("points")) {
    if (n->kind != Node::Kind::sequence || n->items.empty()) {
      v.error(n->where, "points", "expected a non-empty list of measurements");
    } else {
      for (std::size_t i = 0; i < n->items.size(); ++i) {
        const std::string path = "points[" + std::to_string(i) + "]";
        if (auto point = read_point(v, n->items[i], path, max_side, set.wafer)) set.points.push_back(*point);
      }
    }
  }
  // `kernels` holds single-kernel figures (free-form notes); calibration does not use them.

  if (!v.diagnostics().empty()) throw_data_error(v.diagnostics());
  return set;
}

}  // namespace wavel::calibrate
