// A pipeline part's crossings; see detail/crossings.hpp.
#include "wavel/search/detail/crossings.hpp"

#include <cmath>

#include "wavel/cost/model.hpp"

namespace wavel::search::detail {

double Crossings::in_leg(const meshir::Rect& entry, const wafer::WaferParams& wafer, const cost::CostParams& params) const {
  if (in.bytes <= 0) return 0.0;
  const meshir::Rect edge = meshir::io_rect(io_edge, grid_w, grid_h, entry);
  return cost::leg_cycles(cost::transfer_cost(edge, entry, in.bytes, wafer, params), in.link_cycles);
}

double Crossings::out_leg(const meshir::Rect& exit, const wafer::WaferParams& wafer, const cost::CostParams& params) const {
  if (out.bytes <= 0) return 0.0;
  const meshir::Rect edge = meshir::io_rect(io_edge, grid_w, grid_h, exit);
  return cost::leg_cycles(cost::transfer_cost(exit, edge, out.bytes, wafer, params), out.link_cycles);
}

double Crossings::legs(const meshir::Rect& entry, const meshir::Rect& exit, const wafer::WaferParams& wafer,
                       const cost::CostParams& params) const {
  return in_leg(entry, wafer, params) + out_leg(exit, wafer, params);
}

Crossings part_crossings(const workload::Workload& w, const SearchOptions& options, const wafer::WaferParams& wafer,
                         std::int64_t microbatches, std::int64_t first_input_bytes, std::int64_t last_output_bytes) {
  Crossings c;
  c.io_edge = options.io_edge;
  c.grid_w = wafer.grid_w_pes;
  c.grid_h = wafer.grid_h_pes;
  if (!options.pipeline_part || !w.stage || options.link_bytes_per_s <= 0) return c;
  const bool decode = w.shape.phase == workload::Phase::decode;
  // deploy::join_stages: the link's bandwidth as the joined schedule holds it (whole bytes per second).
  const double link_bytes_per_s = static_cast<double>(std::llround(options.link_bytes_per_s));
  const auto crossing = [&](double bytes) { return Crossing{bytes, bytes / link_bytes_per_s * wafer.clock_hz}; };
  c.latency_cycles = static_cast<double>(std::llround(options.link_latency_s * 1e9)) * 1e-9 * wafer.clock_hz;
  const double tokens = static_cast<double>(workload::sampled_token_bytes(w.shape.concurrent_requests, microbatches));
  // The first wafer's embedding takes the token ids in (decode); any other part the activation.
  if (!w.stage->embedding || decode) c.in = crossing(static_cast<double>(first_input_bytes));
  if (!w.stage->head) {
    c.out = crossing(static_cast<double>(last_output_bytes));
  } else if (decode) {
    c.out = crossing(tokens);
  }
  return c;
}

}  // namespace wavel::search::detail
