// Builds each planned kernel's tasks and messages on a Network (see kernels.hpp for the shapes).
#include <algorithm>

#include "wavel/common/error.hpp"
#include "wavel/sim/kernels.hpp"

namespace wavel::sim {

namespace {

using meshir::Kernel;

std::vector<ItemId> tasks_on(Network& net, const Line& line, double cycles, SpanKind kind,
                             const std::vector<ItemId>& after, ItemId also = kNoItem) {
  std::vector<ItemId> out(static_cast<std::size_t>(line.count));
  for (std::int64_t i = 0; i < line.count; ++i) {
    const auto k = static_cast<std::size_t>(i);
    out[k] = net.task(line.at(i), cycles, kind);
    if (!after.empty()) net.after(out[k], after[k]);
    net.after(out[k], also);
  }
  return out;
}

// Launch, then `rounds` of (local work share, streamed K-trees over consecutive pieces of `tree`
// PEs); returns a join after the last round.
ItemId reduce_line(Network& net, const KernelPlan& plan, const Line& line, const LineWork& work, ItemId gate) {
  std::vector<ItemId> ready = tasks_on(net, line, plan.launch_cycles, SpanKind::launch, {});
  const std::int64_t tree = plan.tree_pes > 0 ? std::min(plan.tree_pes, line.count) : line.count;
  const double share = work.compute_cycles / static_cast<double>(plan.rounds);
  ItemId done = kNoItem;
  for (std::int64_t round = 0; round < plan.rounds; ++round) {
    // A later round is a new task, woken when the previous result has arrived.
    const double cycles = share + (round > 0 ? plan.task_cycles : 0.0);
    ready = tasks_on(net, line, cycles, SpanKind::compute, round == 0 ? ready : std::vector<ItemId>{},
                     round == 0 ? gate : done);
    done = net.join();
    for (std::int64_t lo = 0; lo < line.count; lo += tree) {
      const Line piece{line.at(lo), line.stride, std::min(tree, line.count - lo)};
      const std::vector<ItemId> piece_ready(ready.begin() + lo, ready.begin() + lo + piece.count);
      net.after(done, ktree_allreduce(net, piece, plan.group, work.message_bytes, piece_ready, 0));
    }
  }
  return done;
}

void build_cannon(Network& net, const KernelPlan& plan, KernelBuild& out) {
  const std::int64_t mesh_w = plan.mesh_w_pes;
  const std::int64_t pes = net.pes();
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
  } else {
    (plan.line_along_x ? x_lines : y_lines).push_back(Line{0, 1, mesh_w});
  }
  // One shift of every PE's tile on the X (colours 0, 1) or Y (colours 2, 3) rings.
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
      // this PE receives leaves and arrives like its own: a message to itself over its spare links.
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
  const Line all{0, 1, pes};
  const std::vector<ItemId> launch = tasks_on(net, all, plan.launch_cycles, SpanKind::launch, {});
  // Initial skew of the activation tiles on the X rings, round after round.
  std::vector<ItemId> have = launch;
  for (std::int64_t round = 0; round < plan.skew_rounds; ++round) {
    const std::vector<ItemId> got = shift(true, plan.skew_bytes, have);
    for (std::size_t p = 0; p < got.size(); ++p) {
      if (got[p] != kNoItem) have[p] = got[p];
    }
  }
  std::vector<ItemId> previous = have;
  std::vector<ItemId> from_x(static_cast<std::size_t>(pes), kNoItem), from_y(static_cast<std::size_t>(pes), kNoItem);
  for (std::int64_t step = 0; step < plan.sample.steps_simulated; ++step) {
    // A step's task wakes when both tiles have arrived and the previous step's work is done.
    std::vector<ItemId> wake(static_cast<std::size_t>(pes));
    for (std::int64_t p = 0; p < pes; ++p) {
      const auto i = static_cast<std::size_t>(p);
      wake[i] = net.task(p, plan.task_cycles, SpanKind::overhead);
      net.after(wake[i], launch[i]);
      net.after(wake[i], previous[i]);
      net.after(wake[i], from_x[i]);
      net.after(wake[i], from_y[i]);
    }
    const std::vector<ItemId> compute = tasks_on(net, all, plan.step_compute_cycles, SpanKind::compute, wake);
    // The tiles of this step move on while they are multiplied; the last step moves nothing.
    if (step + 1 < plan.steps) {
      from_x = shift(true, plan.x_bytes, wake);
      from_y = shift(false, plan.y_bytes, wake);
    }
    const ItemId step_done = net.join();
    for (ItemId c : compute) net.after(step_done, c);
    out.step_done.push_back(step_done);
    previous = compute;
  }
  out.steps_total = plan.steps;
  net.after(out.done, out.step_done.back());
}

}  // namespace

