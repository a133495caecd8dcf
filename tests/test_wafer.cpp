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
  CHECK(w.simd_fp16_lanes == 8);
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
  CHECK(w.simd_fp16_lanes == 4);
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
