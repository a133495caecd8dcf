// Model presets (domain.md §4), HF config.json import with located diagnostics, and parameter counts.
#include "wavel/workload/model.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "wavel/common/checked.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/input_file.hpp"
#include "wavel/common/text.hpp"
#include "wavel/common/yaml_budget.hpp"
#include "wavel/common/yaml_tree.hpp"

namespace wavel::workload {

namespace {

ModelSpec dense_preset(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                       std::int64_t kv_heads, std::int64_t ffn, std::int64_t vocab) {
  ModelSpec m;
  m.name = std::move(name);
  m.source = "preset";
  m.num_layers = layers;
  m.hidden = hidden;
  m.num_heads = heads;
  m.num_kv_heads = kv_heads;
  m.head_dim = 128;
  m.ffn = ffn;
  m.vocab = vocab;
  return m;
}

// `spec` with every layer's MLP a mixture of `experts` experts of width `expert_ffn`, `per_token` routed per token.
ModelSpec with_moe(ModelSpec spec, std::int64_t experts, std::int64_t per_token, std::int64_t expert_ffn) {
  spec.moe = MoeSpec{experts, per_token, expert_ffn, 0, 0, 0};
  return spec;
}

// Values are those of the published HF config.json files.
std::vector<ModelSpec> build_presets() {
  std::vector<ModelSpec> presets;
  presets.push_back(dense_preset("llama3-8b", 32, 4096, 32, 8, 14336, 128256));
  presets.push_back(dense_preset("llama2-13b", 40, 5120, 40, 40, 13824, 32000));
  presets.push_back(dense_preset("codellama-34b", 48, 8192, 64, 8, 22016, 32000));
  presets.push_back(dense_preset("llama3-70b", 80, 8192, 64, 8, 28672, 128256));

  ModelSpec qwen2 = dense_preset("qwen2-72b", 80, 8192, 64, 8, 29568, 152064);
  qwen2.qkv_bias = true;
  presets.push_back(qwen2);

  presets.push_back(with_moe(dense_preset("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000), 8, 2, 14336));

  // intermediate_size 6144 is unused (every layer is MoE) but kept so the import matches.
  ModelSpec qwen3 = dense_preset("qwen3-30b-a3b", 48, 2048, 32, 4, 6144, 151936);
  qwen3.qk_norm = true;
  presets.push_back(with_moe(qwen3, 128, 8, 768));

  // MLA: head_dim holds the query/key width qk_nope + qk_rope.
  ModelSpec deepseek = with_moe(dense_preset("deepseek-v2-lite", 27, 2048, 16, 16, 10944, 102400), 64, 6, 1408);
  deepseek.head_dim = 128 + 64;
  MlaSpec mla;
  mla.kv_lora_rank = 512;
  mla.q_lora_rank = 0;
  mla.qk_nope_head_dim = 128;
  mla.qk_rope_head_dim = 64;
  mla.v_head_dim = 128;
  deepseek.mla = mla;
  deepseek.moe->num_shared_experts = 2;
  deepseek.moe->shared_expert_ffn = 2 * 1408;
  deepseek.moe->first_dense_layers = 1;
  presets.push_back(deepseek);
  return presets;
}

const std::vector<ModelSpec>& presets() {
  static const std::vector<ModelSpec> all = build_presets();
  return all;
}

// ---- HF config.json reading -------------------------------------------------------------------

// Supported ranges (docs/cli.md, Input limits): generous for real models, and small enough that the
// op graph's products are far from overflowing (workload.cpp also checks them).
constexpr std::int64_t kMaxLayers = 1024;
constexpr std::int64_t kMaxHeads = 4096;
constexpr std::int64_t kMaxExperts = 65536;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;  ///< hidden, FFN, head and latent widths
constexpr std::size_t kMaxNodes = 200000;                  ///< values in the file, as for config files

struct Entry {
  YAML::Node key;
  YAML::Node value;
};

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "an array";
    case YAML::NodeType::Map:
      return "an object";
    case YAML::NodeType::Scalar:
      // yaml-cpp tags quoted scalars "!", so a JSON string is told apart from a number.
      return node.Tag() == "!" ? "the string \"" + node.Scalar() + "\"" : node.Scalar();
    default:
      return "an undefined value";
  }
}

// Hugging Face's default of tie_word_embeddings per model_type: each config class sets its own
// (LlamaConfig and its kin False, Gemma's True); PretrainedConfig's is True.
bool hf_ties_embeddings_by_default(const std::string& model_type) {
  static const char* untied[] = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
                                 "deepseek_v2", "deepseek_v3", "phi3", "gpt_neox", "olmo", "olmo2"};
  for (const char* t : untied) {
    if (model_type == t) return false;
  }
  return true;
}

/// Collects every problem in one config.json before throwing once.
class ConfigReader {
 public:
  ConfigReader(std::string path, YAML::Node root) : path_(std::move(path)), root_(std::move(root)) {
    for (auto it = root_.begin(); it != root_.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (entries_.count(key) != 0) {
        report(it->first, key, "duplicate key (JSON parsers disagree on which value wins)");
        continue;
      }
      entries_.emplace(key, Entry{it->first, it->second});
    }
  }

