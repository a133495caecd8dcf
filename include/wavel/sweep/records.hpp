// The records of a sweep: what one setting's tasks produce (all figures predicted by the cost model).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/deploy/weight_streaming.hpp"

namespace wavel::driver {

/// Where a MeshIR text left on disk lies once a sweep has finished: the spooled result of setting
/// `setting_index` (in setting order), text `slot` (its schedules first, then its front points).
/// Keeps the end of a large sweep's memory off its MeshIR texts (tens of kB per schedule).
struct TextRef {
  std::int64_t setting_index = -1;  ///< -1: the text is held in memory (or there is none)
  std::int32_t slot = 0;
  std::uint64_t bytes = 0;
};

/// Reads a text named by a TextRef (throws wavel::InputDataError if it cannot be read back).
using TextFetch = std::function<std::string(const TextRef&)>;

/// A schedule's or front point's MeshIR text: the one held in memory, else the one `texts` reads back.
inline std::string meshir_text(const std::string& text, const TextRef& ref, const TextFetch& texts) {
  if (!text.empty() || ref.setting_index < 0) return text;
  if (!texts) throw InternalError("a MeshIR text was left on disk with no way to read it back");
  return texts(ref);
}

/// Predicted figures of one schedule of a setting (all model-predicted, none measured).
struct ScheduleResult {
  std::string name;                 ///< "fullchip", "waferllm"
  bool placed = false;              ///< false if the schedule could not be built for this setting
  double tokens_per_s = 0;          ///< throughput over all concurrent requests
  double latency_s = 0;             ///< TPOT (decode) or TTFT (prefill)
  double tpr_tokens_per_s = 0;      ///< throughput per request
  std::int64_t pes_used = 0;
  double sram_headroom = 0;         ///< 1 - max SRAM per PE / SRAM per PE; < 0 does not fit
  std::int64_t region_side_pes = 0; ///< side of the square regions (WaferLLM), grid width (Full-Chip)
  std::int64_t regions = 0;
  std::int64_t microbatches = 0;
  std::int64_t subset_layers = 0;   ///< decoder layers the schedule holds when costed as a layer subset (0: all)
  std::int64_t request_groups = 1;  ///< the requests are served as this many groups one after another (see grouping.hpp)
  std::string meshir;               ///< the schedule as MeshIR text ("" when left on disk: meshir_ref)
  TextRef meshir_ref;
  std::string na_reason;            ///< why it is not placed, in words ("" when placed)

  /// Packed in this order (meshir_ref stays with the rank that holds the text).
  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("name", "", r.name);
    v("placed", "bool", r.placed);
    v("tokens_per_s", "tokens/s", r.tokens_per_s);
    v("latency_s", "s", r.latency_s);
    v("tpr_tokens_per_s", "tokens/s", r.tpr_tokens_per_s);
    v("pes_used", "PEs", r.pes_used);
    v("sram_headroom", "1", r.sram_headroom);
    v("region_side_pes", "PEs", r.region_side_pes);
    v("regions", "1", r.regions);
    v("microbatches", "1", r.microbatches);
    v("layer_subset_layers", "layers", r.subset_layers);
    v("request_groups", "1", r.request_groups);
    v("meshir", "", r.meshir);
    v("na_reason", "", r.na_reason);
  }
};

/// One point of a setting's Pareto front (predicted).
struct FrontEntry {
  std::string source;               ///< "search" or "seed:<baseline>"
  double tokens_per_s = 0;
  double latency_s = 0;
  std::int64_t pes_used = 0;
  std::int64_t microbatches = 0;
  std::int64_t stages = 0;
  double sram_headroom = 0;
  std::string meshir;               ///< "" when left on disk: meshir_ref
  TextRef meshir_ref;
  std::int64_t request_groups = 1;  ///< served as this many groups one after another (see grouping.hpp)
  std::int64_t prompt_chunks = 1;   ///< prefill: token chunks per prompt, pipelined (chunked prefill)

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("source", "", r.source);
    v("tokens_per_s", "tokens/s", r.tokens_per_s);
    v("latency_s", "s", r.latency_s);
    v("pes_used", "PEs", r.pes_used);
    v("microbatches", "1", r.microbatches);
    v("prompt_chunks", "1", r.prompt_chunks);
    v("stages", "1", r.stages);
    v("sram_headroom", "1", r.sram_headroom);
    v("meshir", "", r.meshir);
    v("request_groups", "1", r.request_groups);
  }
};

