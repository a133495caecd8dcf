// Reads WSE-3 kernel measurement files and predicts each point through the cost model's op costs.
#include "wavel/calibrate/kernels.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "wavel/calibrate/fit.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/input_file.hpp"
#include "wavel/common/yaml_schema.hpp"
#include "wavel/common/yaml_tree.hpp"
#include "wavel/cost/detail/collectives.hpp"
#include "wavel/cost/model.hpp"

namespace wavel::calibrate {

namespace {

// The kernels a measurement file may name (`kernel:`), declared once. The shift is WaferLLM's
// neighbour shift, timed on its own; in a schedule it is part of kv_shift and of MeshGEMM's alignment.
constexpr std::pair<KernelKind, const char*> kKernelKinds[] = {
    {KernelKind::meshgemm, "meshgemm"}, {KernelKind::meshgemv, "meshgemv"}, {KernelKind::shift, "shift"}};

using yaml::Node;
using yaml::Validator;

constexpr std::int64_t kMaxSidePes = 100000;
constexpr std::int64_t kMaxSize = std::int64_t{1} << 30;
constexpr double kMaxCycles = 1e15;
// A harvested sweep holds under 1000 points; the cap bounds the fit, its folds and the simulations.
constexpr std::size_t kMaxPoints = 5000;

[[noreturn]] void throw_data_error(std::vector<Diagnostic> diagnostics) {
  throw_data_error_in_file_order(std::move(diagnostics));
}

// Keys of a point the harvested files carry besides the ones read; provenance, not used.
const std::vector<std::string>& point_keys() {
  static const std::vector<std::string> keys{"P",        "M",         "K",    "N",   "L",    "group_num",
                                             "mean_cycles", "max_cycles", "time_ms", "repeats", "date", "exit",
                                             "runtime_s", "src",       "note", "sim_mean_cycles", "hw_over_sim",
                                             "span_cycles_from_time"};
  return keys;
}

std::optional<KernelPoint> read_point(Validator& v, const Node& node, const std::string& path, KernelKind kind,
                                      bool& failed_run) {
  failed_run = false;
  if (node.kind != Node::Kind::map) {
    v.error(node.where, path, "expected a map with P, the sizes and mean_cycles");
    return std::nullopt;
  }
  v.check_map(node, path, point_keys());
  KernelPoint p;
  p.kind = kind;
  p.line = node.where.line;
  p.column = node.where.column;
  bool ok = true;
  auto integer = [&](const char* key, std::int64_t lo, std::int64_t hi) -> std::int64_t {
    const Node* n = node.find(key);
    if (n == nullptr) {
      v.error(node.where, yaml::join_key(path, key), "missing required key");
      ok = false;
      return 0;
    }
    auto value = v.integer(*n, yaml::join_key(path, key), lo, hi);
    if (!value) ok = false;
    return value.value_or(0);
  };
  p.side_pes = integer("P", 1, kMaxSidePes);
  p.m = integer("M", 1, kMaxSize);
  p.n = integer("N", 1, kMaxSize);
  if (kind == KernelKind::meshgemm) p.k = integer("K", 1, kMaxSize);
  if (kind == KernelKind::meshgemv) p.groups = integer("group_num", 1, kMaxSidePes);
  if (kind == KernelKind::shift) p.hops = integer("L", 1, kMaxSidePes);
  const Node* cycles = node.find("mean_cycles");
  const Node* exit_code = node.find("exit");
  if (cycles == nullptr || cycles->kind == Node::Kind::null) {
    // A run that failed has no cycles; it is skipped, but only if the file says it failed.
    const bool says_failed = exit_code != nullptr && exit_code->kind == Node::Kind::scalar && exit_code->scalar != "0";
    if (!says_failed) {
      v.error(node.where, yaml::join_key(path, "mean_cycles"), "missing (and the run is not marked failed by exit)");
    }
    failed_run = says_failed;
    return std::nullopt;
  }
  if (auto c = v.number(*cycles, yaml::join_key(path, "mean_cycles"), 1.0, kMaxCycles)) {
    p.mean_cycles = *c;
  } else {
    ok = false;
  }
  if (!ok) return std::nullopt;
  // Sizes are global; each PE holds size / P. The kernels only run shapes that divide evenly.
  for (const auto& [key, value] : {std::pair<const char*, std::int64_t>{"M", p.m}, {"K", p.k}, {"N", p.n}}) {
    if (value > 0 && value % p.side_pes != 0) {
      v.error(node.find(key)->where, yaml::join_key(path, key),
              std::to_string(value) + " is not a multiple of P = " + std::to_string(p.side_pes));
      ok = false;
    }
  }
  if (kind == KernelKind::meshgemv && p.side_pes % p.groups != 0) {
    v.error(node.find("group_num")->where, yaml::join_key(path, "group_num"),
            "P = " + std::to_string(p.side_pes) + " is not split into " + std::to_string(p.groups) + " equal groups");
    ok = false;
  }
  if (!ok) return std::nullopt;
  return p;
}

meshir::PlacedOp square_op(meshir::Kernel kernel, std::int64_t side) {
  meshir::PlacedOp op;
  op.name = std::string(meshir::to_string(kernel));
  op.kernel = kernel;
  op.used = meshir::Rect{0, 0, side, side};
  op.reduce_axis = meshir::Axis::x;
  return op;
}

}  // namespace

std::string to_string(KernelKind kind) {
  for (const auto& [k, name] : kKernelKinds) {
    if (k == kind) return name;
  }
  return "?";
}

bool looks_like_kernel_file(const std::string& text) {
  try {
    const Node root = yaml::parse_yaml(text, "");
    return root.kind == Node::Kind::map && root.find("kernel") != nullptr;
  } catch (const Error&) {
    return false;
  }
}

KernelSet load_kernel_set(const std::string& path) {
  return parse_kernel_set(read_input_file(path, yaml::kMaxTextBytes, "kernel measurement file"), path);
}

KernelSet parse_kernel_set(const std::string& text, const std::string& file_label) {
  Validator v;
  const Node root = yaml::parse_data_map(text, file_label, v, {"kernel", "points"},
                                         {"source", "hardware", "simulator_counterpart", "units", "meaning", "grid",
                                          "split", "simulator_points"});
  KernelSet set;
  set.file = file_label;
  const Node* kernel = root.find("kernel");
  const Node* points = root.find("points");
  if (const Node* s = root.find("source")) set.source = v.string(*s, "source").value_or("");
  std::optional<std::string> name;
  std::vector<std::string> kinds;
  for (const auto& [k, n] : kKernelKinds) kinds.emplace_back(n);
  if (kernel != nullptr) name = v.choice(*kernel, "kernel", kinds);
  if (const Node* hw = root.find("hardware")) {
    if (auto is_hw = v.boolean(*hw, "hardware"); is_hw && !*is_hw) {
      v.error(hw->where, "hardware", "only hardware measurements are fitted (this file says hardware: false)");
    }
  }
  if (name && points != nullptr) {
    for (const auto& [k, n] : kKernelKinds) {
      if (*name == n) set.kind = k;
    }
    if (points->kind != Node::Kind::sequence || points->items.empty()) {
      v.error(points->where, "points", "expected a non-empty list of measurements");
    } else if (points->items.size() > kMaxPoints) {
      v.error(points->where, "points",
              std::to_string(points->items.size()) + " points; at most " + std::to_string(kMaxPoints) + " per file");
    } else {
      for (std::size_t i = 0; i < points->items.size(); ++i) {
        bool failed = false;
        auto p = read_point(v, points->items[i], "points[" + std::to_string(i) + "]", set.kind, failed);
        if (p) set.points.push_back(*p);
        if (failed) ++set.skipped;
      }
      if (v.diagnostics().empty() && set.points.empty()) v.error(points->where, "points", "no run has cycles");
    }
  }
  if (!v.diagnostics().empty()) throw_data_error(v.diagnostics());
  return set;
}

void check_on_wafer(const KernelSet& set, const wafer::WaferParams& wafer) {
  const std::int64_t side = std::min(wafer.max_grid_w_pes(), wafer.max_grid_h_pes());
  std::vector<Diagnostic> problems;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    const auto& p = set.points[i];
    if (p.side_pes > side) {
      problems.push_back(Diagnostic{set.file, p.line, p.column, "points[" + std::to_string(i) + "].P",
                                    "a " + std::to_string(p.side_pes) + " x " + std::to_string(p.side_pes) +
                                        " square does not fit the " + wafer.preset + " kernel rectangle (largest side " +
                                        std::to_string(side) + ")"});
    }
    if (p.kind == KernelKind::shift && p.hops + p.side_pes > wafer.max_grid_w_pes()) {
      problems.push_back(Diagnostic{set.file, p.line, p.column, "points[" + std::to_string(i) + "].L",
                                    "P + L = " + std::to_string(p.side_pes + p.hops) + " PEs does not fit the " +
                                        wafer.preset + " fabric's width (" + std::to_string(wafer.max_grid_w_pes()) + ")"});
    }
    if (problems.size() >= 1000) break;
  }
  if (!problems.empty()) throw_data_error(std::move(problems));
}

