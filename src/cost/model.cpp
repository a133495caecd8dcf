// Per-kernel cycle counts following WaferLLM's kernels (domain.md §3) and the PLMR latency model
// (alpha per hop, beta per software routing stage, link bandwidth), then step and pipeline composition.
#include "wavel/cost/model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "wavel/common/error.hpp"
#include "wavel/cost/detail/attention.hpp"
#include "wavel/cost/detail/collectives.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::cost {

namespace {

using meshir::Axis;
using meshir::Kernel;
using meshir::PlacedOp;
using meshir::Rect;

constexpr double kFp16Bytes = 2.0;
constexpr double kFp32Bytes = 4.0;  // reductions accumulate in FP32

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

using detail::add_to;
using detail::finish;
using detail::peak_flops_per_cycle;

std::int64_t side(const Rect& r, Axis axis) { return axis == Axis::x ? r.w : r.h; }
Axis other(Axis axis) { return axis == Axis::x ? Axis::y : Axis::x; }

// WaferLLM's decode GEMV as its loop runs: for each token row and each input element the PE holds, one
// vector FMAC along its Nt outputs; then a streamed allreduce of the partial outputs along the reduce
// axis and a multicast back.
OpCost meshgemv(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  OpCost c;
  const std::int64_t along = std::max<std::int64_t>(1, side(op.used, op.reduce_axis));
  const std::int64_t across = std::max<std::int64_t>(1, side(op.used, other(op.reduce_axis)));
  const std::int64_t rows = op.work.batch * op.work.m;  // independent vectors (tokens)
  const std::int64_t k_pe = ceil_div(op.work.k, along);
  const std::int64_t n_pe = ceil_div(op.work.n, across);
  // Fused GEMVs (WaferLLM's Q/K/V, gate/up) run their local loops one after another on their own
  // output slices, then reduce the slices together in one allreduce.
  const std::int64_t fused = std::max<std::int64_t>(1, op.work.fused);
  c.compute_cycles = detail::fmac_loop_cycles(static_cast<double>(rows) * static_cast<double>(k_pe * fused),
                                              ceil_div(n_pe, fused), p.gemv_fmac_issue_cycles, wafer);
  add_to(c, detail::streamed_allreduce(along, op.group, static_cast<double>(rows * n_pe) * kFp16Bytes, wafer, p));
  c.overhead_cycles = p.gemv_fixed_cycles;
  finish(c);
  return c;
}

// Cannon on an interleaved ring: per step a local tile GEMM overlapped with a two-hop shift of the
// moving operands. Both moving tiles enter the PE through its one ramp, so they serialise there.
// GEMM-T (Q.K^T) moves only K but reduce-adds partial scores along X every step.
// Prefill attention lays every head's features along X, as the projections that feed it: Q.K^T
// reduces over heads x head_dim (each head over its own segment), P.V produces heads x head_dim.
meshir::OpWork heads_along_x(const PlacedOp& op) {
  meshir::OpWork w = op.work;
  if (w.heads < 1 || op.attention == meshir::AttentionRole::none) return w;
  w.batch = std::max<std::int64_t>(1, w.batch / w.heads);
  if (op.attention == meshir::AttentionRole::scores) w.k *= w.heads;
  if (op.attention == meshir::AttentionRole::values) w.n *= w.heads;
  return w;
}

// Per step, as WaferLLM's prefill kernel loops: for each of the Kt rows of the B tile, a k-iteration
// (gemm_k_cycles) issuing Nt vector FMACs whose vectors run along the Mt tokens of the A tile. Tiles
// are rounded up: the PE with the largest tile sets the step (WaferLLM's scripts round down because
// they only run shapes that divide evenly). One MeshGEMM of `rows` rows (unfinished).
OpCost meshgemm_rows(const PlacedOp& op, const meshir::OpWork& work, std::int64_t rows, const wafer::WaferParams& wafer,
                     const CostParams& p, bool transposed) {
  OpCost c;
  const std::int64_t w = std::max<std::int64_t>(1, op.used.w);
  const std::int64_t h = std::max<std::int64_t>(1, op.used.h);
  const std::int64_t ring = std::max(w, h);
  const std::int64_t steps = std::max<std::int64_t>(1, std::min(ring, work.k));
  const double b = static_cast<double>(work.batch);
  const std::int64_t tile_m = ceil_div(rows, h);
  const std::int64_t tile_k = ceil_div(work.k, steps);
  const std::int64_t tile_n = ceil_div(work.n, w);
  const double kt = static_cast<double>(tile_k);
  const double step_compute = b * (kt * p.gemm_k_cycles +
                                   detail::fmac_loop_cycles(kt * static_cast<double>(tile_n), tile_m,
                                                            p.gemm_fmac_issue_cycles, wafer));
  const double a_bytes = b * static_cast<double>(tile_m) * kt * kFp16Bytes;
  const double b_bytes = b * kt * static_cast<double>(tile_n) * kFp16Bytes;
  const double out_bytes = transposed ? b * static_cast<double>(tile_m * tile_n) * kFp16Bytes : 0.0;
  const double ramp_bytes = transposed ? b_bytes + out_bytes : a_bytes + b_bytes;
  const double step_link = static_cast<double>(detail::wavelets_for(ramp_bytes, wafer));
  const double step_hops = 2.0 * p.alpha_cycles_per_hop;  // interleaved ring: neighbours are <= 2 hops apart
  const double step_comm = step_hops + step_link;
  const double s = static_cast<double>(steps);
  // The shift runs while the tile loop computes: a step takes the longer of the two.
  if (step_compute >= step_comm) {
    c.compute_cycles = s * step_compute;
  } else {
    c.hop_cycles = s * step_hops;
    c.link_cycles = s * step_link;
  }
  // Alignment of the activation operand: ring/2 shifts of 2 hops, each a step without compute.
  const double skew_positions = op.input_skewed ? 0.0 : std::floor(static_cast<double>(ring) / 2.0);
  c.hop_cycles += skew_positions * step_hops;
  c.link_cycles += skew_positions * static_cast<double>(detail::wavelets_for(a_bytes, wafer));
  c.hops = static_cast<std::int64_t>(2 * steps + 2 * static_cast<std::int64_t>(skew_positions));
  c.overhead_cycles = (s + skew_positions) * p.gemm_step_cycles;
  return c;
}

// `count` more runs of `one` in `c`.
void add_runs(OpCost& c, const OpCost& one, std::int64_t count) {
  const double n = static_cast<double>(count);
  c.compute_cycles += n * one.compute_cycles;
  c.hop_cycles += n * one.hop_cycles;
  c.link_cycles += n * one.link_cycles;
  c.overhead_cycles += n * one.overhead_cycles;
  c.hops += count * one.hops;
}

// A grouped GEMM (`products` > 1: experts, each with its own weights) runs that many MeshGEMMs one
// after another, each on its own rows (product_rows, else an even share): its own alignment, ring
// of steps and k-loops over a tile of Mt = ceil(rows / h). An expert with no rows is skipped.
OpCost meshgemm(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p, bool transposed) {
  const meshir::OpWork work = heads_along_x(op);
  const std::int64_t products = std::max<std::int64_t>(1, work.products);
  OpCost c;
  if (work.product_rows.empty()) {
    c = meshgemm_rows(op, work, ceil_div(work.m, products), wafer, p, transposed);
    if (products > 1) {
      const OpCost one = c;
      c = OpCost{};
      add_runs(c, one, products);
    }
  } else {
    // Runs of equal rows are costed once (an expert CUT's and the Zipf split's rows descend).
    const auto& rows = work.product_rows;
    for (std::size_t i = 0; i < rows.size();) {
      std::size_t j = i;
      while (j < rows.size() && rows[j] == rows[i]) ++j;
      if (rows[i] > 0) add_runs(c, meshgemm_rows(op, work, rows[i], wafer, p, transposed), static_cast<std::int64_t>(j - i));
      i = j;
    }
  }
  finish(c);
  return c;
}

// Vector work: each instruction of the op's mix over the PE's share of the op's rows x n (a
// replicated axis repeats it) at its form's rate (width, bounded by the SRAM ports), then the op's
// scalar loop. A schedule without a mix runs `flops` per element as two-vector fp16 ops. No launch:
// WaferLLM's layers are straight-line code.
OpCost elementwise(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  OpCost c;
  const double share = detail::pe_share(op, std::max<std::int64_t>(1, op.work.n));
  const double per_element_cycles = detail::vector_cycles_per_element(op.work, wafer);
  c.compute_cycles = per_element_cycles * share + detail::scalar_loop_cycles(op, wafer, p);
  finish(c);
  return c;
}

// Per-token scalar reductions (RMSNorm, softmax): local work, then `rounds` dependent allreduces of
// one FP32 value per token row held by the PE.
OpCost scalar_allreduce(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  OpCost c = elementwise(op, wafer, p);
  const std::int64_t along = std::max<std::int64_t>(1, side(op.used, op.reduce_axis));
  const std::int64_t across = std::max<std::int64_t>(1, side(op.used, other(op.reduce_axis)));
  const double rows = static_cast<double>(ceil_div(op.work.batch * op.work.m, across));
  const detail::Collective t = detail::streamed_allreduce(along, op.group, rows * kFp32Bytes, wafer, p);
  for (std::int64_t round = 0; round < std::max<std::int64_t>(1, op.rounds); ++round) {
    add_to(c, t);
    c.overhead_cycles += p.gemv_fixed_cycles;  // the same tree call as a MeshGEMV's
  }
  finish(c);
  return c;
}

// Shift-based KV cache: the new entries enter one row and every row passes its oldest entry up, one
// store-and-forward hop of the PE's share.
OpCost kv_shift(const PlacedOp& op, const CostParams& p) {
  const std::int64_t pes = std::max<std::int64_t>(1, op.used.pes());
  const std::int64_t elements = ceil_div(ceil_div(std::max<std::int64_t>(0, op.work.output_bytes), pes), 2);
  // Every row passes its entry up at once: one hop, with the rows above still in flight.
  OpCost c = detail::neighbour_shift(1, elements, op.used.h, p);
  return c;
}

// Data crossing `hops` hops over `lanes` parallel links: latency plus serialisation of the bytes.
OpCost movement(std::int64_t hops, double bytes, std::int64_t lanes, const wafer::WaferParams& wafer,
                const CostParams& p) {
  OpCost c;
  c.hops = hops;
  c.hop_cycles = p.alpha_cycles_per_hop * static_cast<double>(hops);
  c.link_cycles = bytes / (static_cast<double>(wafer.link_bytes_per_cycle) *
                           static_cast<double>(std::max<std::int64_t>(1, lanes)));
  c.overhead_cycles = p.shift_fixed_cycles;  // a fabric transfer's set-up, as the shift kernel's
  finish(c);
  return c;
}

// Re-map inside a region: on average half the data crosses the bisection.
OpCost relayout(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  const Rect& r = op.used;
  return movement((r.w + r.h) / 2, static_cast<double>(op.work.input_bytes) / 2.0, std::min(r.w, r.h), wafer, p);
}

// A split epilogue's pieces back to every PE of their line (the axis that held copies): the line's
// PEs chain their pieces into its centre from both ends (each forwards what arrives, then appends its
// own: no software stage), the centre turns the gathered slice around (one stage) and multicasts it
// back over the line. The centre's ramp takes the others' pieces in, then sends the slice out once.
OpCost allgather(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  OpCost c;
  const std::int64_t along = std::max<std::int64_t>(1, side(op.used, op.reduce_axis));
  const std::int64_t across = std::max<std::int64_t>(1, side(op.used, other(op.reduce_axis)));
  if (along > 1) {
    const double slice_bytes = std::ceil(static_cast<double>(op.work.output_bytes) / static_cast<double>(across));
    detail::Collective gather;
    gather.hops = along / 2;
    gather.stages = 1;
    gather.wavelets = detail::wavelets_for(slice_bytes * static_cast<double>(along - 1) / static_cast<double>(along), wafer);
    gather.hop_cycles = p.alpha_cycles_per_hop * static_cast<double>(gather.hops);
    gather.stage_cycles = p.beta_cycles_per_stage;
    gather.link_cycles = static_cast<double>(gather.wavelets);
    add_to(c, gather);
    add_to(c, detail::multicast(along, slice_bytes, wafer, p));
    c.overhead_cycles += p.gemv_fixed_cycles;  // a line collective's call, as a MeshGEMV's tree
  }
  finish(c);
  return c;
}

// Embedding rows are spread over the region; each token's row is gathered and broadcast.
OpCost lookup(const PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  const Rect& r = op.used;
  return movement(r.w + r.h, static_cast<double>(op.work.output_bytes), std::min(r.w, r.h), wafer, p);
}

// Area of the union of rectangles (regions of different steps may overlap), by coordinate compression.
std::int64_t union_pes(const std::vector<Rect>& rects) {
  std::vector<std::int64_t> xs, ys;
  for (const auto& r : rects) {
    xs.insert(xs.end(), {r.x, r.x + r.w});
    ys.insert(ys.end(), {r.y, r.y + r.h});
  }
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  std::sort(ys.begin(), ys.end());
  ys.erase(std::unique(ys.begin(), ys.end()), ys.end());
  std::int64_t area = 0;
  for (std::size_t i = 0; i + 1 < xs.size(); ++i) {
    for (std::size_t j = 0; j + 1 < ys.size(); ++j) {
      for (const auto& r : rects) {
        if (r.contains(xs[i], ys[j])) {
          area += (xs[i + 1] - xs[i]) * (ys[j + 1] - ys[j]);
          break;
        }
      }
    }
  }
  return area;
}

// A transfer whose producer belongs to another pipeline stage.
bool between_stages(const meshir::Schedule& schedule, const PlacedOp& op) {
  if (op.kernel != Kernel::transfer || op.inputs.empty()) return false;
  const int producer = op.inputs.front();
  if (producer < 0 || static_cast<std::size_t>(producer) >= schedule.ops.size()) return true;
  return schedule.ops[static_cast<std::size_t>(producer)].stage != op.stage;
}

// An expert CUT's exchanges of one step (dispatch into, or combine out of, the strips of one
// rectangle) cross the boundaries between strips: at a boundary c of a line of `side` PEs, a flow
// into a strip beyond c carries the share c / side of its bytes that starts before c (a combine's
// flow the share that ends beyond c). Every flow waits for the busiest boundary, either direction,
// over the rectangle's lines. The maximum lies at a strip's edge: between edges a direction's load
// is linear in c over a fixed set of flows.
void add_exchange_contention(const meshir::Schedule& schedule,
                             const std::vector<std::pair<std::size_t, meshir::Exchange>>& flows,
                             const wafer::WaferParams& wafer, std::vector<OpCost>& costs) {
  std::vector<bool> done(flows.size(), false);
  for (std::size_t a = 0; a < flows.size(); ++a) {
    if (done[a]) continue;
    const meshir::Exchange& first = flows[a].second;
    std::vector<std::pair<std::size_t, meshir::Exchange>> group;
    for (std::size_t b = a; b < flows.size(); ++b) {
      if (!done[b] && flows[b].second.same_all_to_all(first)) {
        group.push_back(flows[b]);
        done[b] = true;
      }
    }
    const double side = static_cast<double>(first.side());
    double busiest_bytes = 0.0;
    for (const auto& [unused, cut_at] : group) {
      for (const std::int64_t c : {cut_at.lo(), cut_at.hi()}) {
        if (c <= 0 || c >= first.side()) continue;
        double forward = 0.0, backward = 0.0;  // towards higher and lower coordinates
        for (const auto& [k, e] : group) {
          const double bytes = static_cast<double>(schedule.ops[k].work.input_bytes);
          const double before = static_cast<double>(c) / side, after = 1.0 - before;
          if (e.into_strip) {
            if (e.lo() >= c) forward += bytes * before;
            if (e.hi() <= c) backward += bytes * after;
          } else {
            if (e.hi() <= c) forward += bytes * after;
            if (e.lo() >= c) backward += bytes * before;
          }
        }
        busiest_bytes = std::max({busiest_bytes, forward, backward});
      }
    }
    const double shared = busiest_bytes / (static_cast<double>(wafer.link_bytes_per_cycle) *
                                           static_cast<double>(std::max<std::int64_t>(1, first.lines())));
    for (const auto& [k, e] : group) {
      if (shared <= costs[k].link_cycles) continue;
      costs[k].total_cycles += shared - costs[k].link_cycles;
      costs[k].link_cycles = shared;
    }
  }
}

// Movers of one step that leave the same region the same way, or enter the same region from the
// same side, share those boundary links: each waits for the wavelets of all of them. A mover's way
// is the dominant axis and sign from its source's centre to its destination's (ties to X), so the
// cells of split heads, which lie on every side of the leaf's centre, leave it four ways. An expert
// CUT's exchanges cross its strips' boundaries inside the rectangle instead (add_exchange_contention).
void add_mover_contention(const meshir::Schedule& schedule, const std::vector<Rect>& parts, const wafer::WaferParams& wafer,
                          std::vector<OpCost>& costs) {
  // Per (region, way), dense (the search costs a block per call): reset after each step where touched.
  constexpr std::size_t kWays = 4;
  std::vector<double> leaving(schedule.regions.size() * kWays, 0.0), entering(schedule.regions.size() * kWays, 0.0);
  const auto in_range = [&](int r) { return r >= 0 && static_cast<std::size_t>(r) < schedule.regions.size(); };
  // parts: each region's used part (meshir::used_parts), when the schedule has movers.
  const auto part_of = [&](int region) -> const Rect& { return parts[static_cast<std::size_t>(region)]; };
  const auto way = [&](const PlacedOp& op) {
    const Rect& to = part_of(op.to_region);
    const std::int64_t dx = (2 * to.x + to.w) - (2 * op.used.x + op.used.w);
    const std::int64_t dy = (2 * to.y + to.h) - (2 * op.used.y + op.used.h);
    return std::llabs(dx) >= std::llabs(dy) ? (dx >= 0 ? std::size_t{0} : 1) : (dy >= 0 ? std::size_t{2} : 3);
  };
  const auto out_of = [&](const PlacedOp& op) { return static_cast<std::size_t>(op.region) * kWays + way(op); };
  const auto into = [&](const PlacedOp& op) { return static_cast<std::size_t>(op.to_region) * kWays + way(op); };
  std::vector<std::pair<std::size_t, meshir::Exchange>> exchanges;  // (op, flow) of the step, ascending
  for (std::size_t i = 0; i < schedule.ops.size();) {
    std::size_t end = i;
    exchanges.clear();
    for (; end < schedule.ops.size() && schedule.ops[end].step == schedule.ops[i].step; ++end) {
      const PlacedOp& op = schedule.ops[end];
      if (!meshir::moves_between_regions(op.kernel)) continue;
      if (!in_range(op.region) || !in_range(op.to_region)) {
        throw InternalError("op '" + op.name + "' moves data between invalid regions");
      }
      if (const auto e = meshir::exchange_of(schedule, op, part_of(op.to_region))) {
        exchanges.emplace_back(end, *e);
        continue;
      }
      leaving[out_of(op)] += costs[end].link_cycles;
      entering[into(op)] += costs[end].link_cycles;
    }
    std::size_t next_exchange = 0;
    for (std::size_t k = i; k < end; ++k) {
      const PlacedOp& op = schedule.ops[k];
      if (next_exchange < exchanges.size() && exchanges[next_exchange].first == k) {
        ++next_exchange;
        continue;
      }
      if (!meshir::moves_between_regions(op.kernel)) continue;
      const double shared = std::max(leaving[out_of(op)], entering[into(op)]);
      costs[k].total_cycles += shared - costs[k].link_cycles;
      costs[k].link_cycles = shared;
    }
    for (std::size_t k = i; k < end; ++k) {
      const PlacedOp& op = schedule.ops[k];
      if (!meshir::moves_between_regions(op.kernel)) continue;
      leaving[out_of(op)] = 0.0;
      entering[into(op)] = 0.0;
    }
    if (!exchanges.empty()) add_exchange_contention(schedule, exchanges, wafer, costs);
    i = end;
  }
}

}  // namespace

