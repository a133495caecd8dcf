// Energy per token; see cost/energy.hpp and docs/config.md, Energy.
#include "wavel/cost/energy.hpp"

#include <limits>

#include "wavel/common/error.hpp"

namespace wavel::cost {

double system_power_w(const wafer::WaferParams& w, const EnergyParams& e) {
  const auto preset = wafer::find_wafer_preset(w.preset);
  if (!preset) throw InternalError("energy: unknown wafer preset '" + w.preset + "'");
  const double preset_pes = static_cast<double>(preset->fabric_w_pes) * static_cast<double>(preset->fabric_h_pes);
  const double pes = static_cast<double>(w.fabric_w_pes) * static_cast<double>(w.fabric_h_pes);
  return e.system_power_w * (pes / preset_pes) * (w.clock_hz / preset->clock_hz);
}

TokenEnergy token_energy(const wafer::WaferParams& w, const EnergyParams& e, std::int64_t wafers, double tokens_per_s,
                         std::int64_t hidden_size) {
  TokenEnergy t;
  t.power_w = system_power_w(w, e) * static_cast<double>(wafers);
  if (!(tokens_per_s > 0)) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    t.j_per_token = t.link_j_per_token = t.tokens_per_s_per_kw = nan;
    return t;
  }
  constexpr double kBitsPerFp16 = 16;
  constexpr double kJoulesPerPicojoule = 1e-12;
  t.link_j_per_token = static_cast<double>(wafers - 1) * static_cast<double>(hidden_size) * kBitsPerFp16 *
                       e.off_wafer_pj_per_bit * kJoulesPerPicojoule;
  t.j_per_token = t.power_w / tokens_per_s + t.link_j_per_token;
  t.tokens_per_s_per_kw = 1000.0 / t.j_per_token;
  return t;
}

}  // namespace wavel::cost
