// WSE-2/WSE-3 presets from domain.md §2 and the figures derived from them.
#include "wavel/wafer/wafer.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>

namespace wavel::wafer {

namespace {

// Shared by both generations: 48 KiB SRAM per PE, one 32-bit wavelet per link per cycle, 24
// colours, the scalar division of Cerebras's csl-examples. alpha is about one cycle per hop; beta is
// "tens of cycles" and meant to be calibrated, so 30 is only a starting point.
WaferParams common_params() {
  WaferParams p;
  p.sram_per_pe_bytes = 48 * 1024;
  // WaferLLM's WSE-3 prefill build (woonyee28/WaferLLM Prefill/compile.py, SDK 2.10) leaves data the
  // window 0x4c70..0xf680 of the 48 KiB: 43,536 bytes, so 5,616 go to code, stack, task table and
  // runtime (a minimal memcpy kernel's ELF takes 4,176 more than its data; MeshGEMM's 5,776). No
  // WSE-2 figure is published: the same CSL runtime is assumed.
  p.sram_reserved_per_pe_bytes = 5616;
  p.clock_hz = 1.1e9;  // WaferLLM's launch scripts; uncertain on WSE-3 (results/README.md, the clock)
  p.link_bytes_per_cycle = 4;
  // csl-examples benchmark-libs/allreduce/pe.csl: "about 50 cycles" for a scalar fp32 division. No
  // WSE-3 figure is published; the same ISA's software division is assumed.
  p.scalar_division_cycles = 50.0;
  p.alpha_cycles_per_hop = 1.0;
  p.beta_cycles_per_stage = 30.0;
  p.routable_colours = 24;
  p.io_border_cols = 7;  // the host-I/O border takes 7 columns and 2 rows of the fabric
  p.io_border_rows = 2;
  return p;
}

// What a generation sets beyond common_params(); its grid is then the largest usable one.
struct Generation {
  const char* preset;
  const char* calibrated_params;
  std::int64_t fabric_w_pes, fabric_h_pes;
  std::int64_t VectorFormInfo::*simd_width;
  double clock_hz_documented_min, clock_hz_documented_max;
  std::int64_t sram_read_bytes_per_cycle, sram_write_bytes_per_cycle;
};

WaferParams of_generation(const Generation& g) {
  WaferParams p = common_params();
  p.preset = g.preset;
  p.calibrated_params = g.calibrated_params;
  p.fabric_w_pes = g.fabric_w_pes;
  p.fabric_h_pes = g.fabric_h_pes;
  for (const auto& f : vector_forms()) p.simd_widths[static_cast<std::size_t>(f.form)] = f.*(g.simd_width);
  p.clock_hz_documented_min = g.clock_hz_documented_min;
  p.clock_hz_documented_max = g.clock_hz_documented_max;
  p.sram_read_bytes_per_cycle = g.sram_read_bytes_per_cycle;
  p.sram_write_bytes_per_cycle = g.sram_write_bytes_per_cycle;
  p.grid_w_pes = p.max_grid_w_pes();
  p.grid_h_pes = p.max_grid_h_pes();
  return p;
}

// Parameters fitted on WaferLLM's WSE-2 runs (docs/calibration.md). Clock: 850 MHz in Cerebras's SDK
// benchmarks, 1.1 GHz in WaferLLM's scripts (domain.md 2). SRAM ports: the SDK appendix's "two 32-bit
// reads and one 32-bit write" per cycle; an FP16 FMAC reads two elements and writes one, so WSE-2 runs
// it at 2 elements per cycle (domain.md 2b; WaferLLM's WSE-2 end-to-end points behave so).
WaferParams wse2() {
  return of_generation({"wse2", "params/wse2-waferllm.yaml", 757, 996, &VectorFormInfo::width_wse2, 0.85e9, 1.1e9, 8, 4});
}

// Kernel constants from WSE-3 runs, the rest via WSE-2 (docs/calibration.md). Clock: 1.1 GHz in
// WaferLLM's code, 875 MHz in other WSE-3 codebases, about 750 MHz effective in one CS-3 timer sweep
// (domain.md 2b): uncertain. SRAM ports: 2 x 64-bit reads and 1 x 64-bit write: WaferLLM's WSE-3
// MeshGEMM runs at Mt = 8 and 16 imply 4 FMAC elements per cycle, and the vendor's 21 PB/s over 900k
// PEs at 1.1 GHz (21 B/cycle) needs them. The SIMD width of 8 is then bound by the ports.
WaferParams wse3() {
  return of_generation({"wse3", "params/wse3.yaml", 762, 1176, &VectorFormInfo::width_wse3, 0.75e9, 1.1e9, 16, 8});
}

}  // namespace

std::int64_t WaferParams::usable_pes() const {
  std::set<std::pair<std::int64_t, std::int64_t>> distinct;
  for (const auto& pe : defective_pes) {
    if (pe.x >= 0 && pe.x < grid_w_pes && pe.y >= 0 && pe.y < grid_h_pes) distinct.emplace(pe.x, pe.y);
  }
  return grid_w_pes * grid_h_pes - static_cast<std::int64_t>(distinct.size());
}

double WaferParams::peak_flops_per_s() const {
  return static_cast<double>(usable_pes()) * static_cast<double>(fmac_lanes()) * 2.0 * clock_hz;
}

std::int64_t WaferParams::vector_rate(VectorForm form) const {
  return wafer::vector_rate(form, simd_widths[static_cast<std::size_t>(form)], sram_read_bytes_per_cycle,
                            sram_write_bytes_per_cycle);
}

std::int64_t WaferParams::total_sram_bytes() const { return usable_pes() * sram_per_pe_bytes; }

DefectIndex::DefectIndex(const WaferParams& wafer) : w_(wafer.grid_w_pes), h_(wafer.grid_h_pes) {
  if (wafer.defective_pes.empty() || w_ < 1 || h_ < 1) return;
  const std::int64_t stride = w_ + 1;
  sums_.assign(static_cast<std::size_t>(stride * (h_ + 1)), 0);
  for (const auto& pe : wafer.defective_pes) {
    if (pe.x < 0 || pe.x >= w_ || pe.y < 0 || pe.y >= h_) continue;
    auto& cell = sums_[static_cast<std::size_t>((pe.y + 1) * stride + pe.x + 1)];
    if (cell == 0) ++defects_;
    cell = 1;  // listed twice counts once
  }
  for (std::int64_t y = 1; y <= h_; ++y) {
    for (std::int64_t x = 1; x <= w_; ++x) {
      const auto i = static_cast<std::size_t>(y * stride + x);
      sums_[i] += sums_[i - 1] + sums_[i - static_cast<std::size_t>(stride)] - sums_[i - static_cast<std::size_t>(stride) - 1];
    }
  }
}

std::int64_t DefectIndex::count(std::int64_t x, std::int64_t y, std::int64_t w, std::int64_t h) const {
  if (defects_ == 0) return 0;
  const std::int64_t x0 = std::clamp<std::int64_t>(x, 0, w_), y0 = std::clamp<std::int64_t>(y, 0, h_);
  const std::int64_t x1 = std::clamp<std::int64_t>(x + w, x0, w_), y1 = std::clamp<std::int64_t>(y + h, y0, h_);
  const std::int64_t stride = w_ + 1;
  const auto s = [&](std::int64_t cx, std::int64_t cy) { return sums_[static_cast<std::size_t>(cy * stride + cx)]; };
  return s(x1, y1) - s(x0, y1) - s(x1, y0) + s(x0, y0);
}

std::vector<PeCoord> random_defects(std::int64_t grid_w, std::int64_t grid_h, std::int64_t count, std::uint64_t seed,
                                    const std::vector<PeCoord>& taken) {
  const std::int64_t pes = grid_w * grid_h;
  std::unordered_set<std::int64_t> used;
  for (const auto& pe : taken) {
    if (pe.x >= 0 && pe.x < grid_w && pe.y >= 0 && pe.y < grid_h) used.insert(pe.y * grid_w + pe.x);
  }
  if (count < 0 || grid_w < 1 || grid_h < 1 || count > pes - static_cast<std::int64_t>(used.size())) {
    throw std::invalid_argument("random_defects: " + std::to_string(count) + " defects do not fit a " +
                                std::to_string(grid_w) + " x " + std::to_string(grid_h) + " grid");
  }
  // splitmix64: a fixed, portable sequence (std:: distributions differ between libraries).
  std::uint64_t state = seed;
  const auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<PeCoord> out;
  out.reserve(static_cast<std::size_t>(count));
  while (static_cast<std::int64_t>(out.size()) < count) {
    const auto index = static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(pes));  // bias < pes / 2^64
    if (!used.insert(index).second) continue;
    out.push_back(PeCoord{index % grid_w, index / grid_w});
  }
  return out;
}

std::vector<std::string> wafer_preset_names() { return {"wse2", "wse3"}; }

std::optional<WaferParams> find_wafer_preset(std::string_view name) {
  if (name == "wse2") return wse2();
  if (name == "wse3") return wse3();
  return std::nullopt;
}

}  // namespace wavel::wafer
