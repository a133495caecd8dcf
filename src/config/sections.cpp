// The run sections of the config (the cluster around the wafer, the baselines, the search, the
// sampled simulation, the output, energy), each one key table: what the reader allows and reads,
// what the resolved YAML writes and what docs/config.md shows.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "detail/keys.hpp"
#include "detail/wafer_keys.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/hardware.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/workload/model.hpp"

namespace wavel::config::detail {
using namespace wavel::yaml;
namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxPes = std::int64_t{1} << 20;

std::string number_text(double x) {
  if (x == std::floor(x) && std::abs(x) < 1e6) return std::to_string(static_cast<std::int64_t>(x));
  for (int e = -12; e <= 18; ++e) {  // 10^6 and up, 10^-3 and down, as powers
    if ((e >= 6 || e <= -3) && x == std::pow(10.0, e)) return "10^" + std::to_string(e);
  }
  return format_double(x);
}

std::string integer_text(std::int64_t x) {
  if (x == std::numeric_limits<std::int64_t>::max()) return "2^63 - 1";
  if (x >= 1024 && (x & (x - 1)) == 0) {
    int e = 0;
    while ((std::int64_t{1} << e) != x) ++e;
    return "2^" + std::to_string(e);
  }
  return std::to_string(x);
}

// A key of ints bounded by the shorter grid side (`lo` up to it).
template <class S>
Key<S> side_key(std::string name, std::int64_t S::*m, std::int64_t lo, std::string meaning) {
  return {std::move(name), "PEs", std::move(meaning) + "; " + integer_text(lo) + " … the shorter grid side", "",
          [m, lo](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext& c) {
            if (auto x = v.integer(n, p, lo, std::min(c.wafer.grid_w_pes, c.wafer.grid_h_pes))) s.*m = *x;
          },
          [m](YAML::Emitter& out, const S& s) { out << s.*m; }, {}};
}

// `key` shown with `text` as its default in docs/config.md.
template <class S>
Key<S> shown_default(Key<S> key, std::string text) {
  key.default_text = std::move(text);
  return key;
}

// `key` written to the resolved YAML only when it is set (positive).
template <class S>
Key<S> when_positive(Key<S> key, double S::*m) {
  key.written = [m](const Config&, const S& s) { return s.*m > 0; };
  key.default_text = "none";
  return key;
}

}  // namespace

std::string bounds_text(double lo, double hi, bool lo_exclusive) {
  return lo_exclusive ? "in (" + number_text(lo) + ", " + number_text(hi) + "]"
                      : number_text(lo) + " … " + number_text(hi);
}

std::string bounds_text(std::int64_t lo, std::int64_t hi) { return integer_text(lo) + " … " + integer_text(hi); }

void emit_numbers(YAML::Emitter& out, const std::vector<double>& values) {
  out << YAML::Flow << YAML::BeginSeq;
  for (double x : values) out << format_double(x);
  out << YAML::EndSeq;
}

namespace {
std::string axis_default(const IntAxis& a) { return "`[" + std::to_string(a.fallback) + "]`"; }
std::string axis_range(const IntAxis& a) { return "each 1 … 2^" + std::to_string(a.max_log2); }
}  // namespace

const std::vector<KeyDoc>& workload_axis_keys() {
  static const std::vector<KeyDoc> t{
      {"models", "", "required",
       "preset names (" + [] {
         std::string names;
         for (const auto& n : workload::model_preset_names()) names += (names.empty() ? "`" : ", `") + n + "`";
         return names;
       }() + ") or paths to a HF `config.json` (or its folder), relative to the config file (to the working "
             "directory for `--set`)"},
      {"phases", "", "`[prefill, decode]`",
       "`prefill` models the whole prompt as one step; `decode` one generated token per request"},
      {kRequestsAxis.key, "requests", axis_default(kRequestsAxis), "requests in flight; " + axis_range(kRequestsAxis)},
      {kInputTokensAxis.key, "tokens", axis_default(kInputTokensAxis),
       "prompt length per request; " + axis_range(kInputTokensAxis)},
      {kOutputTokensAxis.key, "tokens", axis_default(kOutputTokensAxis),
       "generated tokens per request; decode attends to the mean context input + output/2 and keeps KV capacity "
       "for input + output; " + axis_range(kOutputTokensAxis)},
      {"lengths", "tokens", "none",
       "`[[input, output], ...]` pairs swept instead of the product of `input_tokens` and `output_tokens` (give one "
       "or the other)"},
      {"cases", "", "none",
       "settings listed one by one instead of the axes above (give one or the other): each `{model, phase, "
       "concurrent_requests: 1, input_tokens: 2048, output_tokens: 128, wafers: 1}`, defaults as shown; `wafers` > 1 "
       "deploys that case as a pipeline, whatever `cluster.wafers` says"},
  };
  return t;
}

