// Tasks and messages of each MeshIR kernel on a simulated (sub-)region: the simulator's own reading
// of WaferLLM's kernels (domain.md §3), with per-PE work from tiles, SIMD lanes and loop structure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/meshir/schedule.hpp"
#include "wavel/sim/microarch.hpp"
#include "wavel/sim/detail/network.hpp"

namespace wavel::sim {

/// `count` PEs of a Network, `stride` apart in PE index: a row (stride 1) or a column (stride width).
struct Line {
  std::int64_t first = 0;
  std::int64_t stride = 1;
  std::int64_t count = 0;
  [[nodiscard]] std::int64_t at(std::int64_t i) const { return first + i * stride; }
};

/// Share of `total` on part l of `parts`: the first total mod parts parts take one more.
inline std::int64_t share(std::int64_t total, std::int64_t parts, std::int64_t l) {
  return total / parts + (l < total % parts ? 1 : 0);
}

/// Ring successor of position `pos` on an interleaved ring over a line of `n` PEs: even positions
/// step two to the right, odd ones two to the left, and the ends turn around, so every ring edge is
/// at most 2 hops and each directed link carries one ring edge.
std::int64_t interleaved_next(std::int64_t pos, std::int64_t n);

/// Geometry of the two-level K-tree over a line of `pes` PEs with groups of `group` (0: about
/// sqrt(pes), as WaferLLM). Level 1 reduces each group into its centre (position size/2 of the
/// group), level 2 reduces the group roots into root number groups/2, which multicasts the result.
struct TreeShape {
  std::int64_t group = 1;
  std::int64_t groups = 1;
  std::int64_t root = 0;            ///< line position of the final root
  std::int64_t broadcast_hops = 0;  ///< farthest PE from the root
};
TreeShape ktree_shape(std::int64_t pes, std::int64_t group);

/// Appends a streamed K-tree allreduce of `bytes` over `line`: ready[i] is the item after which PE i
/// holds its partial (kNoItem: at once). Every PE adds what it receives to its partial wavelet by
/// wavelet and forwards each sum as soon as it has it (Network::stream), so the tree is a pipeline:
/// a PE's ramp serialises the streams it receives. The final root multicasts the sum to both ends of
/// the line as it is formed (one injection; the routers copy). Colours: colour_base (level 1), +1
/// (level 2), +2 (multicast). Returns a join that finishes when every PE holds the result.
ItemId ktree_allreduce(Network& net, const Line& line, std::int64_t group, std::int64_t bytes,
                       const std::vector<ItemId>& ready, int colour_base);

/// Appends a multicast of `bytes` from the centre of `line` to both ends (one injection; routers copy
/// to every PE on the way) after `ready`. Returns a join that finishes when both ends hold it.
ItemId multicast(Network& net, const Line& line, std::int64_t bytes, ItemId ready, int colour);

/// Appends one shift of `bytes` around the interleaved ring on `line` (ready[i]: when PE i may send;
/// colours colour_base for rightward and colour_base + 1 for leftward edges). Returns, per line
/// position, the message that delivers that position's new tile (kNoItem for a ring of 1).
std::vector<ItemId> ring_shift(Network& net, const Line& line, std::int64_t bytes, const std::vector<ItemId>& ready,
                               int colour_base);

/// How one op is simulated and what the simulated part stands for.
struct SampleRecord {
  std::string rule;                 ///< e.g. "sampled: 3 of 360 K-tree lines of 360 PEs along x"
  double scale_factor = 1.0;        ///< whole-op messages and wavelet-hops = simulated ones x this
  std::int64_t sampled_pes = 0;     ///< PEs in the simulated mesh
  std::int64_t op_pes = 0;          ///< PEs the op uses
  bool full_region = false;         ///< the whole used rectangle was simulated
  std::int64_t steps_total = 1;     ///< MeshGEMM compute-and-shift steps of the op (1 otherwise)
  std::int64_t steps_simulated = 1; ///< steps simulated; the rest are extrapolated at the last period
  std::int64_t lines_total = 1;     ///< independent lines (or PEs) of the op
  std::int64_t lines_sampled = 1;   ///< of them simulated (seeded choice when fewer than all)
};

/// Up to `k` of `total` line indices, ascending, chosen by a hash of `seed`. When lines [0, heavy)
/// carry more work than the rest, at least one of each kind is taken. Candidate i of a range of n
/// lines is ((i * 2654435761 + splitmix64(seed)) mod 2^64) mod n, for i below min(n, 4096)
/// (splitmix64 in common/hash.hpp); the candidates with the smallest
/// (splitmix64(splitmix64(seed) ^ line), line) are taken, repeats skipped.
std::vector<std::int64_t> choose_lines(std::int64_t total, std::int64_t heavy, std::int64_t k, std::uint64_t seed);

/// What kind of graph the builder makes.
enum class Shape {
  ktree,       ///< launch, local vector loops, then `rounds` streamed K-tree allreduces per line
  compute,     ///< launch and local vector loops only
  neighbour,   ///< every PE of a line sends one message one hop towards position 0
  cannon,      ///< MeshGEMM / GEMM-T: skew, then compute-and-shift steps on interleaved rings
  lanes,       ///< movers: each lane carries one message over `hops` hops
  mirror,      ///< relayout: PE i of each line sends its tile to PE count-1-i
  attention,   ///< decode attention: GQA multicast over a KV group's span, compute, K-trees
  exchange,    ///< an expert CUT's all-to-all: a line's pieces outside a strip send to it (or it to them)
  gather,      ///< allgather: every PE of a line sends its piece to the centre, which multicasts the line's slice
};

/// Lines of the simulated mesh and the per-line work (lines may differ where a dimension does not
/// split evenly: the first `n mod parts` lines take one more element).
struct LineWork {
  std::int64_t line = 0;            ///< index among the op's lines
  double compute_cycles = 0;        ///< local vector loops per PE
  std::int64_t message_bytes = 0;   ///< K-tree message, neighbour message or mover lane
};

/// The per-kernel quantities the builder needs, from the op's MeshIR and the microarchitecture.
struct KernelPlan {
  meshir::Kernel kernel = meshir::Kernel::elementwise;
  Shape shape = Shape::compute;
  std::int64_t mesh_w_pes = 1, mesh_h_pes = 1;  ///< simulated mesh
  SampleRecord sample;
  double launch_cycles = 0;          ///< starting the op, once per PE
  double task_cycles = 0;            ///< a task activation (MeshGEMM step, next allreduce round)
  std::vector<LineWork> lines;       ///< the simulated lines, each a row of the mesh (or a column: line_along_x)
  std::int64_t line_pes = 1;         ///< PEs per line
  bool line_along_x = true;          ///< lines are rows of the simulated mesh; false: columns
  std::int64_t group = 0;            ///< K-tree group size as given (0: sqrt)
  std::int64_t rounds = 1;           ///< dependent allreduce rounds
  std::int64_t tree_pes = 0;         ///< attention: PEs per K-tree (a head's segment); 0: the whole line
  std::int64_t span_pes = 0;         ///< attention: GQA multicast span (0: none)
  std::int64_t span_bytes = 0;       ///< attention: the K/V slice multicast over the span
  std::int64_t hops = 0;             ///< movers: hops per lane
  std::int64_t exchange_lo = 0, exchange_hi = 0;  ///< exchange: the strip's PEs [lo, hi) of each line
  bool exchange_into_strip = true;   ///< exchange: dispatch (false: combine)
  // Cannon (MeshGEMM / GEMM-T)
  std::int64_t x_ring_pes = 1, y_ring_pes = 1;
  double step_compute_cycles = 0;
  std::int64_t x_bytes = 0, y_bytes = 0, skew_bytes = 0, skew_rounds = 0;
  std::int64_t skew_rounds_simulated = 0;  ///< alignment rounds built; the rest extrapolated like steps
  std::int64_t steps = 1;
};

/// A message of an expert CUT's all-to-all on one line (positions along the line).
struct ExchangeSend {
  std::int64_t from = 0, to = 0, bytes = 0;
};

/// The messages of one strip's flow on a line of `line_pes` PEs: the line outside the strip's PEs
/// [lo, hi) is cut into pieces no wider than the strip; each piece's middle PE sends the piece's
/// share (by width) of the line's `bytes` to the strip's nearer edge PE, or receives it from there
/// when `into_strip` is false (a combine). The strip's own share does not move.
std::vector<ExchangeSend> exchange_sends(std::int64_t line_pes, std::int64_t lo, std::int64_t hi, bool into_strip,
                                         std::int64_t bytes);

/// Options of plan_kernel.
struct PlanOptions {
  bool full_region = false;              ///< simulate every line / PE of the used rectangle
  std::int64_t max_simulated_steps = 16; ///< MeshGEMM steps simulated (at least 2); the rest extrapolated
  std::int64_t sample_lines = 3;         ///< lines simulated when sampling (seeded choice)
  std::uint64_t seed = 1;                ///< chooses the sampled lines
};

/// Plans the simulation of `op` (its to_region comes from `schedule`). Throws wavel::DataError if a
/// mover's to_region is not a region of the schedule, std::domain_error for sizes past 64 bits.
KernelPlan plan_kernel(const meshir::Schedule& schedule, const meshir::PlacedOp& op, const MicroArch& micro,
                       const PlanOptions& options);

/// What build_kernel appended.
struct KernelBuild {
  ItemId done = kNoItem;               ///< finishes with the (simulated part of the) op
  std::vector<ItemId> line_done;       ///< per simulated line (kNoItem where not tracked)
  std::vector<ItemId> step_done;       ///< MeshGEMM: one join per simulated step (all its computes)
  std::int64_t steps_total = 1;
  std::vector<ItemId> skew_done;       ///< MeshGEMM: one join per simulated alignment round
  std::int64_t skew_total = 0;
};

/// Appends the op's tasks and messages to `net`, whose mesh must be plan.mesh_w_pes x mesh_h_pes.
KernelBuild build_kernel(Network& net, const KernelPlan& plan);

/// The op's simulated time after net.run(): the finish of `done`, plus, when steps (alignment
/// rounds) were left out, their number x the period of the last simulated step (round).
double kernel_cycles(const Network& net, const KernelBuild& build);

}  // namespace wavel::sim