double predict_kernel_cycles(const KernelPoint& point, const wafer::WaferParams& wafer, const cost::CostParams& params) {
  const cost::CostParams& p = params;  // the timed repetitions run inside one launch: no host launch
  const meshir::Schedule none;
  switch (point.kind) {
    case KernelKind::meshgemm: {
      meshir::PlacedOp op = square_op(meshir::Kernel::meshgemm, point.side_pes);
      op.work.m = point.m;
      op.work.k = point.k;
      op.work.n = point.n;
      return cost::op_cost(none, op, wafer, p).total_cycles;
    }
    case KernelKind::meshgemv: {
      // [1, M] @ [M, N]: the M inputs are reduced along the tree axis, the N outputs lie across it.
      meshir::PlacedOp op = square_op(meshir::Kernel::meshgemv, point.side_pes);
      op.group = point.side_pes / std::max<std::int64_t>(1, point.groups);
      op.work.m = 1;
      op.work.k = point.m;
      op.work.n = point.n;
      return cost::op_cost(none, op, wafer, p).total_cycles;
    }
    case KernelKind::shift: {
      const std::int64_t elements = (point.m / point.side_pes) * (point.n / point.side_pes);
      return cost::detail::neighbour_shift(point.hops, elements, point.side_pes, p).total_cycles;  // P tiles a row
    }
  }
  throw InternalError("predict_kernel_cycles: unknown kernel");
}