const KeyTable<WorkloadAxes>& workload_keys() {
  using K = Keys<WorkloadAxes>;
  static const KeyTable<WorkloadAxes> t{
      K::number("moe_capacity_factor", &WorkloadAxes::moe_capacity_factor, 1.0, 1024.0, false, "",
                "MoE: under an expert CUT a group of experts serves at most this × its expected rows (the busiest "
                "batch's fluctuation)"),
      K::number("moe_routing_skew", &WorkloadAxes::moe_routing_skew, 0.0, 8.0, false, "",
                "MoE: Zipf exponent of the experts' loads, the e-th busiest expert's share ∝ (e + 1)^-skew, capped at "
                "every token once; 0 is uniform routing. Prefill's grouped GEMMs run each expert on its own rows, and "
                "an expert CUT places experts busiest first on the least loaded group"),
      K::flag("layer_subset", &WorkloadAxes::layer_subset,
              "a setting whose weights + KV cache exceed `layer_subset_max_fill` of the wafer SRAM runs as a layer "
              "subset (below)"),
      K::number("layer_subset_max_fill", &WorkloadAxes::layer_subset_max_fill, 0.0, 1.0, true, "", "that fraction"),
      K::flag("allow_unmodelled_keys", &WorkloadAxes::allow_unmodelled_keys,
              "run models whose `config.json` has keys that change the prediction (`sliding_window` past the window, "
              "`attn_logit_softcapping`); each is then noted"),
  };
  return t;
}

const std::vector<KeyDoc>& cost_other_keys() {
  static const std::vector<KeyDoc> t{
      {"params_file", "", "the preset's calibrated file",
       "YAML of parameter values (as written by `calibrate`), relative to the config file, else to the tool's data "
       "directory (`configs/` of the source tree, or `$WAVEL_DATA_DIR`); absent: `params/wse3.yaml` for wse3, "
       "`params/wse2-waferllm.yaml` for wse2, from the data directory; `builtin`: the uncalibrated built-in values. "
       "Its `uncertainty` section (below) drives the intervals"},
      {"draws", "draws", "`64`",
       "parameter draws per setting for the 90 % intervals; 0 (none) … " + std::to_string(kMaxDraws)},
      {"pinned", "", "`[]`",
       "parameters held at their value in the draws (their uncertainty conditioned out); a parameter given in this "
       "section is pinned too"},
  };
  return t;
}

const KeyTable<BaselinesConfig>& baselines_keys() {
  static const KeyTable<BaselinesConfig> t{
      side_key("waferllm_region_side_pes", &BaselinesConfig::waferllm_region_side_pes, 0,
               "fixed side P of WaferLLM's square regions; 0 tunes P"),
      side_key("waferllm_side_step_pes", &BaselinesConfig::waferllm_side_step_pes, 1,
               "tuning tries every multiple of this up to the shorter grid side (on a grid shorter than the step, "
               "its largest square)"),
      {"waferllm_sides", "PEs",
       "further sides tuning tries (e.g. WaferLLM's own 375 and 750 with a coarser step); each 1 … the shorter "
       "grid side",
       "",
       [](Validator& v, const Node& n, const std::string& p, BaselinesConfig& b, const KeyContext& c) {
         if (n.kind == Node::Kind::sequence && n.items.empty()) return;  // [] keeps none
         const std::int64_t largest = std::min(c.wafer.grid_w_pes, c.wafer.grid_h_pes);
         b.waferllm_sides = v.axis(n, p, [&](const Node& i, const std::string& ip) { return v.integer(i, ip, 1, largest); });
       },
       [](YAML::Emitter& out, const BaselinesConfig& b) { out << YAML::Flow << b.waferllm_sides; },
       {}},
  };
  return t;
}