// Centre-to-centre Manhattan distance; the links in use are bounded by the narrower side of either
// rectangle (direction-free, so a transfer's cost changes by at most alpha per hop its ends move).
OpCost transfer_cost(const Rect& from, const Rect& to, double bytes, const wafer::WaferParams& wafer,
                     const CostParams& p) {
  const std::int64_t dx = std::llabs((2 * from.x + from.w) - (2 * to.x + to.w)) / 2;
  const std::int64_t dy = std::llabs((2 * from.y + from.h) - (2 * to.y + to.h)) / 2;
  const std::int64_t lanes = std::min({from.w, from.h, to.w, to.h});
  return movement(dx + dy, bytes, lanes, wafer, p);
}

// One strip's flow of an expert CUT's all-to-all, alone: the tokens lie evenly along each line of the
// rectangle, so the share lo / side of the bytes enters the strip across its lower edge and
// (side - hi) / side across its upper edge, on opposite directions of the lines' links (a combine
// leaves the same ways). The last bytes travel from a line's far end to the strip's far end.
OpCost exchange_cost(const meshir::Exchange& e, double bytes, const wafer::WaferParams& wafer, const CostParams& p) {
  const std::int64_t side = e.side(), lo = e.lo(), hi = e.hi();
  const double side_d = static_cast<double>(side);
  const double busiest = bytes * static_cast<double>(std::max(lo, side - hi)) / side_d;
  return movement(std::max(hi - 1, side - 1 - lo), busiest, e.lines(), wafer, p);
}

