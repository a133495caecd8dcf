// Wafer presets against domain.md §2 figures.
#include <doctest/doctest.h>

#include "wavel/wafer/wafer.hpp"

TEST_CASE("WSE-3 preset and derived peak") {
  const auto w = *wavel::wafer::find_wafer_preset("wse3");
  CHECK(w.fabric_w_pes == 762);
  CHECK(w.fabric_h_pes == 1176);
  CHECK(w.grid_w_pes == 755);
  CHECK(w.grid_h_pes == 1174);
  CHECK(w.sram_per_pe_bytes == 48 * 1024);
  CHECK(w.fmac_lanes() == 8);
  // 755 * 1174 PEs * 8 lanes * 2 FLOP * 1.1 GHz = 15.60 PFLOP/s (domain.md: about 15.8 on the full fabric).
  CHECK(w.peak_flops_per_s() == doctest::Approx(755.0 * 1174 * 8 * 2 * 1.1e9));
  CHECK(w.peak_flops_per_s() / 1e15 == doctest::Approx(15.6).epsilon(0.01));
  // 886,370 PEs * 48 KiB = 43.6 GB (the vendor's 44 GB counts the whole fabric).
  CHECK(w.total_sram_bytes() == 755LL * 1174 * 49152);
}

TEST_CASE("WSE-2 preset") {
  const auto w = *wavel::wafer::find_wafer_preset("wse2");
  CHECK(w.grid_w_pes == 750);
  CHECK(w.grid_h_pes == 994);
  CHECK(w.fmac_lanes() == 4);
  CHECK(w.peak_flops_per_s() / 1e15 == doctest::Approx(6.56).epsilon(0.01));
  CHECK_FALSE(wavel::wafer::find_wafer_preset("wse4").has_value());
}

TEST_CASE("defective PEs reduce the usable count once each") {
  auto w = *wavel::wafer::find_wafer_preset("wse3");
  w.grid_w_pes = 10;
  w.grid_h_pes = 10;
  w.defective_pes = {{1, 1}, {1, 1}, {9, 9}, {10, 0}};  // a duplicate and one outside the grid
  CHECK(w.usable_pes() == 98);
}

TEST_CASE("vector instructions: one table in enum order, rates by hand from widths and SRAM ports") {
  using wavel::wafer::VectorForm;
  const auto& table = wavel::wafer::vector_forms();
  for (std::size_t i = 0; i < table.size(); ++i) CHECK(static_cast<std::size_t>(table[i].form) == i);
  const auto w2 = *wavel::wafer::find_wafer_preset("wse2");
  const auto w3 = *wavel::wafer::find_wafer_preset("wse3");
  // WSE-2 ports: 8 B read, 4 B write a cycle. @fmach reads 4 B and writes 2 B per element: 2 a cycle
  // (its SDK width is 4); a sum into a scalar reads 2 B, writes none: its width, 4; @fmaxh is 1 wide.
  CHECK(w2.vector_rate(VectorForm::fmach) == 2);
  CHECK(w2.vector_rate(VectorForm::fp16_vv) == 2);
  CHECK(w2.vector_rate(VectorForm::fp16_vs) == 2);  // the 32-bit write port: two fp16 results
  CHECK(w2.vector_rate(VectorForm::fp16_sum) == 4);
  CHECK(w2.vector_rate(VectorForm::fp16_max) == 1);
  CHECK(w2.vector_rate(VectorForm::fp16_max_vv) == 1);
  CHECK(w2.vector_rate(VectorForm::fmachs) == 1);  // 6 B read per element through 8 B of ports
  CHECK(w2.vector_rate(VectorForm::fmacs) == 1);   // fp32 FMAC: width 1 on both generations
  // WSE-3 ports: 16 B read, 8 B write.
  CHECK(w3.vector_rate(VectorForm::fmach) == 4);
  CHECK(w3.vector_rate(VectorForm::fp16_vs) == 4);
  CHECK(w3.vector_rate(VectorForm::fp16_sum) == 8);
  CHECK(w3.vector_rate(VectorForm::fp16_max) == 8);
  CHECK(w3.vector_rate(VectorForm::fp_convert) == 2);  // writes 4 B per element
  CHECK(w3.vector_rate(VectorForm::fmacs) == 1);
  CHECK(w3.fmac_lanes() == w3.simd_widths[static_cast<std::size_t>(VectorForm::fmach)]);
}

TEST_CASE("SRAM reserved for code, stack and task table: placement fills the rest") {
  const auto w = *wavel::wafer::find_wafer_preset("wse3");
  // WaferLLM's WSE-3 prefill build leaves data 0x4c70..0xf680: 43,536 of 49,152 bytes.
  CHECK(w.sram_reserved_per_pe_bytes == 49152 - (0xf680 - 0x4c70));
  CHECK(w.sram_data_per_pe_bytes() == 43536);
  CHECK(w.total_sram_data_bytes() == w.usable_pes() * 43536);
  CHECK(w.total_sram_bytes() == w.usable_pes() * 49152);
}