const KeyTable<wafer::ClusterParams>& cluster_keys() {
  using C = wafer::ClusterParams;
  using K = Keys<C>;
  static const KeyTable<C> t{
      {"preset", "", "the system's figures below: " + [] {
         std::string names;
         for (const auto& n : wafer::cluster_preset_names()) names += (names.empty() ? "`" : ", `") + n + "`";
         return names;
       }(),
       "`cs2` for wafer `wse2`, else `cs3`",
       [](Validator& v, const Node& n, const std::string& p, C& c, const KeyContext&) {
         if (auto name = v.choice(n, p, wafer::cluster_preset_names())) c = wafer::cluster_preset(*name);
       },
       [](YAML::Emitter& out, const C& c) { out << c.preset; }, {}},
      {"wafers", "systems",
       "systems a setting deploys the model over: a sweep axis (ids run models, wafers, phases, requests, lengths); "
       "each " + bounds_text(1, wafer::kMaxWafers),
       "",
       [](Validator& v, const Node& n, const std::string& p, C& c, const KeyContext&) {
         c.wafers = v.axis(n, p, [&](const Node& i, const std::string& ip) { return v.integer(i, ip, 1, wafer::kMaxWafers); });
       },
       [](YAML::Emitter& out, const C& c) { out << YAML::Flow << c.wafers; },
       [](const Config& config, const C& c) { return c.max_wafers == 0 && config.workloads.cases.empty(); }},
      {"max_wafers", "systems",
       "instead of `wafers`: every count from 1 to this, each model up to its decoder layers; each problem's fewest, "
       "fastest, most-per-wafer and target-meeting count in `wafer_counts.csv` (Pipelines, below); " +
           bounds_text(1, wafer::kMaxWafers),
       "none",
       [](Validator& v, const Node& n, const std::string& p, C& c, const KeyContext&) {
         if (auto x = v.integer(n, p, 1, wafer::kMaxWafers)) c.max_wafers = *x;
       },
       [](YAML::Emitter& out, const C& c) { out << c.max_wafers; },
       [](const Config&, const C& c) { return c.max_wafers > 0; }},
      when_positive(K::number("target_tpr_tokens_per_s", &C::target_tpr_tokens_per_s, 0.0, 1e9, true, "tokens/s",
                              "decode tokens/s per user (1 / TPOT) a deployment must reach, for the wafer-count table"),
                    &C::target_tpr_tokens_per_s),
      when_positive(K::number("target_ttft_s", &C::target_ttft_s, 0.0, 1e6, true, "s",
                              "the TTFT a prefill deployment must stay within, for the same"),
                    &C::target_ttft_s),
      {"io_edge", "",
       "the wafer edge where a system's I/O enters the mesh (`west`, `east`, `north`, `south`; unpublished, so a "
       "parameter)",
       "",
       [](Validator& v, const Node& n, const std::string& p, C& c, const KeyContext&) {
         std::vector<std::string> edges;
         for (const auto e : {meshir::Edge::west, meshir::Edge::east, meshir::Edge::north, meshir::Edge::south}) {
           edges.emplace_back(meshir::to_string(e));
         }
         if (auto e = v.choice(n, p, edges)) c.io_edge = *meshir::parse_edge(*e);
       },
       [](YAML::Emitter& out, const C& c) { out << std::string(meshir::to_string(c.io_edge)); }, {}},
      K::number("link_bytes_per_s", &C::link_bytes_per_s, 1e6, 1e15, false, "B/s",
                "one system's I/O each way (12 × 100 GbE)"),
      K::number("link_latency_s", &C::link_latency_s, wafer::kMinLinkLatencyS, wafer::kMaxLinkLatencyS, false, "s",
                "one crossing between systems (no vendor figure)"),
      K::number("ingress_bytes_per_s", &C::ingress_bytes_per_s, 1e6, 1e15, false, "B/s",
                "weights from external memory into the wafer (through the same I/O)"),
      shown_default(K::number("external_memory_bytes", &C::external_memory_bytes, 0, 1e18, false, "bytes",
                              "MemoryX-like weight store"),
                    "`" + format_double(wafer::cluster_preset("cs2").external_memory_bytes) + "` (cs2), `" +
                        format_double(wafer::cluster_preset("cs3").external_memory_bytes) + "` (cs3)"),
  };
  return t;
}

