// The figures an operator is costed by: declared once, carried from the op graph into MeshIR.
#pragma once

#include <cstdint>

#include "wavel/wafer/simd.hpp"

namespace wavel::workload {

/// Matmul-like ops fill m/k/n (output m x n, reduction k, `batch` independent products). Elementwise
/// ops fold requests into m; `batch` is used only by attention-shaped ops (incl. softmax).
struct OpFigures {
  std::int64_t batch = 1;           ///< independent products (heads x requests for attention)
  std::int64_t m = 0, k = 0, n = 0;  ///< matmul dims; elementwise ops use m x n
  std::int64_t flops = 0;           ///< floating-point operations (an FMA counts 2)
  std::int64_t weight_bytes = 0;    ///< resident parameters read by this op
  std::int64_t input_bytes = 0;     ///< activations read (excluding weights and KV cache)
  std::int64_t output_bytes = 0;    ///< activations written
  std::int64_t kv_cache_bytes = 0;  ///< resident KV cache this op reads (capacity, all requests)
  std::int64_t heads = 0;           ///< attention ops: query heads per request in `batch` (0: not attention)
  std::int64_t kv_heads = 0;        ///< ... and KV heads (GQA: heads / kv_heads queries share one)
  /// Decode matmul (meshgemv): independent GEMVs, outputs side by side along n (n is their sum),
  /// sharing one allreduce.
  std::int64_t fused = 1;
  // A scalar loop (exp, SiLU's division, a norm's sqrt): elements per token row (split over the
  // PEs that share a row), each `scalar_instructions` scalar instructions and `scalar_divisions` divisions.
  std::int64_t scalar_elements = 0;
  std::int64_t scalar_instructions = 0;
  std::int64_t scalar_divisions = 0;
  // Vector instructions per element of the op's rows x n, by form (all zero: `flops` per element at
  // the two-operand fp16 rate, as files written before the mix read).
  wafer::VectorMix vector{};
};

}  // namespace wavel::workload
