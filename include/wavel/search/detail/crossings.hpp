// A pipeline part's crossings to the wafers before and after it: what their on-wafer legs add to the
// joined pipeline's pass (cost::leg_cycles), from where the part's first and last leaves lie.
// Internal to src/search (search::part_crossings is the public form).
#pragma once

#include <cstdint>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/search/options.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::search::detail {

/// One side's crossing: bytes per micro-batch (0: none) and the link's own cycles for them.
struct Crossing {
  double bytes = 0;
  double link_cycles = 0;
};

/// The crossings of a part that deploy::join_stages joins: the activation in from the previous wafer
/// (every part but the first) and out to the next (every part but the last); in decode the sampled
/// token ids out of the last wafer and into the first's embedding.
struct Crossings {
  Crossing in, out;
  double latency_cycles = 0;  ///< the link's latency (deploy::join_stages rounds it to whole ns)
  wafer::Edge io_edge = wafer::Edge::west;
  std::int64_t grid_w = 0, grid_h = 0;

  [[nodiscard]] bool any() const { return in.bytes > 0 || out.bytes > 0; }
  /// The in-leg (I/O edge to `entry`, the used part the crossing lands on) plus the out-leg (`exit`,
  /// the last op's used rectangle, to the edge), each as cost::leg_cycles.
  [[nodiscard]] double legs(const meshir::Rect& entry, const meshir::Rect& exit, const wafer::WaferParams& wafer,
                            const cost::CostParams& params) const;
  [[nodiscard]] double in_leg(const meshir::Rect& entry, const wafer::WaferParams& wafer, const cost::CostParams& params) const;
  [[nodiscard]] double out_leg(const meshir::Rect& exit, const wafer::WaferParams& wafer, const cost::CostParams& params) const;
};

/// A part's crossings (none unless options.pipeline_part and the workload is a pipeline stage):
/// `first_input_bytes` is its first op's input (the activation, or the embedding's token ids) and
/// `last_output_bytes` its last op's output, both per micro-batch of `microbatches`.
Crossings part_crossings(const workload::Workload& w, const SearchOptions& options, const wafer::WaferParams& wafer,
                         std::int64_t microbatches, std::int64_t first_input_bytes, std::int64_t last_output_bytes);

}  // namespace wavel::search::detail
