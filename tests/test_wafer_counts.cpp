// The wafer count as a searched dimension (issue 23): cluster.max_wafers, and each problem's
// fewest, fastest, most-per-wafer and target-meeting count, derived by hand on made-up fronts.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/report/wafer_counts.hpp"

using namespace wavel;

namespace {

config::Setting setting(std::int64_t id, workload::Phase phase, std::int64_t requests, std::int64_t wafers) {
  config::Setting s;
  s.id = id;
  s.model_index = 0;
  s.shape = workload::WorkloadShape{phase, requests, 2048, phase == workload::Phase::decode ? 128 : 0};
  s.wafers = wafers;
  return s;
}

driver::SettingResult result(std::int64_t id, const std::string& deployment, std::vector<std::pair<double, double>> front) {
  driver::SettingResult r;
  r.setting_id = id;
  r.deployment = deployment;
  for (const auto& [tps, latency] : front) {
    driver::FrontEntry e;
    e.tokens_per_s = tps;
    e.latency_s = latency;
    r.front.push_back(e);
  }
  return r;
}

}  // namespace

TEST_CASE("each problem's fewest, fastest, most-per-wafer and target-meeting wafer count") {
  using workload::Phase;
  // Problem A (decode r4) on 1, 2, 4 wafers; B (prefill r4); C (decode r16), placed nowhere.
  const std::vector<config::Setting> settings{
      setting(0, Phase::decode, 4, 1),  setting(1, Phase::prefill, 4, 1), setting(2, Phase::decode, 16, 1),
      setting(3, Phase::decode, 4, 2),  setting(4, Phase::prefill, 4, 2), setting(5, Phase::decode, 16, 2),
      setting(6, Phase::decode, 4, 4),  setting(7, Phase::prefill, 4, 4), setting(8, Phase::decode, 16, 4)};
  const std::vector<driver::SettingResult> results{
      result(0, "layer_subset", {{900, 0.001}}),  // not a deployment of the model: never counts
      result(1, "single", {{1000, 1.0}}),
      result(2, "layer_subset", {}),
      result(3, "pipeline", {{100, 0.01}}),
      result(4, "pipeline", {}),
      result(5, "pipeline", {}),
      result(6, "pipeline", {{150, 0.004}, {120, 0.002}}),
      result(7, "pipeline", {{3000, 0.5}}),
      result(8, "pipeline", {})};
  wafer::ClusterParams cluster;
  cluster.target_tpr_tokens_per_s = 300;  // 1 / TPOT: 100 on 2 wafers; 250 or 500 on 4
  cluster.target_ttft_s = 0.8;
  const auto rows = driver::wafer_count_rows(settings, results, cluster);
  REQUIRE(rows.size() == 3);
  const auto& a = rows[0];
  CHECK(a.wafer_counts == "1,2,4");
  CHECK(a.fewest.wafers == 2);
  CHECK(a.fewest.setting_id == 3);
  CHECK(a.fastest.wafers == 4);
  CHECK(a.fastest.tokens_per_s == 150);
  CHECK(a.per_wafer.wafers == 2);  // 100 / 2 = 50 against 150 / 4 = 37.5
  CHECK(a.target.wafers == 4);     // its second front point: TPOT 2 ms, 500 tokens/s per user
  CHECK(a.target.tokens_per_s == 120);
  CHECK(a.target.latency_s == 0.002);
  const auto& b = rows[1];
  CHECK(b.fewest.wafers == 1);
  CHECK(b.fastest.wafers == 4);
  CHECK(b.per_wafer.wafers == 1);  // 1000 against 750
  CHECK(b.target.wafers == 4);     // TTFT 0.5 s within 0.8 s; 1.0 s on one wafer is not
  const auto& c = rows[2];
  CHECK(c.fewest.wafers == 0);
  CHECK(c.fewest.setting_id == -1);
  CHECK(c.target.setting_id == -1);

  config::Config config = config::parse_config("workloads: {models: llama3-8b}\n", "w.yaml", {});
  config.cluster = cluster;
  const auto table = driver::wafer_counts_table(config, settings, rows);
  CHECK(table.rows() == 3);
  const auto column = [&](const std::string& name) -> const io::Column& {
    for (const auto& col : table.columns) {
      if (col.name == name) return col;
    }
    FAIL("no column " << name);
    return table.columns.front();
  };
  CHECK(std::get<std::vector<std::int64_t>>(column("target_wafers").values) == std::vector<std::int64_t>{4, 4, 0});
  CHECK(std::get<std::vector<std::int64_t>>(column("fewest_setting_id").values) == std::vector<std::int64_t>{3, 1, -1});
  const auto& target = std::get<std::vector<double>>(column("target").values);
  CHECK(target[0] == 300);
  CHECK(target[1] == 0.8);
  CHECK(std::isnan(std::get<std::vector<double>>(column("fastest_tokens_per_s").values)[2]));
  std::ostringstream printed;
  driver::print_wafer_counts(printed, config, settings, rows);
  CHECK(printed.str().find("PREDICTED") != std::string::npos);
  CHECK(printed.str().find(">= 300 tok/s/user: 4 (#6)") != std::string::npos);
  CHECK(printed.str().find("TTFT <= 800 ms: 4 (#7)") != std::string::npos);
}

TEST_CASE("cluster.max_wafers searches every wafer count from 1, each model to its depth") {
  const auto c = config::parse_config(
      "workloads:\n  models: [llama3-8b, models/tiny-llama/config.json]\n  phases: [decode]\n"
      "cluster:\n  max_wafers: 6\n  target_tpr_tokens_per_s: 1000\n",
      std::string(WAVEL_SOURCE_DIR) + "/configs/c.yaml", {});
  CHECK(c.cluster.wafers == std::vector<std::int64_t>{1, 2, 3, 4, 5, 6});
  const auto settings = config::expand_sweep(c);
  // llama3-8b (32 layers) on 1..6; tiny-llama (4 layers) on 1..4 only.
  REQUIRE(settings.size() == 10);
  CHECK(settings[5].wafers == 6);
  CHECK(settings[9].model_index == 1);
  CHECK(settings[9].wafers == 4);
  // The resolved config says max_wafers (not the list), so it reads back the same.
  const auto yaml = config::to_yaml(c);
  CHECK(yaml.find("max_wafers: 6") != std::string::npos);
  CHECK(yaml.find("target_tpr_tokens_per_s: 1000") != std::string::npos);
  const auto again = config::parse_config(yaml, std::string(WAVEL_SOURCE_DIR) + "/configs/c.yaml", {});
  CHECK(config::expand_sweep(again).size() == 10);
}

TEST_CASE("cluster.max_wafers with cluster.wafers, or a target out of bounds, is a config error naming the key") {
  const auto refused = [](const std::string& cluster, const std::string& key) {
    try {
      config::parse_config("workloads: {models: llama3-8b}\ncluster:\n" + cluster, "w.yaml", {});
      FAIL("accepted: " << cluster);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::config);
      CHECK(std::string(e.what()).find(key) != std::string::npos);
    }
  };
  refused("  wafers: [1, 2]\n  max_wafers: 4\n", "w.yaml:4:15: error: cluster.max_wafers");
  refused("  max_wafers: 65\n", "cluster.max_wafers");
  refused("  max_wafers: 0\n", "cluster.max_wafers");
  refused("  target_tpr_tokens_per_s: -5\n", "cluster.target_tpr_tokens_per_s");
  refused("  target_ttft_s: 0\n", "cluster.target_ttft_s");
}
