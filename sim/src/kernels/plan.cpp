// Plans each MeshIR kernel: the simulated mesh, which lines are sampled (seeded, every work class
// covered), and each PE's work from its tiles, SIMD lanes and loop structure.
#include <algorithm>
#include <cmath>
#include <string>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/sim/detail/kernels.hpp"

namespace wavel::sim {

namespace {

using meshir::AttentionRole;
using meshir::Axis;
using meshir::Kernel;
using meshir::PlacedOp;
using meshir::Rect;

constexpr std::int64_t kFp16Bytes = 2;  // activations and weights, in SRAM
constexpr std::int64_t kFp32Bytes = 4;  // partial sums of scalar reductions and attention
// On the fabric an FP16 element takes a whole 32-bit wavelet: the kernels move FP16 data with 16-bit
// fabric moves, one element per wavelet. The WSE-3 shift runs show it (about 1 cycle per element
// and hop where packed wavelets would take 0.5); the MeshGEMM and MeshGEMV runs fit equally well
// either way (their transfers hide behind compute or are short).
constexpr std::int64_t kFp16WireBytes = 4;
// Wire bytes of an FP16 payload of `bytes` bytes in SRAM.
std::int64_t fp16_wire(std::int64_t bytes) { return checked_mul(std::max<std::int64_t>(0, bytes), kFp16WireBytes / kFp16Bytes, "wire bytes"); }

std::int64_t at_least_1(std::int64_t v) { return std::max<std::int64_t>(1, v); }
std::int64_t side(const Rect& r, Axis axis) { return at_least_1(axis == Axis::x ? r.w : r.h); }
Axis other(Axis axis) { return axis == Axis::x ? Axis::y : Axis::x; }
const char* name(Axis axis) { return axis == Axis::x ? "x" : "y"; }
std::string str(std::int64_t v) { return std::to_string(v); }
std::int64_t mul(std::int64_t a, std::int64_t b) { return checked_mul(a, b, "op size"); }

// Token rows a PE holds: the tokens split over the axes that carry them.
std::int64_t rows_per_pe(const PlacedOp& op) {
  const meshir::Layout& l = op.in_layout;
  std::int64_t parts = 1;
  if (l.on_x == meshir::Dim::tokens) parts *= at_least_1(l.part_x);
  if (l.on_y == meshir::Dim::tokens) parts *= at_least_1(l.part_y);
  return at_least_1(ceil_div(mul(at_least_1(op.work.batch), at_least_1(op.work.m)), parts));
}

// Feature columns of each row a PE holds: a row's `per_row` split over the axes that carry features.
std::int64_t features_per_pe(const PlacedOp& op, std::int64_t per_row) {
  const meshir::Layout& l = op.in_layout;
  std::int64_t parts = 1;
  if (l.on_x == meshir::Dim::features) parts *= at_least_1(l.part_x);
  if (l.on_y == meshir::Dim::features) parts *= at_least_1(l.part_y);
  return ceil_div(std::max<std::int64_t>(0, per_row), parts);
}

// Local elementwise work of a PE over `held` of the op's batch x m x n elements: each instruction of
// the op's vector mix over them on its form's lanes or through the SRAM ports, whichever is slower
// (without a mix: its share of the flops), plus a vector setup per row it holds, then its scalar
// loop, one element at a time (`scalar_held` elements).
double local_elementwise_cycles(const PlacedOp& op, std::int64_t held, std::int64_t rows, std::int64_t scalar_held,
                                const MicroArch& micro) {
  const std::int64_t all = mul(mul(at_least_1(op.work.batch), at_least_1(op.work.m)), at_least_1(op.work.n));
  // The op's totals scaled to what this PE holds (rounded up: the fullest PE sets the time).
  const auto held_part = [&](std::int64_t total) {
    const double scaled = static_cast<double>(std::max<std::int64_t>(0, total)) * static_cast<double>(held) /
                          static_cast<double>(all);
    return static_cast<std::int64_t>(std::ceil(scaled));
  };
  const double scalar = static_cast<double>(scalar_held) *
                        micro.scalar_element_cycles(op.work.scalar_instructions, op.work.scalar_divisions);
  // The op's vector instructions, each over the elements the PE holds.
  double mixed = 0.0;
  std::int64_t instructions = 0;
  for (const auto& f : wafer::vector_forms()) {
    const auto count = op.work.vector[static_cast<std::size_t>(f.form)];
    if (count <= 0) continue;
    instructions += count;
    mixed += static_cast<double>(count) * micro.vector_form_cycles(f.form, held);
  }
  if (instructions > 0) return static_cast<double>(std::min(rows, held)) * micro.timing.vector_op_setup_cycles + mixed + scalar;
  const std::int64_t flops = held_part(op.work.flops);
  if (flops == 0) return scalar;
  const std::int64_t vector_rows = std::min(rows, flops);
  const double simd = static_cast<double>(ceil_div(flops, micro.fmac_lanes)) * micro.simd_op_cycles;
  const double reads = static_cast<double>(ceil_div(held_part(op.work.input_bytes), micro.sram_read_bytes_per_cycle));
  const double writes = static_cast<double>(ceil_div(held_part(op.work.output_bytes), micro.sram_write_bytes_per_cycle));
  return static_cast<double>(vector_rows) * micro.timing.vector_op_setup_cycles + std::max({simd, reads, writes}) + scalar;
}

// The same over the rows and columns the op's layout gives a PE (an axis without the tensor holds a copy).
double elementwise_cycles(const PlacedOp& op, const MicroArch& micro) {
  const std::int64_t rows = rows_per_pe(op);
  const std::int64_t cols = at_least_1(features_per_pe(op, at_least_1(op.work.n)));
  return local_elementwise_cycles(op, mul(rows, cols), rows, mul(rows, features_per_pe(op, op.work.scalar_elements)),
                                  micro);
}

}  // namespace

// Up to `k` of `total` lines by a seeded hash; when lines [0, heavy) carry more work than the rest,
// at least one of each kind, so the sample sees every distinct line.
std::vector<std::int64_t> choose_lines(std::int64_t total, std::int64_t heavy, std::int64_t k, std::uint64_t seed) {
  std::vector<std::int64_t> out;
  std::vector<std::pair<std::uint64_t, std::int64_t>> keyed;
  const std::uint64_t salt = splitmix64(seed);
  auto pick = [&](std::int64_t lo, std::int64_t hi, std::int64_t want) {
    const std::int64_t n = hi - lo;
    if (n <= 0 || want <= 0) return;
    // Hash a bounded window of candidates so planning stays O(k) on huge regions: candidate i is line
    // lo + ((i * kStride + salt) mod 2^64) mod n, its residue stepped without a division per candidate.
    constexpr std::uint64_t kStride = 2654435761ULL;
    const auto un = static_cast<std::uint64_t>(n);
    const std::uint64_t step = kStride % un, wrap = (~std::uint64_t{0} % un + 1) % un;  // 2^64 mod n
    const std::int64_t window = std::min<std::int64_t>(n, 4096);
    keyed.clear();
    std::uint64_t v = salt, r = salt % un;
    for (std::int64_t i = 0; i < window; ++i) {
      const std::int64_t l = lo + static_cast<std::int64_t>(r);
      keyed.emplace_back(splitmix64(salt ^ static_cast<std::uint64_t>(l)), l);
      const std::uint64_t next = v + kStride;
      r = r + step >= un ? r + step - un : r + step;
      if (next < v) r = r >= wrap ? r - wrap : r + un - wrap;  // v passed 2^64
      v = next;
    }
    // Lines are taken in key order, skipping repeats: only a prefix of the order is needed, so sort
    // one long enough for `want` distinct lines, and the rest only if repeats used it up.
    const auto size = keyed.size();
    std::size_t sorted = std::min(size, static_cast<std::size_t>(want) + 16);
    std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(sorted), keyed.end());
    for (std::size_t j = 0; j < size && static_cast<std::int64_t>(out.size()) < want; ++j) {
      if (j == sorted) {
        std::sort(keyed.begin() + static_cast<std::ptrdiff_t>(sorted), keyed.end());
        sorted = size;
      }
      const std::int64_t l = keyed[j].second;
      if (std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
    }
  };
  k = std::max<std::int64_t>(1, std::min(k, total));
  const bool two_kinds = heavy > 0 && heavy < total;
  if (two_kinds) {
    pick(0, heavy, std::max<std::int64_t>(1, k / 2));
    const auto have = static_cast<std::int64_t>(out.size());
    pick(heavy, total, have + std::max<std::int64_t>(1, k - have));
  } else {
    pick(0, total, k);
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// One op's plan in the making: the op, its rectangle and the sampling rule every kernel shares; one
// member per kernel family plans its shape and its lines' work.
class Planner {
 public:
  Planner(const meshir::Schedule& schedule_in, const PlacedOp& op_in, const MicroArch& micro_in,
          const PlanOptions& options_in)
      : schedule(schedule_in), op(op_in), micro(micro_in), options(options_in), s(plan.sample), r(op.used),
        w(at_least_1(r.w)), h(at_least_1(r.h)), pes(mul(w, h)), work(op.work), full(options.full_region),
        k(std::max<std::int64_t>(1, options.sample_lines)) {
    plan.kernel = op.kernel;
    plan.launch_cycles = micro.timing.kernel_launch_cycles;
    plan.task_cycles = micro.timing.task_launch_cycles;
    s.op_pes = pes;
  }
  Planner(const Planner&) = delete;
  Planner& operator=(const Planner&) = delete;

  /// Decode attention (scores, values, softmax over a head's context): its own line shapes.
  void attention();
  void ktree();
  void compute();
  void neighbour();
  void cannon();
  void mirror();
  void gather();
  void move();

  /// The plan, with what was sampled.
  KernelPlan done() {
    s.full_region = full;
    s.sampled_pes = plan.mesh_w_pes * plan.mesh_h_pes;
    return std::move(plan);
  }

  const meshir::Schedule& schedule;
  const PlacedOp& op;
  const MicroArch& micro;
  const PlanOptions& options;
  KernelPlan plan;
  SampleRecord& s;
  const Rect& r;
  const std::int64_t w, h, pes;
  const meshir::OpWork& work;
  bool full;
  const std::int64_t k;

 private:
  // Lines of `line_pes` PEs: all `total` of them (full, laid along `axis` in the w x h mesh), or a
  // seeded sample laid as rows of a line_pes x k mesh. line_work(l) gives line l's work.
  template <class Work>
  void set_lines(std::int64_t line_pes, std::int64_t total, std::int64_t heavy, Axis axis, bool can_full,
                 const std::string& what, Work line_work) {
    plan.line_pes = line_pes;
    s.lines_total = total;
    std::vector<std::int64_t> chosen;
    if (full && can_full) {
      for (std::int64_t l = 0; l < total; ++l) chosen.push_back(l);
      plan.mesh_w_pes = w;
      plan.mesh_h_pes = h;
      plan.line_along_x = axis == Axis::x;
      s.rule = "full region: " + str(w) + "x" + str(h) + ", all " + str(total) + " " + what;
    } else {
      full = false;
      chosen = choose_lines(total, heavy, k, options.seed);
      plan.mesh_w_pes = line_pes;
      plan.mesh_h_pes = static_cast<std::int64_t>(chosen.size());
      plan.line_along_x = true;
      s.rule = "sampled: " + str(static_cast<std::int64_t>(chosen.size())) + " of " + str(total) + " " + what +
               " (seed " + std::to_string(options.seed) + ")";
    }
    for (std::int64_t l : chosen) {
      LineWork lw = line_work(l);
      lw.line = l;
      plan.lines.push_back(lw);
    }
    s.lines_sampled = static_cast<std::int64_t>(chosen.size());
    s.scale_factor = static_cast<double>(total) / static_cast<double>(s.lines_sampled);
  }
};

void Planner::attention() {
  // Features (heads x head_dim) lie along the reduce axis (a PEs), the context along the other (b).
  const std::int64_t a = side(r, op.reduce_axis), b = side(r, other(op.reduce_axis));
  const std::int64_t heads = work.heads;
  const std::int64_t kv_heads = work.kv_heads > 0 ? std::min(work.kv_heads, heads) : heads;
  const std::int64_t sharing = at_least_1(heads / kv_heads);
  const std::int64_t requests = at_least_1(mul(at_least_1(work.batch), at_least_1(work.m)) / heads);
  const std::int64_t segment = at_least_1(a / heads);
  const std::int64_t heads_pe = ceil_div(heads, a);
  const bool scores = op.attention == AttentionRole::scores;
  const bool softmax = op.attention == AttentionRole::softmax;
  const std::int64_t context = scores || softmax ? work.n : work.k;
  const std::int64_t head_dim = scores ? work.k : work.n;
  const std::int64_t context_pe = ceil_div(context, b);
  const std::int64_t features_pe = ceil_div(mul(heads, head_dim), a);
  plan.shape = Shape::attention;
  plan.rounds = softmax ? at_least_1(op.rounds) : 1;
  if (!softmax && sharing > 1) {
    plan.span_pes = std::min(a, mul(sharing, segment));
    plan.span_bytes = mul(mul(context_pe, features_pe), kFp16WireBytes);
  }
  if (scores) {
    // Partial dot products over the PE's features for each context entry, reduced over the head's segment.
    const std::int64_t line = std::max(segment, plan.span_pes);
    plan.tree_pes = segment;
    const double cycles = static_cast<double>(requests) * micro.vector_loop_cycles(features_pe, context_pe);
    const std::int64_t bytes = mul(mul(mul(requests, heads_pe), context_pe), kFp32Bytes);
    set_lines(line, mul(b, ceil_div(a, line)), 0, op.reduce_axis, false,
              "head lines of " + str(line) + " PEs along " + std::string(name(op.reduce_axis)) +
                  (plan.span_pes > 0 ? ", K multicast over " + str(plan.span_pes) + " PEs" : std::string()),
              [&](std::int64_t) { return LineWork{0, cycles, bytes}; });
  } else {
    // Values: weighted sums over the PE's context entries, reduced over the context axis.
    // Softmax: max and sum over the context, `rounds` dependent reductions.
    // Softmax: the PE's heads and context entries, a scalar exp on each.
    const std::int64_t local = mul(mul(requests, heads_pe), context_pe);
    const double cycles = softmax ? local_elementwise_cycles(op, local, mul(requests, heads_pe),
                                                             work.scalar_elements > 0 ? local : 0, micro)
                                  : static_cast<double>(requests) * micro.vector_loop_cycles(context_pe, features_pe);
    const std::int64_t bytes = softmax ? mul(mul(requests, heads_pe), kFp32Bytes)
                                       : mul(mul(requests, features_pe), kFp32Bytes);
    set_lines(b, a, 0, other(op.reduce_axis), false,
              "context lines of " + str(b) + " PEs along " + std::string(name(other(op.reduce_axis))) +
                  (plan.span_pes > 0 ? ", V multicast over " + str(plan.span_pes) + " PEs" : std::string()),
              [&](std::int64_t) { return LineWork{0, cycles, bytes}; });
  }
  if (plan.span_pes > 0) {
    plan.mesh_w_pes = std::max(plan.mesh_w_pes, plan.span_pes);
    plan.mesh_h_pes += 1;  // row 0 carries the multicast
  }
  s.sampled_pes = plan.mesh_w_pes * plan.mesh_h_pes;
  s.full_region = false;
}

// MeshGEMV and the scalar allreduce: K-tree lines along the reduce axis.
void Planner::ktree() {
  const std::int64_t along = side(r, op.reduce_axis), across = side(r, other(op.reduce_axis));
  const std::int64_t rows = mul(at_least_1(work.batch), std::max<std::int64_t>(0, work.m));
  plan.shape = Shape::ktree;
  plan.group = op.group;
  const std::string what = "K-tree lines of " + str(along) + " PEs along " + name(op.reduce_axis);
  if (op.kernel == Kernel::meshgemv) {
    // Each of the PE's k inputs scales its column of the tile: one vector op over the PE's outputs.
    const std::int64_t k_pe = ceil_div(work.k, along);
    set_lines(along, across, work.n % across, op.reduce_axis, true, what, [&](std::int64_t l) {
      const std::int64_t n_l = share(std::max<std::int64_t>(0, work.n), across, l);
      // Fused GEMVs (Q/K/V, gate/up) loop over their own output slices, then share the tree.
      const std::int64_t fused = at_least_1(work.fused);
      return LineWork{0, micro.vector_loop_cycles(mul(mul(rows, k_pe), fused), ceil_div(n_l, fused)),
                      mul(mul(rows, n_l), kFp16WireBytes)};
    });
  } else {
    plan.rounds = at_least_1(op.rounds);
    const double cycles = elementwise_cycles(op, micro);
    set_lines(along, across, rows % across, op.reduce_axis, true, what, [&](std::int64_t l) {
      return LineWork{0, cycles, mul(at_least_1(share(rows, across, l)), kFp32Bytes)};
    });
  }
}

// Elementwise: compute only, no fabric.
void Planner::compute() {
  plan.shape = Shape::compute;
  plan.launch_cycles = 0.0;  // straight-line vector code (WaferLLM's layers): no task, no fabric descriptors
  const double cycles = elementwise_cycles(op, micro);
  if (full) {
    // Every PE: the rows of the region as lines.
    set_lines(w, h, 0, Axis::x, true, "rows, every PE (compute only)",
              [&](std::int64_t) { return LineWork{0, cycles, 0}; });
  } else {
    set_lines(1, pes, 0, Axis::x, false, "identical PEs (compute only)",
              [&](std::int64_t) { return LineWork{0, cycles, 0}; });
  }
}

// The KV cache append: each column shifts its tiles one hop.
void Planner::neighbour() {
  plan.shape = Shape::neighbour;
  const std::int64_t bytes = fp16_wire(ceil_div(std::max<std::int64_t>(0, work.output_bytes), pes));
  set_lines(h, w, 0, Axis::y, true, "columns of " + str(h) + " PEs, each shifting one hop up",
            [&](std::int64_t) { return LineWork{0, 0.0, bytes}; });
}

// MeshGEMM and GEMM-T: Cannon on the X and Y rings.
void Planner::cannon() {
  plan.shape = Shape::cannon;
  // Prefill attention lays every head's features along X: Q.K^T reduces over heads x head_dim,
  // P.V produces heads x head_dim (MeshIR's reading of the attention roles).
  meshir::OpWork wk = work;
  if (wk.heads > 0 && op.attention != AttentionRole::none) {
    wk.batch = at_least_1(wk.batch / wk.heads);
    if (op.attention == AttentionRole::scores) wk.k = mul(wk.k, wk.heads);
    if (op.attention == AttentionRole::values) wk.n = mul(wk.n, wk.heads);
  }
  const std::int64_t ring = std::max(w, h);
  // A grouped GEMM (experts) is `products` MeshGEMMs in a row, each on its share of the rows:
  // their steps and alignment shifts follow one another (counted below, simulated as one run).
  const std::int64_t products = at_least_1(wk.products);
  plan.steps = at_least_1(std::min(ring, wk.k));
  const std::int64_t b = at_least_1(wk.batch);
  const std::int64_t tile_m = ceil_div(ceil_div(wk.m, products), h), tile_k = ceil_div(wk.k, plan.steps),
                     tile_n = ceil_div(wk.n, w);
  // WaferLLM's prefill loop: per k of the tile, the k-iteration's own instructions, then one vector
  // FMAC per output column, its vector along the tile's m tokens.
  plan.step_compute_cycles =
      static_cast<double>(b) * (static_cast<double>(tile_k) * micro.k_iteration_cycles() +
                                micro.vector_loop_cycles(mul(tile_k, tile_n), tile_m));
  const std::int64_t a_bytes = mul(mul(mul(b, tile_m), tile_k), kFp16WireBytes);
  const std::int64_t b_bytes = mul(mul(mul(b, tile_k), tile_n), kFp16WireBytes);
  const std::int64_t out_bytes = mul(mul(mul(b, tile_m), tile_n), kFp16WireBytes);
  // MeshGEMM moves A along X and B along Y; GEMM-T moves K along Y and passes partial scores along X.
  plan.x_bytes = op.kernel == Kernel::gemm_t ? out_bytes : a_bytes;
  plan.y_bytes = b_bytes;
  plan.skew_bytes = a_bytes;
  plan.skew_rounds = mul(op.input_skewed ? 0 : ring / 2, products);  // K and V reuse Q's aligned input
  plan.steps = mul(plan.steps, products);
  plan.x_ring_pes = w;
  plan.y_ring_pes = h;
  s.steps_total = plan.steps;
  s.steps_simulated = std::min(plan.steps, std::max<std::int64_t>(2, options.max_simulated_steps));
  plan.skew_rounds_simulated = std::min(plan.skew_rounds, std::max<std::int64_t>(2, options.max_simulated_steps));
  const std::string steps_rule = s.steps_simulated < s.steps_total
                                     ? "; " + str(s.steps_simulated) + " of " + str(s.steps_total) +
                                           " steps simulated, the rest extrapolated at the last step's period"
                                     : "";
  plan.lines.push_back(LineWork{0, plan.step_compute_cycles, plan.x_bytes});
  if (full) {
    plan.mesh_w_pes = w;
    plan.mesh_h_pes = h;
    s.lines_total = s.lines_sampled = 1;
    s.rule = "full region: " + str(w) + "x" + str(h) + ", every X and Y ring" + steps_rule;
  } else {
    plan.line_along_x = w >= h;
    const std::int64_t line = plan.line_along_x ? w : h, lines = plan.line_along_x ? h : w;
    plan.mesh_w_pes = line;
    plan.mesh_h_pes = 1;
    plan.line_pes = line;
    s.lines_total = lines;
    s.lines_sampled = 1;
    s.scale_factor = static_cast<double>(lines);
    s.rule = "sampled: 1 of " + str(lines) + " identical " + (plan.line_along_x ? "X rings (rows)" : "Y rings (columns)") +
             " of " + str(line) + " PEs; each PE's shift on its perpendicular ring folded onto its own spare links" +
             steps_rule;
  }
}

// Relayout: each PE of a row sends its tile to its mirror.
void Planner::mirror() {
  // Re-mapping an activation's axes: PE i of each row sends its tile to the mirrored PE, so half
  // the data crosses the row's middle links (the bisection).
  plan.shape = Shape::mirror;
  const std::int64_t bytes = fp16_wire(ceil_div(std::max<std::int64_t>(0, work.input_bytes), pes));
  set_lines(w, h, 0, Axis::x, true, "rows of " + str(w) + " PEs, each PE to its mirror",
            [&](std::int64_t) { return LineWork{0, 0.0, bytes}; });
}

// Allgather: lines along the axis that held copies before the split; a line's slice (its share of
// the features, every token row) is what each of its PEs holds after.
void Planner::gather() {
  const std::int64_t along = side(r, op.reduce_axis), across = side(r, other(op.reduce_axis));
  const std::int64_t rows = mul(at_least_1(work.batch), std::max<std::int64_t>(0, work.m));
  plan.shape = Shape::gather;
  const std::int64_t n = std::max<std::int64_t>(0, work.n);
  set_lines(along, across, n % across, op.reduce_axis, true,
            "lines of " + str(along) + " PEs along " + name(op.reduce_axis) + ", pieces to the centre and back",
            [&](std::int64_t l) { return LineWork{0, 0.0, mul(mul(rows, share(n, across, l)), kFp16WireBytes)}; });
}

// Transfers, MoE dispatch and combine (an expert CUT's all-to-all, or lanes between regions) and lookups.
void Planner::move() {
  if (const auto e = meshir::exchange_of(schedule, op)) {
    // An expert CUT's all-to-all: every line of the rectangle along the strip's axis carries
    // its share of the tokens between the line's pieces outside the strip and the strip.
    plan.shape = Shape::exchange;
    plan.exchange_lo = e->lo();
    plan.exchange_hi = e->hi();
    plan.exchange_into_strip = e->into_strip;
    const std::int64_t lines = at_least_1(e->lines());
    const std::int64_t bytes = fp16_wire(std::max<std::int64_t>(0, work.input_bytes));
    set_lines(at_least_1(e->side()), lines, bytes % lines, Axis::x, false,
              "lines of " + str(e->side()) + " PEs through the strip", [&](std::int64_t l) {
                return LineWork{0, 0.0, share(bytes, lines, l)};
              });
    return;
  }
  plan.shape = Shape::lanes;
  std::int64_t lanes = 1, bytes = 0;
  if (op.kernel == Kernel::lookup) {
    // A token's embedding row comes from anywhere in the region: on average half the way across
    // each side, and the rows arrive over the region's narrower side.
    plan.hops = (w + h) / 2;
    lanes = std::min(w, h);
    bytes = fp16_wire(work.output_bytes);
  } else {
    if (op.to_region < 0 || op.to_region >= static_cast<int>(schedule.regions.size())) {
      throw DataError({Diagnostic{"", 0, 0, "ops." + op.name + ".to_region",
                                  "moves data to region " + std::to_string(op.to_region) +
                                      ", which is not a region of the schedule"}});
    }
    const Rect to = meshir::used_part(schedule, op.to_region);  // where the data lands
    // Centre to centre; the rows (moving along X) or columns (along Y) both regions span carry it.
    const std::int64_t dx = std::llabs((2 * r.x + r.w) - (2 * to.x + to.w)) / 2;
    const std::int64_t dy = std::llabs((2 * r.y + r.h) - (2 * to.y + to.h)) / 2;
    plan.hops = dx + dy;
    lanes = dx >= dy ? std::min(r.h, to.h) : std::min(r.w, to.w);
    bytes = fp16_wire(work.input_bytes);
  }
  lanes = at_least_1(lanes);
  plan.hops = std::max<std::int64_t>(0, plan.hops);
  const std::int64_t total = std::max<std::int64_t>(0, bytes);
  set_lines(plan.hops + 1, lanes, total % lanes, Axis::x, true,
            "lanes of " + str(plan.hops) + " hops", [&](std::int64_t l) {
              return LineWork{0, 0.0, share(total, lanes, l)};
            });
  if (full) {
    plan.mesh_w_pes = plan.hops + 1;
    plan.mesh_h_pes = lanes;
  }
}

}  // namespace

KernelPlan plan_kernel(const meshir::Schedule& schedule, const PlacedOp& op, const MicroArch& micro,
                       const PlanOptions& options) {
  Planner p(schedule, op, micro, options);
  const auto& work = op.work;
  const bool decode_attention = op.attention != AttentionRole::none && work.heads > 0 &&
                                ((op.kernel == Kernel::meshgemv) ||
                                 (op.kernel == Kernel::allreduce && op.attention == AttentionRole::softmax && work.m == 1));
  if (decode_attention) {
    p.attention();
    return std::move(p.plan);
  }
  switch (op.kernel) {
    case Kernel::meshgemv:
    case Kernel::allreduce: p.ktree(); break;
    case Kernel::elementwise: p.compute(); break;
    case Kernel::kv_shift: p.neighbour(); break;
    case Kernel::meshgemm:
    case Kernel::gemm_t: p.cannon(); break;
    case Kernel::relayout: p.mirror(); break;
    case Kernel::allgather: p.gather(); break;
    case Kernel::transfer:
    case Kernel::moe_dispatch:
    case Kernel::moe_combine:
    case Kernel::lookup: p.move(); break;
  }
  return p.done();
}

}  // namespace wavel::sim