  /// Present and not JSON null.
  bool has(const std::string& key) const {
    auto it = entries_.find(key);
    return it != entries_.end() && !it->second.value.IsNull();
  }

  const Entry* entry(const std::string& key) const {
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : &it->second;
  }

  /// An integer in [min_value, max_value]; reports and returns nullopt if absent (when required) or invalid.
  std::optional<std::int64_t> integer(const std::string& key, bool required, std::int64_t min_value = 1,
                                      std::int64_t max_value = kMaxWidth) {
    const Entry* e = entry(key);
    if (e == nullptr) {
      if (required) report_missing(key);
      return std::nullopt;
    }
    if (e->value.IsNull()) {
      if (required) report(e->key, key, "is null; expected " + expectation(min_value));
      return std::nullopt;
    }
    std::int64_t value = 0;
    if (!as_integer(e->value, value)) {
      report(e->key, key, "expected " + expectation(min_value) + ", got " + describe(e->value));
      return std::nullopt;
    }
    if (value < min_value) {
      report(e->key, key, "expected " + expectation(min_value) + ", got " + std::to_string(value));
      return std::nullopt;
    }
    if (value > max_value) {
      report(e->key, key, "is " + std::to_string(value) + "; the supported maximum is " + std::to_string(max_value));
      return std::nullopt;
    }
    return value;
  }

  /// A JSON boolean, or `fallback` if absent or null.
  bool boolean(const std::string& key, bool fallback) {
    const Entry* e = entry(key);
    if (e == nullptr || e->value.IsNull()) return fallback;
    const bool is_literal = e->value.IsScalar() && e->value.Tag() != "!" &&
                            (e->value.Scalar() == "true" || e->value.Scalar() == "false");
    if (!is_literal) {
      report(e->key, key, "expected true or false, got " + describe(e->value));
      return fallback;
    }
    return e->value.Scalar() == "true";
  }

  /// A JSON string, or "" if absent or null.
  std::string string(const std::string& key) {
    const Entry* e = entry(key);
    if (e == nullptr || e->value.IsNull()) return "";
    if (!e->value.IsScalar() || e->value.Tag() != "!") {
      report(e->key, key, "expected a string, got " + describe(e->value));
      return "";
    }
    return e->value.Scalar();
  }

  /// Reports at the key's location (or the object's if the key is absent).
  void report_at_key(const std::string& key, const std::string& message) {
    const Entry* e = entry(key);
    report(e != nullptr ? e->key : root_, key, message);
  }

  /// A diagnostic at the key's location, not reported.
  Diagnostic at_key(const std::string& key, const std::string& message) const {
    const Entry* e = entry(key);
    const YAML::Mark mark = (e != nullptr ? e->key : root_).Mark();
    return Diagnostic{path_, mark.line >= 0 ? mark.line + 1 : 0, mark.column >= 0 ? mark.column + 1 : 0, key, message};
  }

  void report_missing(const std::string& key) { report(root_, key, "missing required key"); }

