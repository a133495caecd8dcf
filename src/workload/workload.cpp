// Builds the per-layer op graph of one setting (domain.md §3) with FLOPs, weight, activation and KV bytes.
#include "wavel/workload/workload.hpp"

#include <algorithm>

#include <utility>

#include "wavel/common/checked.hpp"
#include "wavel/common/error.hpp"

namespace wavel::workload {

namespace {

using checked::add;
using checked::mul;

// Elementwise FLOP constants: rough operation counts, kept tiny next to the matmuls they sit between.
constexpr std::int64_t kNormFlopsPerElement = 4;        // square, accumulate, rsqrt scale, weight scale
constexpr std::int64_t kRopeFlopsPerPair = 6;           // (x1, x2) -> (x1 c - x2 s, x1 s + x2 c): 4 mul + 2 add
constexpr std::int64_t kSoftmaxFlopsPerElement = 5;     // max, subtract, exp, sum, divide
constexpr std::int64_t kActivationFlopsPerElement = 5;  // SiLU(g) = g / (1 + exp(-g)) is 4, times up is 1
constexpr std::int64_t kResidualFlopsPerElement = 1;    // one add per addend after the first
constexpr std::int64_t kCombineFlopsPerElement = 2;     // scale by the router weight, accumulate
constexpr std::int64_t kTokenIdBytes = 4;               // int32 token ids into the embedding

constexpr int kLayerInput = -1;

/// Appends ops to one layer and hands back their indices for later `inputs`.
class LayerBuilder {
 public:
  explicit LayerBuilder(std::int64_t dtype_bytes) : dt_(dtype_bytes) {}

  /// output (batch x m x n) = input (batch x m x k) . weight (k x n); weight_params counts biases too.
  int matmul(std::string name, OpKind kind, std::int64_t batch, std::int64_t m, std::int64_t k, std::int64_t n,
             std::int64_t weight_params, std::vector<int> inputs) {
    Op op = base(std::move(name), kind, std::move(inputs));
    op.batch = batch;
    op.m = m;
    op.k = k;
    op.n = n;
    op.flops = mul(2, batch, m, k, n);
    op.weight_bytes = mul(weight_params, dt_);
    op.input_bytes = mul(batch, m, k, dt_);
    op.output_bytes = mul(batch, m, n, dt_);
    return push(std::move(op));
  }

  /// An m x n elementwise (or row-reduction) op reading `operands` such tensors.
  int elementwise(std::string name, OpKind kind, std::int64_t m, std::int64_t n, std::int64_t flops,
                  std::int64_t weight_params, std::int64_t operands, std::vector<int> inputs) {
    Op op = base(std::move(name), kind, std::move(inputs));
    op.m = m;
    op.n = n;
    op.flops = flops;
    op.weight_bytes = mul(weight_params, dt_);
    op.input_bytes = mul(operands, m, n, dt_);
    op.output_bytes = mul(m, n, dt_);
    return push(std::move(op));
  }

  /// RMSNorm over rows of width n, with an n-wide weight.
  int norm(std::string name, std::int64_t rows, std::int64_t n, std::vector<int> inputs) {
    const int i = elementwise(std::move(name), OpKind::norm, rows, n, mul(kNormFlopsPerElement, rows, n), n, 1,
                              std::move(inputs));
    scalar_loop(i, 1, kRsqrtLoop);
    return i;
  }
  /// `per_row` elements of each token row of op `i` run `loop`.
  void scalar_loop(int i, std::int64_t per_row, ScalarLoop loop) {
    Op& o = op(i);
    o.scalar_elements = per_row;
    o.scalar_instructions = loop.instructions;
    o.scalar_divisions = loop.divisions;
  }

  Op& op(int index) { return ops_[static_cast<std::size_t>(index)]; }

  Layer finish(std::string name, bool is_moe) {
    Layer layer;
    layer.name = std::move(name);
    layer.is_moe = is_moe;
    for (const Op& o : ops_) {
      layer.param_bytes = add(layer.param_bytes, o.weight_bytes);
      layer.kv_cache_bytes = add(layer.kv_cache_bytes, o.kv_cache_bytes);
      layer.flops = add(layer.flops, o.flops);
    }
    layer.ops = std::move(ops_);
    return layer;
  }

