// Per-kernel task and message graphs (domain.md §3): K-tree allreduce and broadcast for MeshGEMV and
// scalar allreduces, interleaved-ring Cannon for MeshGEMM and GEMM-T, shifts and bulk moves.
#include "wavel/sim/kernels.hpp"

#include <algorithm>
#include <cmath>

#include "wavel/common/error.hpp"

namespace wavel::sim {

namespace {

using meshir::Axis;
using meshir::Kernel;
using meshir::PlacedOp;
using meshir::Rect;

constexpr std::int64_t kFp16Bytes = 2;
constexpr std::int64_t kFp32Bytes = 4;  // reductions accumulate in FP32

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
std::int64_t at_least_1(std::int64_t v) { return std::max<std::int64_t>(1, v); }
std::int64_t side(const Rect& r, Axis axis) { return at_least_1(axis == Axis::x ? r.w : r.h); }
Axis other(Axis axis) { return axis == Axis::x ? Axis::y : Axis::x; }
const char* name(Axis axis) { return axis == Axis::x ? "x" : "y"; }
std::string str(std::int64_t v) { return std::to_string(v); }

ItemId item_at(const std::vector<ItemId>& items, std::int64_t i) {
  return items.empty() ? kNoItem : items[static_cast<std::size_t>(i)];
}

// A reduction chain along `positions` (line positions, in the direction the data flows): each PE
// but the first adds what it received to its own partial in a software stage (beta), then forwards.
// Returns the message that reaches the last position (kNoItem for a single position).
ItemId reduce_chain(Network& net, const Line& line, const std::vector<std::int64_t>& positions,
                    const std::vector<ItemId>& partial, std::int64_t bytes, int colour) {
  ItemId incoming = kNoItem;
  for (std::size_t i = 0; i + 1 < positions.size(); ++i) {
    ItemId ready = partial[i];
    if (incoming != kNoItem) {
      const ItemId stage = net.stage(line.at(positions[i]));
      net.after(stage, partial[i]);
      net.after(stage, incoming);
      ready = stage;
    }
    SendSpec spec;
    spec.src_pe = line.at(positions[i]);
    spec.dst_pe = line.at(positions[i + 1]);
    spec.bytes = bytes;
    spec.colour = colour;
    incoming = net.send(spec);
    net.after(incoming, ready);
  }
  return incoming;
}

// Reduces the partials at `positions` (line positions, ascending) into positions[centre] from both
// sides; returns the item after which the centre holds the sum.
ItemId reduce_into(Network& net, const Line& line, const std::vector<std::int64_t>& positions,
                   const std::vector<ItemId>& partial, std::size_t centre, std::int64_t bytes, int colour) {
  std::vector<std::int64_t> left(positions.begin(), positions.begin() + static_cast<std::ptrdiff_t>(centre) + 1);
  std::vector<ItemId> left_partial(partial.begin(), partial.begin() + static_cast<std::ptrdiff_t>(centre) + 1);
  std::vector<std::int64_t> right(positions.rbegin(), positions.rend() - static_cast<std::ptrdiff_t>(centre));
  std::vector<ItemId> right_partial(partial.rbegin(), partial.rend() - static_cast<std::ptrdiff_t>(centre));
  const ItemId from_left = reduce_chain(net, line, left, left_partial, bytes, colour);
  const ItemId from_right = reduce_chain(net, line, right, right_partial, bytes, colour);
  if (from_left == kNoItem && from_right == kNoItem) return partial[centre];
  const ItemId stage = net.stage(line.at(positions[centre]));
  net.after(stage, partial[centre]);
  net.after(stage, from_left);
  net.after(stage, from_right);
  return stage;
}

std::string sampled_note(bool full) { return full ? "full region" : "sampled"; }  // prefixes every rule

}  // namespace

std::int64_t interleaved_next(std::int64_t pos, std::int64_t n) {
  if (n <= 1) return 0;
  if (pos % 2 == 0) {
    if (pos + 2 <= n - 1) return pos + 2;
    return (n - 1) % 2 == 1 ? n - 1 : n - 2;  // the last even position turns to the last odd one
  }
  return pos - 2 >= 1 ? pos - 2 : 0;
}

TreeShape ktree_shape(std::int64_t pes, std::int64_t group) {
  TreeShape t;
  if (pes <= 1) return t;
  t.group = group > 0 ? std::min(group, pes)
                      : std::max<std::int64_t>(1, std::llround(std::sqrt(static_cast<double>(pes))));
  t.groups = ceil_div(pes, t.group);
  t.level1_stages = t.group / 2;
  t.level2_stages = t.groups / 2;
  const std::int64_t central = t.groups / 2;
  const std::int64_t size = std::min(t.group, pes - central * t.group);
  t.root = central * t.group + size / 2;
  t.broadcast_hops = std::max(t.root, pes - 1 - t.root);
  return t;
}

ItemId ktree_allreduce(Network& net, const Line& line, std::int64_t group, std::int64_t bytes,
                       const std::vector<ItemId>& ready, int colour_base) {
  const std::int64_t p = line.count;
  if (p <= 1) {
    const ItemId done = net.join();
    if (p == 1) net.after(done, item_at(ready, 0));
    return done;
  }
  const TreeShape shape = ktree_shape(p, group);
  // Level 1: every group reduces into its centre.
  std::vector<std::int64_t> roots;
  std::vector<ItemId> root_partial;
  for (std::int64_t j = 0; j < shape.groups; ++j) {
    const std::int64_t lo = j * shape.group;
    const std::int64_t size = std::min(shape.group, p - lo);
    std::vector<std::int64_t> positions;
    std::vector<ItemId> partial;
    for (std::int64_t i = lo; i < lo + size; ++i) {
      positions.push_back(i);
      partial.push_back(item_at(ready, i));
    }
    const auto centre = static_cast<std::size_t>(size / 2);
    roots.push_back(lo + size / 2);
    root_partial.push_back(reduce_into(net, line, positions, partial, centre, bytes, colour_base));
  }
  // Level 2: the group roots reduce into the central root.
  const auto central = static_cast<std::size_t>(shape.groups / 2);
  const ItemId final_sum = reduce_into(net, line, roots, root_partial, central, bytes, colour_base + 1);
  // Broadcast: one injection at the root, the router sends copies both ways along the line.
  const ItemId done = net.join();
  net.after(done, final_sum);
  bool injected = false;
  for (std::int64_t end : {std::int64_t{0}, p - 1}) {
    if (end == shape.root) continue;
    SendSpec spec;
    spec.src_pe = line.at(shape.root);
    spec.dst_pe = line.at(end);
    spec.bytes = bytes;
    spec.colour = colour_base + 2;
    spec.inject = !injected;
    injected = true;
    const ItemId m = net.send(spec);
    net.after(m, final_sum);
    net.after(done, m);
  }
  return done;
}

std::vector<ItemId> ring_shift(Network& net, const Line& line, std::int64_t bytes, const std::vector<ItemId>& ready,
                               int colour_base) {
  const std::int64_t n = line.count;
  std::vector<ItemId> arrival(static_cast<std::size_t>(std::max<std::int64_t>(0, n)), kNoItem);
  if (n <= 1) return arrival;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t j = interleaved_next(i, n);
    SendSpec spec;
    spec.src_pe = line.at(i);
    spec.dst_pe = line.at(j);
    spec.bytes = bytes;
    spec.colour = colour_base + (j > i ? 0 : 1);
    const ItemId m = net.send(spec);
    net.after(m, item_at(ready, i));
    arrival[static_cast<std::size_t>(j)] = m;
  }
  return arrival;
}

