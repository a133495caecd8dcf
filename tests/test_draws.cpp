// Parameter uncertainty: the params file section, pinning, counter-based draws and 90 % intervals.
#include <doctest/doctest.h>

#include <cmath>

#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/draws.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/workload/model.hpp"

using namespace wavel;

namespace {

cost::ParamUncertaintySpec two_by_two() {
  return {{"beta_cycles_per_stage", "scalar_op_cycles"}, {{4.0, 2.0}, {2.0, 3.0}}, "by hand"};
}

}  // namespace

TEST_CASE("pinning conditions the covariance on the pinned parameters, by hand") {
  const auto pinned = cost::pin(two_by_two(), {"scalar_op_cycles"});
  REQUIRE(pinned.names == std::vector<std::string>{"beta_cycles_per_stage"});
  // Schur complement: 4 - 2 x (1/3) x 2 = 8/3.
  CHECK(pinned.ln_covariance[0][0] == doctest::Approx(8.0 / 3.0));
  CHECK(cost::pin(two_by_two(), {}).names.size() == 2);
  const auto all = cost::pin(two_by_two(), {"scalar_op_cycles", "beta_cycles_per_stage"});
  CHECK(all.names.empty());
  CHECK(all.ln_covariance.empty());
  CHECK(all.method == "by hand; pinned: beta_cycles_per_stage scalar_op_cycles");
}

TEST_CASE("the covariance factor: Cholesky where definite, zero rows kept, rank-deficient and indefinite matrices") {
  const auto product = [](const std::vector<std::vector<double>>& f, std::size_t i, std::size_t j) {
    double sum = 0;
    for (std::size_t k = 0; k < f.size(); ++k) sum += f[i][k] * f[j][k];
    return sum;
  };
  // By hand: [[4, 2], [2, 3]] = L L^T with L = [[2, 0], [1, sqrt 2]].
  const auto l = cost::covariance_factor({{4, 0, 2}, {0, 0, 0}, {2, 0, 3}});
  REQUIRE(l);
  CHECK((*l)[0][0] == doctest::Approx(2.0));
  CHECK((*l)[2][0] == doctest::Approx(1.0));
  CHECK((*l)[2][2] == doctest::Approx(std::sqrt(2.0)));
  CHECK((*l)[0][2] == 0.0);
  CHECK((*l)[1] == std::vector<double>{0, 0, 0});
  // Rank one (two perfectly correlated parameters): no Cholesky factor, still F F^T = A.
  const std::vector<std::vector<double>> rank_one{{1, 2}, {2, 4}};
  const auto f = cost::covariance_factor(rank_one);
  REQUIRE(f);
  for (std::size_t i = 0; i < 2; ++i) {
    for (std::size_t j = 0; j < 2; ++j) CHECK(product(*f, i, j) == doctest::Approx(rank_one[i][j]));
  }
  CHECK_FALSE(cost::covariance_factor({{1, 2}, {2, 1}}));
  CHECK_FALSE(cost::covariance_factor({{1, 0}, {0, -1e-3}}));
  CHECK_FALSE(cost::covariance_factor({{std::nan(""), 0}, {0, 1}}));
}