const KeyTable<SearchConfig>& search_keys() {
  using S = SearchConfig;
  using K = Keys<S>;
  static const KeyTable<S> t{
      K::flag("exhaustive", &S::exhaustive, "turn off bound and dominance pruning (for verification)"),
      {"cut_ratios", "", "two-way CUTs: where a side may be split, as fractions of it; each in (0, 1)", "",
       [](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
         s.cut_ratios = v.axis(n, p, [&](const Node& i, const std::string& ip) {
           auto r = v.number(i, ip, 0.0, 1.0, true);
           if (r && *r >= 1.0) {
             v.error(i.where, ip, "must be < 1, got " + i.scalar);
             r.reset();
           }
           return r;
         });
       },
       [](YAML::Emitter& out, const S& s) { emit_numbers(out, s.cut_ratios); }, {}},
      K::integers("strip_counts", &S::strip_counts, 3, 64, true, "strips",
                  "n-way CUTs into equal strips (`[]` turns them off)"),
      K::integer("max_cut_depth", &S::max_cut_depth, 0, 16, "", "deepest nesting of CUTs (a multi-way CUT counts once)"),
      K::numbers("group_scales", &S::group_scales, 0.0, 64.0, true, false, "",
                 "TUNE: K-tree group size = scale × √(side), per axis"),
      K::numbers("used_fractions", &S::used_fractions, 0.0, 1.0, true, false, "",
                 "TUNE: fraction of each region side a leaf actually uses"),
      {"objectives", "",
       "Pareto objectives the fronts compare (pieces' fronts and the setting's), each once: `throughput`, "
       "`latency`, `pes`; points equal in them keep the first by (−throughput, latency, PEs, id)",
       "",
       [](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
         s.objective_names = v.axis(n, p, [&](const Node& i, const std::string& ip) {
           return v.choice(i, ip, {"throughput", "latency", "pes"});
         });
         std::set<std::string> distinct(s.objective_names.begin(), s.objective_names.end());
         if (distinct.size() != s.objective_names.size()) v.error(n.where, p, "an objective is listed twice");
       },
       [](YAML::Emitter& out, const S& s) { out << YAML::Flow << s.objective_names; }, {}},
      K::number("time_limit_s", &S::time_limit_s, 0.0, 1e9, false, "s",
                "wall-time limit per search piece; 0 = none. A limit that triggers makes results timing-dependent "
                "(`/search_stats/timed_out` says so)"),
      K::integer("seed", &S::seed, 0, std::numeric_limits<std::int64_t>::max(), "",
                 "seeds the parameter draws and calibration sampling, and which search piece takes which root CUT "
                 "option (a hash of seed and option index); the front's objectives never depend on it, the work "
                 "split and pruning counts do"),
      K::number("checkpoint_interval_s", &S::checkpoint_interval_s, 0.0, 1e9, false, "s",
                "also write a checkpoint this often; 0 = on SIGUSR1/SIGTERM only. Not part of the config hash"),
      K::integer("root_chunks", &S::root_chunks, 1, 4096, "pieces",
                 "root CUT options of each (micro-batch count, footprint) are split into this many search pieces, "
                 "the units of distribution (the square sides too)"),
      K::integers("expert_groups", &S::expert_groups, 1, 4096, false, "strips",
                  "MoE: the expert CUT of a leaf into this many strips of experts (only counts that divide the "
                  "expert count); `[1]` turns it off"),
      K::integers("prompt_chunks", &S::prompt_chunks, 1, 4096, false, "chunks",
                  "prefill: also try each prompt split into this many equal token chunks pipelined through the stages "
                  "(chunked prefill; only counts that divide input_tokens). The default `[1]` keeps prompts whole: "
                  "with WaferLLM's MeshGEMM a chunk costs a PE about as many instructions as the whole prompt, so "
                  "chunks never paid on the bundled settings (see [Search](search.md))"),
      K::integers("head_groups", &S::head_groups, 1, 4096, false, "groups",
                  "prefill: TUNE may also split each attention section's heads into this many groups, each on its "
                  "own cell of the leaf in the same steps, Q, K and V moved in and the output back (split heads; only "
                  "counts that divide the heads); `[1]` turns it off (see [Search](search.md))"),
      K::flag("fusion", &S::fusion,
              "TUNE may fuse operators that read one input (prefill Q/K/V and gate/up, MLA's down-projections; see "
              "[Search](search.md)); `false`: the space without it"),
      K::flag("split_epilogues", &S::split_epilogues,
              "TUNE may run a decode epilogue with a scalar loop (SiLU.mul) split over both axes, each PE on its own "
              "piece, then allgather it along the axis that held copies (see [Search](search.md)); `false`: the "
              "space without it"),
      K::flag("concurrent_branches", &S::concurrent_branches,
              "TUNE may run an MoE block's shared experts on a strip of their own beside the routed experts' "
              "strips, in the same steps, every token dispatched to them (see [Search](search.md)); `false`: the "
              "space without it"),
      K::flag("sibling_branches", &S::sibling_branches,
              "a block's cost may also run a merged matmul's products (Q/K/V, gate/up, MLA's down-projections) side "
              "by side on strips of the leaf in one step, the input multicast to them and the outputs brought back, "
              "where that is faster and needs no more SRAM per PE (see [Search](search.md)); `false`: the space "
              "without it"),
      K::integer("cut_step_pes", &S::cut_step_pes, 0, kMaxPes, "PEs",
                 "two-way CUTs also at every multiple of this many PEs along a side, at every depth (absolute "
                 "positions); 0 = none"),
      K::integer("sram_cuts", &S::sram_cuts, 0, 64, "boundaries",
                 "root two-way CUTs derived from SRAM need: for n block boundaries splitting the blocks into n + 1 "
                 "near-equal runs, the position where the first part just holds its run's weights and KV cache (off "
                 "by default: on the quickstart n = 2 found two settings 0.3 % and 1.3 % faster for 3× the search "
                 "time)"),
      K::flag("sram_boundaries", &S::sram_boundaries,
              "root CUTs also split the blocks where each child in turn (from the first, or from the last) holds as "
              "many blocks as its PEs can"),
      K::integer("square_step_pes", &S::square_step_pes, 0, kMaxPes, "PEs",
                 "P × P square layouts in snake order: every multiple of this side up to the shorter grid side; 0 = "
                 "none"),
      K::integers("square_sides", &S::square_sides, 1, kMaxPes, true, "PEs",
                  "further square sides (e.g. WaferLLM's 375 and 750)"),
      K::flag("seed_baselines", &S::seed_baselines,
              "both baselines enter the front as seeds; `false`: the front holds searched schedules only"),
      K::flag("all_anchors", &S::all_anchors,
              "TUNE: a leaf's used rectangle at every corner of its region that keeps it off defective PEs; `false`: "
              "only the first such corner (top-left, top-right, bottom-left, bottom-right), which without defects is "
              "the top-left one (on the quickstart `true` made one setting 0.08 % faster for 1.5× the wall time)"),
      K::integer("sram_used_step_pes", &S::sram_used_step_pes, 0, kMaxPes, "PEs",
                 "TUNE: also the smallest used rectangle of each SRAM family (full width, full height, the region's "
                 "aspect; free sides in multiples of this many PEs) that holds the leaf's weights and KV cache; 0 = "
                 "none (off by default: on the quickstart, g = 64 made two settings 0.3 % and 7.2 % faster for 1.4× "
                 "the wall time and 2.3× the block costs; g = 16 up to 8.3 % for 2.3× the wall time)"),
      K::numbers("sram_footprints", &S::sram_footprints, 0.0, 1.0, true, true, "",
                 "footprints sized by SRAM need: for each fill f, the smallest full-width strip and the smallest "
                 "rectangle of the grid's aspect (top-left) whose SRAM holds the model's weights and KV cache at fill "
                 "f, besides the grid's fractions; `[]` = none (off by default: on the quickstart, `[0.75]` made three "
                 "settings 0.1 %, 1.0 % and 2.3 % faster for 1.35-1.6× the wall time on 2 ranks; on tiny decode at 16 "
                 "× 16 it gives a 16 × 15 strip where the fractions offered only the grid)"),
  };
  return t;
}

