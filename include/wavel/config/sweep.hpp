// Expansion of the workload axes into numbered settings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"

namespace wavel::config {

/// One point of the sweep: (model, phase, concurrent requests, input tokens, output tokens) on the wafer.
struct Setting {
  std::int64_t id = 0;            ///< position in the sweep, 0-based; keys all per-setting work
  std::size_t model_index = 0;    ///< into Config::workloads.models
  workload::WorkloadShape shape;
  std::int64_t wafers = 1;        ///< systems the model is deployed over (cluster.wafers)
  std::size_t hardware = 0;       ///< into Config::hardware (the wafer.sweep point it runs on)
};

/// Cartesian product of the axes, numbered with the last axis varying fastest:
/// models, hardware points (wafer.sweep), cluster.wafers, phases, concurrent_requests, then input_tokens x output_tokens (or the
/// `lengths` pairs).
/// Prefill does not depend on the output length: its settings take each distinct input length once,
/// with output_tokens 0.
std::vector<Setting> expand_sweep(const Config& config);

/// Task `index` of `count` (0-based, count >= 1) takes the contiguous settings
/// [index * n / count, (index + 1) * n / count), keeping their ids; for Slurm job arrays.
/// Throws wavel::UsageError when index is not in [0, count).
std::vector<Setting> sweep_slice(const std::vector<Setting>& settings, std::int64_t index, std::int64_t count);

/// Human-readable label, e.g. "llama3-8b decode r4 in2048 out128" (" w4" added on 4 wafers, and
/// " [sram_per_pe_bytes=98304]" on a hardware point other than the base).
std::string setting_label(const Config& config, const Setting& setting);

}  // namespace wavel::config