double leg_cycles(const OpCost& leg, double link_cycles) {
  return leg.hop_cycles + leg.overhead_cycles + std::max(0.0, leg.link_cycles - link_cycles);
}

OpCost link_crossing_cost(const meshir::Schedule& schedule, const PlacedOp& op, const wafer::WaferParams& wafer,
                          const CostParams& p) {
  if (schedule.link_bytes_per_s < 1) throw InternalError("op '" + op.name + "' crosses wafers with no link bandwidth");
  const double bytes = static_cast<double>(op.work.input_bytes);
  const Rect to = meshir::used_part(schedule, op.to_region);
  // The bytes stream from the source PEs to the I/O edge, over the link, then from the far wafer's
  // edge to the destination: the latencies add, the slowest of the three bandwidths paces the bytes.
  const OpCost out = transfer_cost(op.used, meshir::io_rect(schedule, op.used), bytes, wafer, p);
  const OpCost in = transfer_cost(meshir::io_rect(schedule, to), to, bytes, wafer, p);
  const double link_s = bytes / static_cast<double>(schedule.link_bytes_per_s);
  OpCost c;
  c.hops = out.hops + in.hops;
  c.hop_cycles = out.hop_cycles + in.hop_cycles;
  c.link_cycles = std::max({out.link_cycles, in.link_cycles, link_s * wafer.clock_hz});
  c.overhead_cycles = out.overhead_cycles + in.overhead_cycles +
                      static_cast<double>(schedule.link_latency_ns) * 1e-9 * wafer.clock_hz;
  finish(c);
  return c;
}

