// Microarchitecture constants of the simulator and checked integer arithmetic for sizes.
#include "wavel/sim/microarch.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace wavel::sim {

double MicroArch::vector_loop_cycles(std::int64_t vectors, std::int64_t length) const {
  if (vectors <= 0 || length <= 0) return 0.0;
  constexpr std::int64_t kReadBytes = 4, kWriteBytes = 2;  // per FP16 element
  const double issues = static_cast<double>(ceil_div(length, std::max<std::int64_t>(1, fmac_lanes))) * simd_op_cycles;
  const double reads = static_cast<double>(ceil_div(checked_mul(length, kReadBytes, "vector bytes"),
                                                    std::max<std::int64_t>(1, sram_read_bytes_per_cycle)));
  const double writes = static_cast<double>(ceil_div(checked_mul(length, kWriteBytes, "vector bytes"),
                                                     std::max<std::int64_t>(1, sram_write_bytes_per_cycle)));
  return static_cast<double>(vectors) * (timing.vector_op_setup_cycles + std::max({issues, reads, writes}));
}

double MicroArch::vector_form_cycles(wafer::VectorForm form, std::int64_t length) const {
  if (length <= 0) return 0.0;
  const wafer::VectorFormInfo& f = wafer::info(form);
  const std::int64_t width = std::max<std::int64_t>(1, simd_widths[static_cast<std::size_t>(form)]);
  const double issues = static_cast<double>(ceil_div(length, width)) * simd_op_cycles;
  const double reads = static_cast<double>(ceil_div(checked_mul(length, f.read_bytes, "vector bytes"),
                                                    std::max<std::int64_t>(1, sram_read_bytes_per_cycle)));
  const double writes = static_cast<double>(ceil_div(checked_mul(length, f.write_bytes, "vector bytes"),
                                                     std::max<std::int64_t>(1, sram_write_bytes_per_cycle)));
  return std::max({issues, reads, writes});
}

MicroArch microarch_for(const wafer::WaferParams& wafer) {
  if (wafer.fmac_lanes() < 1 || wafer.link_bytes_per_cycle < 1 || wafer.sram_read_bytes_per_cycle < 1 ||
      wafer.sram_write_bytes_per_cycle < 1 || !(wafer.alpha_cycles_per_hop > 0) || wafer.routable_colours < 1) {
    throw std::invalid_argument("sim: the wafer description leaves a SIMD width, SRAM port, link, hop latency or "
                                "colour count unset");
  }
  MicroArch m;
  m.fmac_lanes = wafer.fmac_lanes();
  m.simd_widths = wafer.simd_widths;
  m.link_bytes_per_cycle = wafer.link_bytes_per_cycle;
  m.sram_read_bytes_per_cycle = wafer.sram_read_bytes_per_cycle;
  m.sram_write_bytes_per_cycle = wafer.sram_write_bytes_per_cycle;
  m.scalar_division_cycles = wafer.scalar_division_cycles;
  m.hop_cycles = wafer.alpha_cycles_per_hop + wafer.pe_timing.router_cycles_per_hop;
  m.routable_colours = wafer.routable_colours;
  m.timing = wafer.pe_timing;
  return m;
}

void throw_out_of_range(std::int64_t a, std::int64_t b, const char* op, const char* what) {
  if (a < 0 || b < 0) throw std::domain_error(std::string("sim: negative ") + what);
  throw std::domain_error(std::string("sim: ") + what + " overflows 64 bits (" + std::to_string(a) + " " + op + " " +
                          std::to_string(b) + ")");
}

}  // namespace wavel::sim