KernelPlan plan_kernel(const meshir::Schedule& schedule, const PlacedOp& op, const wafer::WaferParams& wafer,
                       const cost::CostParams& params, const PlanOptions& options) {
  KernelPlan plan;
  plan.kernel = op.kernel;
  plan.launch_cycles = params.kernel_overhead_cycles;
  plan.max_simulated_steps = std::max<std::int64_t>(2, options.max_simulated_steps);
  const bool full = options.full_region;
  const Rect& r = op.used;
  const std::int64_t w = at_least_1(r.w), h = at_least_1(r.h);
  const std::int64_t pes = w * h;
  const double peak_flops_per_cycle = 2.0 * static_cast<double>(wafer.simd_fp16_lanes);
  SampleRecord& s = plan.sample;
  s.op_pes = pes;
  s.full_region = full;
  auto set_mesh = [&](std::int64_t mw, std::int64_t mh) {
    plan.mesh_w_pes = mw;
    plan.mesh_h_pes = mh;
    s.sampled_pes = mw * mh;
  };
  switch (op.kernel) {
    case Kernel::meshgemv:
    case Kernel::allreduce: {
      const std::int64_t along = side(r, op.reduce_axis);
      const std::int64_t across = side(r, other(op.reduce_axis));
      if (op.kernel == Kernel::meshgemv) {
        const std::int64_t rows = op.work.batch * op.work.m;
        const double local_flops = 2.0 * static_cast<double>(rows) * static_cast<double>(ceil_div(op.work.k, along)) *
                                   static_cast<double>(ceil_div(op.work.n, across));
        plan.compute_cycles = local_flops / (peak_flops_per_cycle * params.gemv_efficiency);
        plan.message_bytes = rows * ceil_div(op.work.n, across) * kFp16Bytes;
      } else {
        plan.compute_cycles = static_cast<double>(op.work.flops) / static_cast<double>(pes) /
                              (peak_flops_per_cycle * params.elementwise_efficiency);
        plan.message_bytes = ceil_div(op.work.batch * op.work.m, across) * kFp32Bytes;
        plan.rounds = std::max<std::int64_t>(1, op.rounds);
      }
      plan.group = op.group;
      plan.line_pes = along;
      if (full) {
        set_mesh(w, h);
        plan.lines = across;
        plan.line_along_x = op.reduce_axis == Axis::x;
        s.rule = str(w) + "x" + str(h) + ", all " + str(across) + " K-tree lines along " + name(op.reduce_axis);
      } else {
        set_mesh(along, 1);
        s.scale_factor = static_cast<double>(across);
        s.rule = "1 of " + str(across) + " identical K-tree lines of " + str(along) + " PEs along " +
                 name(op.reduce_axis) + " (lines use disjoint links)";
      }
      break;
    }
    case Kernel::elementwise: {
      plan.compute_cycles = static_cast<double>(op.work.flops) / static_cast<double>(pes) /
                            (peak_flops_per_cycle * params.elementwise_efficiency);
      if (full) {
        set_mesh(w, h);
        s.rule = str(w) + "x" + str(h) + ", every PE";
      } else {
        set_mesh(1, 1);
        s.scale_factor = static_cast<double>(pes);
        s.rule = "1 of " + str(pes) + " identical PEs (compute only)";
      }
      break;
    }
    case Kernel::kv_shift: {
      plan.message_bytes = ceil_div(op.work.output_bytes, pes);
      plan.line_pes = h;
      if (full) {
        set_mesh(w, h);
        plan.lines = w;
        plan.line_along_x = false;
        s.rule = str(w) + "x" + str(h) + ", every row shifting one hop up";
      } else {
        set_mesh(h, 1);
        s.scale_factor = static_cast<double>(w);
        s.rule = "1 of " + str(w) + " identical columns of " + str(h) + " PEs, each shifting one hop up";
      }
      break;
    }
    case Kernel::meshgemm:
    case Kernel::gemm_t: {
      const std::int64_t ring = std::max(w, h);
      plan.steps = std::max<std::int64_t>(1, std::min(ring, op.work.k));
      const std::int64_t b = op.work.batch;
      const std::int64_t tile_m = ceil_div(op.work.m, h);
      const std::int64_t tile_k = ceil_div(op.work.k, plan.steps);
      const std::int64_t tile_n = ceil_div(op.work.n, w);
      const double step_flops = 2.0 * static_cast<double>(b) * static_cast<double>(tile_m) *
                                static_cast<double>(tile_k) * static_cast<double>(tile_n);
      plan.compute_cycles = step_flops / (peak_flops_per_cycle * params.gemm_efficiency);
      plan.step_overhead_cycles = params.step_overhead_cycles;
      const std::int64_t a_bytes = b * tile_m * tile_k * kFp16Bytes;
      const std::int64_t b_bytes = b * tile_k * tile_n * kFp16Bytes;
      const std::int64_t out_bytes = b * tile_m * tile_n * kFp16Bytes;
      // MeshGEMM moves A along X and B along Y; GEMM-T moves K along Y and passes the partial
      // scores along X to be reduce-added.
      plan.message_bytes = op.kernel == Kernel::gemm_t ? out_bytes : a_bytes;
      plan.second_bytes = b_bytes;
      plan.skew_bytes = a_bytes;
      plan.skew_rounds = ring / 2;
      plan.x_ring_pes = w;
      plan.y_ring_pes = h;
      s.steps_total = plan.steps;
      s.steps_simulated = std::min(plan.steps, plan.max_simulated_steps);
      std::string steps_rule = s.steps_simulated < s.steps_total
                                   ? "; " + str(s.steps_simulated) + " of " + str(s.steps_total) +
                                         " steps simulated, the rest extrapolated at the last step's period"
                                   : "";
      if (full) {
        set_mesh(w, h);
        s.rule = str(w) + "x" + str(h) + ", every X and Y ring" + steps_rule;
      } else {
        plan.line_along_x = w >= h;
        const std::int64_t line = plan.line_along_x ? w : h;
        const std::int64_t lines = plan.line_along_x ? h : w;
        const std::int64_t perpendicular = plan.line_along_x ? h : w;
        set_mesh(line, 1);
        s.scale_factor = static_cast<double>(lines);
        s.rule = "1 of " + str(lines) + " identical " + (plan.line_along_x ? "X rings (rows)" : "Y rings (columns)") +
                 " of " + str(line) + " PEs; each PE's shift on its " + str(perpendicular) +
                 "-PE perpendicular ring folded onto its own spare links" + steps_rule;
      }
      break;
    }
    case Kernel::transfer:
    case Kernel::moe_dispatch:
    case Kernel::moe_combine:
    case Kernel::relayout:
    case Kernel::lookup: {
      std::int64_t lanes = 1;
      std::int64_t bytes = 0;
      if (op.kernel == Kernel::relayout) {
        plan.hops = (r.w + r.h) / 2;
        lanes = std::min(r.w, r.h);
        bytes = ceil_div(op.work.input_bytes, 2);
      } else if (op.kernel == Kernel::lookup) {
        plan.hops = r.w + r.h;
        lanes = std::min(r.w, r.h);
        bytes = op.work.output_bytes;
      } else {
        if (op.to_region < 0 || op.to_region >= static_cast<int>(schedule.regions.size())) {
          throw DataError({Diagnostic{"", 0, 0, "ops." + op.name + ".to_region",
                                      "moves data to region " + std::to_string(op.to_region) +
                                          ", which is not a region of the schedule"}});
        }
        const Rect& to = schedule.regions[static_cast<std::size_t>(op.to_region)];
        // Centre-to-centre Manhattan distance; lanes across the direction of travel (as the cost model).
        const std::int64_t dx = std::llabs((2 * r.x + r.w) - (2 * to.x + to.w)) / 2;
        const std::int64_t dy = std::llabs((2 * r.y + r.h) - (2 * to.y + to.h)) / 2;
        plan.hops = dx + dy;
        lanes = dx >= dy ? std::min(r.h, to.h) : std::min(r.w, to.w);
        bytes = op.work.input_bytes;
      }
      lanes = at_least_1(lanes);
      plan.hops = std::max<std::int64_t>(0, plan.hops);
      plan.message_bytes = ceil_div(std::max<std::int64_t>(0, bytes), lanes);
      plan.line_pes = plan.hops + 1;
      if (full) {
        set_mesh(plan.hops + 1, lanes);
        plan.lines = lanes;
        s.rule = "all " + str(lanes) + " lanes of " + str(plan.hops) + " hops";
      } else {
        set_mesh(plan.hops + 1, 1);
        s.scale_factor = static_cast<double>(lanes);
        s.rule = "1 of " + str(lanes) + " identical lanes of " + str(plan.hops) + " hops";
      }
      break;
    }
  }
  s.rule = sampled_note(full) + ": " + s.rule;
  return plan;
}

