// The MeshIR kernel table: what each kernel is, declared once. The text form, the verifier, the
// placer, the SRAM model, the cost model and the simulator look a kernel's traits up here (its name
// through to_string/parse_kernel of schedule.hpp); its cost
// (cost/model.cpp) and its simulation (sim/src/kernels/plan.cpp) are its own functions.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "wavel/meshir/schedule.hpp"

namespace wavel::meshir {

/// The attention roles a kernel may compute (an op's `attn=`).
enum class AttentionFit {
  none,      ///< no attention role
  products,  ///< scores and values (Q.K^T, P.V)
  softmax,   ///< the softmax's max and sum
};

/// One kernel's traits. Add a kernel: its enum value in schedule.hpp, one row here, its cost and its
/// simulation.
struct KernelInfo {
  Kernel kernel;
  std::string_view name;             ///< text form and result files
  bool moves_between_regions;        ///< carries its input from `region` to `to_region`
  bool holds_weights;                ///< its weights and KV cache stay resident on its PEs
  bool resident_state;               ///< its output is state kept in its own layout (the KV cache)
  AttentionFit attention;            ///< attention roles it may compute
  bool vector_mix;                   ///< runs a per-element vector instruction mix (`vec_<form>`)
  bool grouped_products;             ///< runs work.products > 1 products one after another
  bool fused_products;               ///< reduces work.fused > 1 products in one tree
  bool skewable;                     ///< may reuse an already aligned (skewed) input
  int route_colours;                 ///< routing colours it occupies per PE
  std::string_view what;             ///< one line for the MeshIR reference
};

/// Every kernel, in enum order.
const std::vector<KernelInfo>& kernel_table();

/// The row of `kernel`.
const KernelInfo& kernel_info(Kernel kernel);

/// Kernels that carry an activation from their `region` to `to_region`: transfer, moe_dispatch, moe_combine.
inline bool moves_between_regions(Kernel kernel) { return kernel_info(kernel).moves_between_regions; }

/// Kernels that only move or re-map activations and so keep no weights: the movers and relayout.
inline bool holds_no_weights(Kernel kernel) { return !kernel_info(kernel).holds_weights; }

}  // namespace wavel::meshir