int colours_needed(const PlacedOp& op) { return meshir::kernel_info(op.kernel).route_colours; }

namespace {

// op_cost with the used part of a mover's destination region given: timed_ops has every region's
// from one pass over the ops.
OpCost op_cost_to(const meshir::Schedule& schedule, const PlacedOp& op, const Rect& to_part,
                  const wafer::WaferParams& wafer, const CostParams& params) {
  OpCost c;
  switch (op.kernel) {
    case Kernel::meshgemv:
      c = op.attention != meshir::AttentionRole::none && op.work.heads > 0 ? detail::decode_attention(op, wafer, params)
                                                                           : meshgemv(op, wafer, params);
      break;
    case Kernel::meshgemm: c = meshgemm(op, wafer, params, false); break;
    case Kernel::gemm_t: c = meshgemm(op, wafer, params, true); break;
    case Kernel::elementwise: c = elementwise(op, wafer, params); break;
    case Kernel::allreduce:
      // Decode softmax (one query row) reduces over the context axis of each head; prefill's over X.
      c = op.attention == meshir::AttentionRole::softmax && op.work.heads > 0 && op.work.m == 1
              ? detail::decode_attention(op, wafer, params)
              : scalar_allreduce(op, wafer, params);
      break;
    case Kernel::kv_shift: c = kv_shift(op, params); break;
    case Kernel::lookup: c = lookup(op, wafer, params); break;
    case Kernel::relayout: c = relayout(op, wafer, params); break;
    case Kernel::allgather: c = allgather(op, wafer, params); break;
    case Kernel::transfer:
    case Kernel::moe_dispatch:
    case Kernel::moe_combine: {
      if (op.to_region < 0 || op.to_region >= static_cast<int>(schedule.regions.size())) {
        throw InternalError("op '" + op.name + "' moves data to an invalid region");
      }
      if (meshir::crosses_wafers(schedule, op)) {
        c = link_crossing_cost(schedule, op, wafer, params);
        break;
      }
      if (const auto e = meshir::exchange_of(schedule, op, to_part)) {
        c = exchange_cost(*e, static_cast<double>(op.work.input_bytes), wafer, params);
        break;
      }
      // From the PEs holding the data (the mover's used rectangle) to the used part of the
      // destination region, as the search costs it.
      c = transfer_cost(op.used, to_part, static_cast<double>(op.work.input_bytes), wafer, params);
      break;
    }
  }
  return c;
}

}  // namespace

