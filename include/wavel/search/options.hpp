// The search's settings: one declaration, read from the config's `search` section
// (config::SearchConfig adds only what the driver uses: checkpoints, baseline seeds, objective names).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "wavel/search/pareto.hpp"
#include "wavel/wafer/cluster.hpp"

namespace wavel::search {

/// The kinds of TUNE choice the search offers besides group scales, entry axes and expert CUTs.
struct TuneKinds {
  bool fusion = true;
  bool split_epilogues = true;
  bool concurrent_branches = true;
  std::vector<std::int64_t> head_groups{1};  ///< prefill: split heads into this many groups (Tune::head_groups)
  bool sibling_branches = true;  ///< a merged matmul's products may run on strips of the leaf (Tune::sibling_branches)
};

/// Search settings.
struct SearchOptions {
  bool exhaustive = false;                       ///< no bound and no dominance pruning
  std::vector<double> cut_ratios{0.25, 0.5, 0.75};  ///< two-way CUTs at these fractions of a side
  std::vector<std::int64_t> strip_counts{3, 4, 6, 8};  ///< n-way CUTs into equal strips
  std::int64_t max_cut_depth = 3;
  std::vector<double> group_scales{1.0, 0.5, 2.0};     ///< TUNE: K-tree group = scale x sqrt(side)
  std::vector<double> used_fractions{1.0, 0.75, 0.5};  ///< TUNE: fraction of each region side used
  double time_limit_s = 0;                       ///< 0: none (a limit makes results timing-dependent)
  bool serial = false;                           ///< parallel loops on Kokkos::Serial instead of the default host space
  std::int64_t root_chunks = 4;                  ///< root CUT options split over this many pieces (units of distribution)
  std::vector<std::int64_t> expert_groups{1, 2, 4, 8};  ///< MoE: expert CUTs of a leaf into this many strips
  std::vector<std::int64_t> prompt_chunks{1};    ///< prefill: each prompt in this many token chunks (counts dividing it)
  std::vector<std::int64_t> head_groups{1, 4, 16};  ///< prefill: attention heads split into this many groups on cells of the leaf
  bool fusion = true;                            ///< TUNE may fuse operators that share an input (fuse_shared_inputs)
  bool split_epilogues = true;                   ///< TUNE may split decode epilogues over both axes (Tune::split_epilogues)
  bool concurrent_branches = true;               ///< TUNE may run the shared experts beside the routed ones (Tune::concurrent_branches)
  bool sibling_branches = true;                  ///< a block's cost may run a merged matmul's products on strips of the leaf (Tune::sibling_branches)
  std::int64_t cut_step_pes = 0;                 ///< two-way CUTs also at every multiple of this many PEs (0: none)
  std::int64_t sram_cuts = 0;                    ///< root two-way CUTs where the first part just holds n near-equal block runs
  bool sram_boundaries = true;                   ///< root CUTs also split the blocks where each child holds as many as fit
  std::int64_t square_step_pes = 15;             ///< P x P layouts: every multiple of this up to the shorter side (0: none)
  std::vector<std::int64_t> square_sides;        ///< P x P layouts: these sides too
  std::int64_t seed = 1;                         ///< seeds the parameter draws and which piece takes which root CUT option
  bool all_anchors = false;                      ///< a used rectangle at every region corner free of defects, not only the first
  std::int64_t sram_used_step_pes = 0;           ///< used sizes also from SRAM need, rounded up to this many PEs (0: none)
  std::vector<double> sram_footprints;           ///< footprints holding the resident bytes at these SRAM fills
  ObjectiveSet objectives;                       ///< what the fronts compare
  /// A part of a multi-wafer pipeline: its objectives are stage_objectives' (the sweep sets this and
  /// every objective on), so its front holds every part schedule the joined pipeline could want.
  bool pipeline_part = false;
  /// A pipeline part's links (the sweep sets them with pipeline_part): where each wafer's I/O enters
  /// its mesh and one system's link bandwidth. The part's pass carries the on-wafer legs of its
  /// crossings (detail::Crossings), which depend on where its first and last leaves lie.
  wafer::Edge io_edge = wafer::Edge::west;
  double link_bytes_per_s = 0;
  double link_latency_s = 0;
  /// Checked between subproblems: nonzero abandons the piece with search::Cancelled (a pending
  /// SIGTERM/SIGUSR1, so a long piece cannot hold a checkpoint back). Not part of the results.
  const std::atomic<int>* stop_flag = nullptr;

  [[nodiscard]] TuneKinds tune_kinds() const { return {fusion, split_epilogues, concurrent_branches, head_groups, sibling_branches}; }
};

}  // namespace wavel::search
