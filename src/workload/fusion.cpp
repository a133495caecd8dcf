// WaferLLM's decode fusions (Decode/WSE-2/src/decode.csl, decode_struct): Q, K and V reduce in one
// allreduce, and gate and up in another. The op graph keeps them apart; this merges them.
#include <algorithm>
#include <map>
#include <string>

#include "wavel/common/checked.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::workload {

namespace {

// Merges the ops of `layer` named `names` (matmuls over the same input, in this order) into one
// matmul `fused_name` at the first one's place; the others' consumers read the merged op. With
// `share_reduction` the products stay apart and share one reduction (a decode GEMV's `fused`);
// without, they are one product of summed width (a MeshGEMM whose weight columns interleave them).
// Returns whether it merged.
bool merge(Layer& layer, const std::vector<std::string>& names, const std::string& fused_name,
           bool share_reduction = true) {
  std::vector<int> at;
  for (const auto& name : names) {
    const auto it = std::find_if(layer.ops.begin(), layer.ops.end(), [&](const Op& o) { return o.name == name; });
    if (it == layer.ops.end() || it->kind != OpKind::matmul) return false;  // not this layer's shape: keep it
    at.push_back(static_cast<int>(it - layer.ops.begin()));
  }
  for (int i : at) {
    if (layer.ops[static_cast<std::size_t>(i)].inputs != layer.ops[static_cast<std::size_t>(at.front())].inputs) return false;
  }
  Op fused = layer.ops[static_cast<std::size_t>(at.front())];
  fused.name = fused_name;
  fused.n = 0;
  fused.flops = fused.weight_bytes = fused.output_bytes = 0;
  for (int i : at) {
    const Op& o = layer.ops[static_cast<std::size_t>(i)];
    fused.n = checked::add(fused.n, o.n);
    fused.flops = checked::add(fused.flops, o.flops);
    fused.weight_bytes = checked::add(fused.weight_bytes, o.weight_bytes);
    fused.output_bytes = checked::add(fused.output_bytes, o.output_bytes);
  }
  fused.fused = share_reduction ? static_cast<std::int64_t>(at.size()) : 1;
  fused.merged.clear();
  for (int i : at) fused.merged.push_back({layer.ops[static_cast<std::size_t>(i)].name, layer.ops[static_cast<std::size_t>(i)].n});
  // New indices: the merged op at the first one's place, the others dropped.
  std::map<int, int> moved;
  std::vector<Op> ops;
  for (std::size_t i = 0; i < layer.ops.size(); ++i) {
    const int old = static_cast<int>(i);
    if (old == at.front()) {
      moved[old] = static_cast<int>(ops.size());
      ops.push_back(fused);
    } else if (std::find(at.begin(), at.end(), old) != at.end()) {
      moved[old] = -2;  // resolved to the merged op below
    } else {
      moved[old] = static_cast<int>(ops.size());
      ops.push_back(layer.ops[i]);
    }
  }
  const int merged = moved[at.front()];
  for (auto& op : ops) {
    std::vector<int> inputs;
    for (int in : op.inputs) {
      const int to = in < 0 ? in : (moved.at(in) == -2 ? merged : moved.at(in));
      if (std::find(inputs.begin(), inputs.end(), to) == inputs.end()) inputs.push_back(to);
    }
    op.inputs = std::move(inputs);
  }
  layer.ops = std::move(ops);
  return true;
}

}  // namespace

Layer fuse_shared_inputs(const Layer& layer, Phase phase) {
  Layer out = layer;
  if (!out.decoder) return out;
  const bool decode = phase == Phase::decode;
  if (!decode) {  // decode has these already (WaferLLM's fused reductions)
    merge(out, {"q_proj", "k_proj", "v_proj"}, "qkv_proj", false);
    merge(out, {"gate_proj", "up_proj"}, "gate_up_proj", false);
  }
  // MLA's down-projections read the same normed input.
  if (!merge(out, {"q_a_proj", "kv_a_proj"}, "q_kv_a_proj", decode)) {
    merge(out, {"q_proj", "kv_a_proj"}, "q_kv_a_proj", decode);
  }
  return out;
}

bool has_fusion(const Layer& layer, Phase phase) {
  return fuse_shared_inputs(layer, phase).ops.size() != layer.ops.size();
}

Workload fuse_decode_reductions(const Workload& w) {
  if (w.shape.phase != Phase::decode) return w;
  Workload out = w;
  for (auto& layer : out.layers) {
    if (!layer.decoder) continue;
    merge(layer, {"q_proj", "k_proj", "v_proj"}, "qkv_proj");
    merge(layer, {"gate_proj", "up_proj"}, "gate_up_proj");
  }
  return out;
}

}  // namespace wavel::workload