OpCost op_cost(const meshir::Schedule& schedule, const PlacedOp& op, const wafer::WaferParams& wafer,
               const CostParams& params) {
  const Rect to = meshir::moves_between_regions(op.kernel) ? meshir::used_part(schedule, op.to_region) : Rect{};
  return op_cost_to(schedule, op, to, wafer, params);
}

std::vector<double> route_switch_cycles(const meshir::Schedule& schedule, const CostParams& params) {
  std::vector<double> out(schedule.ops.size(), 0.0);
  constexpr int kNone = -1;
  std::vector<int> last_axis(schedule.regions.size(), kNone);  // per region
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const PlacedOp& op = schedule.ops[i];
    if (op.kernel != Kernel::meshgemv) continue;
    if (op.region < 0 || static_cast<std::size_t>(op.region) >= last_axis.size()) {
      throw InternalError("op '" + op.name + "' runs on an invalid region");
    }
    int& last = last_axis[static_cast<std::size_t>(op.region)];
    if (last != kNone && last != static_cast<int>(op.reduce_axis)) out[i] = params.route_switch_cycles;
    last = static_cast<int>(op.reduce_axis);
  }
  return out;
}

Composition compose(const meshir::Schedule& schedule, const std::vector<double>& op_total_cycles, double clock_hz,
                    bool decode, std::int64_t prompt_tokens) {
  if (op_total_cycles.size() != schedule.ops.size()) throw InternalError("cost::compose: one time per op needed");
  // Steps run one after another; ops of a step overlap. Stages are timed the same way on their own ops.
  // A layer subset multiplies the decoder layers' steps by layer_scale; embedding and head run once.
  const double scale = static_cast<double>(std::max<std::int64_t>(1, schedule.layer_scale));
  // Dense per stage and per sending wafer (the search composes a block per call). A stage with no
  // op in a step adds 0, which changes no sum.
  int stages = 0;
  for (const auto& op : schedule.ops) {
    if (op.stage < 0) throw InternalError("op '" + op.name + "' has a negative stage");
    stages = std::max(stages, op.stage + 1);
  }
  std::vector<double> stage_cycles(static_cast<std::size_t>(stages), 0.0), stage_max(stage_cycles.size(), 0.0);
  std::vector<double> link_max(static_cast<std::size_t>(std::max<std::int64_t>(1, schedule.wafers)), 0.0);
  double pass = 0.0;
  for (std::size_t i = 0; i < schedule.ops.size();) {
    const int step = schedule.ops[i].step;
    double step_max = 0.0;
    bool repeated = false;
    std::fill(stage_max.begin(), stage_max.end(), 0.0);
    for (; i < schedule.ops.size() && schedule.ops[i].step == step; ++i) {
      step_max = std::max(step_max, op_total_cycles[i]);
      repeated = repeated || !schedule.ops[i].once;
      // Transfers between stages run on the links while the stages compute other micro-batches,
      // so they lengthen a pass but not a stage's turn; a transfer inside a stage is on its path.
      if (meshir::crosses_wafers(schedule, schedule.ops[i])) {
        // The link between two systems is a pipeline element of its own: it carries one
        // micro-batch while the wafers compute others.
        const std::int64_t from = meshir::wafer_of(schedule, schedule.ops[i].region);
        if (from < 0 || static_cast<std::size_t>(from) >= link_max.size()) {
          throw InternalError("op '" + schedule.ops[i].name + "' leaves an invalid wafer");
        }
        double& l = link_max[static_cast<std::size_t>(from)];
        l = std::max(l, op_total_cycles[i]);
        continue;
      }
      if (between_stages(schedule, schedule.ops[i])) continue;
      double& s = stage_max[static_cast<std::size_t>(schedule.ops[i].stage)];
      s = std::max(s, op_total_cycles[i]);
    }
    const double times = repeated ? scale : 1.0;
    pass += step_max * times;
    for (std::size_t st = 0; st < stage_max.size(); ++st) stage_cycles[st] += stage_max[st] * times;
  }
  double bottleneck = 0.0;
  for (const double cycles : stage_cycles) bottleneck = std::max(bottleneck, cycles);
  for (const double cycles : link_max) bottleneck = std::max(bottleneck, cycles);
  return pipeline(pass, bottleneck, schedule.microbatches, schedule.prompt_chunks, schedule.concurrent_requests, clock_hz,
                  decode, prompt_tokens);
}

