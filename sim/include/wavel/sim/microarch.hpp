// The simulator's own microarchitecture constants and per-PE loop timing. They come from the
// hardware description (domain.md §2: SIMD width, links, router and ramp) and WaferLLM's kernel
// structure, never from the cost model's fitted efficiencies.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "wavel/wafer/wafer.hpp"

namespace wavel::sim {

/// Timing of one PE and its router, in cycles of the wafer clock. The fields named after a wafer
/// key have no default of their own: microarch_for takes them from the wafer description, so a
/// hardware what-if reaches the simulator whole.
struct MicroArch {
  std::int64_t fmac_lanes = 0;             ///< FP16 FMACs per SIMD issue (wafer fmac_lanes())
  std::array<std::int64_t, wafer::kVectorForms> simd_widths{};  ///< lanes per issue of each form (wafer)
  double simd_op_cycles = 1.0;             ///< one SIMD issue of fmac_lanes lanes
  std::int64_t sram_read_bytes_per_cycle = 0;   ///< wafer sram_read_bytes_per_cycle
  std::int64_t sram_write_bytes_per_cycle = 0;  ///< wafer sram_write_bytes_per_cycle
  double scalar_division_cycles = 0;       ///< a software division, sqrt or reciprocal (wafer scalar_division_cycles)
  std::int64_t k_iteration_scalar_ops = 6; ///< MeshGEMM k-iteration: a DSD base set, 3 DSR loads, 2 offset increments
  double hop_cycles = 0;                   ///< head latency per link on a pre-configured route (wafer alpha + router)
  std::int64_t link_bytes_per_cycle = 0;   ///< per link and per ramp (wafer link_bytes_per_cycle)
  std::int64_t routable_colours = 0;       ///< colours a router can carry; more are relayed in software (wafer)
  wafer::PeTiming timing;                  ///< tasks and instructions (wafer pe_timing: measured, see calibrate)

  /// One vector instruction of `form` over `length` elements: its issues or its SRAM traffic,
  /// whichever is slower (no set-up: the caller counts instructions).
  [[nodiscard]] double vector_form_cycles(wafer::VectorForm form, std::int64_t length) const;

  /// A MeshGEMM k-iteration's own instructions, before its FMACs.
  [[nodiscard]] double k_iteration_cycles() const {
    return static_cast<double>(k_iteration_scalar_ops) * timing.scalar_op_cycles;
  }

  /// One element of a scalar loop: its scalar instructions and its software divisions.
  [[nodiscard]] double scalar_element_cycles(std::int64_t instructions, std::int64_t divisions) const {
    return static_cast<double>(std::max<std::int64_t>(0, instructions)) * timing.scalar_op_cycles +
           static_cast<double>(std::max<std::int64_t>(0, divisions)) * scalar_division_cycles;
  }

  /// A software relay (a router out of colours): the PE wakes a task, takes the wavelets down its
  /// ramp and sends them on.
  [[nodiscard]] double relay_cycles() const { return timing.task_launch_cycles + timing.stream_latency_cycles; }

  /// Cycles of `vectors` vector instructions of `length` FP16 elements each: the setup, then the
  /// slower of the SIMD issues and the SRAM ports (an FMAC reads its operand and accumulator, 2 x 2
  /// bytes, and writes the accumulator, 2 bytes, per element; the scalar stays in a register).
  [[nodiscard]] double vector_loop_cycles(std::int64_t vectors, std::int64_t length) const;
};

/// The simulator's PE for `wafer`: its SIMD width, SRAM ports, links, hop latency, colours and timing.
/// Throws std::invalid_argument when the wafer leaves one of them non-positive.
MicroArch microarch_for(const wafer::WaferParams& wafer);

/// Throws the std::domain_error of checked_mul or checked_add (kept out of line: the checks are inline).
[[noreturn]] void throw_out_of_range(std::int64_t a, std::int64_t b, const char* op, const char* what);

/// a * b, or std::domain_error naming `what` if it leaves the int64 range or either is negative.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t product = 0;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product)) throw_out_of_range(a, b, "x", what);
  return product;
}
/// a + b, likewise.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t sum = 0;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &sum)) throw_out_of_range(a, b, "+", what);
  return sum;
}
/// ceil(a / b) for a >= 0, b >= 1 (b < 1 counts as 1).
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  if (a <= 0) return 0;
  if (b < 1) b = 1;
  return a / b + (a % b != 0 ? 1 : 0);
}

}  // namespace wavel::sim