/// One schedule simulated beside the cost model (both predicted).
struct SimPair {
  std::string schedule;             ///< "wavel", "front.N", "fullchip", "waferllm"
  double model_latency_s = 0;
  double sim_latency_s = 0;
  double model_tokens_per_s = 0;
  double sim_tokens_per_s = 0;
  std::int64_t ops_simulated = 0;
  std::int64_t events = 0;

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("schedule", "", r.schedule);
    v("model_latency_s", "s", r.model_latency_s);
    v("sim_latency_s", "s", r.sim_latency_s);
    v("model_tokens_per_s", "tokens/s", r.model_tokens_per_s);
    v("sim_tokens_per_s", "tokens/s", r.sim_tokens_per_s);
    v("ops_simulated", "1", r.ops_simulated);
    v("events", "1", r.events);
  }
};

/// One op simulated on its own (reused ops are not repeated): calibration data.
struct SimOpPair {
  std::string schedule;
  std::int64_t op = 0;
  std::string kernel;
  std::int64_t used_w_pes = 0, used_h_pes = 0;
  double model_cycles = 0;
  double sim_cycles = 0;

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("schedule", "", r.schedule);
    v("op", "1", r.op);
    v("kernel", "", r.kernel);
    v("used_w_pes", "PEs", r.used_w_pes);
    v("used_h_pes", "PEs", r.used_h_pes);
    v("model_cycles", "cycles", r.model_cycles);
    v("sim_cycles", "cycles", r.sim_cycles);
  }
};

/// Search statistics of one setting: work counters, which vary with how ranks shared the work
/// (each rank caches its own sub-problems) and with the incumbents they had.
struct SearchCounts {
  std::int64_t nodes_visited = 0;
  double exhaustive_tree_log10 = 0;
  std::int64_t cut_options = 0, pruned_sram = 0, pruned_bound = 0, pruned_incumbent = 0, pruned_dominance = 0, pruned_tune = 0,
               pruned_symmetry = 0, memo_hits = 0, tunes_scored = 0, candidates_evaluated = 0, block_costs = 0,
               timed_out = 0;

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("nodes_visited", "1", r.nodes_visited);
    v("exhaustive_tree_log10", "log10", r.exhaustive_tree_log10);
    v("cut_options", "1", r.cut_options);
    v("pruned_sram", "1", r.pruned_sram);
    v("pruned_bound", "1", r.pruned_bound);
    v("pruned_incumbent", "1", r.pruned_incumbent);
    v("pruned_dominance", "1", r.pruned_dominance);
    v("pruned_tune", "1", r.pruned_tune);
    v("pruned_symmetry", "1", r.pruned_symmetry);
    v("memo_hits", "1", r.memo_hits);
    v("tunes_scored", "1", r.tunes_scored);
    v("candidates_evaluated", "1", r.candidates_evaluated);
    v("block_costs", "1", r.block_costs);
    v("timed_out", "bool", r.timed_out);
  }
};

/// 90 % intervals of the predictions over the fitted parameters' uncertainty (cost.draws draws,
/// the same draws for every schedule, so ratios keep their correlation). NaN without draws.
struct PredictionIntervals {
  double wavel_tokens_per_s_lo = 0, wavel_tokens_per_s_hi = 0;
  double speedup_vs_waferllm_lo = 0, speedup_vs_waferllm_hi = 0;
  double speedup_vs_fullchip_lo = 0, speedup_vs_fullchip_hi = 0;
  std::int64_t draws = 0;
};

/// The baselines of SettingResult::schedules, in their order.
inline constexpr const char* kBaselineNames[] = {"fullchip", "waferllm"};