Composition pipeline(double pass_cycles, double bottleneck_stage_cycles, std::int64_t microbatches,
                     std::int64_t prompt_chunks, std::int64_t concurrent_requests, double clock_hz, bool decode,
                     std::int64_t prompt_tokens) {
  Composition out;
  out.pass_cycles = pass_cycles;
  out.bottleneck_stage_cycles = bottleneck_stage_cycles;
  const double mb = static_cast<double>(std::max<std::int64_t>(1, microbatches));
  const double chunks = static_cast<double>(std::max<std::int64_t>(1, prompt_chunks));
  const double requests = static_cast<double>(std::max<std::int64_t>(1, concurrent_requests));
  if (decode) {
    // Micro-batches pipeline through the stages: a round takes the longer of one full pass and
    // `microbatches` turns of the slowest stage.
    const double round = std::max(out.pass_cycles, mb * out.bottleneck_stage_cycles);
    out.latency_s = round / clock_hz;
    out.tokens_per_s = requests / out.latency_s;
    out.tpr_tokens_per_s = 1.0 / out.latency_s;
  } else {
    // Prompts arrive together and stream through the stages one chunk of one micro-batch after
    // another: the last of the mb x chunks units finishes after one pass plus (units - 1) turns of the
    // slowest stage; micro-batch j's first token comes with its last chunk, unit (j + 1) chunks - 1,
    // and TTFT is the mean over micro-batches.
    const double total = out.pass_cycles + (mb * chunks - 1.0) * out.bottleneck_stage_cycles;
    const double mean_ttft = out.pass_cycles + (chunks * (mb + 1.0) / 2.0 - 1.0) * out.bottleneck_stage_cycles;
    out.latency_s = mean_ttft / clock_hz;
    out.tokens_per_s = static_cast<double>(prompt_tokens) * requests / (total / clock_hz);
    out.tpr_tokens_per_s = static_cast<double>(prompt_tokens) / out.latency_s;
  }
  return out;
}