const KeyTable<SimConfig>& sim_keys() {
  using K = Keys<SimConfig>;
  static const KeyTable<SimConfig> t{
      K::integer("samples", &SimConfig::samples, 0, kMaxPes, "schedules",
                 "schedules simulated per setting: the front's points first (best throughput first), then the "
                 "baselines; 0 turns it off"),
      K::choice("fidelity", &SimConfig::fidelity, {"message", "packet", "wavelet"},
                "`message`, `packet` (16 wavelets) or `wavelet` (every 32-bit wavelet an event; small regions)"),
      K::flag("model_ramps", &SimConfig::model_ramps,
              "the PE-router ramps are channels with occupancy (both tiles of a MeshGEMM step share one ramp)"),
  };
  return t;
}

const KeyTable<OutputConfig>& output_keys() {
  using K = Keys<OutputConfig>;
  static const KeyTable<OutputConfig> t{
      {"dir", "", "output folder, relative to the working directory; `--output` overrides it",
       "`results/runs/<config stem>`",
       [](Validator& v, const Node& n, const std::string& p, OutputConfig& o, const KeyContext&) {
         if (auto d = v.string(n, p)) {
           if (d->empty()) {
             v.error(n.where, p, "must not be empty");
           } else {
             o.dir = *d;
           }
         }
       },
       [](YAML::Emitter& out, const OutputConfig& o) { out << o.dir; }, {}},
      K::flag("hdf5", &OutputConfig::hdf5, "write `results.h5`"),
      K::flag("csv", &OutputConfig::csv, "write `summary.csv`"),
      K::choice("progress", &OutputConfig::progress, {"auto", "always", "never"},
                "progress line on stderr: `auto` (when stderr is a terminal, or under Slurm, where stderr is the job "
                "log), `always`, `never`"),
      K::choice("table", &OutputConfig::table, {"narrow", "wide"},
                "the printed settings table: `narrow` (the headline columns) or `wide` (every column; `--wide` on the "
                "command line)"),
  };
  return t;
}

