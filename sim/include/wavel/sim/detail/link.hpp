// The link between two systems as the simulator's own element: the message leaves the wafer at its
// I/O edge, is framed onto the systems' Ethernet, and enters the far wafer at its edge. Frames flow
// through the three legs as a flow shop (each frame whole before the next leg takes it).
#pragma once

#include <cstdint>

#include "wavel/meshir/schedule.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::sim {

/// Ethernet framing of the system link (IEEE 802.3 with IPv4/UDP): 9000-byte jumbo payloads, and
/// per frame 8 B preamble, 14 B header, 4 B FCS, 12 B inter-frame gap, 20 B IPv4 and 8 B UDP headers.
struct LinkFraming {
  std::int64_t payload_bytes = 9000 - 28;  ///< a jumbo frame's MTU less the IPv4 and UDP headers
  std::int64_t overhead_bytes = 8 + 14 + 4 + 12 + 20 + 8;
};

/// What crossing took, in cycles of the wafer clock.
struct LinkCrossing {
  double egress_cycles = 0;   ///< the whole message from the source PEs to the I/O edge (simulated on the mesh)
  double wire_cycles = 0;     ///< the whole message over the link, framed, plus its latency
  double ingress_cycles = 0;  ///< from the far edge to the destination (simulated on the mesh)
  std::int64_t frames = 0;
  double total_cycles = 0;    ///< the flow shop of the frames through the three legs
  std::int64_t events = 0;    ///< mesh events of the two simulated legs
};

/// Simulates transfer op `op_index` of `schedule`, whose destination lies on another wafer
/// (meshir::crosses_wafers): each on-wafer leg on the mesh like a transfer between the op's used
/// rectangle (or the destination's used part) and its image on the I/O edge (meshir::io_rect).
LinkCrossing simulate_link_crossing(const meshir::Schedule& schedule, int op_index, const wafer::WaferParams& wafer,
                                    const SimOptions& options, const LinkFraming& framing = {});

}  // namespace wavel::sim