  std::vector<Diagnostic> take_diagnostics() {
    // Missing keys are located at the object, so sort to read top to bottom.
    std::stable_sort(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return std::make_pair(a.line, a.column) < std::make_pair(b.line, b.column);
    });
    return std::move(diagnostics_);
  }

 private:
  static std::string expectation(std::int64_t min_value) {
    if (min_value == 1) return "a positive integer";
    if (min_value == 0) return "a non-negative integer";
    return "an integer >= " + std::to_string(min_value);
  }

  static bool as_integer(const YAML::Node& node, std::int64_t& value) {
    if (!node.IsScalar() || node.Tag() == "!") return false;
    try {
      value = node.as<std::int64_t>();
      return true;
    } catch (const YAML::Exception&) {
      return false;
    }
  }

  void report(const YAML::Node& at, const std::string& key, const std::string& message) {
    Diagnostic d;
    d.file = path_;
    const YAML::Mark mark = at.Mark();
    // yaml-cpp marks are 0-based; a null mark has negative fields.
    d.line = mark.line >= 0 ? mark.line + 1 : 0;
    d.column = mark.column >= 0 ? mark.column + 1 : 0;
    d.key_path = key;
    d.message = message;
    diagnostics_.push_back(std::move(d));
  }

  std::string path_;
  YAML::Node root_;
  std::map<std::string, Entry> entries_;
  std::vector<Diagnostic> diagnostics_;
};

/// The file's stem, or for a `config.json` its folder's name (made absolute, so `./config.json`
/// is named after the working directory), else the last part of `_name_or_path`.
std::string model_name_from_path(const std::string& path, const std::string& name_or_path) {
  const std::filesystem::path p(path);
  const std::string stem = p.stem().string();
  if (stem != "config") return stem;
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(p, ec).lexically_normal();
  const std::string parent = (ec ? p : absolute).parent_path().filename().string();
  if (!parent.empty() && parent != "." && parent != ".." && parent != "/") return parent;
  std::string given = name_or_path;
  while (!given.empty() && given.back() == '/') given.pop_back();
  given = given.substr(given.find_last_of('/') == std::string::npos ? 0 : given.find_last_of('/') + 1);
  return given.empty() ? stem : given;
}

/// Reads the MoE keys of the Mixtral, Qwen-MoE and DeepSeek families into `model.moe`.
void read_moe(ConfigReader& in, ModelSpec& model, std::optional<std::int64_t> layers,
              std::optional<std::int64_t> intermediate) {
  static const char* const expert_keys[] = {"num_local_experts", "num_experts", "n_routed_experts"};
  std::string experts_key;
  for (const char* key : expert_keys) {
    if (in.has(key)) {
      experts_key = key;
      break;
    }
  }
  if (experts_key.empty()) {
    if (in.has("num_experts_per_tok")) {
      in.report_at_key("num_experts_per_tok",
                       "given without an expert count (num_local_experts, num_experts or n_routed_experts)");
    }
    return;
  }
  const auto experts = in.integer(experts_key, true, 1, kMaxExperts);
  const auto top_k = in.integer("num_experts_per_tok", true, 1, kMaxExperts);
  if (experts && top_k && *top_k > *experts) {
    in.report_at_key("num_experts_per_tok", "routes each token to " + std::to_string(*top_k) +
                                                " experts but there are only " + std::to_string(*experts));
  }

  // Mixtral has no moe_intermediate_size: its experts use intermediate_size.
  std::optional<std::int64_t> expert_ffn;
  if (in.has("moe_intermediate_size")) {
    expert_ffn = in.integer("moe_intermediate_size", true);
  } else if (intermediate) {
    expert_ffn = intermediate;
  } else if (!in.has("intermediate_size")) {  // a present but invalid one is reported already
    in.report_missing("moe_intermediate_size");
  }

  MoeSpec moe;
  if (in.has("n_shared_experts")) {  // DeepSeek: shared experts each as wide as a routed one
    const auto shared = in.integer("n_shared_experts", false, 0, kMaxExperts);
    if (shared && expert_ffn) {
      moe.num_shared_experts = *shared;
      moe.shared_expert_ffn = *shared * *expert_ffn;
    }
  } else if (in.has("shared_expert_intermediate_size")) {  // Qwen2-MoE: one wide shared expert
    const auto shared_ffn = in.integer("shared_expert_intermediate_size", false, 0);
    if (shared_ffn && *shared_ffn > 0) {
      moe.num_shared_experts = 1;
      moe.shared_expert_ffn = *shared_ffn;
    }
  }

  // Only a leading run of dense layers is modelled; interleaved dense/MoE layouts are not.
  if (in.has("first_k_dense_replace")) {
    if (auto k = in.integer("first_k_dense_replace", false, 0, kMaxLayers)) moe.first_dense_layers = *k;
  }
  if (const Entry* e = in.entry("mlp_only_layers"); e != nullptr && !e->value.IsNull()) {
    bool leading_run = e->value.IsSequence();
    std::int64_t count = 0;
    if (leading_run) {
      for (const auto& item : e->value) {
        std::int64_t index = -1;
        try {
          index = item.IsScalar() && item.Tag() != "!" ? item.as<std::int64_t>() : -1;
        } catch (const YAML::Exception&) {
          index = -1;
        }
        if (index != count) leading_run = false;
        ++count;
      }
    }
    if (!leading_run) {
      in.report_at_key("mlp_only_layers",
                       "unsupported: only a leading run of dense layers [0, 1, ..., k-1] is modelled");
    } else if (count > 0) {
      moe.first_dense_layers = std::max(moe.first_dense_layers, count);
    }
  }
  for (const char* key : {"decoder_sparse_step", "moe_layer_freq"}) {
    if (!in.has(key)) continue;
    if (auto step = in.integer(key, false, 1, kMaxLayers); step && *step != 1) {
      in.report_at_key(key, "unsupported: MoE layers every " + std::to_string(*step) +
                                " layers; only every layer (1) is modelled");
    }
  }
  if (layers && moe.first_dense_layers > *layers) {
    in.report_at_key("first_k_dense_replace", "exceeds num_hidden_layers (" + std::to_string(*layers) + ")");
  }
  if (moe.first_dense_layers > 0 && !in.has("intermediate_size")) {
    in.report_missing("intermediate_size");
  }
  if (!experts || !top_k || !expert_ffn) return;
  moe.num_experts = *experts;
  moe.experts_per_token = *top_k;
  moe.expert_ffn = *expert_ffn;
  model.moe = moe;
}

void read_mla(ConfigReader& in, ModelSpec& model) {
  MlaSpec mla;
  const auto kv_rank = in.integer("kv_lora_rank", true);
  const auto nope = in.integer("qk_nope_head_dim", true);
  const auto rope = in.integer("qk_rope_head_dim", true);
  const auto v = in.integer("v_head_dim", true);
  if (in.has("q_lora_rank")) {
    if (auto q_rank = in.integer("q_lora_rank", false)) mla.q_lora_rank = *q_rank;
  }
  if (!kv_rank || !nope || !rope || !v) return;
  mla.kv_lora_rank = *kv_rank;
  mla.qk_nope_head_dim = *nope;
  mla.qk_rope_head_dim = *rope;
  mla.v_head_dim = *v;
  model.mla = mla;
  model.head_dim = *nope + *rope;
}

}  // namespace

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : presets()) names.push_back(preset.name);
  return names;
}