const KeyTable<EnergyConfig>& energy_keys() {
  using K = Keys<EnergyConfig>;
  static const KeyTable<EnergyConfig> t{
      K::number("system_power_w", &EnergyConfig::system_power_w, cost::kMinSystemPowerW, cost::kMaxSystemPowerW, false,
                "W",
                "one CS-2/CS-3 system at its preset's PEs and clock; Cerebras publishes 15–23 kW for a system (the "
                "wafer near 15 kW, the system up to 23 kW), so the default is the middle and the bounds are the range"),
      K::number("off_wafer_pj_per_bit", &EnergyConfig::off_wafer_pj_per_bit, 0.0, 1000.0, false, "pJ/bit",
                "a bit over a wafer-to-wafer link: WaferLLM Table 1, ~10 pJ/bit off-chip against ~0.1 pJ/bit "
                "die-to-die on the wafer"),
  };
  return t;
}

// The system a wafer sits in (cs2 for wse2, cs3 otherwise) unless `preset` says; each figure overridable.
void read_cluster(Validator& v, const Node& node, const wafer::WaferParams& wafer, wafer::ClusterParams& c) {
  c = wafer::cluster_preset(wafer.preset == "wse2" ? "cs2" : "cs3");
  const std::string none;
  read_keys(v, node, "cluster", cluster_keys(), c, KeyContext{wafer, none});
  if (present(node, "max_wafers") && present(node, "wafers")) {
    v.error(child_or_null(node, "max_wafers").where, "cluster.max_wafers",
            "give either cluster.wafers (the counts to sweep) or cluster.max_wafers (every count from 1), not both");
  }
  if (c.max_wafers > 0) {
    c.wafers.clear();
    for (std::int64_t w = 1; w <= c.max_wafers; ++w) c.wafers.push_back(w);
  }
}

void read_baselines(Validator& v, const Node& node, const wafer::WaferParams& wafer, BaselinesConfig& b) {
  const std::string none;
  read_keys(v, node, "baselines", baselines_keys(), b, KeyContext{wafer, none});
}

