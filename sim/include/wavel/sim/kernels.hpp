// Tasks and messages of each MeshIR kernel on a simulated (sub-)region, with the routes the cost model assumes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/sim/network.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::sim {

/// `count` PEs of a Network, `stride` apart in PE index: a row (stride 1) or a column (stride width).
struct Line {
  std::int64_t first = 0;
  std::int64_t stride = 1;
  std::int64_t count = 0;
  [[nodiscard]] std::int64_t at(std::int64_t i) const { return first + i * stride; }
};

/// Ring successor of position `pos` on an interleaved ring over a line of `n` PEs: even positions
/// step two to the right, odd ones two to the left, and the ends turn around, so every ring edge is
/// at most 2 hops and each directed link carries one ring edge.
std::int64_t interleaved_next(std::int64_t pos, std::int64_t n);

/// Geometry of the two-level K-tree over a line of `pes` PEs with groups of `group` (0: about
/// sqrt(pes), as the cost model). Level 1 reduces each group into its centre (position size/2 of
/// the group), level 2 reduces the group roots into root number groups/2, which broadcasts.
struct TreeShape {
  std::int64_t group = 1;
  std::int64_t groups = 1;
  std::int64_t level1_stages = 0;  ///< critical-path stages inside a group: floor(group / 2)
  std::int64_t level2_stages = 0;  ///< between roots: floor(groups / 2)
  std::int64_t root = 0;           ///< line position of the final root
  std::int64_t broadcast_hops = 0; ///< farthest PE from the root
};
TreeShape ktree_shape(std::int64_t pes, std::int64_t group);

/// Appends a K-tree allreduce of `bytes` over `line`: ready[i] is the item after which PE i holds its
/// partial (kNoItem: at once). Each receive is a software stage (beta) that adds, then forwards; the
/// final root multicasts the result to both ends of the line (one injection; the router copies).
/// Colours: colour_base (level 1), +1 (level 2), +2 (broadcast). Returns a join that finishes when
/// every PE of the line holds the result.
ItemId ktree_allreduce(Network& net, const Line& line, std::int64_t group, std::int64_t bytes,
                       const std::vector<ItemId>& ready, int colour_base);

/// Appends one shift of `bytes` around the interleaved ring on `line` (ready[i]: when PE i may send;
/// colours colour_base for rightward and colour_base + 1 for leftward edges). Returns, per line
/// position, the message that delivers that position's new tile (kNoItem for a ring of 1).
std::vector<ItemId> ring_shift(Network& net, const Line& line, std::int64_t bytes, const std::vector<ItemId>& ready,
                               int colour_base);

/// How one op is simulated and what the simulated part stands for.
struct SampleRecord {
  std::string rule;                ///< e.g. "1 of 360 identical K-tree lines of 360 PEs along x"
  double scale_factor = 1.0;       ///< whole-op messages and wavelet-hops = simulated ones x this
  std::int64_t sampled_pes = 0;    ///< PEs in the simulated mesh
  std::int64_t op_pes = 0;         ///< PEs the op uses
  bool full_region = false;        ///< the whole used rectangle was simulated
  std::int64_t steps_total = 1;    ///< MeshGEMM compute-and-shift steps of the op (1 otherwise)
  std::int64_t steps_simulated = 1;///< steps simulated; the rest are extrapolated at the last period
};

/// The per-kernel quantities the builder needs, derived from the op and the cost parameters exactly
/// as the cost model derives them (tile sizes, bytes per message, hops and lanes of movers).
struct KernelPlan {
  meshir::Kernel kernel = meshir::Kernel::elementwise;
  std::int64_t mesh_w_pes = 1, mesh_h_pes = 1;  ///< simulated mesh
  SampleRecord sample;
  double launch_cycles = 0;          ///< kernel_overhead_cycles, once per PE at the start
  double compute_cycles = 0;         ///< local work per PE (MeshGEMM: per step)
  double step_overhead_cycles = 0;   ///< MeshGEMM: per step
  std::int64_t message_bytes = 0;    ///< K-tree message, KV entry, mover lane, or the X-ring tile
  std::int64_t second_bytes = 0;     ///< MeshGEMM: the Y-ring tile
  std::int64_t skew_bytes = 0;       ///< MeshGEMM: activation tile skewed on the X ring
  std::int64_t skew_rounds = 0;
  std::int64_t group = 0;            ///< K-tree group size as given (0: sqrt)
  std::int64_t rounds = 1;           ///< dependent allreduce rounds
  std::int64_t line_pes = 1;         ///< PEs along the reduce axis / ring / kv column / mover lane
  std::int64_t lines = 1;            ///< lines simulated side by side (1 when sampled)
  std::int64_t hops = 0;             ///< movers: hops per lane
  std::int64_t x_ring_pes = 1;       ///< MeshGEMM: ring sizes along X and Y of the op
  std::int64_t y_ring_pes = 1;
  bool line_along_x = true;          ///< lines run along the mesh's X (full region, reduce axis y: along Y);
                                     ///< a MeshGEMM sample is an X ring if true, else a Y ring laid along X
  std::int64_t steps = 1;            ///< MeshGEMM: compute-and-shift steps of the op
  std::int64_t max_simulated_steps = 16;
};

/// Options of plan_kernel.
struct PlanOptions {
  bool full_region = false;              ///< simulate every line / PE of the used rectangle
  std::int64_t max_simulated_steps = 16; ///< MeshGEMM steps simulated (at least 2); the rest extrapolated
};

/// Plans the simulation of `op` (its region and to_region come from `schedule`). Throws
/// wavel::DataError if a mover's to_region is not a region of the schedule.
KernelPlan plan_kernel(const meshir::Schedule& schedule, const meshir::PlacedOp& op, const wafer::WaferParams& wafer,
                       const cost::CostParams& params, const PlanOptions& options);

/// What build_kernel appended.
struct KernelBuild {
  ItemId done = kNoItem;               ///< finishes with the (simulated part of the) op
  std::vector<ItemId> step_done;       ///< MeshGEMM: one join per simulated step (all its computes)
  std::int64_t steps_total = 1;
};

/// Appends the op's tasks and messages to `net`, whose mesh must be plan.mesh_w_pes x mesh_h_pes.
KernelBuild build_kernel(Network& net, const KernelPlan& plan);

/// The op's simulated time after net.run(): the finish of `done`, plus, when steps were left out,
/// (steps_total - steps simulated) x the period of the last simulated step.
double kernel_cycles(const Network& net, const KernelBuild& build);

}  // namespace wavel::sim