namespace {

// Every op's cost with its route switch and its share of the movers' contention, and their totals.
std::vector<OpCost> timed_ops(const meshir::Schedule& schedule, const wafer::WaferParams& wafer,
                              const CostParams& params, std::vector<double>& totals) {
  std::vector<OpCost> ops;
  ops.reserve(schedule.ops.size());
  const std::vector<double> switches = route_switch_cycles(schedule, params);
  // Every region's used part in one pass, for the movers (used_part per mover is quadratic in ops).
  const bool movers = std::any_of(schedule.ops.begin(), schedule.ops.end(),
                                  [](const PlacedOp& op) { return meshir::moves_between_regions(op.kernel); });
  const std::vector<Rect> parts = movers ? meshir::used_parts(schedule) : std::vector<Rect>{};
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const PlacedOp& op = schedule.ops[i];
    const bool to_valid = op.to_region >= 0 && static_cast<std::size_t>(op.to_region) < parts.size();
    OpCost c = op_cost_to(schedule, op, to_valid ? parts[static_cast<std::size_t>(op.to_region)] : Rect{}, wafer, params);
    c.overhead_cycles += switches[i];
    c.total_cycles += switches[i];
    ops.push_back(c);
  }
  add_mover_contention(schedule, parts, wafer, ops);
  totals.clear();
  totals.reserve(ops.size());
  for (const OpCost& c : ops) totals.push_back(c.total_cycles);
  return ops;
}

}  // namespace