KernelBuild build_kernel(Network& net, const KernelPlan& plan) {
  if (net.config().width_pes != plan.mesh_w_pes || net.config().height_pes != plan.mesh_h_pes) {
    throw InternalError("sim::build_kernel: the network is not the planned mesh");
  }
  KernelBuild out;
  out.done = net.join();
  if (plan.shape == Shape::cannon) {
    build_cannon(net, plan, out);
    return out;
  }
  const std::int64_t mesh_w = plan.mesh_w_pes;
  // Row 0 of an attention mesh with a GQA span carries the multicast; the lines follow it.
  const std::int64_t first_row = plan.shape == Shape::attention && plan.span_pes > 0 ? 1 : 0;
  ItemId gate = kNoItem;
  if (first_row == 1) {
    const Line span{0, 1, plan.span_pes};
    const ItemId start = net.task(span.at(span.count / 2), plan.launch_cycles, SpanKind::launch);
    gate = multicast(net, span, plan.span_bytes, start, 3);
  }
  for (std::size_t k = 0; k < plan.lines.size(); ++k) {
    const LineWork& work = plan.lines[k];
    const auto row = static_cast<std::int64_t>(k) + first_row;
    const Line line = plan.line_along_x ? Line{row * mesh_w, 1, plan.line_pes} : Line{row, mesh_w, plan.line_pes};
    ItemId line_done = net.join();
    switch (plan.shape) {
      case Shape::ktree:
      case Shape::attention:
        net.after(line_done, reduce_line(net, plan, line, work, gate));
        break;
      case Shape::compute: {
        const std::vector<ItemId> launch = tasks_on(net, line, plan.launch_cycles, SpanKind::launch, {});
        for (ItemId c : tasks_on(net, line, work.compute_cycles, SpanKind::compute, launch)) net.after(line_done, c);
        break;
      }
      case Shape::neighbour:
      case Shape::mirror: {
        const std::vector<ItemId> launch = tasks_on(net, line, plan.launch_cycles, SpanKind::launch, {});
        for (std::int64_t i = 0; i < line.count; ++i) {
          const std::int64_t j = plan.shape == Shape::neighbour ? i - 1 : line.count - 1 - i;
          if (j < 0 || j == i) {
            // A PE that sends waits for its launch through its message; this one does not send.
            net.after(line_done, launch[static_cast<std::size_t>(i)]);
            continue;
          }
          SendSpec spec;
          spec.src_pe = line.at(i);
          spec.dst_pe = line.at(j);
          spec.bytes = work.message_bytes;
          spec.colour = j > i ? 0 : 1;
          const ItemId m = net.send(spec);
          net.after(m, launch[static_cast<std::size_t>(i)]);
          net.after(line_done, m);
        }
        break;
      }
      case Shape::lanes: {
        const ItemId launch = net.task(line.at(0), plan.launch_cycles, SpanKind::launch);
        SendSpec spec;
        spec.src_pe = line.at(0);
        spec.dst_pe = line.at(line.count - 1);
        spec.bytes = work.message_bytes;
        const ItemId m = net.send(spec);
        net.after(m, launch);
        net.after(line_done, m);
        break;
      }
      case Shape::cannon:
        break;
    }
    out.line_done.push_back(line_done);
    net.after(out.done, line_done);
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
