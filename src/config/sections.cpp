// The run sections of the config: the cluster around the wafer, the baselines, the search, the
// sampled simulation and the output.
#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>

#include "detail/read.hpp"
#include "wavel/config/hardware.hpp"

namespace wavel::config::detail {
using namespace wavel::yaml;
namespace fs = std::filesystem;

// The system a wafer sits in (cs2 for wse2, cs3 otherwise) unless `preset` says; each figure overridable.
void read_cluster(Validator& v, const Node& node, const wafer::WaferParams& wafer, deploy::ClusterParams& c) {
  const std::string path = "cluster";
  v.check_map(node, path, {"preset", "wafers", "max_wafers", "target_tpr_tokens_per_s", "target_ttft_s", "io_edge",
                           "link_bytes_per_s", "link_latency_s", "ingress_bytes_per_s", "external_memory_bytes"});
  std::string preset = wafer.preset == "wse2" ? "cs2" : "cs3";
  if (present(node, "preset")) {
    if (auto p = v.choice(child_or_null(node, "preset"), "cluster.preset", deploy::cluster_preset_names())) preset = *p;
  }
  c = deploy::cluster_preset(preset);
  read_double(v, node, path, "link_bytes_per_s", c.link_bytes_per_s, 1e6, 1e15);
  read_double(v, node, path, "link_latency_s", c.link_latency_s, deploy::kMinLinkLatencyS, deploy::kMaxLinkLatencyS);
  read_double(v, node, path, "ingress_bytes_per_s", c.ingress_bytes_per_s, 1e6, 1e15);
  read_double(v, node, path, "external_memory_bytes", c.external_memory_bytes, 0, 1e18);
  if (present(node, "wafers")) {
    c.wafers = v.axis(child_or_null(node, "wafers"), "cluster.wafers",
                      [&](const Node& n, const std::string& p) { return v.integer(n, p, 1, deploy::kMaxWafers); });
  }
  read_int(v, node, path, "max_wafers", c.max_wafers, 1, deploy::kMaxWafers);
  if (present(node, "max_wafers") && present(node, "wafers")) {
    v.error(child_or_null(node, "max_wafers").where, "cluster.max_wafers",
            "give either cluster.wafers (the counts to sweep) or cluster.max_wafers (every count from 1), not both");
  }
  if (c.max_wafers > 0) {
    c.wafers.clear();
    for (std::int64_t w = 1; w <= c.max_wafers; ++w) c.wafers.push_back(w);
  }
  read_double(v, node, path, "target_tpr_tokens_per_s", c.target_tpr_tokens_per_s, 0.0, 1e9, true);
  read_double(v, node, path, "target_ttft_s", c.target_ttft_s, 0.0, 1e6, true);
  std::vector<std::string> edges;
  for (const auto e : {meshir::Edge::west, meshir::Edge::east, meshir::Edge::north, meshir::Edge::south}) {
    edges.emplace_back(meshir::to_string(e));
  }
  if (present(node, "io_edge")) {
    if (auto e = v.choice(child_or_null(node, "io_edge"), "cluster.io_edge", edges)) c.io_edge = *meshir::parse_edge(*e);
  }
}

void read_baselines(Validator& v, const Node& node, const wafer::WaferParams& wafer, BaselinesConfig& b) {
  const std::string path = "baselines";
  v.check_map(node, path, {"waferllm_region_side_pes", "waferllm_side_step_pes", "waferllm_sides"});
  const std::int64_t largest = std::min(wafer.grid_w_pes, wafer.grid_h_pes);
  read_int(v, node, path, "waferllm_region_side_pes", b.waferllm_region_side_pes, 0, largest);
  read_int(v, node, path, "waferllm_side_step_pes", b.waferllm_side_step_pes, 1, largest);
  const Node& sides = child_or_null(node, "waferllm_sides");
  const bool empty_list = sides.kind == Node::Kind::sequence && sides.items.empty();
  if (present(node, "waferllm_sides") && !empty_list) {
    b.waferllm_sides = v.axis(sides, "baselines.waferllm_sides",
                              [&](const Node& n, const std::string& p) { return v.integer(n, p, 1, largest); });
  }
}

void read_search(Validator& v, const Node& node, SearchConfig& s) {
  const std::string path = "search";
  v.check_map(node, path,
              {"exhaustive", "cut_ratios", "strip_counts", "max_cut_depth", "group_scales", "used_fractions",
               "objectives", "time_limit_s", "seed", "checkpoint_interval_s", "root_chunks",
               "expert_groups", "fusion", "cut_step_pes", "sram_cuts", "sram_boundaries", "square_step_pes", "square_sides",
               "seed_baselines", "all_anchors", "sram_used_step_pes", "sram_footprints"});
  read_bool(v, node, path, "exhaustive", s.exhaustive);
  if (present(node, "cut_ratios")) {
    s.cut_ratios = v.axis(child_or_null(node, "cut_ratios"), "search.cut_ratios",
                          [&](const Node& n, const std::string& p) {
                            auto r = v.number(n, p, 0.0, 1.0, true);
                            if (r && *r >= 1.0) {
                              v.error(n.where, p, "must be < 1, got " + n.scalar);
                              r.reset();
                            }
                            return r;
                          });
  }
  if (present(node, "strip_counts")) {
    const Node& n = child_or_null(node, "strip_counts");
    if (n.kind == Node::Kind::sequence && n.items.empty()) {
      s.strip_counts.clear();  // an empty list turns n-way CUTs off
    } else {
      s.strip_counts = v.axis(n, "search.strip_counts",
                              [&](const Node& item, const std::string& p) { return v.integer(item, p, 3, 64); });
    }
  }
  read_int(v, node, path, "max_cut_depth", s.max_cut_depth, 0, 16);
  if (present(node, "group_scales")) {
    s.group_scales = v.axis(child_or_null(node, "group_scales"), "search.group_scales",
                            [&](const Node& n, const std::string& p) { return v.number(n, p, 0.0, 64.0, true); });
  }
  if (present(node, "used_fractions")) {
    s.used_fractions = v.axis(child_or_null(node, "used_fractions"), "search.used_fractions",
                              [&](const Node& n, const std::string& p) { return v.number(n, p, 0.0, 1.0, true); });
  }
  if (present(node, "objectives")) {
    s.objective_names = v.axis(child_or_null(node, "objectives"), "search.objectives",
                          [&](const Node& n, const std::string& p) {
                            return v.choice(n, p, {"throughput", "latency", "pes"});
                          });
    std::set<std::string> distinct(s.objective_names.begin(), s.objective_names.end());
    if (distinct.size() != s.objective_names.size()) {
      v.error(child_or_null(node, "objectives").where, "search.objectives", "an objective is listed twice");
    }
  }
  const auto has = [&](const char* name) {
    return std::find(s.objective_names.begin(), s.objective_names.end(), name) != s.objective_names.end();
  };
  s.objectives = search::ObjectiveSet{has("throughput"), has("latency"), has("pes")};
  read_double(v, node, path, "time_limit_s", s.time_limit_s, 0.0, 1e9);
  read_int(v, node, path, "seed", s.seed, 0, std::numeric_limits<std::int64_t>::max());
  read_double(v, node, path, "checkpoint_interval_s", s.checkpoint_interval_s, 0.0, 1e9);
  read_int(v, node, path, "root_chunks", s.root_chunks, 1, 4096);
  if (present(node, "expert_groups")) {
    s.expert_groups = v.axis(child_or_null(node, "expert_groups"), "search.expert_groups",
                             [&](const Node& item, const std::string& p) { return v.integer(item, p, 1, 4096); });
  }
  read_bool(v, node, path, "fusion", s.fusion);
  read_int(v, node, path, "cut_step_pes", s.cut_step_pes, 0, 1 << 20);
  read_int(v, node, path, "sram_cuts", s.sram_cuts, 0, 64);
  read_bool(v, node, path, "sram_boundaries", s.sram_boundaries);
  read_int(v, node, path, "square_step_pes", s.square_step_pes, 0, 1 << 20);
  // Lists where [] means "none" (v.axis refuses empty lists).
  const auto read_optional_list = [&](const char* key, auto& out, auto item) {
    if (!present(node, key)) return;
    const Node& n = child_or_null(node, key);
    if (n.kind == Node::Kind::sequence && n.items.empty()) {
      out.clear();
    } else {
      out = v.axis(n, path + "." + key, item);
    }
  };
  read_optional_list("square_sides", s.square_sides,
                     [&](const Node& item, const std::string& p) { return v.integer(item, p, 1, 1 << 20); });
  read_bool(v, node, path, "seed_baselines", s.seed_baselines);
  read_bool(v, node, path, "all_anchors", s.all_anchors);
  read_int(v, node, path, "sram_used_step_pes", s.sram_used_step_pes, 0, 1 << 20);
  read_optional_list("sram_footprints", s.sram_footprints,
                     [&](const Node& item, const std::string& p) { return v.number(item, p, 0.0, 1.0, true); });
}

void read_sim(Validator& v, const Node& node, SimConfig& c) {
  const std::string path = "sim";
  v.check_map(node, path, {"samples", "fidelity", "model_ramps"});
  read_int(v, node, path, "samples", c.samples, 0, 1 << 20);
  if (present(node, "fidelity")) {
    if (auto f = v.choice(child_or_null(node, "fidelity"), "sim.fidelity", {"message", "packet", "wavelet"})) {
      c.fidelity = *f;
    }
  }
  read_bool(v, node, path, "model_ramps", c.model_ramps);
}

void read_output(Validator& v, const Node& node, OutputConfig& o, const std::string& file) {
  const std::string path = "output";
  v.check_map(node, path, {"dir", "hdf5", "csv", "progress", "table"});
  o.dir = "results/runs/" + fs::path(file).stem().string();
  if (present(node, "dir")) {
    if (auto d = v.string(child_or_null(node, "dir"), "output.dir")) {
      if (d->empty()) {
        v.error(child_or_null(node, "dir").where, "output.dir", "must not be empty");
      } else {
        o.dir = *d;
      }
    }
  }
  read_bool(v, node, path, "hdf5", o.hdf5);
  read_bool(v, node, path, "csv", o.csv);
  if (present(node, "progress")) {
    if (auto p = v.choice(child_or_null(node, "progress"), "output.progress", {"auto", "always", "never"})) {
      o.progress = *p;
    }
  }
  if (present(node, "table")) {
    if (auto t = v.choice(child_or_null(node, "table"), "output.table", {"narrow", "wide"})) o.table = *t;
  }
}

}  // namespace wavel::config::detail