std::optional<ModelSpec> find_model_preset(std::string_view name) {
  for (const auto& preset : presets()) {
    if (preset.name == name) return preset;
  }
  return std::nullopt;
}

std::string read_hf_config_text(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputMissingError("cannot read HF config '" + path + "'");
  return read_input_file(path, yaml::kMaxTextBytes, "HF config");
}

ModelSpec load_hf_config(const std::string& path) { return parse_hf_config(read_hf_config_text(path), path); }

// Keys that change what a layer computes in ways the cost model does not include.
void read_unmodelled(ConfigReader& in, const std::string& model_type, ModelSpec& model) {
  const auto add = [&](const std::string& key, const std::string& effect, bool changes, std::int64_t from = 0) {
    model.unmodelled.push_back({in.at_key(key, effect), changes, from});
  };
  if (in.has("sliding_window") && in.boolean("use_sliding_window", true)) {
    if (const auto window = in.integer("sliding_window", false, 1, std::int64_t{1} << 40)) {
      add("sliding_window",
          "attention over the last " + std::to_string(*window) +
              " tokens only; the model attends to (and caches) the whole context, so past " +
              std::to_string(*window) + " tokens of context it overstates attention and the KV cache",
          true, *window);
    }
  }
  if (in.has("attn_logit_softcapping")) {
    add("attn_logit_softcapping", "a tanh soft-cap on every attention score, not costed (an extra loop per score)", true);
  }
  if (in.has("final_logit_softcapping")) {
    add("final_logit_softcapping", "a tanh soft-cap on the logits, once per token: not costed (negligible next to the LM head)",
        false);
  }
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    const std::string act = in.has(key) ? in.string(key) : "";
    if (!act.empty() && act != "silu" && act != "swish") {
      add(key, "the gate's activation is " + act + "; costed as SiLU's scalar loop", false);
    }
  }
  if (model_type.rfind("gemma2", 0) == 0 || model_type.rfind("gemma3", 0) == 0) {
    add("model_type", model_type + " adds post-attention and post-feedforward norms to each layer: not costed (two "
                                   "elementwise ops per layer)", false);
  }
}

