// Block splitting and de-duplication: identical decoder layers get one type, so per-block costs are
// computed once per type and region shape.
#include "wavel/search/blocks.hpp"

#include <map>
#include <sstream>
#include <string>

namespace wavel::search {

namespace {

constexpr int kBlockInput = -1;

workload::Layer part(const workload::Layer& layer, std::size_t begin, std::size_t end) {
  workload::Layer p;
  p.name = layer.name;
  p.is_moe = layer.is_moe;
  p.decoder = layer.decoder;
  for (std::size_t i = begin; i < end; ++i) {
    workload::Op op = layer.ops[i];
    for (int& in : op.inputs) {
      in = in < static_cast<int>(begin) ? kBlockInput : in - static_cast<int>(begin);
    }
    p.ops.push_back(std::move(op));
  }
  return p;
}

}  // namespace

std::string block_fingerprint(const workload::Layer& layer) {
  std::ostringstream f;
  f << (layer.is_moe ? 'M' : '-') << (layer.decoder ? 'D' : '-') << ';';
  for (const auto& op : layer.ops) {
    f << op.name << ':' << static_cast<int>(op.kind) << ':' << op.batch << ',' << op.m << ',' << op.k << ',' << op.n
      << ',' << op.flops << ',' << op.weight_bytes << ',' << op.input_bytes << ',' << op.output_bytes << ','
      << op.kv_cache_bytes << ',' << op.experts << ',' << op.experts_per_token << ',' << op.heads << ','
      << op.kv_heads << ',' << op.fused << ',' << op.scalar_elements << ',' << op.scalar_instructions << ','
      << op.scalar_divisions << 'v';
    for (const auto count : op.vector) f << count << ',';
    f << '[';
    for (int in : op.inputs) f << in << ',';
    f << ']';
    for (const auto& part : op.merged) f << part.name << '=' << part.n << ',';
    f << ';';
  }
  return f.str();
}

std::vector<Block> split_blocks(const workload::Workload& workload) {
  std::vector<workload::Layer> parts;
  for (const auto& layer : workload.layers) {
    std::size_t cut = layer.ops.size();
    for (std::size_t i = 1; i < layer.ops.size(); ++i) {
      if (layer.ops[i].name == "mlp_norm") cut = i;
    }
    parts.push_back(part(layer, 0, cut));
    if (cut < layer.ops.size()) parts.push_back(part(layer, cut, layer.ops.size()));
  }
  std::map<std::string, int> types;
  std::vector<Block> blocks;
  for (auto& p : parts) {
    Block b;
    b.type = types.emplace(block_fingerprint(p), static_cast<int>(types.size())).first->second;
    for (const auto& op : p.ops) {
      b.resident_bytes += op.weight_bytes + op.kv_cache_bytes;
      b.flops += op.flops;
    }
    b.kernels = static_cast<std::int64_t>(p.ops.size());
    b.output_bytes = p.ops.empty() ? 0 : p.ops.back().output_bytes;
    b.ops = std::move(p);
    blocks.push_back(std::move(b));
  }
  return blocks;
}

}  // namespace wavel::search
