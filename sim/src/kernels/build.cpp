// Builds each planned kernel's tasks and messages on a Network (see kernels.hpp for the shapes).
#include <algorithm>
#include <iterator>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/sim/detail/kernels.hpp"

namespace wavel::sim {

namespace {

using meshir::Kernel;

// A task on every PE of `line`, as one lane group.
Lanes tasks_on(Network& net, const Line& line, double cycles, SpanKind kind) {
  return net.tasks(line.first, line.stride, line.count, cycles, kind);
}

std::vector<ItemId> ids_of(Lanes lanes) {
  std::vector<ItemId> out(lanes.count);
  for (std::uint32_t i = 0; i < lanes.count; ++i) out[i] = lanes.at(i);
  return out;
}

// Messages from line positions from, from + 1, ... (n of them) to positions to, to + to_step, ...,
// each after its sender's launch lane; `done` after every one. One lane group when each message is
// one transport unit, else one send per message.
// `received` (when given) gets a task of that many cycles on each receiving PE after its message and
// after that PE's launch lane, which `done` waits for instead of the message.
void send_lanes(Network& net, const Line& line, std::int64_t from, std::int64_t n, std::int64_t to, std::int64_t to_step,
                std::int64_t bytes, int colour, Lanes launch, ItemId done, double received_task_cycles = -1.0) {
  if (n <= 0) return;
  SendSpec spec;
  spec.src_pe = line.at(from);
  spec.dst_pe = line.at(to);
  spec.bytes = bytes;
  spec.colour = colour;
  const bool task_after = received_task_cycles >= 0.0;
  if (net.single_unit(bytes)) {
    const Lanes sent = net.sends(spec, n, line.stride, to_step * line.stride);
    net.after(sent, launch.sub(from, n));
    if (!task_after) {
      net.after(done, sent);
      return;
    }
    // The receiving PE's launch set the receive up: the task follows it on that PE.
    Lanes got;
    if (to_step == 1) {
      got = net.tasks_after(launch.sub(to, n), received_task_cycles, SpanKind::overhead);
    } else {
      got.first = net.task_after(launch.at(to), received_task_cycles, SpanKind::overhead);
      got.count = static_cast<std::uint32_t>(n);
      for (std::int64_t i = 1; i < n; ++i) net.task_after(launch.at(to + i * to_step), received_task_cycles, SpanKind::overhead);
    }
    net.after(got, sent);
    net.after(done, got);
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) {
    spec.src_pe = line.at(from + i);
    spec.dst_pe = line.at(to + i * to_step);
    const ItemId m = net.send(spec);
    net.after(m, launch.at(from + i));
    if (!task_after) {
      net.after(done, m);
      continue;
    }
    const ItemId got = net.task_after(launch.at(to + i * to_step), received_task_cycles, SpanKind::overhead);
    net.after(got, m);
    net.after(done, got);
  }
}

// Launch, then `rounds` of (local work share, streamed K-trees over consecutive pieces of `tree`
// PEs); returns a join after the last round. The K-trees name every PE's task on its own, so the
// tasks are made one by one: as lane groups they would only be written out again.
ItemId reduce_line(Network& net, const KernelPlan& plan, const Line& line, const LineWork& work, ItemId gate) {
  const auto n = static_cast<std::size_t>(line.count);
  std::vector<ItemId> previous(n), ready(n);
  for (std::size_t i = 0; i < n; ++i) previous[i] = net.task(line.at(static_cast<std::int64_t>(i)), plan.launch_cycles, SpanKind::launch);
  const std::int64_t tree = plan.tree_pes > 0 ? std::min(plan.tree_pes, line.count) : line.count;
  const double share = work.compute_cycles / static_cast<double>(plan.rounds);
  ItemId done = kNoItem;
  for (std::int64_t round = 0; round < plan.rounds; ++round) {
    // A later round is a new task, woken when the previous result has arrived; each follows its PE's
    // previous task (the launch, then the last round's), so a PE's tasks never contend.
    const double cycles = share + (round > 0 ? plan.task_cycles : 0.0);
    const ItemId wake = round == 0 ? gate : done;
    for (std::size_t i = 0; i < n; ++i) {
      ready[i] = net.task_after(previous[i], cycles, SpanKind::compute);
      net.after(ready[i], wake);
    }
    previous.swap(ready);
    done = net.join();
    for (std::int64_t lo = 0; lo < line.count; lo += tree) {
      const Line piece{line.at(lo), line.stride, std::min(tree, line.count - lo)};
      const auto first = previous.begin() + lo;
      net.after(done, ktree_allreduce(net, piece, plan.group, work.message_bytes,
                                      std::vector<ItemId>(first, first + piece.count), 0));
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
  const Lanes launch = tasks_on(net, all, plan.launch_cycles, SpanKind::launch);
  // Initial skew of the activation tiles on the X rings, round after round; each alignment shift is
  // a task of the kernel's own, woken when the previous round's tile has arrived.
  std::vector<ItemId> have = ids_of(launch);
  for (std::int64_t round = 0; round < plan.skew_rounds_simulated; ++round) {
    const Lanes wake = tasks_on(net, all, plan.task_cycles, SpanKind::overhead);
    for (std::int64_t p = 0; p < pes; ++p) net.after(wake.at(p), have[static_cast<std::size_t>(p)]);
    const std::vector<ItemId> woken = ids_of(wake);
    const std::vector<ItemId> got = shift(true, plan.skew_bytes, woken);
    for (std::size_t p = 0; p < got.size(); ++p) have[p] = got[p] != kNoItem ? got[p] : woken[p];
    const ItemId round_done = net.join();
    for (const ItemId id : have) net.after(round_done, id);
    out.skew_done.push_back(round_done);
  }
  out.skew_total = plan.skew_rounds;
  std::vector<ItemId> previous = have;
  std::vector<ItemId> from_x(static_cast<std::size_t>(pes), kNoItem), from_y(static_cast<std::size_t>(pes), kNoItem);
  for (std::int64_t step = 0; step < plan.sample.steps_simulated; ++step) {
    // A step's task wakes when both tiles have arrived and the previous step's work is done.
    const Lanes wake = tasks_on(net, all, plan.task_cycles, SpanKind::overhead);
    net.after(wake, launch);
    for (std::int64_t p = 0; p < pes; ++p) {
      const auto i = static_cast<std::size_t>(p);
      net.after(wake.at(p), previous[i]);
      net.after(wake.at(p), from_x[i]);
      net.after(wake.at(p), from_y[i]);
    }
    const Lanes compute = tasks_on(net, all, plan.step_compute_cycles, SpanKind::compute);
    net.after(compute, wake);
    // The tiles of this step move on while they are multiplied; the last step moves nothing.
    if (step + 1 < plan.steps) {
      const std::vector<ItemId> woken = ids_of(wake);
      from_x = shift(true, plan.x_bytes, woken);
      from_y = shift(false, plan.y_bytes, woken);
    }
    const ItemId step_done = net.join();
    net.after(step_done, compute);
    out.step_done.push_back(step_done);
    previous = ids_of(compute);
  }
  out.steps_total = plan.steps;
  net.after(out.done, out.step_done.back());
}

}  // namespace

std::vector<ExchangeSend> exchange_sends(std::int64_t line_pes, std::int64_t lo, std::int64_t hi, bool into_strip,
                                         std::int64_t bytes) {
  std::vector<ExchangeSend> out;
  const std::int64_t width = std::max<std::int64_t>(1, hi - lo);
  if (line_pes < 1 || lo < 0 || hi > line_pes || lo >= hi || bytes <= 0) return out;
  // Pieces of [first, last) no wider than the strip, as even as the count allows.
  const auto pieces = [&](std::int64_t first, std::int64_t last, std::int64_t edge) {
    const std::int64_t span = last - first;
    if (span <= 0) return;
    const std::int64_t n = (span + width - 1) / width;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t a = first + span * i / n, b = first + span * (i + 1) / n;
      // The piece's share of the line's bytes, by width.
      const std::int64_t piece_bytes = static_cast<std::int64_t>(static_cast<double>(bytes) * static_cast<double>(b - a) /
                                                                 static_cast<double>(line_pes));
      if (piece_bytes <= 0) continue;
      const std::int64_t middle = (a + b - 1) / 2;
      out.push_back(into_strip ? ExchangeSend{middle, edge, piece_bytes} : ExchangeSend{edge, middle, piece_bytes});
    }
  };
  pieces(0, lo, lo);
  pieces(hi, line_pes, hi - 1);
  return out;
}

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
        const Lanes launch = tasks_on(net, line, plan.launch_cycles, SpanKind::launch);
        const Lanes compute = tasks_on(net, line, work.compute_cycles, SpanKind::compute);
        net.after(compute, launch);
        net.after(line_done, compute);
        break;
      }
      case Shape::neighbour: {
        // PE i sends to i - 1, whose task takes the tile in (store and forward); PE 0 sends nothing
        // and waits for its launch alone.
        const Lanes launch = tasks_on(net, line, plan.launch_cycles, SpanKind::launch);
        if (launch.count > 0) net.after(line_done, launch.sub(0, 1));
        send_lanes(net, line, 1, line.count - 1, 0, 1, work.message_bytes, 1, launch, line_done, plan.task_cycles);
        break;
      }
      case Shape::mirror: {
        // PE i sends to count - 1 - i: the lower half rightwards (colour 0), the upper half leftwards
        // (colour 1); the middle PE of an odd line keeps its tile.
        const Lanes launch = tasks_on(net, line, plan.launch_cycles, SpanKind::launch);
        const std::int64_t half = line.count / 2;
        send_lanes(net, line, 0, half, line.count - 1, -1, work.message_bytes, 0, launch, line_done);
        if (line.count % 2 == 1) net.after(line_done, launch.sub(half, 1));
        send_lanes(net, line, line.count - half, half, half - 1, -1, work.message_bytes, 1, launch, line_done);
        break;
      }
      case Shape::gather: {
        // Each PE but the centre sends its piece there, from the left on colour 0 and from the right on
        // colour 1 (pieces queue on the links they share); the centre multicasts the slice (colour 2).
        const Lanes launch = tasks_on(net, line, plan.launch_cycles, SpanKind::launch);
        const std::int64_t centre = line.count / 2;
        const ItemId gathered = net.join();
        if (launch.count > 0) net.after(gathered, launch.sub(centre, 1));
        for (std::int64_t i = 0; i < line.count; ++i) {
          if (i == centre) continue;
          SendSpec spec;
          spec.src_pe = line.at(i);
          spec.dst_pe = line.at(centre);
          spec.bytes = share(work.message_bytes, line.count, i);
          spec.colour = i < centre ? 0 : 1;
          if (spec.bytes <= 0) continue;
          const ItemId m = net.send(spec);
          net.after(m, launch.sub(i, 1));
          net.after(gathered, m);
        }
        net.after(line_done, multicast(net, line, work.message_bytes, gathered, 2));
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
      case Shape::exchange: {
        // Each sending PE launches once, then streams its pieces; rightward on colour 0, leftward on 1.
        std::vector<std::pair<std::int64_t, ItemId>> launched;  // (line position, launch): a few per line
        for (const ExchangeSend& m : exchange_sends(line.count, plan.exchange_lo, plan.exchange_hi,
                                                    plan.exchange_into_strip, work.message_bytes)) {
          auto it = std::find_if(launched.begin(), launched.end(), [&](const auto& l) { return l.first == m.from; });
          if (it == launched.end()) {
            launched.emplace_back(m.from, net.task(line.at(m.from), plan.launch_cycles, SpanKind::launch));
            it = std::prev(launched.end());
          }
          const ItemId launch = it->second;
          SendSpec spec;
          spec.src_pe = line.at(m.from);
          spec.dst_pe = line.at(m.to);
          spec.bytes = m.bytes;
          spec.colour = m.to > m.from ? 0 : 1;
          const ItemId sent = net.send(spec);
          net.after(sent, launch);
          net.after(line_done, sent);
        }
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

namespace {

// (total - simulated) x the period of the last two joins of `done`, or 0 when nothing was left out.
double extrapolated(const Network& net, const std::vector<ItemId>& done, std::int64_t total) {
  const auto simulated = static_cast<std::int64_t>(done.size());
  if (simulated < 2 || total <= simulated) return 0.0;
  const double period = net.finish_cycles(done[static_cast<std::size_t>(simulated - 1)]) -
                        net.finish_cycles(done[static_cast<std::size_t>(simulated - 2)]);
  return static_cast<double>(total - simulated) * period;
}

}  // namespace

double kernel_cycles(const Network& net, const KernelBuild& build) {
  return net.finish_cycles(build.done) + extrapolated(net, build.skew_done, build.skew_total) +
         extrapolated(net, build.step_done, build.steps_total);
}

}  // namespace wavel::sim
