// The wafer section's figures (sources: the Cerebras SDK and WaferLLM, see wafer/wafer.cpp's presets).
#include "detail/wafer_keys.hpp"

#include <cstdint>
#include <utility>

namespace wavel::config::detail {

namespace {

using W = wafer::WaferParams;
constexpr double kMaxMeshSidePes = 100000;
constexpr double kMaxSramBytes = double(std::int64_t{1} << 30);

WaferKey described(std::string name, double lo, double hi, std::string unit, std::string meaning) {
  WaferKey k;
  k.name = std::move(name);
  k.unit = std::move(unit);
  k.meaning = std::move(meaning);
  k.lo = lo;
  k.hi = hi;
  return k;
}

WaferKey count(std::string name, std::int64_t W::*m, double lo, double hi, std::string unit, std::string meaning) {
  WaferKey k = described(std::move(name), lo, hi, std::move(unit), std::move(meaning));
  k.get = [m](const W& w) { return static_cast<double>(w.*m); };
  k.set = [m](W& w, double x) { w.*m = static_cast<std::int64_t>(x); };
  return k;
}

WaferKey real(std::string name, double W::*m, double lo, double hi, bool lo_exclusive, std::string unit,
              std::string meaning) {
  WaferKey k = described(std::move(name), lo, hi, std::move(unit), std::move(meaning));
  k.integer = false;
  k.lo_exclusive = lo_exclusive;
  k.get = [m](const W& w) { return w.*m; };
  k.set = [m](W& w, double x) { w.*m = x; };
  return k;
}

WaferKey swept(WaferKey k, int rank, double lo, double hi) {
  k.sweep_rank = rank;
  k.sweep_lo = lo;
  k.sweep_hi = hi;
  return k;
}

std::vector<WaferKey> build() {
  std::vector<WaferKey> t;
  t.push_back(count("fabric_w_pes", &W::fabric_w_pes, 1, kMaxMeshSidePes, "PEs", "whole PE fabric, columns"));
  t.push_back(count("fabric_h_pes", &W::fabric_h_pes, 1, kMaxMeshSidePes, "PEs", "whole PE fabric, rows"));
  t.push_back(count("io_border_cols", &W::io_border_cols, 0, kMaxMeshSidePes, "PEs", "fabric columns taken by host I/O"));
  t.push_back(count("io_border_rows", &W::io_border_rows, 0, kMaxMeshSidePes, "PEs", "fabric rows taken by host I/O"));
  for (const bool across : {true, false}) {
    WaferKey g = count(across ? "grid_w_pes" : "grid_h_pes", across ? &W::grid_w_pes : &W::grid_h_pes, 1, 0, "PEs",
                       "kernel rectangle the tool may use; 1 ≤ grid ≤ fabric − border");
    g.read_by_hand = true;
    t.push_back(swept(std::move(g), across ? 0 : 1, 1, 0));
  }
  t.push_back(swept(count("sram_per_pe_bytes", &W::sram_per_pe_bytes, 1, kMaxSramBytes, "bytes", "SRAM per PE (48 KiB)"),
                    2, 1024, kMaxSramBytes));
  t.push_back(count("sram_reserved_per_pe_bytes", &W::sram_reserved_per_pe_bytes, 0, kMaxSramBytes, "bytes",
                    "SRAM per PE a kernel's data cannot use (code, stack, task table, runtime); placement fills the "
                    "rest. WaferLLM's WSE-3 prefill build leaves data the window 0x4c70..0xf680 (43,536 bytes; "
                    "`woonyee28/WaferLLM` `Prefill/compile.py`, SDK 2.10); a minimal memcpy kernel's ELF is 4,176 "
                    "bytes over its data and MeshGEMM's 5,776 (ELF sizes measured on a CS-3 in "
                    "`luozoupi/FABRICA-CUDA2CSL-Optmization-Benchmark-and-Agentic-Framework` "
                    "`docs/PERFORMANCE_MODEL.md` §9). No WSE-2 figure is published: the same CSL runtime is assumed"));
  t.push_back(swept(real("clock_hz", &W::clock_hz, 0, 1e12, true, "Hz", "core clock"), 4, 1e6, 1e12));
  WaferKey simd;
  simd.name = "simd_fp16_lanes";
  simd.unit = "FMAC/cycle";
  simd.meaning = "`@fmach`'s SIMD width per PE; the other vector instructions' widths come from the table in "
                 "`include/wavel/wafer/simd.hpp` (below)";
  simd.lo = 1;
  simd.hi = 1024;
  simd.get = [](const W& w) { return static_cast<double>(w.fmac_lanes()); };
  simd.set = [](W& w, double x) { w.fmac_lanes() = static_cast<std::int64_t>(x); };
  t.push_back(swept(std::move(simd), 3, 1, 1024));
  t.push_back(swept(count("link_bytes_per_cycle", &W::link_bytes_per_cycle, 1, 1024, "bytes/cycle",
                          "one 32-bit wavelet per cycle per direction"),
                    5, 1, 1024));
  t.push_back(swept(count("sram_read_bytes_per_cycle", &W::sram_read_bytes_per_cycle, 1, 1024, "bytes/cycle",
                          "a PE's SRAM read ports together: WSE-2 2 × 32 bits (SDK appendix), WSE-3 2 × 64 bits (its "
                          "MeshGEMM runs); an FP16 FMAC then runs 2 or 4 elements a cycle"),
                    6, 1, 1024));
  t.push_back(swept(count("sram_write_bytes_per_cycle", &W::sram_write_bytes_per_cycle, 1, 1024, "bytes/cycle",
                          "a PE's SRAM write port (32 or 64 bits)"),
                    7, 1, 1024));
  t.push_back(real("scalar_division_cycles", &W::scalar_division_cycles, 0, 1e6, false, "cycles",
                   "one software division, square root or reciprocal in a scalar loop (csl-examples: \"about 50 "
                   "cycles\" for fp32; no WSE-3 figure, the same ISA assumed)"));
  WaferKey alpha = swept(real("alpha_cycles_per_hop", &W::alpha_cycles_per_hop, 0, 1e6, false, "cycles/hop",
                              "latency of one hop on a pre-configured route"),
                         8, 0.1, 100);
  alpha.hardware_time = true;
  t.push_back(std::move(alpha));
  t.push_back(real("beta_cycles_per_stage", &W::beta_cycles_per_stage, 0, 1e6, false, "cycles",
                   "one software routing stage; \"tens of cycles\", to be calibrated"));
  t.push_back(swept(count("routable_colours", &W::routable_colours, 1, 1024, "colours",
                          "routable colours (virtual channels) per router"),
                    9, 1, 1024));
  return t;
}

}  // namespace

const std::vector<WaferKey>& wafer_keys() {
  static const std::vector<WaferKey> t = build();
  return t;
}

const std::vector<KeyDoc>& wafer_other_keys() {
  static const std::vector<KeyDoc> t{
      {"preset", "", "`wse3`", "`wse2` or `wse3`: base values for every key below"},
      {"defective_pes", "[x, y]", "`[]`",
       "PEs whose core is lost (their router still forwards): no op's used rectangle may hold one; excluded from "
       "the usable count"},
      {"defect_rate", "1", "`0`", "a further round(rate × grid PEs) defective PEs drawn at random; 0 … 0.01"},
      {"defect_seed", "", "`1`",
       "seeds that draw: the same seed, grid and rate give the same map on any machine (splitmix64)"},
      {"sweep", "", "none", "hardware what-if axes (below)"},
      {"sweep_mode", "", "`product`",
       "`product` of the `sweep` axes, or `one_at_a_time`: the base wafer, then each listed value alone"},
  };
  return t;
}

const WaferKey* find_wafer_key(const std::string& name) {
  for (const auto& k : wafer_keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace wavel::config::detail
