// The kernel table (domain.md §3 for the kernels; colours from each kernel's routes).
#include "wavel/meshir/kernels.hpp"

#include "wavel/common/error.hpp"

namespace wavel::meshir {

namespace {

using A = AttentionFit;

// A function-local table: safe to read during other translation units' static initialisation.
const std::vector<KernelInfo>& table() {
  // clang-format off
  //  kernel               name            mover  weights state  attention      vec    groups fused  skew   colours
  static const std::vector<KernelInfo> kTable{
    {Kernel::meshgemm,     "meshgemm",     false, true,   false, A::products, false, true,  false, true,  4,
     "Cannon on an interleaved ring (prefill matmul); two operands, each ring one colour per direction"},
    {Kernel::gemm_t,       "gemm_t",       false, true,   false, A::products, false, false, false, false, 4,
     "Q.K^T without transpose: shift K, reduce-add along X (prefill attention)"},
    {Kernel::meshgemv,     "meshgemv",     false, true,   false, A::products, false, false, true,  false, 3,
     "local GEMV, K-tree allreduce, broadcast (decode matmul and attention); a colour per tree level and the broadcast"},
    {Kernel::elementwise,  "elementwise",  false, true,   false, A::none,     true,  false, false, false, 0,
     "local only: RoPE, SiLU.mul, residual add"},
    {Kernel::allreduce,    "allreduce",    false, true,   false, A::softmax,  true,  false, false, false, 3,
     "scalar allreduce per token (RMSNorm, softmax max and sum) plus local work"},
    {Kernel::kv_shift,     "kv_shift",     false, true,   true,  A::none,     false, false, false, false, 1,
     "append to the shift-based KV cache"},
    {Kernel::lookup,       "lookup",       false, true,   false, A::none,     false, false, false, false, 1,
     "embedding lookup"},
    {Kernel::transfer,     "transfer",     true,  false,  false, A::none,     false, false, false, false, 1,
     "move an activation between regions (or wafers)"},
    {Kernel::relayout,     "relayout",     false, false,  false, A::none,     false, false, false, false, 2,
     "re-map an activation inside a region to another layout"},
    {Kernel::moe_dispatch, "moe_dispatch", true,  false,  false, A::none,     false, false, false, false, 2,
     "multicast tokens to expert regions"},
    {Kernel::moe_combine,  "moe_combine",  true,  false,  false, A::none,     false, false, false, false, 2,
     "gather expert outputs back"},
    {Kernel::allgather,    "allgather",    false, false,  false, A::none,     false, false, false, false, 3,
     "gather an activation split over both axes back along one axis (after a split epilogue); chains into "
     "each line's centre from both ends, then a multicast"},
  };
  // clang-format on
  return kTable;
}

}  // namespace

const std::vector<KernelInfo>& kernel_table() { return table(); }

const KernelInfo& kernel_info(Kernel kernel) {
  const auto& t = table();
  const auto i = static_cast<std::size_t>(kernel);
  if (i >= t.size() || t[i].kernel != kernel) throw InternalError("meshir: kernel table out of enum order");
  return t[i];
}

std::optional<Kernel> parse_kernel(std::string_view text) {
  for (const auto& k : table()) {
    if (k.name == text) return k.kernel;
  }
  return std::nullopt;
}

}  // namespace wavel::meshir
