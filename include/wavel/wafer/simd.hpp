// The PE's vector instructions by operand form: SIMD width per generation (Cerebras SDK 2.10, CSL
// appendix "SIMD Mode") and the SRAM bytes each element reads and writes. One table: the presets,
// the cost model, the simulator and MeshIR's text form all derive from it.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace wavel::wafer {

/// A vector instruction and the shape of its operands (one element of each DSD per lane).
enum class VectorForm {
  fmach,        ///< @fmach: fp16 d = a + b * s (GEMM/GEMV inner loop)
  fp16_vv,      ///< @faddh/@fsubh/@fmulh of two fp16 vectors into a third
  fp16_vs,      ///< @faddh/@fsubh/@fmulh of an fp16 vector and a scalar
  fp16_sum,     ///< @faddh accumulating a vector into one scalar (a row sum)
  fp16_max_vv,  ///< @fmaxh of two fp16 vectors
  fp16_max,     ///< @fmaxh accumulating a vector into one scalar (a row max)
  fp16_fill,    ///< @fmovh of a constant
  mov16,        ///< @mov16: copy an fp16 vector
  fmachs,       ///< @fmachs: fp32 accumulator += fp16 * scalar
  fp32_vv,      ///< @fadds of two fp32 vectors
  fp_convert,   ///< @fh2s/@fs2h: fp16 <-> fp32
  fmacs,        ///< @fmacs: fp32 FMAC (absent from the SDK's SIMD table: width 1)
};
inline constexpr std::size_t kVectorForms = 12;

/// Instructions per element of an op's local rows x columns, one count per form.
using VectorMix = std::array<std::int32_t, kVectorForms>;

struct VectorFormInfo {
  VectorForm form;
  std::string_view name;         ///< MeshIR and params key
  std::int64_t read_bytes;       ///< SRAM bytes read per element (vector operands; a scalar is a register)
  std::int64_t write_bytes;      ///< SRAM bytes written per element (none when the result is a scalar)
  std::int64_t width_wse2;       ///< elements per cycle without bank conflicts, WSE-2
  std::int64_t width_wse3;       ///< ... WSE-3
};

/// Every form, in enum order.
const std::array<VectorFormInfo, kVectorForms>& vector_forms();

inline const VectorFormInfo& info(VectorForm form) { return vector_forms()[static_cast<std::size_t>(form)]; }

/// Elements per cycle of `form` on a PE whose instruction issues `width` lanes and whose SRAM ports move
/// `read_bytes_per_cycle` / `write_bytes_per_cycle`: the narrowest of the three (at least 1).
std::int64_t vector_rate(VectorForm form, std::int64_t width, std::int64_t read_bytes_per_cycle,
                         std::int64_t write_bytes_per_cycle);

}  // namespace wavel::wafer
