// Measured reference points (e.g. WaferLLM's published WSE-2 figures) that calibration fits to.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/workload/workload.hpp"

namespace wavel::calibrate {

/// One measurement: a model run layer after layer on a square P x P region (WaferLLM's schedule).
struct ReferencePoint {
  std::string model;                             ///< a model preset name (validated)
  workload::Phase phase = workload::Phase::decode;
  std::int64_t context_tokens = 0;               ///< decode: tokens already in the KV cache; 0 for prefill
  std::int64_t input_tokens = 0;                 ///< prefill: prompt tokens; 0 for decode
  std::int64_t grid_pes = 0;                     ///< side P of the square region, in PEs
  double tpr_tokens_per_s = 0;                   ///< throughput per request: 1/TPOT (decode), prompt tokens/s (prefill)
  // WaferLLM's run configuration where it departs from what its scripts derive from the model and P
  // (calibrate/waferllm_layer.hpp); 0: derived.
  std::int64_t dim = 0;                          ///< padded hidden size (a multiple of grid)
  std::int64_t ffn_dim = 0;                      ///< padded FFN width (a multiple of grid)
  std::int64_t seq_len = 0;                      ///< padded sequence: KV length (decode) or prompt (prefill)
  std::int64_t group_num = 0;                    ///< decode: groups of the two-level allreduce tree
  int line = 0;                                  ///< 1-based position of the point in its file, for messages
  int column = 0;

  /// context_tokens for decode, input_tokens for prefill.
  [[nodiscard]] std::int64_t tokens() const {
    return phase == workload::Phase::decode ? context_tokens : input_tokens;
  }
};

/// A reference file: where the numbers come from, the wafer they were measured on, the points.
/// The file's `kernels:` list (single-kernel figures for reading, not fitting) is accepted and skipped.
struct ReferenceSet {
  std::string file;                   ///< path or label the set was read from, for messages
  std::string source;                 ///< citation of the measurements
  std::string wafer;                  ///< wafer preset name ("wse2", "wse3")
  std::vector<ReferencePoint> points;  ///< in file order
};

/// Reads a reference file. Throws wavel::InputMissingError if it cannot be read and wavel::DataError
/// with every problem (file:line:col, key path) otherwise.
ReferenceSet load_reference(const std::string& path);

/// Same, from text; `file_label` names the input in messages.
ReferenceSet parse_reference(const std::string& text, const std::string& file_label);

}  // namespace wavel::calibrate