/// Workload, wafer and schedule figures of one setting.
struct SettingResult {
  std::int64_t setting_id = 0;
  std::int64_t tokens_per_step = 0;
  std::int64_t context_tokens = 0;
  std::int64_t flops_per_step = 0;
  std::int64_t param_bytes = 0;
  std::int64_t kv_cache_bytes = 0;
  std::int64_t activation_peak_bytes = 0;  ///< largest input+output footprint of a single op
  std::int64_t sram_required_bytes = 0;    ///< params + KV cache + activation peak
  std::int64_t wafer_sram_bytes = 0;
  std::int64_t fits_sram = 0;              ///< 1 if sram_required_bytes <= wafer_sram_bytes
  double roofline_step_s = 0;              ///< lower bound: FLOPs / wafer peak (not a prediction)
  double roofline_tokens_per_s = 0;        ///< upper bound on tokens/s implied by roofline_step_s
  std::int64_t model_layers = 0;           ///< the model's depth
  std::int64_t layer_subset_layers = 0;    ///< layers the schedules were built with; 0 = the whole model
  std::int64_t wafers = 1;                 ///< systems the setting deploys the model over
  std::string deployment;                  ///< "single" (whole model, one wafer), "layer_subset" (scaled), "pipeline"
  std::string stage_layers;                ///< pipeline: decoder layers per wafer, e.g. "27+27+26"
  std::vector<ScheduleResult> schedules;   ///< fullchip, then waferllm
  deploy::WeightStreaming weight_streaming; ///< the whole model streamed layer by layer (not in dry runs)
  std::vector<FrontEntry> front;           ///< the search's Pareto front, best throughput first
  double hypervolume = 0;                  ///< normalized, see docs/search.md
  double hypervolume_latency_ref_s = 0;
  PredictionIntervals intervals;
  SearchCounts search;
  double search_wall_s = 0;                ///< timing only; kept out of the deterministic tables
  std::vector<SimPair> sim;                ///< sampled simulation (config sim.samples)
  std::vector<SimOpPair> sim_ops;

  /// The best front point's tokens/s, 0 when nothing was placed.
  [[nodiscard]] double best_tokens_per_s() const { return front.empty() ? 0.0 : front.front().tokens_per_s; }

  /// Every field, once: packing follows this list, and the Column::own ones are the `settings`
  /// table's own columns, in this order (after setting_id come the setting's model and shape).
  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    using wavel::fields::Column;
    v("setting_id", "1", r.setting_id, Column::own);
    v("tokens_per_step", "tokens", r.tokens_per_step, Column::own);
    v("context_tokens", "tokens", r.context_tokens, Column::own);
    v("flops_per_step", "FLOP", r.flops_per_step, Column::own);
    v("param_bytes", "bytes", r.param_bytes, Column::own);
    v("kv_cache_bytes", "bytes", r.kv_cache_bytes, Column::own);
    v("activation_peak_bytes", "bytes", r.activation_peak_bytes, Column::own);
    v("sram_required_bytes", "bytes", r.sram_required_bytes, Column::own);
    v("wafer_sram_bytes", "bytes", r.wafer_sram_bytes, Column::own);
    v("fits_sram", "bool", r.fits_sram, Column::own);
    v("model_layers", "layers", r.model_layers, Column::own);
    v("layer_subset_layers", "layers", r.layer_subset_layers, Column::own);
    v("wafers", "systems", r.wafers, Column::own);
    v("deployment", "", r.deployment, Column::own);
    v("stage_layers", "layers", r.stage_layers, Column::own);
    v("roofline_step_s", "s", r.roofline_step_s, Column::own);
    v("roofline_tokens_per_s", "tokens/s", r.roofline_tokens_per_s, Column::own);
    v("schedules", "", r.schedules);
    v("weight_streaming", "", r.weight_streaming);
    v("front", "", r.front);
    v("hypervolume", "1", r.hypervolume);
    v("hypervolume_latency_ref_s", "s", r.hypervolume_latency_ref_s);
    v("intervals", "", r.intervals);
    v("search", "", r.search);
    v("search_wall_s", "s", r.search_wall_s);
    v("sim", "", r.sim);
    v("sim_ops", "", r.sim_ops);
  }
};

}  // namespace wavel::driver