ModelSpec parse_hf_config(const std::string& text, const std::string& path) {
  // Counted before a tree is built: yaml-cpp spends about 500 bytes a node.
  if (const auto over = first_node_past(text, kMaxNodes)) {
    throw DataError({Diagnostic{path, over->line, over->column, "",
                                "more than " + std::to_string(kMaxNodes) +
                                    " JSON values; a model's config.json has a few hundred (is this the right file?)"}});
  }

  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    Diagnostic d{path, e.mark.line >= 0 ? e.mark.line + 1 : 0, e.mark.column >= 0 ? e.mark.column + 1 : 0, "",
                 "not valid JSON: " + e.msg};
    throw DataError({d});
  }
  if (!root.IsMap()) {
    const YAML::Mark mark = root.Mark();
    Diagnostic d{path, mark.line >= 0 ? mark.line + 1 : 1, mark.column >= 0 ? mark.column + 1 : 1, "",
                 "expected a JSON object of model settings, got " + describe(root)};
    throw DataError({d});
  }

  ConfigReader in(path, root);
  ModelSpec model;
  // A name from a path or a file: valid UTF-8 for the results' string columns, safe to print.
  model.name = printable(model_name_from_path(path, in.string("_name_or_path")));
  model.source = path;

  const auto layers = in.integer("num_hidden_layers", true, 1, kMaxLayers);
  const auto hidden = in.integer("hidden_size", true);
  const auto heads = in.integer("num_attention_heads", true, 1, kMaxHeads);
  const auto vocab = in.integer("vocab_size", true, 1, kMaxVocab);
  // HF default: no (or null) num_key_value_heads means plain multi-head attention.
  std::optional<std::int64_t> kv_heads = heads;
  if (in.has("num_key_value_heads")) kv_heads = in.integer("num_key_value_heads", true, 1, kMaxHeads);
  // MLA derives its head widths from its own keys (read_mla).
  const bool is_mla = in.has("kv_lora_rank");
  std::optional<std::int64_t> head_dim;
  if (in.has("head_dim")) {
    head_dim = in.integer("head_dim", true);
  } else if (hidden && heads && !is_mla) {
    if (*hidden % *heads != 0) {
      in.report_at_key("num_attention_heads", "does not divide hidden_size " + std::to_string(*hidden) +
                                                  " and no head_dim is given");
    } else {
      head_dim = *hidden / *heads;
    }
  }
  if (heads && kv_heads && *heads % *kv_heads != 0) {
    in.report_at_key("num_key_value_heads", std::to_string(*heads) + " attention heads cannot be shared evenly by " +
                                                std::to_string(*kv_heads) + " KV heads");
  }

  const bool is_moe = in.has("num_local_experts") || in.has("num_experts") || in.has("n_routed_experts");
  std::optional<std::int64_t> intermediate;
  // MoE configs whose every layer is sparse may omit the dense width.
  if (!is_moe || in.has("intermediate_size")) {
    intermediate = in.integer("intermediate_size", true);
  }

  const std::string model_type = in.string("model_type");
  model.tie_embeddings = in.boolean("tie_word_embeddings", hf_ties_embeddings_by_default(model_type));
  read_unmodelled(in, model_type, model);
  // attention_bias (LLaMA) also biases o_proj; those `hidden` values per layer are not modelled.
  model.qkv_bias = in.boolean("attention_bias", false) || model_type == "qwen2" || model_type == "qwen2_moe";
  model.qk_norm = model_type == "qwen3" || model_type == "qwen3_moe";

  if (in.entry("quantization_config") != nullptr) {
    in.report_at_key("quantization_config",
                     "unsupported: quantized checkpoints are not modelled; use the unquantized model's config");
  }
  if (in.entry("text_config") != nullptr) {
    in.report_at_key("text_config", "unsupported: multimodal config; pass the language model's own config.json");
  }

  if (in.boolean("is_encoder_decoder", false)) {
    in.report_at_key("is_encoder_decoder", "unsupported: only decoder-only models are modelled");
  }

  read_moe(in, model, layers, intermediate);
  if (is_mla) read_mla(in, model);

  std::vector<Diagnostic> diagnostics = in.take_diagnostics();
  if (!diagnostics.empty()) throw DataError(std::move(diagnostics));

  model.num_layers = *layers;
  model.hidden = *hidden;
  model.num_heads = *heads;
  model.num_kv_heads = *kv_heads;
  if (!model.mla) model.head_dim = *head_dim;
  model.vocab = *vocab;
  model.ffn = intermediate ? *intermediate : model.moe->expert_ffn;
  return model;
}

