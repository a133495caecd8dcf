// MeshIR: an executable schedule of one setting on a wafer: regions, placed ops with layouts and
// kernels, and execution order (steps, plus pipelining of concurrent requests over stages).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wavel/wafer/cluster.hpp"
#include "wavel/wafer/simd.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/figures.hpp"

namespace wavel::meshir {

/// An axis-aligned rectangle of PEs on the kernel grid: [x, x+w) x [y, y+h).
struct Rect {
  std::int64_t x = 0, y = 0, w = 0, h = 0;

  [[nodiscard]] std::int64_t pes() const { return w * h; }
  [[nodiscard]] bool overlaps(const Rect& o) const {
    return x < o.x + o.w && o.x < x + w && y < o.y + o.h && o.y < y + h;
  }
  [[nodiscard]] bool contains(std::int64_t px, std::int64_t py) const {
    return px >= x && px < x + w && py >= y && py < y + h;
  }
  friend bool operator==(const Rect& a, const Rect& b) { return a.x == b.x && a.y == b.y && a.w == b.w && a.h == b.h; }
};

/// Mesh axis.
enum class Axis { x, y };

/// The mesh kernel that executes an op (domain.md §3); what each is and does: meshir/kernels.hpp.
enum class Kernel {
  meshgemm,
  gemm_t,
  meshgemv,
  elementwise,
  allreduce,
  kv_shift,
  lookup,
  transfer,
  relayout,
  moe_dispatch,
  moe_combine,
  allgather,
};

/// A side of the wafer: where a system's I/O enters the mesh (wafer/cluster.hpp).
using Edge = wafer::Edge;

/// The part of attention an op computes; the cost model reduces over the PEs that hold a head.
enum class AttentionRole {
  none,     ///< not attention
  scores,   ///< Q.K^T: reduces over the head dimension
  softmax,  ///< max and sum over the context
  values,   ///< P.V: reduces over the context
};

/// Which tensor dimension lies along a mesh axis.
enum class Dim {
  none,      ///< replicated along this axis
  tokens,    ///< rows of the activation (sequence or requests)
  features,  ///< columns of the activation (hidden, heads x head_dim, ffn)
};

/// How an op's activation lies over its region. Partition factors count the pieces the dimension on
/// each axis is split into (an axis holding Dim::none carries a copy of the activation on every line);
/// replication factors count copies of the op's resident weights and KV cache along each axis
/// (1: stored once). part * repl never exceeds the side used.
struct Layout {
  Dim on_x = Dim::none;
  Dim on_y = Dim::features;
  std::int64_t part_x = 1, part_y = 1;
  std::int64_t repl_x = 1, repl_y = 1;
  std::int64_t tile_rows = 0, tile_cols = 0;  ///< local tile of the op's weight or stationary operand

