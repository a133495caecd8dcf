// Per-layer operator graphs of one inference setting, with shapes, FLOPs and bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wavel/common/names.hpp"
#include "wavel/wafer/simd.hpp"
#include "wavel/workload/figures.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/routing.hpp"

namespace wavel::workload {

/// Inference phase of a setting.
enum class Phase { prefill, decode };

/// The phases' names, as configs, reference files and results write them.
inline constexpr NameTable<Phase, 2> kPhaseNames{{{Phase::prefill, "prefill"}, {Phase::decode, "decode"}}};

/// "prefill" or "decode".
std::string_view to_string(Phase phase);

/// What an operator computes; the cost model maps each kind to a mesh kernel.
enum class OpKind {
  embedding,      ///< token lookup
  norm,           ///< RMSNorm: scalar allreduce over the hidden dimension
  matmul,         ///< activation x weight (GEMM in prefill, GEMV in decode)
  rope,           ///< rotary position embedding, elementwise
  attn_scores,    ///< Q.K^T against the KV cache
  softmax,        ///< max and sum allreduces plus elementwise exp
  attn_values,    ///< scores.V against the KV cache
  kv_append,      ///< write this step's K/V into the (shift-based) cache
  activation,     ///< SiLU(gate) * up, elementwise
  residual,       ///< elementwise add
  router,         ///< MoE gate: hidden x experts, then top-k
  moe_dispatch,   ///< all-to-all: tokens to their experts
  expert_matmul,  ///< routed expert GEMMs (weights of all experts resident)
  moe_combine,    ///< all-to-all: expert outputs back, weighted sum
  lm_head,        ///< hidden x vocab logits
};

/// Stable lower-case name of an op kind.
std::string_view to_string(OpKind kind);

/// One element of a scalar loop as WaferLLM's CSL writes it (Decode/WSE-2/src/decode.csl): scalar
/// instructions beyond its divisions (loads, stores, multiplies, adds), and its software divisions,
/// square roots or reciprocals, each costing the wafer's scalar_division_cycles.
struct ScalarLoop {
  std::int64_t instructions = 0;
  std::int64_t divisions = 0;
};
/// fast_exp: 1 + x / 256 (a power of two: a multiply) squared twice; load and store.
inline constexpr ScalarLoop kExpLoop{5, 0};
/// SiLU: val / (1 + fast_exp(-val)): a negation, fast_exp, an add and one division.
inline constexpr ScalarLoop kSiluLoop{7, 1};
/// RMSNorm's scale per token: 1 / sqrt(sum / dim + eps): a division, a square root and a reciprocal.
inline constexpr ScalarLoop kRsqrtLoop{2, 3};

/// The vector instructions per element that WaferLLM's kernels run for an elementwise op kind in a
/// phase (Decode/WSE-2/src/decode.csl, Prefill/WSE-2/src/prefill.csl); all zero for other kinds.
wafer::VectorMix vector_mix(OpKind kind, Phase phase);

/// One operator of the op graph: its costed figures and where it sits in the graph.
struct Op : OpFigures {
  std::string name;                    ///< e.g. "q_proj", "attn_scores"
  OpKind kind = OpKind::residual;
  std::vector<int> inputs;             ///< indices of producer ops in the same layer (-1: layer input)
  std::int64_t experts = 0;            ///< routed-expert ops (dispatch, expert matmuls, combine): experts in the op
  std::int64_t experts_per_token = 0;  ///< ... and the top-k each token is routed to
  /// A matmul that fuse_decode_reductions or fuse_shared_inputs merged: the merged ops' names and
  /// widths (n), in order (empty: not merged). Tune::sibling_branches runs them side by side again.
  struct Part {
    std::string name;
    std::int64_t n = 0;
  };
  std::vector<Part> merged;
};

/// One layer (embedding, decoder block, or head) with its ops in execution order.
struct Layer {
  std::string name;                    ///< "embed", "layer.0", ..., "head"
  bool is_moe = false;
  bool decoder = false;                ///< a repeated decoder layer (what a layer subset scales)
  std::vector<Op> ops;
  std::int64_t param_bytes = 0;        ///< parameters resident for this layer
  std::int64_t kv_cache_bytes = 0;     ///< KV cache capacity resident for this layer
  std::int64_t flops = 0;              ///< sum over ops
};

/// The shape of a setting that determines the op graph.
struct WorkloadShape {
  Phase phase = Phase::decode;
  std::int64_t concurrent_requests = 1;
  std::int64_t input_tokens = 0;
  std::int64_t output_tokens = 0;
  /// Prefill only: the prompt split into this many equal token chunks, pipelined through the stages
  /// one after another (chunk c attends to the keys of chunks 0..c, whose KV its stage already holds).
  /// The op graph is one chunk's; the KV cache of the whole prompt stays resident.
  std::int64_t prompt_chunks = 1;
};

/// All layers of one setting plus totals.
struct Workload {
  ModelSpec model;
  WorkloadShape shape;
  std::int64_t tokens_per_step = 0;    ///< rows of the activation matrix: requests (decode) or requests x input (prefill)
  std::int64_t context_tokens = 0;     ///< attention context of the modelled step (decode: mean over the generation)
  std::int64_t kv_capacity_tokens = 0; ///< KV cache length that must stay resident per request
  std::vector<Layer> layers;
  std::int64_t flops = 0;              ///< one step: one decode token for every request, or the whole prompt
  std::int64_t param_bytes = 0;
  std::int64_t kv_cache_bytes = 0;
  MoeRouting moe;                      ///< how routed rows spread over experts (capacity factor, skew)
  std::int64_t layer_scale = 1;        ///< >1: a layer subset (model.num_layers layers) stands for this x as many
  /// The part of a model one wafer of a pipeline holds (see stage_workload); none: the whole model.
  struct Stage {
    std::int64_t first_layer = 0;      ///< the model's decoder layer this part starts at
    bool embedding = true;             ///< the first wafer holds the embedding
    bool head = true;                  ///< the last wafer holds the LM head
  };
  std::optional<Stage> stage;
};

/// Bytes of the sampled token ids (int32) of one micro-batch, of `microbatches` over `requests`:
/// what a decode pipeline sends from its last wafer back to its first one's embedding.
std::int64_t sampled_token_bytes(std::int64_t requests, std::int64_t microbatches);

/// Builds the op graph of every layer for one setting (domain.md §3).
/// Throws wavel::DataError for shapes it cannot build (e.g. zero tokens).
Workload build_workload(const ModelSpec& model, const WorkloadShape& shape);

/// The op graph of one of `parts` equal micro-batches of `w`'s requests (parts must divide them):
/// ops work on requests / parts requests, while the KV cache of every request stays resident, so
/// cache bytes are exactly `parts` times the part's. layer_scale and the MoE routing carry
/// over. Throws wavel::InternalError if parts does not divide the requests.
Workload split_requests(const Workload& w, std::int64_t parts);

/// The op graph of one of `chunks` equal token chunks of `w`'s prompts (prefill; chunks must divide
/// the prompt): ops work on prompt / chunks tokens per request, attention over the mean context of
/// the chunks (chunk c of q tokens attends to (c + 1) q keys: q (chunks + 1) / 2, rounded up), the KV
/// cache of the whole prompt resident. layer_scale, the MoE routing and the stage carry over.
/// Throws wavel::DataError if chunks does not divide the prompt or the phase is decode.
Workload chunk_prompt(const Workload& w, std::int64_t chunks);

/// The part of `model` one wafer of a pipeline holds: decoder layers [first_layer, first_layer +
/// layers) named by their place in the model, with the embedding and/or the LM head. A tied head on
/// another wafer than the embedding keeps its own copy of the matrix. Throws wavel::InternalError
/// for a range outside the model.
Workload stage_workload(const ModelSpec& model, const WorkloadShape& shape, std::int64_t first_layer,
                        std::int64_t layers, bool embedding, bool head);

/// WaferLLM's decode fusions: in each decoder layer Q, K and V become one matmul `qkv_proj` and gate
/// and up one `gate_up_proj`, each with `fused` products sharing one reduction (decode.csl,
/// decode_struct). Prefill workloads, and layers without those ops, are returned unchanged.
/// build_workload applies it, so every decode schedule (baselines and search) has the fusions.
Workload fuse_decode_reductions(const Workload& w);

/// The search's fusion of operators that read one input, beyond WaferLLM's: in prefill Q, K and V
/// become one MeshGEMM `qkv_proj` and gate and up one `gate_up_proj` (each of the summed width; the
/// weight columns interleave the products, so every PE holds its slice of each and the consumers'
/// layouts are unchanged); in both phases MLA's q_a (or q) and kv_a become `q_kv_a_proj`. A layer
/// that is not a decoder layer, or has none of these, is returned unchanged.
Layer fuse_shared_inputs(const Layer& layer, Phase phase);
/// True if fuse_shared_inputs merges some of `layer`'s operators (a merge leaves fewer ops).
bool has_fusion(const Layer& layer, Phase phase);

/// The divisors of `requests`, ascending: the micro-batch counts that split them exactly.
std::vector<std::int64_t> request_divisors(std::int64_t requests);

}  // namespace wavel::workload
