// Transformer model shapes: built-in presets and HF config.json import.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "wavel/common/error.hpp"

namespace wavel::workload {

/// Multi-head latent attention (DeepSeek-V2) dimensions.
struct MlaSpec {
  std::int64_t kv_lora_rank = 0;      ///< latent width cached per token
  std::int64_t q_lora_rank = 0;       ///< 0: queries are projected directly from the hidden state
  std::int64_t qk_nope_head_dim = 0;  ///< per-head query/key width without rotary part
  std::int64_t qk_rope_head_dim = 0;  ///< per-head rotary width (shared key part is cached)
  std::int64_t v_head_dim = 0;        ///< per-head value width
};

/// Mixture-of-experts feed-forward description.
struct MoeSpec {
  std::int64_t num_experts = 0;          ///< routed experts per MoE layer
  std::int64_t experts_per_token = 0;    ///< top-k
  std::int64_t expert_ffn = 0;           ///< intermediate width of one routed expert
  std::int64_t num_shared_experts = 0;   ///< always-active experts (DeepSeek)
  std::int64_t shared_expert_ffn = 0;    ///< intermediate width of all shared experts together
  std::int64_t first_dense_layers = 0;   ///< leading layers that use a dense MLP of width ModelSpec::ffn
};

/// Shape of a decoder-only transformer, as read from HF config.json keys.
/// A Hugging Face key whose effect the cost model does not include: where it is and what it changes.
struct UnmodelledKey {
  Diagnostic where;                ///< the key in config.json, with a message naming its effect
  bool changes_prediction = false; ///< false: noted (its cost is negligible); true: refused unless allowed
  std::int64_t from_context_tokens = 0;  ///< > 0: it changes the prediction only past this context (a window)
};

struct ModelSpec {
  std::string name;                ///< preset name or config path stem
  std::string source;              ///< "preset" or the config.json path
  std::int64_t num_layers = 0;
  std::int64_t hidden = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;       ///< query/key width per head (MLA: qk_nope + qk_rope)
  std::int64_t ffn = 0;            ///< dense MLP intermediate width
  std::int64_t vocab = 0;
  bool tie_embeddings = false;     ///< LM head shares the embedding matrix
  bool qkv_bias = false;           ///< Qwen2 adds biases to Q, K, V
  bool qk_norm = false;            ///< Qwen3 normalises Q and K per head
  std::int64_t dtype_bytes = 2;    ///< FP16 weights and activations
  std::optional<MlaSpec> mla;
  std::optional<MoeSpec> moe;
  std::vector<UnmodelledKey> unmodelled;  ///< config.json keys the model does not cost (read_hf_config)
};

/// Names of the built-in presets (domain.md §4), in a stable order.
std::vector<std::string> model_preset_names();

/// The preset with this name, or std::nullopt.
std::optional<ModelSpec> find_model_preset(std::string_view name);

/// Reads a HF config.json. Throws wavel::InputMissingError if it cannot be read and
/// wavel::DataError naming every missing or unsupported key otherwise.
ModelSpec load_hf_config(const std::string& path);
/// The bytes of a HF config.json (at most 16 MiB; InputMissingError if unreadable).
std::string read_hf_config_text(const std::string& path);
/// load_hf_config on text already read from `path`; more than 200 000 values are refused (DataError)
/// before anything is built.
ModelSpec parse_hf_config(const std::string& text, const std::string& path);

/// Total parameter count (embedding, all layers, final norm, LM head unless tied); checked arithmetic
/// (wavel::InputDataError if it does not fit in 64 bits).
std::int64_t parameter_count(const ModelSpec& model);

}  // namespace wavel::workload