KernelBuild build_kernel(Network& net, const KernelPlan& plan) {
  if (net.config().width_pes != plan.mesh_w_pes || net.config().height_pes != plan.mesh_h_pes) {
    throw InternalError("sim::build_kernel: the network is not the planned mesh");
  }
  KernelBuild out;
  const std::int64_t mesh_w = plan.mesh_w_pes;
  const std::int64_t pes = net.pes();
  // The lines of the plan: rows of the mesh, or columns when the lines run along Y.
  auto line_of = [&](std::int64_t l) {
    return plan.line_along_x ? Line{l * mesh_w, 1, plan.line_pes} : Line{l, mesh_w, plan.line_pes};
  };
  auto launch_all = [&]() {
    std::vector<ItemId> launch(static_cast<std::size_t>(pes));
    for (std::int64_t p = 0; p < pes; ++p) launch[static_cast<std::size_t>(p)] = net.task(p, plan.launch_cycles, SpanKind::launch);
    return launch;
  };
  auto compute_after = [&](const std::vector<ItemId>& before, double cycles) {
    std::vector<ItemId> compute(before.size());
    for (std::size_t p = 0; p < before.size(); ++p) {
      compute[p] = net.task(static_cast<std::int64_t>(p), cycles, SpanKind::compute);
      net.after(compute[p], before[p]);
    }
    return compute;
  };
  // Pre-size for the items the kernel appends (an estimate at message granularity), so the arrays
  // are not copied as they grow.
  {
    const auto n = static_cast<std::size_t>(pes);
    std::size_t items = 2 * n + 16;
    std::size_t edges = n;
    if (plan.kernel == Kernel::meshgemv || plan.kernel == Kernel::allreduce) {
      items += static_cast<std::size_t>(plan.rounds) * (2 * n + 8 * static_cast<std::size_t>(plan.lines));
      edges += static_cast<std::size_t>(plan.rounds) * 2 * n;
    } else if (plan.kernel == Kernel::meshgemm || plan.kernel == Kernel::gemm_t) {
      const auto steps = static_cast<std::size_t>(plan.sample.steps_simulated);
      items += n * (static_cast<std::size_t>(plan.skew_rounds) + 4 * steps) + steps;
      edges += n * 4 * steps;
    }
    net.reserve(items, edges);
  }
  out.done = net.join();
  switch (plan.kernel) {
    case Kernel::meshgemv:
    case Kernel::allreduce: {
      const std::vector<ItemId> compute = compute_after(launch_all(), plan.compute_cycles);
      for (std::int64_t l = 0; l < plan.lines; ++l) {
        const Line line = line_of(l);
        std::vector<ItemId> ready(static_cast<std::size_t>(line.count));
        for (std::int64_t i = 0; i < line.count; ++i) ready[static_cast<std::size_t>(i)] = compute[static_cast<std::size_t>(line.at(i))];
        ItemId round_done = kNoItem;
        // Rounds depend on each other: the next starts once every PE holds the previous result.
        for (std::int64_t round = 0; round < plan.rounds; ++round) {
          round_done = ktree_allreduce(net, line, plan.group, plan.message_bytes, ready, 0);
          std::fill(ready.begin(), ready.end(), round_done);
        }
        net.after(out.done, round_done);
      }
      break;
    }
    case Kernel::elementwise: {
      for (ItemId c : compute_after(launch_all(), plan.compute_cycles)) net.after(out.done, c);
      break;
    }
    case Kernel::kv_shift: {
      const std::vector<ItemId> launch = launch_all();
      for (ItemId l : launch) net.after(out.done, l);
      for (std::int64_t l = 0; l < plan.lines; ++l) {
        const Line line = line_of(l);
        for (std::int64_t i = 1; i < line.count; ++i) {
          SendSpec spec;
          spec.src_pe = line.at(i);
          spec.dst_pe = line.at(i - 1);
          spec.bytes = plan.message_bytes;
          const ItemId m = net.send(spec);
          net.after(m, launch[static_cast<std::size_t>(spec.src_pe)]);
          net.after(out.done, m);
        }
      }
      break;
    }
    case Kernel::meshgemm:
    case Kernel::gemm_t: {
      const bool full = plan.sample.full_region;
      // Which rings are simulated as lines and which are folded onto each PE's spare links.
      const bool x_real = full || plan.line_along_x;
      const bool y_real = full || !plan.line_along_x;
      const int x_fold = static_cast<int>(std::min<std::int64_t>(2, plan.x_ring_pes - 1));
      const int y_fold = static_cast<int>(std::min<std::int64_t>(2, plan.y_ring_pes - 1));
      std::vector<Line> x_lines, y_lines;
      if (full) {
        for (std::int64_t y = 0; y < plan.mesh_h_pes; ++y) x_lines.push_back(Line{y * mesh_w, 1, mesh_w});
        for (std::int64_t x = 0; x < mesh_w; ++x) y_lines.push_back(Line{x, mesh_w, plan.mesh_h_pes});
      } else if (plan.line_along_x) {
        x_lines.push_back(Line{0, 1, mesh_w});
      } else {
        y_lines.push_back(Line{0, 1, mesh_w});
      }
      // One shift of every PE's tile on the X (colours 0, 1) or Y (colours 2, 3) rings; returns the
      // message delivering each PE's next tile (kNoItem: the ring has one PE and nothing moves).
      auto shift = [&](bool x_axis, std::int64_t bytes, const std::vector<ItemId>& ready) {
        std::vector<ItemId> arrival(static_cast<std::size_t>(pes), kNoItem);
        const int colour = x_axis ? 0 : 2;
        if (x_axis ? x_real : y_real) {
          for (const Line& line : x_axis ? x_lines : y_lines) {
            std::vector<ItemId> line_ready(static_cast<std::size_t>(line.count));
            for (std::int64_t i = 0; i < line.count; ++i) line_ready[static_cast<std::size_t>(i)] = ready[static_cast<std::size_t>(line.at(i))];
            const std::vector<ItemId> got = ring_shift(net, line, bytes, line_ready, colour);
            for (std::int64_t i = 0; i < line.count; ++i) arrival[static_cast<std::size_t>(line.at(i))] = got[static_cast<std::size_t>(i)];
          }
        } else if ((x_axis ? x_fold : y_fold) > 0) {
          // Under lock-step every PE of the perpendicular ring sends what this PE sends, so the tile
          // this PE receives leaves and arrives exactly like its own: a message to itself.
          for (std::int64_t p = 0; p < pes; ++p) {
            SendSpec spec;
            spec.src_pe = p;
            spec.dst_pe = p;
            spec.bytes = bytes;
            spec.colour = colour;
            spec.folded_hops = x_axis ? x_fold : y_fold;
            arrival[static_cast<std::size_t>(p)] = net.send(spec);
            net.after(arrival[static_cast<std::size_t>(p)], ready[static_cast<std::size_t>(p)]);
          }
        }
        return arrival;
      };
      const std::vector<ItemId> launch = launch_all();
      // Initial skew of the activation tiles on the X rings, round after round (not overlapped).
      std::vector<ItemId> have = launch;
      for (std::int64_t round = 0; round < plan.skew_rounds; ++round) {
        const std::vector<ItemId> got = shift(true, plan.skew_bytes, have);
        for (std::size_t p = 0; p < got.size(); ++p) {
          if (got[p] != kNoItem) have[p] = got[p];
        }
      }
      const std::int64_t simulated = plan.sample.steps_simulated;
      std::vector<ItemId> previous = have;
      std::vector<ItemId> from_x(static_cast<std::size_t>(pes), kNoItem), from_y(static_cast<std::size_t>(pes), kNoItem);
      std::vector<ItemId> overhead(static_cast<std::size_t>(pes));
      for (std::int64_t step = 0; step < simulated; ++step) {
        for (std::int64_t p = 0; p < pes; ++p) {
          const auto i = static_cast<std::size_t>(p);
          overhead[i] = net.task(p, plan.step_overhead_cycles, SpanKind::overhead);
          if (step == 0) net.after(overhead[i], launch[i]);
          net.after(overhead[i], previous[i]);
          net.after(overhead[i], from_x[i]);
          net.after(overhead[i], from_y[i]);
        }
        const std::vector<ItemId> compute = compute_after(overhead, plan.compute_cycles);
        // The tiles of this step move on while they are multiplied; the last step moves nothing.
        if (step + 1 < plan.steps) {
          from_x = shift(true, plan.message_bytes, overhead);
          from_y = shift(false, plan.second_bytes, overhead);
        }
        const ItemId step_done = net.join();
        for (ItemId c : compute) net.after(step_done, c);
        out.step_done.push_back(step_done);
        previous = compute;
      }
      out.steps_total = plan.steps;
      net.after(out.done, out.step_done.back());
      break;
    }
    case Kernel::transfer:
    case Kernel::moe_dispatch:
    case Kernel::moe_combine:
    case Kernel::relayout:
    case Kernel::lookup: {
      for (std::int64_t l = 0; l < plan.lines; ++l) {
        const Line line = line_of(l);
        const ItemId launch = net.task(line.at(0), plan.launch_cycles, SpanKind::launch);
        SendSpec spec;
        spec.src_pe = line.at(0);
        spec.dst_pe = line.at(line.count - 1);
        spec.bytes = plan.message_bytes;
        const ItemId m = net.send(spec);
        net.after(m, launch);
        net.after(out.done, m);
      }
      break;
    }
  }
  return out;
}

double kernel_cycles(const Network& net, const KernelBuild& build) {
  double cycles = net.finish_cycles(build.done);
  const auto simulated = static_cast<std::int64_t>(build.step_done.size());
  if (simulated >= 2 && build.steps_total > simulated) {
    const double period = net.finish_cycles(build.step_done[static_cast<std::size_t>(simulated - 1)]) -
                          net.finish_cycles(build.step_done[static_cast<std::size_t>(simulated - 2)]);
    cycles += static_cast<double>(build.steps_total - simulated) * period;
  }
  return cycles;
}

}  // namespace wavel::sim