std::int64_t parameter_count(const ModelSpec& model) {
  using checked::add;
  using checked::mul;
  const std::int64_t h = model.hidden;
  std::int64_t attention = 0;
  if (model.mla) {
    const MlaSpec& a = *model.mla;
    const std::int64_t qk = add(a.qk_nope_head_dim, a.qk_rope_head_dim);
    if (a.q_lora_rank > 0) {  // q_a, its norm, q_b
      attention = add(attention, add(add(mul(h, a.q_lora_rank), a.q_lora_rank), mul(a.q_lora_rank, model.num_heads, qk)));
    } else {
      attention = add(attention, mul(h, model.num_heads, qk));
    }
    attention = add(attention, add(mul(h, add(a.kv_lora_rank, a.qk_rope_head_dim)), a.kv_lora_rank));  // kv_a, norm
    attention = add(attention, mul(a.kv_lora_rank, model.num_heads, add(a.qk_nope_head_dim, a.v_head_dim)));  // kv_b
    attention = add(attention, mul(model.num_heads, a.v_head_dim, h));  // o
  } else {
    const std::int64_t q = mul(model.num_heads, model.head_dim);
    const std::int64_t kv = mul(model.num_kv_heads, model.head_dim);
    attention = add(mul(h, add(q, mul(2, kv))), mul(q, h));
    if (model.qkv_bias) attention = add(attention, add(q, mul(2, kv)));
    if (model.qk_norm) attention = add(attention, mul(2, model.head_dim));
  }
  const std::int64_t norms = mul(2, h);
  const std::int64_t dense_mlp = mul(3, h, model.ffn);

  std::int64_t layers = 0;
  if (model.moe) {
    const MoeSpec& e = *model.moe;
    const std::int64_t sparse_mlp =
        add(add(mul(h, e.num_experts), mul(e.num_experts, 3, h, e.expert_ffn)), mul(3, h, e.shared_expert_ffn));
    const std::int64_t dense_layers = std::min(e.first_dense_layers, model.num_layers);
    layers = add(add(mul(model.num_layers, add(attention, norms)), mul(dense_layers, dense_mlp)),
                 mul(model.num_layers - dense_layers, sparse_mlp));
  } else {
    layers = mul(model.num_layers, add(add(attention, norms), dense_mlp));
  }
  const std::int64_t embedding = mul(model.vocab, h);
  const std::int64_t head = add(h, model.tie_embeddings ? 0 : mul(model.vocab, h));
  return add(add(embedding, layers), head);
}

}  // namespace wavel::workload