void read_search(Validator& v, const Node& node, const wafer::WaferParams& wafer, SearchConfig& s) {
  const std::string none;
  read_keys(v, node, "search", search_keys(), s, KeyContext{wafer, none});
  const auto has = [&](const char* name) {
    return std::find(s.objective_names.begin(), s.objective_names.end(), name) != s.objective_names.end();
  };
  s.objectives = search::ObjectiveSet{has("throughput"), has("latency"), has("pes")};
}

void read_sim(Validator& v, const Node& node, const wafer::WaferParams& wafer, SimConfig& c) {
  const std::string none;
  read_keys(v, node, "sim", sim_keys(), c, KeyContext{wafer, none});
}

void read_output(Validator& v, const Node& node, const wafer::WaferParams& wafer, OutputConfig& o,
                 const std::string& file) {
  o.dir = "results/runs/" + fs::path(file).stem().string();
  read_keys(v, node, "output", output_keys(), o, KeyContext{wafer, file});
}

void read_energy(Validator& v, const Node& node, const wafer::WaferParams& wafer, EnergyConfig& e) {
  const std::string none;
  read_keys(v, node, "energy", energy_keys(), e, KeyContext{wafer, none});
}

}  // namespace wavel::config::detail

namespace wavel::config {

std::vector<std::string> table_sections() { return {"wafer", "energy", "workloads", "cost", "baselines", "search", "cluster", "sim", "output"}; }

std::vector<KeyDoc> key_reference(const std::string& section) {
  using namespace detail;
  if (section == "wafer") {
    const auto& other = wafer_other_keys();
    std::vector<KeyDoc> rows{other.front()};
    const auto wse2 = *wafer::find_wafer_preset("wse2"), wse3 = *wafer::find_wafer_preset("wse3");
    for (const auto& k : wafer_keys()) {
      const auto shown = [&](const wafer::WaferParams& w) {
        return "`" + (k.integer ? std::to_string(static_cast<std::int64_t>(k.get(w))) : format_double(k.get(w))) + "`";
      };
      std::string meaning = k.meaning;
      if (!k.read_by_hand) {
        meaning += "; " + (k.integer ? bounds_text(static_cast<std::int64_t>(k.lo), static_cast<std::int64_t>(k.hi))
                                     : bounds_text(k.lo, k.hi, k.lo_exclusive));
      }
      if (k.sweep_rank >= 0) meaning += "; a what-if axis";
      rows.push_back(KeyDoc{k.name, k.unit, "wse2 " + shown(wse2) + ", wse3 " + shown(wse3), meaning});
    }
    rows.insert(rows.end(), other.begin() + 1, other.end());
    return rows;
  }
  if (section == "cost") {
    std::vector<KeyDoc> rows = cost_other_keys();
    const auto built_in = cost::default_params(*wafer::find_wafer_preset("wse3"));
    for (const auto& info : cost::param_registry()) {
      const bool from_wafer = info.name == "alpha_cycles_per_hop" || info.name == "beta_cycles_per_stage";
      rows.push_back(KeyDoc{info.name, info.units,
                            from_wafer ? "the wafer's" : "`" + format_double(built_in.*(info.field)) + "`",
                            info.description + "; " + bounds_text(info.min_value, info.max_value, false)});
    }
    return rows;
  }
  if (section == "workloads") {
    std::vector<KeyDoc> rows = workload_axis_keys();
    const auto rest = docs_of(workload_keys(), WorkloadAxes{});
    rows.insert(rows.end(), rest.begin(), rest.end());
    return rows;
  }
  if (section == "energy") return docs_of(energy_keys(), EnergyConfig{});
  if (section == "baselines") return docs_of(baselines_keys(), BaselinesConfig{});
  if (section == "search") return docs_of(search_keys(), SearchConfig{});
  if (section == "cluster") return docs_of(cluster_keys(), wafer::cluster_preset("cs3"));
  if (section == "sim") return docs_of(sim_keys(), SimConfig{});
  if (section == "output") return docs_of(output_keys(), OutputConfig{});
  throw InternalError("config::key_reference: no key table for section '" + section + "'");
}

}  // namespace wavel::config
