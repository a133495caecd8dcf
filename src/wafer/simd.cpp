// The vector instruction table (Cerebras SDK 2.10 appendix, "SIMD Mode"; operand bytes from the forms).
#include "wavel/wafer/simd.hpp"

#include <algorithm>

namespace wavel::wafer {

const std::array<VectorFormInfo, kVectorForms>& vector_forms() {
  // Widths: the SDK's table per mnemonic (WSE-2 | WSE-3). @fmaxh is 1 wide on WSE-2 and 8 on WSE-3;
  // the conversions 1 | 4; fp32 FMACs are absent from the table and run one element per cycle.
  static const std::array<VectorFormInfo, kVectorForms> table{{
      {VectorForm::fmach, "fmach", 4, 2, 4, 8},
      {VectorForm::fp16_vv, "fp16_vv", 4, 2, 4, 8},
      {VectorForm::fp16_vs, "fp16_vs", 2, 2, 4, 8},
      {VectorForm::fp16_sum, "fp16_sum", 2, 0, 4, 8},
      {VectorForm::fp16_max_vv, "fp16_max_vv", 4, 2, 1, 8},
      {VectorForm::fp16_max, "fp16_max", 2, 0, 1, 8},
      {VectorForm::fp16_fill, "fp16_fill", 0, 2, 4, 8},
      {VectorForm::mov16, "mov16", 2, 2, 4, 8},
      {VectorForm::fmachs, "fmachs", 6, 4, 2, 4},
      {VectorForm::fp32_vv, "fp32_vv", 8, 4, 2, 4},
      {VectorForm::fp_convert, "fp_convert", 2, 4, 1, 4},
      {VectorForm::fmacs, "fmacs", 8, 4, 1, 1},
  }};
  return table;
}

std::int64_t vector_rate(VectorForm form, std::int64_t width, std::int64_t read_bytes_per_cycle,
                         std::int64_t write_bytes_per_cycle) {
  const VectorFormInfo& f = info(form);
  std::int64_t rate = std::max<std::int64_t>(1, width);
  if (f.read_bytes > 0) rate = std::min(rate, read_bytes_per_cycle / f.read_bytes);
  if (f.write_bytes > 0) rate = std::min(rate, write_bytes_per_cycle / f.write_bytes);
  return std::max<std::int64_t>(1, rate);
}

}  // namespace wavel::wafer