double pass_cycles(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, const CostParams& params) {
  std::vector<double> totals;
  timed_ops(schedule, wafer, params, totals);
  return compose(schedule, totals, wafer.clock_hz, true, 1).pass_cycles;
}

ScheduleCost evaluate(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, const CostParams& params,
                      bool decode, std::int64_t prompt_tokens) {
  ScheduleCost out;
  std::vector<double> totals;
  out.ops = timed_ops(schedule, wafer, params, totals);
  const Composition c = compose(schedule, totals, wafer.clock_hz, decode, prompt_tokens);
  out.pass_cycles = c.pass_cycles;
  out.bottleneck_stage_cycles = c.bottleneck_stage_cycles;
  out.latency_s = c.latency_s;
  out.tokens_per_s = c.tokens_per_s;
  out.tpr_tokens_per_s = c.tpr_tokens_per_s;
  // PEs allocated to the schedule: its regions (a TUNE may leave part of a region idle, but nothing
  // else can use those PEs).
  // Each wafer's regions cover its own PEs.
  std::map<std::int64_t, std::vector<Rect>> by_wafer;
  for (std::size_t r = 0; r < schedule.regions.size(); ++r) {
    by_wafer[meshir::wafer_of(schedule, static_cast<int>(r))].push_back(schedule.regions[r]);
  }
  for (const auto& [wafer_index, rects] : by_wafer) out.pes_used += union_pes(rects);
  out.sram_bytes_per_pe_max = meshir::resident_bytes_per_pe_max(schedule);
  out.sram_headroom = 1.0 - static_cast<double>(out.sram_bytes_per_pe_max) / static_cast<double>(schedule.sram_per_pe_bytes - schedule.sram_reserved_per_pe_bytes);
  return out;
}

}  // namespace wavel::cost