  friend bool operator==(const Layout& a, const Layout& b) {
    return a.on_x == b.on_x && a.on_y == b.on_y && a.part_x == b.part_x && a.part_y == b.part_y &&
           a.repl_x == b.repl_x && a.repl_y == b.repl_y && a.tile_rows == b.tile_rows && a.tile_cols == b.tile_cols;
  }
  /// Same activation placement (ignores the weight tile): what a consumer must match.
  [[nodiscard]] bool aligned_with(const Layout& o) const {
    return on_x == o.on_x && on_y == o.on_y && part_x == o.part_x && part_y == o.part_y;
  }
  /// Features split over both axes (a split epilogue: each PE holds its own piece).
  [[nodiscard]] bool features_on_both() const { return on_x == Dim::features && on_y == Dim::features; }
  /// A consumer in `o` can read this placement in place: the same, or `o` splits the features this
  /// holds along one axis over the axis that replicates them (each PE keeps a piece of its own copy).
  [[nodiscard]] bool narrows_to(const Layout& o) const {
    if (aligned_with(o)) return true;
    if (!o.features_on_both()) return false;
    return (on_x == Dim::features && on_y == Dim::none && part_x == o.part_x) ||
           (on_y == Dim::features && on_x == Dim::none && part_y == o.part_y);
  }
};

/// The most products a grouped GEMM may run (the verifier's and the text parser's bound).
inline constexpr std::int64_t kMaxProducts = std::int64_t{1} << 20;

/// Workload figures an op carries from the op graph (workload::Op), and how MeshIR runs them.
struct OpWork : workload::OpFigures {
  /// meshgemm: products run one after another on the region, each with its own weights (a grouped
  /// GEMM over experts: every PE holds a slice of each); the m rows are split evenly over them...
  std::int64_t products = 1;
  /// ... unless given here: each product's rows (one per product, summing to m; skewed routing).
  std::vector<std::int64_t> product_rows;
};

/// One op placed in a region with its layout and kernel.
struct PlacedOp {
  std::string name;                 ///< unique, e.g. "layer.3.q_proj", "xfer.3-4"
  Kernel kernel = Kernel::elementwise;
  int region = 0;                   ///< index into Schedule::regions
  Rect used;                        ///< sub-rectangle of the region actually used (TUNE may shrink it)
  Layout in_layout;                 ///< layout of the activation it consumes
  Layout out_layout;                ///< layout of the activation it produces
  Axis reduce_axis = Axis::x;       ///< allreduce axis (meshgemv, allreduce)
  std::int64_t group = 0;           ///< K-tree group size; 0 when the kernel has none
  std::int64_t rounds = 1;          ///< dependent allreduce rounds (softmax: max, then sum)
  int to_region = -1;               ///< destination region (transfer, moe_dispatch, moe_combine)
  std::vector<int> inputs;          ///< indices of producer ops in Schedule::ops
  int step = 0;                     ///< ops of one step run at the same time on disjoint regions
  int stage = 0;                    ///< pipeline stage (concurrent requests flow through stages)
  AttentionRole attention = AttentionRole::none;
  bool input_skewed = false;        ///< meshgemm: the moving operand is already skewed (WaferLLM's K and V
                                    ///< projections reuse Q's aligned input): no alignment shifts
  bool once = false;                ///< runs once per pass even in a layer subset (embedding, LM head):
                                    ///< Schedule::layer_scale multiplies only the other ops
  OpWork work;
};

/// A whole executable schedule.
/// A cost-model or simulator constant the schedule was costed with (text: `param NAME VALUE`).
/// MeshIR checks only the form; the driver checks the name against the parameter tables.
struct CostedParam {
  std::string name;
  double value = 0;
};

struct Schedule {
  std::string name;                 ///< e.g. "waferllm", "fullchip", "wavel"
  std::int64_t grid_w_pes = 0, grid_h_pes = 0;
  std::int64_t sram_per_pe_bytes = 0;
  std::int64_t sram_reserved_per_pe_bytes = 0;  ///< code, stack, task table: not for data (text: optional line)
  std::int64_t colours = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> defective_pes;
  std::vector<Rect> regions;
  std::vector<PlacedOp> ops;        ///< in execution order; steps are non-decreasing
  std::int64_t concurrent_requests = 1;
  std::int64_t microbatches = 1;    ///< requests are split into this many groups pipelined over stages;
                                    ///< op work is that of one group (ceil(requests / microbatches))
  std::int64_t prompt_chunks = 1;   ///< prefill: each group's prompts are split into this many token
                                    ///< chunks pipelined over stages; op work is one chunk's (text:
                                    ///< optional line, absent = 1)
  std::int64_t layer_scale = 1;     ///< >1: the ops cover a subset of decoder layers; the costs of ops
                                    ///< not marked `once` are scaled (labelled)
  std::int64_t layers_total = 0;    ///< model depth the schedule stands for
  // A pipeline over several systems (wafers > 1): each region lies on one wafer of the same grid,
  // and a transfer between regions of two wafers crosses the systems' link.
  std::int64_t wafers = 1;
  std::int64_t link_bytes_per_s = 0;  ///< one system's link to the next, each direction
  std::int64_t link_latency_ns = 0;   ///< one crossing, before the bytes
  Edge io_edge = Edge::west;          ///< where each wafer's I/O enters the mesh
  std::vector<std::int64_t> region_wafers;  ///< parallel to regions; empty: every region on wafer 0
  // What a run costed the schedule with, so `check` and `simulate` can cost it the same way.
  std::string costed_on;                    ///< wafer preset (text: `costed_on PRESET`); "" = not recorded
  std::vector<CostedParam> costed_params;   ///< in the order given
};

/// The wafer region `region` lies on (0 when the schedule spans one wafer).
std::int64_t wafer_of(const Schedule& schedule, int region);

/// True for a transfer whose source and destination regions lie on different wafers.
bool crosses_wafers(const Schedule& schedule, const PlacedOp& op);

/// The rectangle, against the wafer's I/O edge, that an activation held on `from` travels to (or
/// arrives from) when it leaves (enters) the wafer: the same shape, moved flush to the edge.
Rect io_rect(const Schedule& schedule, const Rect& from);
/// The same on a grid_w x grid_h wafer whose I/O enters at `edge` (a part searched before it is joined).
Rect io_rect(Edge edge, std::int64_t grid_w, std::int64_t grid_h, const Rect& from);

std::string_view to_string(Kernel kernel);
std::string_view to_string(Dim dim);
std::string_view to_string(Axis axis);
std::string_view to_string(AttentionRole role);
std::string_view to_string(Edge edge);
std::optional<Edge> parse_edge(std::string_view text);
std::optional<AttentionRole> parse_attention_role(std::string_view text);
std::optional<Kernel> parse_kernel(std::string_view text);
std::optional<Dim> parse_dim(std::string_view text);
std::optional<Axis> parse_axis(std::string_view text);

/// Where a region's data lies: the smallest rectangle holding the used rectangles of the ops that run
/// in it (a mover runs in its source region), or the region itself when no op does. Movers carry data
/// from this part of their source region to this part of their destination region.
Rect used_part(const Schedule& schedule, int region);
/// used_part of every region, in one pass over the ops.
std::vector<Rect> used_parts(const Schedule& schedule);

/// An expert CUT's all-to-all, seen from one strip: a dispatch from a rectangle to a strip inside it,
/// or a combine from such a strip back to the rectangle. The strip spans the rectangle across `axis`
/// and is narrower along it, so the bytes travel along `axis` on the rectangle's `lines()` lines.
struct Exchange {
  Rect outer, strip;
  Axis axis = Axis::x;
  bool into_strip = true;  ///< dispatch (tokens spread over `outer` go to the strip); false: combine

