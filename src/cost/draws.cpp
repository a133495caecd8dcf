// Counter-based normal draws of the fitted parameters and Kokkos-parallel evaluation under them.
#include "wavel/cost/draws.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <optional>
#include <limits>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/cost/model.hpp"

namespace wavel::cost {

namespace {

// Uniform in (0, 1) from the top 53 bits of a hash of the counter.
double uniform(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  const std::uint64_t h = splitmix64(splitmix64(splitmix64(seed) ^ a) ^ (b * 0x632be59bd9b4e019ULL));
  return (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller on two counter-keyed uniforms.
double normal(std::uint64_t seed, std::uint64_t draw, std::uint64_t k) {
  const double u1 = uniform(seed, draw, 2 * k), u2 = uniform(seed, draw, 2 * k + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

const ParamInfo* info_of(const std::string& name) {
  for (const auto& p : param_registry()) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

std::vector<std::vector<double>> rows_of(const Eigen::MatrixXd& m) {
  std::vector<std::vector<double>> out;
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    const Eigen::RowVectorXd row = m.row(i);
    out.emplace_back(row.begin(), row.end());
  }
  return out;
}

Eigen::MatrixXd to_eigen(const std::vector<std::vector<double>>& a) {
  const auto n = static_cast<Eigen::Index>(a.size());
  Eigen::MatrixXd m(n, n);
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j) m(i, j) = a[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
  }
  return m;
}

}  // namespace

std::optional<std::vector<std::vector<double>>> covariance_factor(const std::vector<std::vector<double>>& a) {
  const Eigen::MatrixXd m = to_eigen(a);
  if (!m.allFinite()) return std::nullopt;
  const Eigen::Index n = m.rows();
  // A parameter of zero variance (pinned, or fitted elsewhere) is a zero row: the Cholesky factor of
  // the others, the unique lower-triangular one, with zeros for it.
  std::vector<Eigen::Index> kept;
  for (Eigen::Index i = 0; i < n; ++i) {
    if (m(i, i) != 0.0) kept.push_back(i);
  }
  const auto k = static_cast<Eigen::Index>(kept.size());
  Eigen::MatrixXd block(k, k);
  for (Eigen::Index i = 0; i < k; ++i) {
    for (Eigen::Index j = 0; j < k; ++j) block(i, j) = m(kept[static_cast<std::size_t>(i)], kept[static_cast<std::size_t>(j)]);
  }
  Eigen::MatrixXd f = Eigen::MatrixXd::Zero(n, n);
  const Eigen::LLT<Eigen::MatrixXd> llt(block);
  if (llt.info() == Eigen::Success) {
    const Eigen::MatrixXd lower = llt.matrixL();
    for (Eigen::Index i = 0; i < k; ++i) {
      for (Eigen::Index j = 0; j <= i; ++j) f(kept[static_cast<std::size_t>(i)], kept[static_cast<std::size_t>(j)]) = lower(i, j);
    }
  } else {
    // Semi-definite up to rounding (a conditioned covariance of perfectly correlated parameters):
    // pivoted LDL^T, F = P^T L D^1/2, pivots within 1e-10 of zero taken as 0.
    const Eigen::LDLT<Eigen::MatrixXd> ldlt(m);
    const double scale = std::max(1.0, m.diagonal().cwiseAbs().maxCoeff());
    const Eigen::VectorXd d = ldlt.vectorD();
    if (ldlt.info() != Eigen::Success || !(d.array() >= -1e-10 * scale).all()) return std::nullopt;
    const Eigen::MatrixXd lower = ldlt.matrixL();
    f = ldlt.transpositionsP().transpose() * (lower * d.cwiseMax(0.0).cwiseSqrt().asDiagonal());
  }
  return rows_of(f);
}

ParamUncertaintySpec pin(const ParamUncertaintySpec& spec, const std::vector<std::string>& pinned) {
  std::vector<std::size_t> free, held;
  for (std::size_t i = 0; i < spec.names.size(); ++i) {
    (std::find(pinned.begin(), pinned.end(), spec.names[i]) == pinned.end() ? free : held).push_back(i);
  }
  ParamUncertaintySpec out;
  out.method = spec.method;
  if (held.empty()) return spec;
  for (std::size_t i : free) out.names.push_back(spec.names[i]);
  const Eigen::MatrixXd sigma = to_eigen(spec.ln_covariance);
  const auto pick = [&](const std::vector<std::size_t>& rows, const std::vector<std::size_t>& cols) {
    Eigen::MatrixXd m(rows.size(), cols.size());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      for (std::size_t c = 0; c < cols.size(); ++c) {
        m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)) =
            sigma(static_cast<Eigen::Index>(rows[r]), static_cast<Eigen::Index>(cols[c]));
      }
    }
    return m;
  };
  // LDL^T's solve drops a zero pivot (a held parameter of zero variance): conditioning on it changes
  // nothing. With every parameter pinned nothing is left to draw.
  if (!free.empty()) {
    const Eigen::MatrixXd conditioned =
        pick(free, free) - pick(free, held) * pick(held, held).ldlt().solve(pick(held, free));
    out.ln_covariance = rows_of(conditioned);
  }
  out.method += "; pinned:";
  for (std::size_t i : held) out.method += " " + spec.names[i];
  return out;
}

std::vector<CostParams> draw_params(const CostParams& center, const ParamUncertaintySpec& spec, std::int64_t draws,
                                    std::uint64_t seed) {
  std::vector<CostParams> out;
  if (spec.names.empty() || draws <= 0) return out;
  const auto factor = covariance_factor(spec.ln_covariance);
  if (!factor) {
    throw DataError({Diagnostic{"", 0, 0, "uncertainty.ln_covariance", "the covariance is not positive semi-definite"}});
  }
  const auto& l = *factor;
  std::vector<const ParamInfo*> infos;
  for (const auto& name : spec.names) {
    const ParamInfo* info = info_of(name);
    if (info == nullptr) throw InternalError("draw_params: unknown parameter " + name);
    infos.push_back(info);
  }
  out.reserve(static_cast<std::size_t>(draws));
  for (std::int64_t d = 0; d < draws; ++d) {
    std::vector<double> z(infos.size());
    for (std::size_t k = 0; k < z.size(); ++k) z[k] = normal(seed, static_cast<std::uint64_t>(d), k);
    CostParams p = center;
    for (std::size_t i = 0; i < infos.size(); ++i) {
      double shift = 0.0;
      for (std::size_t k = 0; k < z.size(); ++k) shift += l[i][k] * z[k];
      const double base = center.*(infos[i]->field);
      // ln space needs a positive centre; a parameter at 0 stays there.
      const double drawn = base > 0.0 ? base * std::exp(shift) : base;
      p.*(infos[i]->field) = std::clamp(drawn, infos[i]->min_value, infos[i]->max_value);
    }
    out.push_back(p);
  }
  return out;
}

std::vector<double> tokens_per_s_under(const meshir::Schedule& schedule, const wafer::WaferParams& wafer,
                                       const std::vector<CostParams>& params, bool decode, std::int64_t prompt_tokens) {
  std::vector<double> out(params.size(), 0.0);
  double* slots = out.data();
  const CostParams* draws = params.data();
  // Each draw writes its own slot: the result does not depend on the thread count.
  Kokkos::parallel_for(
      "wavel::cost::tokens_per_s_under",
      Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, static_cast<std::int64_t>(params.size())),
      [&](std::int64_t i) {
        slots[i] = evaluate(schedule, wafer, draws[i], decode, prompt_tokens).tokens_per_s;
      });
  Kokkos::fence();
  return out;
}

Interval interval_90(std::vector<double> samples) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (samples.empty()) return {nan, nan};
  for (double s : samples) {
    if (!std::isfinite(s)) return {nan, nan};
  }
  std::sort(samples.begin(), samples.end());
  const auto at = [&](double q) {
    const double pos = q * static_cast<double>(samples.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, samples.size() - 1);
    return samples[lo] + (pos - static_cast<double>(lo)) * (samples[hi] - samples[lo]);
  };
  return {at(0.05), at(0.95)};
}

}  // namespace wavel::cost