TEST_CASE("the uncertainty section round-trips and bad matrices are located") {
  const auto spec = two_by_two();
  const std::string text = "beta_cycles_per_stage: 10\n" + cost::uncertainty_to_yaml(spec);
  const auto back = cost::parse_uncertainty(text, "p.yaml");
  CHECK(back.names == spec.names);
  CHECK(back.ln_covariance == spec.ln_covariance);
  CHECK(back.method == "by hand");
  CHECK(cost::parse_params(text, "p.yaml", {}).beta_cycles_per_stage == 10.0);
  CHECK_THROWS_WITH_AS(cost::parse_uncertainty("uncertainty:\n  names: [beta_cycles_per_stage, scalar_op_cycles]\n"
                                               "  ln_covariance:\n    - [1, 2]\n    - [0, 1]\n",
                                               "p.yaml"),
                       doctest::Contains("p.yaml:5:7: error: uncertainty.ln_covariance: the matrix must be symmetric"),
                       ConfigError);
  CHECK_THROWS_AS(cost::parse_uncertainty("uncertainty:\n  names: [bta]\n  ln_covariance: [[1]]\n", "p.yaml"), ConfigError);
  CHECK(cost::parse_uncertainty("beta_cycles_per_stage: 10\n", "p.yaml").names.empty());
  // A covariance that is not positive semi-definite, or a parameter named twice, is refused where the
  // file is read (params files of every command), not at the first draw.
  const std::string not_psd =
      "beta_cycles_per_stage: 10\nuncertainty:\n  names: [beta_cycles_per_stage, scalar_op_cycles]\n"
      "  ln_covariance:\n    - [1, 2]\n    - [2, 1]\n";
  CHECK_THROWS_WITH_AS(cost::parse_params(not_psd, "p.yaml", {}),
                       doctest::Contains("p.yaml:5:5: error: uncertainty.ln_covariance: the covariance is not positive "
                                         "semi-definite"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(cost::parse_uncertainty("uncertainty:\n  names: [beta_cycles_per_stage, beta_cycles_per_stage]\n"
                                               "  ln_covariance: [[1, 0], [0, 1]]\n",
                                               "p.yaml"),
                       doctest::Contains("p.yaml:2:34: error: uncertainty.names: 'beta_cycles_per_stage' is named twice"),
                       ConfigError);
}

TEST_CASE("draws are counter-based, bounded and centred in ln space") {
  cost::CostParams center;
  center.beta_cycles_per_stage = 10.0;
  center.scalar_op_cycles = 6.0;
  auto spec = two_by_two();
  spec.ln_covariance = {{0.04, 0.0}, {0.0, 0.01}};
  const auto a = cost::draw_params(center, spec, 4096, 7);
  const auto b = cost::draw_params(center, spec, 4096, 7);
  REQUIRE(a.size() == 4096);
  double mean_ln_beta = 0, var_ln_beta = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].beta_cycles_per_stage == b[i].beta_cycles_per_stage);  // same seed, same draws
    CHECK(a[i].scalar_op_cycles <= 50.0);
    CHECK(a[i].alpha_cycles_per_hop == center.alpha_cycles_per_hop);  // not in the spec: untouched
    mean_ln_beta += std::log(a[i].beta_cycles_per_stage / 10.0) / 4096.0;
  }
  for (const auto& p : a) var_ln_beta += std::pow(std::log(p.beta_cycles_per_stage / 10.0) - mean_ln_beta, 2) / 4095.0;
  // sd 0.2: the mean of 4096 draws is within 4 standard errors (0.0125) of 0, the variance near 0.04.
  CHECK(std::abs(mean_ln_beta) < 0.0125);
  CHECK(var_ln_beta == doctest::Approx(0.04).epsilon(0.1));
  CHECK(cost::draw_params(center, spec, 4, 8)[0].beta_cycles_per_stage != a[0].beta_cycles_per_stage);
  CHECK(cost::draw_params(center, {}, 64, 7).empty());
  spec.ln_covariance = {{1.0, 2.0}, {2.0, 1.0}};  // not positive semi-definite
  CHECK_THROWS_AS(cost::draw_params(center, spec, 4, 7), DataError);
}

TEST_CASE("interval_90 takes the 5th and 95th percentiles") {
  std::vector<double> samples;
  for (int i = 100; i >= 0; --i) samples.push_back(i);
  const auto iv = cost::interval_90(samples);
  CHECK(iv.lo == doctest::Approx(5.0));
  CHECK(iv.hi == doctest::Approx(95.0));
  CHECK(std::isnan(cost::interval_90({}).lo));
  CHECK(std::isnan(cost::interval_90({1.0, std::nan("")}).hi));
}

TEST_CASE("with the committed uncertainty, the interval contains the prediction and narrows when alpha is pinned") {
  const std::string file = wavel::test::source_path("configs/params/wse2-waferllm.yaml").string();
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::load_params(file, cost::default_params(wafer));
  const auto spec = cost::load_uncertainty(file);
  REQUIRE(spec.names.size() >= 2);
  workload::WorkloadShape shape;
  shape.phase = workload::Phase::decode;
  shape.concurrent_requests = 4;
  shape.input_tokens = 2048;
  shape.output_tokens = 128;
  const auto w = workload::build_workload(*workload::find_model_preset("llama3-8b"), shape);
  const auto schedule = baselines::build_waferllm(w, wafer, 360);
  REQUIRE(schedule);
  const double point = cost::evaluate(*schedule, wafer, params, true, 2048).tokens_per_s;
  const auto all = cost::interval_90(
      cost::tokens_per_s_under(*schedule, wafer, cost::draw_params(params, spec, 64, 1), true, 2048));
  CHECK(all.lo < point);
  CHECK(point < all.hi);
  const auto pinned = cost::interval_90(cost::tokens_per_s_under(
      *schedule, wafer, cost::draw_params(params, cost::pin(spec, {"alpha_cycles_per_hop"}), 64, 1), true, 2048));
  CHECK(pinned.hi - pinned.lo < all.hi - all.lo);
  // Evaluated in parallel, each draw lands in its own slot: a second pass is bit-identical.
  const auto draws = cost::draw_params(params, spec, 16, 3);
  CHECK(cost::tokens_per_s_under(*schedule, wafer, draws, true, 2048) ==
        cost::tokens_per_s_under(*schedule, wafer, draws, true, 2048));
}
