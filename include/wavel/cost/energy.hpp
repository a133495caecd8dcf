// Energy per token: the systems' power over the time a token takes, plus the bits its activations
// carry over wafer-to-wafer links.
#pragma once

#include <cstdint>

#include "wavel/wafer/wafer.hpp"

namespace wavel::cost {

/// Published range of one CS-2/CS-3 system's power (docs/config.md, Energy): the bounds of system_power_w.
constexpr double kMinSystemPowerW = 15000;
constexpr double kMaxSystemPowerW = 23000;

/// Energy constants, each named with its source in docs/config.md, Energy.
struct EnergyParams {
  double system_power_w = 20000;     ///< one system at its preset's fabric PEs and clock
  double off_wafer_pj_per_bit = 10;  ///< one bit over a wafer-to-wafer link (WaferLLM Table 1: ~10 pJ/bit off-chip)
};

/// Power of one system built around `w`: system_power_w split evenly over the preset's fabric PEs
/// (the per-PE power) and scaled by this wafer's fabric PEs and clock against the preset's (dynamic
/// power at a fixed voltage). SRAM size and SIMD width are not charged. Throws InternalError for an
/// unknown preset.
double system_power_w(const wafer::WaferParams& w, const EnergyParams& e);

/// Energy of one token of a deployment (model-predicted).
struct TokenEnergy {
  double power_w = 0;            ///< all the deployment's systems
  double j_per_token = 0;        ///< power / tokens per second + link energy per token
  double link_j_per_token = 0;   ///< the activations' bits over the pipeline's wafer boundaries
  double tokens_per_s_per_kw = 0;
};

/// Energy of a deployment over `wafers` systems of wafer `w` that serves `tokens_per_s`, where each
/// token's hidden state (hidden_size FP16 values) crosses each of the wafers - 1 pipeline boundaries
/// once. NaN figures when tokens_per_s is not positive.
TokenEnergy token_energy(const wafer::WaferParams& w, const EnergyParams& e, std::int64_t wafers, double tokens_per_s,
                         std::int64_t hidden_size);

}  // namespace wavel::cost