std::vector<std::string> kernel_fit_names(const std::vector<KernelSet>& sets) {
  std::set<KernelKind> kinds;
  for (const auto& s : sets) kinds.insert(s.kind);
  std::vector<std::string> names;
  // alpha and beta come from the reduce tree's hops and stages (MeshGEMV); MeshGEMM's 2-hop shift
  // hides under its compute and cannot separate alpha from its per-step cost.
  if (kinds.count(KernelKind::meshgemv) != 0) {
    names.insert(names.end(), {"alpha_cycles_per_hop", "beta_cycles_per_stage"});
  }
  if (kinds.count(KernelKind::meshgemm) != 0) {
    names.insert(names.end(), {"gemm_step_cycles", "gemm_k_cycles", "gemm_fmac_issue_cycles"});
  }
  if (kinds.count(KernelKind::meshgemv) != 0) names.insert(names.end(), {"gemv_fixed_cycles", "gemv_fmac_issue_cycles"});
  if (kinds.count(KernelKind::shift) != 0) {
    names.insert(names.end(), {"shift_fixed_cycles", "shift_hop_cycles", "shift_element_cycles", "shift_queue_cycles"});
  }
  return names;
}

std::vector<bool> kernel_held_out_mask(const std::vector<KernelPoint>& points) {
  std::map<KernelKind, std::set<std::int64_t>> sides;
  for (const auto& p : points) sides[p.kind].insert(p.side_pes);
  std::map<KernelKind, std::int64_t> held;
  for (const auto& [kind, s] : sides) {
    if (s.size() >= 3) held[kind] = *std::next(s.rbegin());
  }
  std::vector<bool> out;
  for (const auto& p : points) {
    const auto it = held.find(p.kind);
    out.push_back(it != held.end() && it->second == p.side_pes);
  }
  return out;
}

std::vector<KernelPoint> all_points(const std::vector<KernelSet>& sets) {
  std::vector<KernelPoint> out;
  for (const auto& s : sets) out.insert(out.end(), s.points.begin(), s.points.end());
  return out;
}

LogFitProblem kernel_problem(const std::vector<KernelPoint>& points, const std::vector<bool>& held_out,
                             const wafer::WaferParams& wafer) {
  if (held_out.size() != points.size()) throw InternalError("kernel_problem: one held-out flag per point needed");
  LogFitProblem problem;
  for (const auto& p : points) problem.measured.push_back(p.mean_cycles);
  problem.held_out = held_out;
  problem.predict = [&points, wafer](std::size_t i, const cost::CostParams& params) {
    return predict_kernel_cycles(points[i], wafer, params);
  };
  return problem;
}

LeaveOneSideOut leave_one_side_out(const std::vector<KernelPoint>& points, const wafer::WaferParams& wafer,
                                   const cost::CostParams& start, const std::vector<std::string>& names) {
  LeaveOneSideOut cv;
  cv.predicted.assign(points.size(), std::nan(""));
  std::set<std::int64_t> sides;
  for (const auto& p : points) sides.insert(p.side_pes);
  for (const std::int64_t side : sides) {
    std::vector<bool> held(points.size(), false);
    std::size_t training = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      held[i] = points[i].side_pes == side;
      training += held[i] ? 0 : 1;
    }
    if (training < names.size()) continue;
    const auto fit = calibrate(kernel_problem(points, held, wafer), PointSource{}, start, names);
    ++cv.folds;
    for (const auto& m : bound_messages(fit)) cv.bound_warnings.push_back("P=" + std::to_string(side) + ": " + m);
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (held[i]) cv.predicted[i] = fit.after.points[i].predicted;
    }
  }
  return cv;
}

}  // namespace wavel::calibrate
