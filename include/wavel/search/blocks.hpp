// The units of work CUT splits: the embedding, each decoder layer's attention part and MLP/MoE part
// (so a CUT can separate consecutive layers, operator groups, or attention from experts), the head.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/workload/workload.hpp"

namespace wavel::search {

/// A contiguous piece of the op graph with everything the search needs to cost it quickly.
struct Block {
  workload::Layer ops;               ///< named after its layer, so op names stay unique
  int type = 0;                      ///< blocks with equal type have identical ops and work
  std::int64_t resident_bytes = 0;   ///< weights + KV cache
  std::int64_t output_bytes = 0;     ///< activation handed to the next block
  std::int64_t flops = 0;
  std::int64_t kernels = 0;          ///< ops, each paying the fixed kernel overhead
};

/// Everything about a block's ops that its cost can depend on (not the layer's name): equal
/// fingerprints, equal costs on equal rectangles.
std::string block_fingerprint(const workload::Layer& layer);

/// Splits every decoder layer at its `mlp_norm` op; references from the second part into the first
/// become references to the block input (the first part's output).
std::vector<Block> split_blocks(const workload::Workload& workload);

}  // namespace wavel::search
