// WaferLLM's timed layer, op for op, in the shapes its run configurations set.
#include "wavel/calibrate/waferllm_layer.hpp"

#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "wavel/common/error.hpp"

namespace wavel::calibrate {

namespace {

using meshir::AttentionRole;
using meshir::Axis;
using meshir::Dim;
using meshir::Kernel;
using meshir::PlacedOp;

std::int64_t round_up(std::int64_t value, std::int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// The divisor of p nearest sqrt(p), the smaller on a tie.
std::int64_t groups_near_sqrt(std::int64_t p) {
  const double root = std::sqrt(static_cast<double>(p));
  std::int64_t best = 1;
  for (std::int64_t d = 1; d <= p; ++d) {
    if (p % d != 0) continue;
    if (std::abs(static_cast<double>(d) - root) < std::abs(static_cast<double>(best) - root)) best = d;
  }
  return best;
}

// Ops on the whole P x P square, one after another: WaferLLM's layer is straight-line code.
class LayerBuilder {
 public:
  LayerBuilder(const WaferllmRun& run, meshir::Schedule& s) : run_(run), s_(s) {}

  PlacedOp& add(std::string name, Kernel kernel) {
    PlacedOp op;
    op.name = std::move(name);
    op.kernel = kernel;
    op.region = 0;
    op.used = s_.regions[0];
    op.step = static_cast<int>(s_.ops.size());
    // Decode: features along Y, the token replicated along X. Prefill: tokens along Y, features along X.
    const bool decode = run_.phase == workload::Phase::decode;
    op.in_layout.on_x = decode ? Dim::none : Dim::features;
    op.in_layout.on_y = decode ? Dim::features : Dim::tokens;
    op.in_layout.part_x = decode ? 1 : run_.grid;
    op.in_layout.part_y = run_.grid;
    op.out_layout = op.in_layout;
    // WSE-2's decode keeps one colour set per axis: on a square both axes cost the same, so every
    // reduction is written along Y and no route switch is charged (there is none to charge).
    op.reduce_axis = decode ? Axis::y : Axis::x;
    if (!s_.ops.empty()) op.inputs = {static_cast<int>(s_.ops.size()) - 1};
    s_.ops.push_back(std::move(op));
    return s_.ops.back();
  }

  PlacedOp& product(std::string name, Kernel kernel, std::int64_t m, std::int64_t k, std::int64_t n) {
    PlacedOp& op = add(std::move(name), kernel);
    op.work.m = m;
    op.work.k = k;
    op.work.n = n;
    op.work.flops = 2 * m * k * n;
    op.work.input_bytes = 2 * m * k;
    op.work.output_bytes = 2 * m * n;
    if (kernel == Kernel::meshgemv) op.group = run_.grid / run_.group_num;
    return op;
  }

  // Vector work of `kind`'s instruction mix in this phase (workload::vector_mix, times `tensors` it
  // runs over) on rows x n, and a scalar loop of `per_row` elements of each row.
  PlacedOp& local(std::string name, Kernel kernel, workload::OpKind kind, std::int64_t rows, std::int64_t n,
                  std::int64_t per_row, workload::ScalarLoop loop, std::int32_t tensors = 1) {
    PlacedOp& op = add(std::move(name), kernel);
    op.work.m = rows;
    op.work.n = n;
    op.work.vector = workload::vector_mix(kind, run_.phase);
    std::int64_t per_element = 0;
    for (auto& count : op.work.vector) per_element += (count *= tensors);
    op.work.flops = per_element * rows * n;
    op.work.input_bytes = op.work.output_bytes = 2 * rows * n;
    op.work.scalar_elements = per_row;
    op.work.scalar_instructions = loop.instructions;
    op.work.scalar_divisions = loop.divisions;
    if (kernel == Kernel::allreduce && run_.phase == workload::Phase::decode) op.group = run_.grid / run_.group_num;
    return op;
  }

  PlacedOp& attention(PlacedOp& op, AttentionRole role) {
    op.attention = role;
    op.work.heads = 1;  // one head as wide as the model (n_heads 1, head_dim = dim)
    op.work.kv_heads = 1;
    op.work.batch = 1;
    return op;
  }

 private:
  const WaferllmRun& run_;
  meshir::Schedule& s_;
};

using workload::OpKind;

void decode_layer(LayerBuilder& b, const WaferllmRun& r) {
  using workload::kExpLoop;
  using workload::kRsqrtLoop;
  using workload::kSiluLoop;
  const std::int64_t d = r.dim, f = r.ffn_dim, s = r.seq_len;
  b.local("attn_norm", Kernel::allreduce, OpKind::norm, 1, d, 1, kRsqrtLoop);
  b.product("qkv_proj", Kernel::meshgemv, 1, d, 3 * d).work.fused = 3;
  b.local("rope", Kernel::elementwise, OpKind::rope, 1, d, 0, {}, 2);  // Q and K
  b.attention(b.product("attn_scores", Kernel::meshgemv, 1, d, s), AttentionRole::scores);
  PlacedOp& softmax = b.local("softmax", Kernel::allreduce, OpKind::softmax, 1, s, s, kExpLoop);
  b.attention(softmax, AttentionRole::softmax).rounds = 2;
  b.attention(b.product("attn_values", Kernel::meshgemv, 1, s, d), AttentionRole::values);
  b.product("o_proj", Kernel::meshgemv, 1, d, d);
  b.local("attn_residual", Kernel::elementwise, OpKind::residual, 1, d, 0, {});
  b.local("mlp_norm", Kernel::allreduce, OpKind::norm, 1, d, 1, kRsqrtLoop);
  b.product("gate_up_proj", Kernel::meshgemv, 1, d, 2 * f).work.fused = 2;
  // z2_silu loops over bsz * dim_p_pe elements (decode.csl), not ffn_dim_p_pe: what was timed.
  b.local("act", Kernel::elementwise, OpKind::activation, 1, f, d, kSiluLoop);
  b.product("down_proj", Kernel::meshgemv, 1, f, d);
  b.local("mlp_residual", Kernel::elementwise, OpKind::residual, 1, d, 0, {});
}

void prefill_layer(LayerBuilder& b, const WaferllmRun& r) {
  using workload::kExpLoop;
  using workload::kRsqrtLoop;
  using workload::kSiluLoop;
  const std::int64_t d = r.dim, f = r.ffn_dim, t = r.seq_len;
  b.local("attn_norm", Kernel::allreduce, OpKind::norm, t, d, 1, kRsqrtLoop);
  b.product("q_proj", Kernel::meshgemm, t, d, d);
  b.product("k_proj", Kernel::meshgemm, t, d, d).input_skewed = true;
  b.product("v_proj", Kernel::meshgemm, t, d, d).input_skewed = true;
  b.local("rope", Kernel::elementwise, OpKind::rope, t, d, 0, {}, 2);  // Q and K
  b.attention(b.product("attn_scores", Kernel::gemm_t, t, d, t), AttentionRole::scores);
  PlacedOp& softmax = b.local("softmax", Kernel::allreduce, OpKind::softmax, t, t, t, kExpLoop);
  b.attention(softmax, AttentionRole::softmax).rounds = 2;
  b.attention(b.product("attn_values", Kernel::meshgemm, t, t, d), AttentionRole::values);
  b.product("o_proj", Kernel::meshgemm, t, d, d);
  b.local("mlp_norm", Kernel::allreduce, OpKind::norm, t, d, 1, kRsqrtLoop);
  b.product("up_proj", Kernel::meshgemm, t, d, f);
  b.product("gate_proj", Kernel::meshgemm, t, d, f).input_skewed = true;
  b.local("act", Kernel::elementwise, OpKind::activation, t, f, f, kSiluLoop);
  b.product("down_proj", Kernel::meshgemm, t, f, d);
  b.local("residual", Kernel::elementwise, OpKind::residual, t, d, 0, {});
}

}  // namespace

WaferllmRun waferllm_run(const ReferencePoint& point, const workload::ModelSpec& model) {
  const auto fail = [&](const std::string& key, const std::string& message) {
    throw DataError({Diagnostic{"", point.line, point.column, key, message}});
  };
  if (model.moe || model.mla) fail("model", "WaferLLM's measured layers are dense attention and MLP; '" + point.model + "' is not");
  if (point.grid_pes < 1) fail("grid", "the grid side must be positive");
  WaferllmRun run;
  run.phase = point.phase;
  run.grid = point.grid_pes;
  run.layers = model.num_layers;
  run.dim = point.dim > 0 ? point.dim : round_up(model.hidden, run.grid);
  run.ffn_dim = point.ffn_dim > 0 ? point.ffn_dim : round_up(model.ffn, run.grid);
  run.seq_len = point.seq_len > 0 ? point.seq_len : round_up(point.tokens(), run.grid);
  run.group_num = point.group_num > 0 ? point.group_num : groups_near_sqrt(run.grid);
  return run;
}

meshir::Schedule waferllm_layer_schedule(const WaferllmRun& run, const wafer::WaferParams& wafer) {
  if (run.grid < 1 || run.grid > std::min(wafer.grid_w_pes, wafer.grid_h_pes)) {
    throw DataError({Diagnostic{"", 0, 0, "grid",
                                "region side " + std::to_string(run.grid) + " does not fit the " + wafer.preset +
                                    " grid of " + std::to_string(wafer.grid_w_pes) + " x " + std::to_string(wafer.grid_h_pes)}});
  }
  meshir::Schedule s = meshir::empty_on("waferllm-timed-layer", wafer);
  s.defective_pes.clear();  // the timed runs placed their grid on PEs that worked
  s.regions.push_back(meshir::Rect{0, 0, run.grid, run.grid});
  s.layer_scale = run.layers;
  s.layers_total = run.layers;
  LayerBuilder b(run, s);
  if (run.phase == workload::Phase::decode) {
    decode_layer(b, run);
  } else {
    prefill_layer(b, run);
  }
  return s;
}

}  // namespace wavel::calibrate