 private:
  static Op base(std::string name, OpKind kind, std::vector<int> inputs) {
    Op op;
    op.name = std::move(name);
    op.kind = kind;
    op.inputs = std::move(inputs);
    return op;
  }

  int push(Op op) {
    ops_.push_back(std::move(op));
    return static_cast<int>(ops_.size()) - 1;
  }

  std::int64_t dt_;
  std::vector<Op> ops_;
};

/// Dimensions shared by every decoder layer of one setting.
struct StepDims {
  std::int64_t requests = 0;
  std::int64_t tokens = 0;       // M: activation rows this step
  std::int64_t query_rows = 0;   // attention rows per request and head: 1 (decode) or the prompt (prefill)
  std::int64_t context = 0;      // keys each query row attends to
  std::int64_t kv_capacity = 0;  // cached tokens resident per request
};

/// Attention core shared by standard and latent attention: scores, softmax, values.
/// Prefill counts the full S x S product: the dense mesh kernel computes it and masks afterwards.
/// `key_inputs` produce the queries and keys, `value_inputs` the values. Returns the index of attn_values.
int attention_core(LayerBuilder& b, const ModelSpec& model, const StepDims& d, std::int64_t kv_heads,
                   std::int64_t qk_width, std::int64_t v_width, std::int64_t k_cache_bytes, std::int64_t v_cache_bytes,
                   std::vector<int> key_inputs, std::vector<int> value_inputs) {
  const std::int64_t batch = mul(d.requests, model.num_heads);
  const int scores = b.matmul("attn_scores", OpKind::attn_scores, batch, d.query_rows, qk_width, d.context, 0,
                              std::move(key_inputs));
  b.op(scores).kv_cache_bytes = k_cache_bytes;
  const std::int64_t probs = mul(d.query_rows, d.context);
  const int softmax = b.elementwise("softmax", OpKind::softmax, d.query_rows, d.context,
                                    mul(kSoftmaxFlopsPerElement, batch, probs), 0, 1, {scores});
  // Softmax runs once per (request, head) like the products around it; the helper is unbatched.
  b.scalar_loop(softmax, d.context, kExpLoop);
  Op& sm = b.op(softmax);
  sm.batch = batch;
  sm.input_bytes = mul(sm.input_bytes, batch);
  sm.output_bytes = mul(sm.output_bytes, batch);
  value_inputs.insert(value_inputs.begin(), softmax);
  const int values = b.matmul("attn_values", OpKind::attn_values, batch, d.query_rows, d.context, v_width, 0,
                              std::move(value_inputs));
  b.op(values).kv_cache_bytes = v_cache_bytes;
  for (int i : {scores, softmax, values}) {
    b.op(i).heads = model.num_heads;
    b.op(i).kv_heads = kv_heads;
  }
  return values;
}

/// attn_norm through attn_residual for grouped-query (or multi-head) attention. Returns attn_residual.
int standard_attention(LayerBuilder& b, const ModelSpec& model, const StepDims& d) {
  const std::int64_t h = model.hidden;
  const std::int64_t hd = model.head_dim;
  const std::int64_t q_width = mul(model.num_heads, hd);
  const std::int64_t kv_width = mul(model.num_kv_heads, hd);
  const std::int64_t q_bias = model.qkv_bias ? q_width : 0;
  const std::int64_t kv_bias = model.qkv_bias ? kv_width : 0;
  const std::int64_t M = d.tokens;

  const int norm = b.norm("attn_norm", M, h, {kLayerInput});
  const int q = b.matmul("q_proj", OpKind::matmul, 1, M, h, q_width, add(mul(h, q_width), q_bias), {norm});
  const int k = b.matmul("k_proj", OpKind::matmul, 1, M, h, kv_width, add(mul(h, kv_width), kv_bias), {norm});
  const int v = b.matmul("v_proj", OpKind::matmul, 1, M, h, kv_width, add(mul(h, kv_width), kv_bias), {norm});
  std::vector<int> rope_inputs{q, k};
  if (model.qk_norm) {
    // Qwen3: per-head RMSNorm of Q and K (one head_dim-wide weight each) before RoPE.
    const std::int64_t rows = mul(M, add(model.num_heads, model.num_kv_heads));
    const int qk = b.elementwise("qk_norm", OpKind::norm, rows, hd, mul(kNormFlopsPerElement, rows, hd), 2 * hd, 1,
                                 {q, k});
    b.scalar_loop(qk, 1, kRsqrtLoop);
    rope_inputs = {qk};
  }
  const std::int64_t rope_rows = mul(M, add(model.num_heads, model.num_kv_heads));
  const int rope = b.elementwise("rope", OpKind::rope, rope_rows, hd, mul(kRopeFlopsPerPair, rope_rows, hd) / 2, 0, 1,
                                 rope_inputs);
  const int append = b.elementwise("kv_append", OpKind::kv_append, M, mul(2, kv_width), 0, 0, 1, {rope, v});

  // GQA: K and V are cached per KV head; the query heads of a group share them.
  const std::int64_t per_token_bytes = mul(kv_width, model.dtype_bytes);
  const std::int64_t cache_bytes = mul(d.requests, d.kv_capacity, per_token_bytes);
  const int values = attention_core(b, model, d, model.num_kv_heads, hd, hd, cache_bytes, cache_bytes, {rope, append}, {append});
  const int o = b.matmul("o_proj", OpKind::matmul, 1, M, q_width, h, mul(q_width, h), {values});
  return b.elementwise("attn_residual", OpKind::residual, M, h, mul(kResidualFlopsPerElement, M, h), 0, 2,
                       {kLayerInput, o});
}

/// attn_norm through attn_residual for DeepSeek multi-head latent attention. Returns attn_residual.
/// Only the latent (kv_lora_rank + qk_rope) is cached; kv_b_proj expands this step's tokens, and attention
/// is counted at the expanded widths (qk_nope + qk_rope, v_head_dim), as if expanded K/V were at hand.
int latent_attention(LayerBuilder& b, const ModelSpec& model, const StepDims& d) {
  const MlaSpec& a = *model.mla;
  const std::int64_t h = model.hidden;
  const std::int64_t heads = model.num_heads;
  const std::int64_t qk_width = add(a.qk_nope_head_dim, a.qk_rope_head_dim);
  const std::int64_t latent = add(a.kv_lora_rank, a.qk_rope_head_dim);
  const std::int64_t M = d.tokens;

  const int norm = b.norm("attn_norm", M, h, {kLayerInput});
  int q = 0;
  if (a.q_lora_rank > 0) {
    const int q_a = b.matmul("q_a_proj", OpKind::matmul, 1, M, h, a.q_lora_rank, mul(h, a.q_lora_rank), {norm});
    const int q_a_norm = b.norm("q_a_norm", M, a.q_lora_rank, {q_a});
    q = b.matmul("q_b_proj", OpKind::matmul, 1, M, a.q_lora_rank, mul(heads, qk_width),
                 mul(a.q_lora_rank, heads, qk_width), {q_a_norm});
  } else {
    q = b.matmul("q_proj", OpKind::matmul, 1, M, h, mul(heads, qk_width), mul(h, heads, qk_width), {norm});
  }
  const int kv_a = b.matmul("kv_a_proj", OpKind::matmul, 1, M, h, latent, mul(h, latent), {norm});
  const int kv_a_norm = b.norm("kv_a_norm", M, a.kv_lora_rank, {kv_a});
  const std::int64_t kv_b_width = mul(heads, add(a.qk_nope_head_dim, a.v_head_dim));
  const int kv_b = b.matmul("kv_b_proj", OpKind::matmul, 1, M, a.kv_lora_rank, kv_b_width,
                            mul(a.kv_lora_rank, kv_b_width), {kv_a_norm});
  // RoPE rotates each head's query rope part and the one key rope part shared by all heads.
  const std::int64_t rope_rows = mul(M, add(heads, 1));
  const int rope = b.elementwise("rope", OpKind::rope, rope_rows, a.qk_rope_head_dim,
                                 mul(kRopeFlopsPerPair, rope_rows, a.qk_rope_head_dim) / 2, 0, 1, {q, kv_a});
  const int append = b.elementwise("kv_append", OpKind::kv_append, M, latent, 0, 0, 1, {kv_a_norm, rope});

  // One latent cache serves both keys and values; charge it once, to the scores.
  const std::int64_t cache_bytes = mul(d.requests, d.kv_capacity, latent, model.dtype_bytes);
  const int values =
      attention_core(b, model, d, heads, qk_width, a.v_head_dim, cache_bytes, 0, {rope, kv_b, append}, {kv_b, append});
  const int o = b.matmul("o_proj", OpKind::matmul, 1, M, mul(heads, a.v_head_dim), h, mul(heads, a.v_head_dim, h),
                         {values});
  return b.elementwise("attn_residual", OpKind::residual, M, h, mul(kResidualFlopsPerElement, M, h), 0, 2,
                       {kLayerInput, o});
}

void dense_mlp(LayerBuilder& b, const ModelSpec& model, std::int64_t M, int residual) {
  const std::int64_t h = model.hidden;
  const std::int64_t f = model.ffn;
  const int norm = b.norm("mlp_norm", M, h, {residual});
  const int gate = b.matmul("gate_proj", OpKind::matmul, 1, M, h, f, mul(h, f), {norm});
  const int up = b.matmul("up_proj", OpKind::matmul, 1, M, h, f, mul(h, f), {norm});
  const int act = b.elementwise("act", OpKind::activation, M, f, mul(kActivationFlopsPerElement, M, f), 0, 2,
                                {gate, up});
  b.scalar_loop(act, f, kSiluLoop);
  const int down = b.matmul("down_proj", OpKind::matmul, 1, M, f, h, mul(f, h), {act});
  b.elementwise("mlp_residual", OpKind::residual, M, h, mul(kResidualFlopsPerElement, M, h), 0, 2, {residual, down});
}

/// Routed experts count FLOPs for the M x top_k routed rows only; their weights count all experts.
void moe_mlp(LayerBuilder& b, const ModelSpec& model, std::int64_t M, int residual) {
  const MoeSpec& e = *model.moe;
  const std::int64_t h = model.hidden;
  const std::int64_t routed = mul(M, e.experts_per_token);
  const int norm = b.norm("mlp_norm", M, h, {residual});
  const int router = b.matmul("router", OpKind::router, 1, M, h, e.num_experts, mul(h, e.num_experts), {norm});
  const int dispatch = b.elementwise("moe_dispatch", OpKind::moe_dispatch, routed, h, 0, 0, 1, {norm, router});
  // gate and up of each expert run as one GEMM of width 2 x expert_ffn.
  const int gate_up = b.matmul("expert_gate_up", OpKind::expert_matmul, 1, routed, h, mul(2, e.expert_ffn),
                               mul(e.num_experts, h, 2, e.expert_ffn), {dispatch});
  const int act = b.elementwise("expert_act", OpKind::activation, routed, e.expert_ffn,
                                mul(kActivationFlopsPerElement, routed, e.expert_ffn), 0, 2, {gate_up});
  b.scalar_loop(act, e.expert_ffn, kSiluLoop);
  const int down = b.matmul("expert_down", OpKind::expert_matmul, 1, routed, e.expert_ffn, h,
                            mul(e.num_experts, e.expert_ffn, h), {act});
  const int combine = b.elementwise("moe_combine", OpKind::moe_combine, routed, h,
                                    mul(kCombineFlopsPerElement, routed, h), 0, 1, {down, router});
  b.op(combine).output_bytes = mul(M, h, model.dtype_bytes);
  for (int i : {dispatch, gate_up, act, down, combine}) {  // what an expert CUT splits
    b.op(i).experts = e.num_experts;
    b.op(i).experts_per_token = e.experts_per_token;
  }

  std::vector<int> addends{residual, combine};
  if (e.shared_expert_ffn > 0) {
    const std::int64_t sf = e.shared_expert_ffn;
    const int s_gate_up = b.matmul("shared_gate_up", OpKind::matmul, 1, M, h, mul(2, sf), mul(h, 2, sf), {norm});
    const int s_act = b.elementwise("shared_act", OpKind::activation, M, sf, mul(kActivationFlopsPerElement, M, sf),
                                    0, 2, {s_gate_up});
    b.scalar_loop(s_act, sf, kSiluLoop);
    const int s_down = b.matmul("shared_down", OpKind::matmul, 1, M, sf, h, mul(sf, h), {s_act});
    addends.push_back(s_down);
  }
  const auto n_addends = static_cast<std::int64_t>(addends.size());
  b.elementwise("mlp_residual", OpKind::residual, M, h, mul(kResidualFlopsPerElement, n_addends - 1, M, h), 0,
                n_addends, addends);
}

void check_buildable(const ModelSpec& model, const WorkloadShape& shape) {
  std::vector<Diagnostic> problems;
  auto report = [&problems](const std::string& key_path, const std::string& message) {
    problems.push_back(Diagnostic{"", 0, 0, key_path, message});
  };
  if (shape.concurrent_requests < 1) {
    report("workloads", "concurrent_requests must be at least 1, got " + std::to_string(shape.concurrent_requests));
  }
  if (shape.input_tokens < 1) {
    report("workloads", "input_tokens must be at least 1, got " + std::to_string(shape.input_tokens));
  }
  if (shape.phase == Phase::decode && shape.output_tokens < 1) {
    report("workloads", "decode needs output_tokens of at least 1, got " + std::to_string(shape.output_tokens));
  }
  if (shape.phase == Phase::prefill && shape.output_tokens < 0) {
    report("workloads", "output_tokens must not be negative, got " + std::to_string(shape.output_tokens));
  }
  if (shape.prompt_chunks < 1 || (shape.phase == Phase::decode && shape.prompt_chunks != 1) ||
      (shape.input_tokens >= 1 && shape.input_tokens % shape.prompt_chunks != 0)) {
    report("search.prompt_chunks", std::to_string(shape.prompt_chunks) + " prompt chunks: " +
                                       (shape.phase == Phase::decode ? "decode has no prompt to chunk (only 1)"
                                                                     : "a count must divide input_tokens (" +
                                                                           std::to_string(shape.input_tokens) + ")"));
  }
  const std::pair<const char*, std::int64_t> sizes[] = {
      {"num_layers", model.num_layers}, {"hidden", model.hidden},     {"num_heads", model.num_heads},
      {"num_kv_heads", model.num_kv_heads}, {"head_dim", model.head_dim}, {"vocab", model.vocab},
      {"dtype_bytes", model.dtype_bytes}};
  for (const auto& [field, value] : sizes) {
    if (value < 1) {
      report("model", model.name + ": " + field + " must be positive, got " + std::to_string(value));
    }
  }
  const bool has_dense_layers = !model.moe || model.moe->first_dense_layers > 0;
  if (has_dense_layers && model.ffn < 1) {
    report("model", model.name + ": ffn must be positive, got " + std::to_string(model.ffn));
  }
  if (model.num_kv_heads > 0 && model.num_heads % model.num_kv_heads != 0) {
    report("model", model.name + ": num_heads must be a multiple of num_kv_heads");
  }
  if (model.moe && (model.moe->num_experts < 1 || model.moe->experts_per_token < 1 ||
                    model.moe->experts_per_token > model.moe->num_experts || model.moe->expert_ffn < 1)) {
    report("model", model.name + ": MoE needs 1 <= experts_per_token <= num_experts and a positive expert_ffn");
  }
  if (model.mla && (model.mla->kv_lora_rank < 1 || model.mla->qk_rope_head_dim < 1 ||
                    model.mla->qk_nope_head_dim < 1 || model.mla->v_head_dim < 1)) {
    report("model", model.name + ": MLA needs positive kv_lora_rank and head widths");
  }
  if (!problems.empty()) throw DataError(std::move(problems));
}

}  // namespace

std::string_view to_string(Phase phase) { return name_of(kPhaseNames, phase); }

std::string_view to_string(OpKind kind) {
  constexpr NameTable<OpKind, 15> kOpKindNames{{
      {OpKind::embedding, "embedding"},
      {OpKind::norm, "norm"},
      {OpKind::matmul, "matmul"},
      {OpKind::rope, "rope"},
      {OpKind::attn_scores, "attn_scores"},
      {OpKind::softmax, "softmax"},
      {OpKind::attn_values, "attn_values"},
      {OpKind::kv_append, "kv_append"},
      {OpKind::activation, "activation"},
      {OpKind::residual, "residual"},
      {OpKind::router, "router"},
      {OpKind::moe_dispatch, "moe_dispatch"},
      {OpKind::expert_matmul, "expert_matmul"},
      {OpKind::moe_combine, "moe_combine"},
      {OpKind::lm_head, "lm_head"},
  }};
  static_assert(static_cast<std::size_t>(OpKind::lm_head) + 1 == kOpKindNames.size(), "an op kind without a name");
  return name_of(kOpKindNames, kind);
}

wafer::VectorMix vector_mix(OpKind kind, Phase phase) {
  using wafer::VectorForm;
  wafer::VectorMix mix{};
  const auto set = [&mix](VectorForm form, std::int32_t count) { mix[static_cast<std::size_t>(form)] = count; };
  const bool decode = phase == Phase::decode;
  switch (kind) {
    case OpKind::norm:
      // decode.csl rmsnorm_x: x*x and the weight scale as two-vector multiplies, a row sum into a
      // scalar, the 1/sqrt scale by @map. prefill.csl rmsnorm_x: x*x and the column sums as
      // two-vector ops along the tokens, the weight and 1/sqrt scales by per-column scalars.
      set(VectorForm::fp16_vv, 2);
      set(decode ? VectorForm::fp16_sum : VectorForm::fp16_vs, decode ? 1 : 2);
      if (decode) set(VectorForm::fp16_vs, 1);
      break;
    case OpKind::rope:
      // Per rotated pair four multiplies, a subtract and an add: 3 per element. Decode multiplies by
      // cos/sin vectors; prefill (xq_rope) by scalars of the column.
      if (decode) {
        set(VectorForm::fp16_vv, 3);
      } else {
        set(VectorForm::fp16_vs, 2);
        set(VectorForm::fp16_vv, 1);
      }
      break;
    case OpKind::softmax:
      // decode.csl softmax_score: scale, subtract the max and multiply by 1/sum with scalars; the max
      // and the sum into scalars. prefill.csl: the scale by a scalar; max, subtract, sum and the
      // final multiply as two-vector ops along the tokens.
      if (decode) {
        set(VectorForm::fp16_vs, 3);
        set(VectorForm::fp16_max, 1);
        set(VectorForm::fp16_sum, 1);
      } else {
        set(VectorForm::fp16_vs, 1);
        set(VectorForm::fp16_max_vv, 1);
        set(VectorForm::fp16_vv, 3);
      }
      break;
    case OpKind::activation:  // SiLU is the scalar loop; then z1 * z2 (z3_mat, z3_comp)
    case OpKind::residual:    // one add per addend after the first (build_workload scales it)
      set(VectorForm::fp16_vv, 1);
      break;
    default:
      break;
  }
  return mix;
}

std::int64_t sampled_token_bytes(std::int64_t requests, std::int64_t microbatches) {
  if (microbatches < 1) throw InternalError("sampled_token_bytes: no micro-batches");
  return (requests + microbatches - 1) / microbatches * kTokenIdBytes;
}

Workload build_workload(const ModelSpec& model, const WorkloadShape& shape) {
  check_buildable(model, shape);

  Workload w;
  w.model = model;
  w.shape = shape;
  const std::int64_t R = shape.concurrent_requests;
  const std::int64_t dt = model.dtype_bytes;
  StepDims d;
  d.requests = R;
  if (shape.phase == Phase::prefill) {
    // One chunk of q tokens per request; chunk c attends to (c + 1) q keys, the mean over chunks is
    // q (C + 1) / 2 (C = 1: the whole prompt).
    const std::int64_t chunks = shape.prompt_chunks;
    const std::int64_t q = shape.input_tokens / chunks;
    d.tokens = mul(R, q, "tokens per step");
    d.query_rows = q;
    d.context = (mul(q, chunks + 1) + 1) / 2;
    d.kv_capacity = shape.input_tokens;
  } else {
    d.tokens = R;
    d.query_rows = 1;
    d.context = add(shape.input_tokens, shape.output_tokens / 2);  // mean context over the generation
    d.kv_capacity = add(shape.input_tokens, shape.output_tokens);
  }
  w.tokens_per_step = d.tokens;
  w.context_tokens = d.context;
  w.kv_capacity_tokens = d.kv_capacity;
  const std::int64_t M = d.tokens;
  const std::int64_t h = model.hidden;

  {
    LayerBuilder b(dt);
    Op& embed = b.op(b.elementwise("embedding", OpKind::embedding, M, h, 0, mul(model.vocab, h), 1, {kLayerInput}));
    embed.input_bytes = mul(M, kTokenIdBytes);
    w.layers.push_back(b.finish("embed", false));
  }

  for (std::int64_t i = 0; i < model.num_layers; ++i) {
    LayerBuilder b(dt);
    const int residual = model.mla ? latent_attention(b, model, d) : standard_attention(b, model, d);
    const bool is_moe = model.moe && i >= model.moe->first_dense_layers;
    if (is_moe) {
      moe_mlp(b, model, M, residual);
    } else {
      dense_mlp(b, model, M, residual);
    }
    w.layers.push_back(b.finish("layer." + std::to_string(i), is_moe));
    w.layers.back().decoder = true;
  }

  {
    LayerBuilder b(dt);
    const int norm = b.norm("final_norm", M, h, {kLayerInput});
    // Prefill needs logits only for each request's last prompt token.
    const std::int64_t logit_rows = shape.phase == Phase::prefill ? R : M;
    b.matmul("lm_head", OpKind::lm_head, 1, logit_rows, h, model.vocab, mul(model.vocab, h), {norm});
    Layer head = b.finish("head", false);
    // A tied LM head reads the embedding matrix, which the embed layer already holds.
    if (model.tie_embeddings) head.param_bytes -= mul(model.vocab, h, dt);
    w.layers.push_back(std::move(head));
  }

  for (Layer& layer : w.layers) {
    for (Op& op : layer.ops) {
      op.vector = vector_mix(op.kind, shape.phase);
      // A residual adds each addend after the first: one two-vector add apiece.
      if (op.kind == OpKind::residual && op.m > 0 && op.n > 0) {
        op.vector[static_cast<std::size_t>(wafer::VectorForm::fp16_vv)] =
            static_cast<std::int32_t>(op.flops / mul(op.m, op.n));
      }
    }
  }
  for (const Layer& layer : w.layers) {
    w.flops = add(w.flops, layer.flops, "FLOPs per step");
    w.param_bytes = add(w.param_bytes, layer.param_bytes, "parameter bytes");
    w.kv_cache_bytes = add(w.kv_cache_bytes, layer.kv_cache_bytes, "KV cache bytes");
  }
  // Headroom for whoever adds a few of these figures (SRAM totals, costs, the simulator): every
  // figure of the setting stays below 2^60, so sums of up to eight of them fit in 64 bits.
  constexpr std::int64_t kMaxFigure = std::int64_t{1} << 60;
  for (const auto& [what, value] : {std::pair<const char*, std::int64_t>{"FLOPs per step", w.flops},
                                    {"parameter bytes", w.param_bytes},
                                    {"KV cache bytes", w.kv_cache_bytes}}) {
    if (value > kMaxFigure) checked::overflow(what);
  }
  for (const Layer& layer : w.layers) {
    for (const Op& op : layer.ops) {
      if (op.input_bytes > kMaxFigure || op.output_bytes > kMaxFigure) checked::overflow("an op's activation bytes");
    }
  }
  // Decode reduces Q/K/V and gate/up together, as WaferLLM's decode does: every schedule starts there.
  return fuse_decode_reductions(w);
}

namespace {

// Keeps the layers a pipeline stage holds and renames its decoder layers by their place in the model.
void keep_stage(Workload& w) {
  const Workload::Stage& stage = *w.stage;
  std::vector<Layer> kept;
  std::int64_t decoder = 0;
  for (auto& layer : w.layers) {
    if (layer.decoder) {
      layer.name = "layer." + std::to_string(stage.first_layer + decoder++);
    } else if (layer.name == "embed" ? !stage.embedding : !stage.head) {
      continue;
    }
    // A tied head away from the embedding cannot read its matrix: it holds a copy.
    if (layer.name == "head" && !stage.embedding && w.model.tie_embeddings) {
      layer.param_bytes = checked::add(layer.param_bytes, checked::mul(w.model.vocab, w.model.hidden, w.model.dtype_bytes));
    }
    kept.push_back(std::move(layer));
  }
  w.layers = std::move(kept);
  w.flops = w.param_bytes = w.kv_cache_bytes = 0;
  for (const Layer& layer : w.layers) {
    w.flops = checked::add(w.flops, layer.flops);
    w.param_bytes = checked::add(w.param_bytes, layer.param_bytes);
    w.kv_cache_bytes = checked::add(w.kv_cache_bytes, layer.kv_cache_bytes);
  }
}

}  // namespace

Workload stage_workload(const ModelSpec& model, const WorkloadShape& shape, std::int64_t first_layer,
                        std::int64_t layers, bool embedding, bool head) {
  if (first_layer < 0 || layers < 1 || first_layer > model.num_layers - layers) {
    throw InternalError("stage_workload: layers [" + std::to_string(first_layer) + ", +" + std::to_string(layers) +
                        ") outside a model of " + std::to_string(model.num_layers));
  }
  ModelSpec part = model;
  part.num_layers = layers;
  if (part.moe) {
    part.moe->first_dense_layers = std::clamp<std::int64_t>(model.moe->first_dense_layers - first_layer, 0, layers);
  }
  Workload w = build_workload(part, shape);
  w.stage = Workload::Stage{first_layer, embedding, head};
  keep_stage(w);
  return w;
}

Workload split_requests(const Workload& w, std::int64_t parts) {
  const std::int64_t requests = w.shape.concurrent_requests;
  if (parts < 1 || requests % parts != 0) {
    throw InternalError("split_requests: " + std::to_string(parts) + " parts do not divide " +
                        std::to_string(requests) + " requests");
  }
  if (parts == 1) return w;
  WorkloadShape shape = w.shape;
  shape.concurrent_requests = requests / parts;
  Workload part = build_workload(w.model, shape);
  part.layer_scale = w.layer_scale;
  part.moe = w.moe;
  part.stage = w.stage;
  if (part.stage) keep_stage(part);
  part.kv_cache_bytes = 0;
  for (auto& layer : part.layers) {
    layer.kv_cache_bytes = mul(layer.kv_cache_bytes, parts);
    part.kv_cache_bytes = add(part.kv_cache_bytes, layer.kv_cache_bytes);
    for (auto& op : layer.ops) op.kv_cache_bytes = mul(op.kv_cache_bytes, parts);
  }
  return part;
}

Workload chunk_prompt(const Workload& w, std::int64_t chunks) {
  if (chunks == w.shape.prompt_chunks) return w;
  WorkloadShape shape = w.shape;
  shape.prompt_chunks = chunks;
  Workload part = build_workload(w.model, shape);
  part.layer_scale = w.layer_scale;
  part.moe = w.moe;
  part.stage = w.stage;
  if (part.stage) keep_stage(part);
  return part;
}

std::vector<std::int64_t> request_divisors(std::int64_t requests) {
  std::vector<std::int64_t> small, large;
  for (std::int64_t d = 1; d * d <= requests; ++d) {
    if (requests % d != 0) continue;
    small.push_back(d);
    if (d != requests / d) large.push_back(requests / d);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

}  // namespace wavel::workload
