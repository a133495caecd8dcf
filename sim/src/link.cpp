// The system link as a simulated element; see link.hpp.
#include "wavel/sim/detail/link.hpp"

#include <algorithm>

#include "wavel/common/error.hpp"

namespace wavel::sim {

namespace {

// One on-wafer leg: a transfer from `from` to `to` on a copy of the schedule's grid with only the two regions.
OpSimResult leg(const meshir::Schedule& schedule, const meshir::PlacedOp& op, const meshir::Rect& from,
                const meshir::Rect& to, const wafer::WaferParams& wafer, const SimOptions& options) {
  meshir::Schedule s;
  s.name = schedule.name;
  s.grid_w_pes = schedule.grid_w_pes;
  s.grid_h_pes = schedule.grid_h_pes;
  s.sram_per_pe_bytes = schedule.sram_per_pe_bytes;
  s.sram_reserved_per_pe_bytes = schedule.sram_reserved_per_pe_bytes;
  s.colours = schedule.colours;
  s.regions = {from, to};
  meshir::PlacedOp t = op;
  t.region = 0;
  t.to_region = 1;
  t.used = from;
  t.inputs.clear();
  s.ops = {t};
  return simulate_op(s, 0, wafer, options);
}

}  // namespace

LinkCrossing simulate_link_crossing(const meshir::Schedule& schedule, int op_index, const wafer::WaferParams& wafer,
                                    const SimOptions& options, const LinkFraming& framing) {
  const meshir::PlacedOp& op = schedule.ops.at(static_cast<std::size_t>(op_index));
  if (!meshir::crosses_wafers(schedule, op) || schedule.link_bytes_per_s < 1) {
    throw InternalError("sim: op '" + op.name + "' does not cross to another wafer over a link");
  }
  const meshir::Rect to = meshir::used_part(schedule, op.to_region);
  const OpSimResult out = leg(schedule, op, op.used, meshir::io_rect(schedule, op.used), wafer, options);
  const OpSimResult in = leg(schedule, op, meshir::io_rect(schedule, to), to, wafer, options);
  const std::int64_t bytes = std::max<std::int64_t>(0, op.work.input_bytes);
  LinkCrossing c;
  c.frames = std::max<std::int64_t>(1, (bytes + framing.payload_bytes - 1) / framing.payload_bytes);
  const double cycles_per_byte = wafer.clock_hz / static_cast<double>(schedule.link_bytes_per_s);
  const double latency = static_cast<double>(schedule.link_latency_ns) * 1e-9 * wafer.clock_hz;
  c.egress_cycles = out.cycles;
  c.ingress_cycles = in.cycles;
  c.wire_cycles = latency + static_cast<double>(bytes + c.frames * framing.overhead_bytes) * cycles_per_byte;
  c.events = out.events + in.events;
  // Frames alike, each leg serving them at an even pace: the first frame passes all three legs,
  // then one frame leaves per turn of the slowest leg. The wire's latency is paid once.
  const double n = static_cast<double>(c.frames);
  const double s_out = c.egress_cycles / n, s_in = c.ingress_cycles / n, s_wire = (c.wire_cycles - latency) / n;
  c.total_cycles = latency + s_out + s_wire + s_in + (n - 1.0) * std::max({s_out, s_wire, s_in});
  return c;
}

}  // namespace wavel::sim
