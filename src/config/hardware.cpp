// Hardware what-if axes of the wafer section and their expansion into hardware points.
#include "wavel/config/hardware.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "detail/wafer_keys.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/draws.hpp"

namespace wavel::config {
using namespace wavel::yaml;  // the YAML tree and its validator (common/)

namespace {

// A point's wafer with one swept key set (defect_rate is applied when the map is drawn).
void set_key(wafer::WaferParams& w, const std::string& key, double value) {
  if (key == "defect_rate") return;
  const detail::WaferKey* k = detail::find_wafer_key(key);
  if (k == nullptr || k->sweep_rank < 0) throw InternalError("unknown hardware axis '" + key + "'");
  k->set(w, value);
}

constexpr double kMaxHardwarePoints = 1000;

}  // namespace

const std::vector<HardwareAxis>& hardware_axes() {
  static const std::vector<HardwareAxis> axes = [] {
    std::vector<const detail::WaferKey*> swept;
    for (const auto& k : detail::wafer_keys()) {
      if (k.sweep_rank >= 0) swept.push_back(&k);
    }
    std::sort(swept.begin(), swept.end(), [](const auto* a, const auto* b) { return a->sweep_rank < b->sweep_rank; });
    std::vector<HardwareAxis> out;
    for (const auto* k : swept) {
      out.push_back({k->name, k->unit, k->integer, k->sweep_lo, k->sweep_hi, k->hardware_time});
    }
    out.push_back({"defect_rate", "1", false, 0, kMaxDefectRate, false});
    return out;
  }();
  return axes;
}

double hardware_value(const wafer::WaferParams& w, const std::string& key, double defect_rate) {
  if (key == "defect_rate") return defect_rate;
  const detail::WaferKey* k = detail::find_wafer_key(key);
  if (k == nullptr || k->sweep_rank < 0) throw InternalError("unknown hardware axis '" + key + "'");
  return k->get(w);
}

std::int64_t defect_count(double rate, std::int64_t grid_w, std::int64_t grid_h) {
  return static_cast<std::int64_t>(std::llround(rate * static_cast<double>(grid_w) * static_cast<double>(grid_h)));
}

void read_wafer_sweep(Validator& v, const Node& node, const wafer::WaferParams& base, WaferSweep& sweep) {
  const std::string path = "wafer";
  sweep.listed_defects = base.defective_pes;
  if (const Node* n = node.kind == Node::Kind::map ? node.find("defect_rate") : nullptr) {
    if (auto r = v.number(*n, "wafer.defect_rate", 0.0, kMaxDefectRate)) sweep.defect_rate = *r;
  }
  if (const Node* n = node.kind == Node::Kind::map ? node.find("defect_seed") : nullptr) {
    if (auto s = v.integer(*n, "wafer.defect_seed", 0, std::numeric_limits<std::int64_t>::max())) sweep.defect_seed = *s;
  }
  if (const Node* n = node.kind == Node::Kind::map ? node.find("sweep_mode") : nullptr) {
    if (auto m = v.choice(*n, "wafer.sweep_mode", {"product", "one_at_a_time"})) sweep.one_at_a_time = *m == "one_at_a_time";
  }
  const Node& axes_node = child_or_null(node, "sweep");
  std::vector<std::string> keys;
  for (const auto& a : hardware_axes()) keys.push_back(a.key);
  if (!v.check_map(axes_node, "wafer.sweep", keys)) return;
  double points = 1;
  for (const auto& a : hardware_axes()) {
    const Node* n = axes_node.find(a.key);
    if (n == nullptr) continue;
    const std::string key_path = "wafer.sweep." + a.key;
    double max = a.max_value;
    if (a.key == "grid_w_pes") max = static_cast<double>(base.max_grid_w_pes());
    if (a.key == "grid_h_pes") max = static_cast<double>(base.max_grid_h_pes());
    double min = a.min_value;
    if (a.key == "sram_per_pe_bytes") min = std::max(min, static_cast<double>(base.sram_reserved_per_pe_bytes + 1));
    auto values = v.axis(*n, key_path, [&](const Node& item, const std::string& p) -> std::optional<double> {
      if (a.integer) {
        auto i = v.integer(item, p, static_cast<std::int64_t>(min), static_cast<std::int64_t>(max));
        return i ? std::optional<double>(static_cast<double>(*i)) : std::nullopt;
      }
      return v.number(item, p, min, max);
    });
    std::vector<double> distinct;
    for (double x : values) {
      if (std::find(distinct.begin(), distinct.end(), x) != distinct.end()) {
        v.error(n->where, key_path, "value " + format_double(x) + " listed twice");
      } else {
        distinct.push_back(x);
      }
    }
    // A listed defect must lie inside every grid the sweep builds.
    if (a.key == "grid_w_pes" || a.key == "grid_h_pes") {
      for (double side : distinct) {
        for (const auto& pe : sweep.listed_defects) {
          if ((a.key == "grid_w_pes" ? pe.x : pe.y) >= static_cast<std::int64_t>(side)) {
            v.error(n->where, key_path,
                    "the " + format_double(side) + "-PE grid leaves out the defective PE [" + std::to_string(pe.x) +
                        ", " + std::to_string(pe.y) + "] listed in wafer.defective_pes");
            break;
          }
        }
      }
    }
    points = sweep.one_at_a_time ? points + static_cast<double>(distinct.size()) : points * static_cast<double>(distinct.size());
    if (!distinct.empty()) sweep.axes.emplace_back(a.key, distinct);
  }
  if (points > kMaxHardwarePoints) {
    v.error(axes_node.where, "wafer.sweep",
            "the hardware sweep has " + format_double(points) + " points; the limit is " +
                format_double(kMaxHardwarePoints));
  }
}

std::vector<HardwarePoint> hardware_points(const wafer::WaferParams& base, const cost::CostParams& params,
                                           const WaferSweep& sweep) {
  std::vector<std::vector<std::pair<std::string, double>>> combos;
  if (sweep.axes.empty()) {
    combos.emplace_back();
  } else if (sweep.one_at_a_time) {
    combos.emplace_back();  // the base
    for (const auto& [key, values] : sweep.axes) {
      for (double x : values) {
        if (x != hardware_value(base, key, sweep.defect_rate)) combos.push_back({{key, x}});
      }
    }
  } else {
    combos.emplace_back();
    for (const auto& [key, values] : sweep.axes) {
      std::vector<std::vector<std::pair<std::string, double>>> next;
      for (const auto& c : combos) {
        for (double x : values) {
          next.push_back(c);
          next.back().emplace_back(key, x);
        }
      }
      combos = std::move(next);
    }
  }
  std::vector<HardwarePoint> points;
  for (const auto& values : combos) {
    HardwarePoint p;
    p.values = values;
    p.wafer = base;
    p.wafer.defective_pes = sweep.listed_defects;
    p.params = params;
    double rate = sweep.defect_rate;
    p.base = true;
    for (const auto& [key, x] : values) {
      set_key(p.wafer, key, x);
      if (key == "defect_rate") rate = x;
      if (key == "alpha_cycles_per_hop") p.params.alpha_cycles_per_hop = x;  // hardware: follows the wafer
      p.base = p.base && x == hardware_value(base, key, sweep.defect_rate);
      p.label += (p.label.empty() ? "" : ",") + key + "=" + format_double(x);
    }
    if (values.empty()) p.label = "base";
    const auto extra = wafer::random_defects(p.wafer.grid_w_pes, p.wafer.grid_h_pes,
                                             defect_count(rate, p.wafer.grid_w_pes, p.wafer.grid_h_pes),
                                             static_cast<std::uint64_t>(sweep.defect_seed), p.wafer.defective_pes);
    p.wafer.defective_pes.insert(p.wafer.defective_pes.end(), extra.begin(), extra.end());
    points.push_back(std::move(p));
  }
  return points;
}

const Config& for_hardware(const Config& config, std::size_t index) {
  if (config.at_hardware.empty()) return config;  // no sweep, or already a point's configuration
  return config.at_hardware.at(index);
}

}  // namespace wavel::config