  [[nodiscard]] std::int64_t side() const { return axis == Axis::x ? outer.w : outer.h; }   ///< PEs along a line
  [[nodiscard]] std::int64_t lines() const { return axis == Axis::x ? outer.h : outer.w; }  ///< parallel lines
  [[nodiscard]] std::int64_t lo() const { return axis == Axis::x ? strip.x - outer.x : strip.y - outer.y; }
  [[nodiscard]] std::int64_t hi() const { return lo() + (axis == Axis::x ? strip.w : strip.h); }
  /// Both flows belong to one all-to-all: the same rectangle, axis and direction.
  [[nodiscard]] bool same_all_to_all(const Exchange& o) const {
    return outer == o.outer && axis == o.axis && into_strip == o.into_strip;
  }
};

/// The exchange `op` is part of, if it is an MoE dispatch into (combine out of) a strip that lies
/// inside the other end's used part and spans it across one axis; nullopt for every other op.
std::optional<Exchange> exchange_of(const Schedule& schedule, const PlacedOp& op);
/// The same, with the used part of op's destination region already known (used_parts, once for all ops).
std::optional<Exchange> exchange_of(const Schedule& schedule, const PlacedOp& op, const Rect& to_part);

/// A schedule named `name` with no region or op yet, on `wafer`: its grid, SRAM per PE and
/// reserved SRAM, routable colours and defective PEs.
Schedule empty_on(const std::string& name, const wafer::WaferParams& wafer);

/// A schedule named `name` with no region or op yet, on the wafer `frame` lies on.
Schedule empty_like(const std::string& name, const Schedule& frame);

}  // namespace wavel::meshir
