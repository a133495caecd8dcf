// Wafer hardware parameters (WSE-2/WSE-3 presets, every number overridable) and derived figures.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wavel/wafer/pe_timing.hpp"
#include "wavel/wafer/simd.hpp"

namespace wavel::wafer {

/// A processing element's coordinates in the kernel grid (0-based, x across, y down).
struct PeCoord {
  std::int64_t x = 0;
  std::int64_t y = 0;
};

/// Physical parameters of one wafer. Sources and uncertainty: docs/config.md (the wafer table).
struct WaferParams {
  std::string preset;                       ///< "wse2" or "wse3"
  std::string calibrated_params;            ///< the committed params file that predicts this preset, under
                                            ///< the tool's data directory (cost::calibrated_params_path)
  std::int64_t fabric_w_pes = 0;            ///< full PE fabric, including the host-I/O border
  std::int64_t fabric_h_pes = 0;
  std::int64_t io_border_cols = 0;          ///< fabric columns taken by host I/O
  std::int64_t io_border_rows = 0;          ///< fabric rows taken by host I/O
  std::int64_t grid_w_pes = 0;              ///< kernel rectangle the tool may use
  std::int64_t grid_h_pes = 0;
  std::int64_t sram_per_pe_bytes = 0;
  /// SRAM a kernel's data cannot use: its code, stack, task table and the runtime (memcpy). Placement
  /// fits data into the rest (sram_data_per_pe_bytes).
  std::int64_t sram_reserved_per_pe_bytes = 0;
  double clock_hz = 0;
  /// The range of clocks public sources give for this generation (0: none documented). Costs are in
  /// cycles, so every time scales with 1 / clock_hz: the range is printed beside each prediction.
  double clock_hz_documented_min = 0;
  double clock_hz_documented_max = 0;
  /// SIMD width of each vector instruction form (simd.hpp's table, the preset's generation); config
  /// key `simd_fp16_lanes` is @fmach's.
  std::array<std::int64_t, kVectorForms> simd_widths{};
  std::int64_t link_bytes_per_cycle = 0;    ///< one 32-bit wavelet per cycle per direction
  std::int64_t sram_read_bytes_per_cycle = 0;   ///< a PE's SRAM read ports together (WSE-2 2 x 32, WSE-3 2 x 64 bits)
  std::int64_t sram_write_bytes_per_cycle = 0;  ///< a PE's SRAM write port (WSE-2 32, WSE-3 64 bits)
  double scalar_division_cycles = 0;        ///< one scalar (software) division, sqrt or reciprocal
  double alpha_cycles_per_hop = 0;          ///< pre-routed hop latency
  double beta_cycles_per_stage = 0;         ///< software routing stage (receive + re-send); fit it
  std::int64_t routable_colours = 0;        ///< virtual channels per router
  std::vector<PeCoord> defective_pes;       ///< PEs inside the grid that must not be used
  PeTiming pe_timing;                       ///< the simulator's PE software timing (a params file's sim_timing)

  /// SRAM per PE left for weights, KV cache and activations.
  [[nodiscard]] std::int64_t sram_data_per_pe_bytes() const { return sram_per_pe_bytes - sram_reserved_per_pe_bytes; }
  /// @fmach's width: FP16 FMAC lanes per cycle per PE.
  [[nodiscard]] std::int64_t fmac_lanes() const { return simd_widths[static_cast<std::size_t>(VectorForm::fmach)]; }
  std::int64_t& fmac_lanes() { return simd_widths[static_cast<std::size_t>(VectorForm::fmach)]; }
  /// Elements per cycle of a vector form: its width, bounded by the SRAM ports.
  [[nodiscard]] std::int64_t vector_rate(VectorForm form) const;
  /// Largest kernel rectangle: the fabric less its I/O border.
  [[nodiscard]] std::int64_t max_grid_w_pes() const { return fabric_w_pes - io_border_cols; }
  [[nodiscard]] std::int64_t max_grid_h_pes() const { return fabric_h_pes - io_border_rows; }
  /// Grid PEs minus distinct defective PEs.
  [[nodiscard]] std::int64_t usable_pes() const;
  /// Dense FP16 peak of the usable PEs: PEs x SIMD x 2 x clock.
  [[nodiscard]] double peak_flops_per_s() const;
  /// SRAM of the usable PEs.
  [[nodiscard]] std::int64_t total_sram_bytes() const;
  /// ... less each PE's reserve: what placement can fill with data.
  [[nodiscard]] std::int64_t total_sram_data_bytes() const { return usable_pes() * sram_data_per_pe_bytes(); }
};

/// Defective PEs of a wafer's grid, counted in any rectangle in constant time (a 2D prefix sum), so
/// that a map of thousands of defects costs the search no more than a handful.
class DefectIndex {
 public:
  DefectIndex() = default;
  explicit DefectIndex(const WaferParams& wafer);
  [[nodiscard]] bool empty() const { return defects_ == 0; }
  /// Distinct defective PEs inside [x, x + w) x [y, y + h), clipped to the grid.
  [[nodiscard]] std::int64_t count(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h) const;
  /// Whether PE (x, y) is defective.
  [[nodiscard]] bool at(std::int64_t x, std::int64_t y) const { return count(x, y, 1, 1) > 0; }

 private:
  std::int64_t w_ = 0, h_ = 0, defects_ = 0;
  std::vector<std::int32_t> sums_;  ///< (w_ + 1) x (h_ + 1): defects in [0, x) x [0, y)
};

/// `count` distinct PEs of a grid_w x grid_h grid, none in `taken`, drawn by a generator seeded
/// with `seed`: the same arguments always give the same PEs in the same order (the random defect
/// maps of wafer.defect_rate). Throws std::invalid_argument when fewer PEs than that are free.
std::vector<PeCoord> random_defects(std::int64_t grid_w, std::int64_t grid_h, std::int64_t count, std::uint64_t seed,
                                    const std::vector<PeCoord>& taken);

/// Names of the presets, in a stable order.
std::vector<std::string> wafer_preset_names();

/// The preset with this name, or std::nullopt.
std::optional<WaferParams> find_wafer_preset(std::string_view name);

}  // namespace wavel::wafer
