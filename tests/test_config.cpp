// Config validation: every kind of bad input is reported with file, line, column and key path.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/common/yaml_schema.hpp"

using wavel::config::parse_config;

namespace {

// Runs the parser and returns every formatted diagnostic, one per line.
std::string errors_of(const std::string& text, const std::vector<std::string>& overrides = {},
                      const std::string& file = "test.yaml") {
  try {
    parse_config(text, file, overrides);
  } catch (const wavel::ConfigError& e) {
    CHECK(e.code() == wavel::ExitCode::config);
    return e.what();
  }
  return "";
}

const char* kMinimal = "workloads:\n  models: [llama3-8b]\n";

}  // namespace

TEST_CASE("a minimal config gets the documented defaults") {
  const auto c = parse_config(kMinimal, "configs/x.yaml", {});
  CHECK(c.wafer.preset == "wse3");
  CHECK(c.wafer.grid_w_pes == 755);
  CHECK(c.wafer.grid_h_pes == 1174);
  CHECK(c.workloads.phases.size() == 2);
  CHECK(c.workloads.concurrent_requests == std::vector<std::int64_t>{1});
  CHECK(c.workloads.input_tokens == std::vector<std::int64_t>{2048});
  CHECK(c.output.dir == "results/runs/x");
  CHECK(c.search.cut_ratios == std::vector<double>{0.25, 0.5, 0.75});
}

TEST_CASE("did_you_mean suggests a near name and skips words too far off in length") {
  const std::vector<std::string> keys{"model", "phase", "batch"};
  CHECK(wavel::yaml::did_you_mean("modle", keys) == "model");
  CHECK(wavel::yaml::did_you_mean("batc", keys) == "batch");
  // Distance 3 from "model" is not under the threshold max(2, 8 / 3) + 1 = 3.
  CHECK(wavel::yaml::did_you_mean("modelxyz", keys).empty());
  // A hostile 100 kB key: its length alone rules every candidate out, so no suggestion.
  CHECK(wavel::yaml::did_you_mean(std::string(100000, 'm'), keys).empty());
}

TEST_CASE("every error in a file is reported at once, in order, with 1-based positions") {
  const auto path = wavel::test::source_path("tests/data/configs/many_errors.yaml");
  const std::string text = wavel::test::read_text(path);
  const std::string f = path.string();
  const std::string errors = errors_of(text, {}, f);
  const std::vector<std::string> expected{
      f + ":3:15: error: wafer.grid_w_pes: must be >= 1, got 0",
      f + ":4:15: error: wafer.grid_h_pes: grid larger than the wafer: 5000 PEs, but the wse3 fabric leaves at most 1174",
      f + ":5:13: error: wafer.clock_hz: expected a number, got 'fast'",
      f + ":7:3: error: wafer.alpha_cycles_per_hop: duplicate key (first given at line 6)",
      f + ":9:23: error: workloads.models[1]: unknown model 'lama3-8b'; did you mean 'llama3-8b'?",
      f + ":9:33: error: workloads.models[2]: model file not found: ",
      f + ":10:20: error: workloads.phases[1]: unknown value 'prefil'; did you mean 'prefill'?",
      f + ":11:25: error: workloads.concurrent_requests[0]: must be >= 1, got -4",
      f + ":13:3: error: workloads.output_tokns: unknown key; did you mean 'output_tokens'?",
      f + ":15:15: error: search.exhaustive: expected true or false, got 'maybe'",
      f + ":17:13: error: output.progress: unknown value 'sometimes'; expected one of: auto, always, never",
  };
  std::size_t position = 0;
  for (const auto& line : expected) {
    const auto found = errors.find(line, position);
    CHECK_MESSAGE(found != std::string::npos, "missing or out of order: " << line << "\nin:\n" << errors);
    if (found != std::string::npos) position = found;
  }
  // Exactly one line per problem.
  CHECK(std::count(errors.begin(), errors.end(), '\n') + 1 == static_cast<long>(expected.size()));
}

TEST_CASE("wrong types and shapes") {
  CHECK(errors_of("wafer: [1, 2]\nworkloads: {models: [llama3-8b]}\n") ==
        "test.yaml:1:8: error: wafer: expected a map, got a list");
  CHECK(errors_of("workloads: {models: [llama3-8b], input_tokens: \"2048\"}\n") ==
        "test.yaml:1:48: error: workloads.input_tokens: expected an integer, got the string \"2048\"");
  CHECK(errors_of("workloads: {models: [llama3-8b], input_tokens: []}\n") ==
        "test.yaml:1:48: error: workloads.input_tokens: expected at least one value");
  CHECK(errors_of("wafer: {defective_pes: [[1, 2], [3], [1, 2], [900, 1]]}\nworkloads: {models: [llama3-8b]}\n")
            .find("wafer.defective_pes[1]: expected an [x, y] pair") != std::string::npos);
  CHECK(errors_of("search: {cut_ratios: [0.5, 1.0, 0]}\nworkloads: {models: [llama3-8b]}\n") ==
        "test.yaml:1:28: error: search.cut_ratios[1]: must be < 1, got 1.0\n"
        "test.yaml:1:33: error: search.cut_ratios[2]: must be > 0, got 0");
}

TEST_CASE("missing sections, empty files and syntax errors") {
  CHECK(errors_of("") == "test.yaml:1:1: error: the config is empty");
  CHECK(errors_of("wafer: {preset: wse2}\n") ==
        "test.yaml:1:1: error: workloads: missing required section (it lists the models and shapes to sweep)");
  CHECK(errors_of("workloads: {models: [llama3-8b}\n").rfind("test.yaml:1:", 0) == 0);
  CHECK(errors_of("wokloads: {models: [llama3-8b]}\n").find("test.yaml:1:1: error: wokloads: unknown key; did you "
                                                           "mean 'workloads'?") != std::string::npos);
}

TEST_CASE("--set overrides are validated exactly like the file") {
  const auto c = parse_config(kMinimal, "x.yaml", {"wafer.preset=wse2", "workloads.concurrent_requests=[2, 4]",
                                                   "search.exhaustive=true", "wafer.beta_cycles_per_stage=55.5"});
  CHECK(c.wafer.preset == "wse2");
  CHECK(c.wafer.fmac_lanes() == 4);
  CHECK(c.workloads.concurrent_requests == std::vector<std::int64_t>{2, 4});
  CHECK(c.search.exhaustive);
  CHECK(c.wafer.beta_cycles_per_stage == 55.5);

  CHECK(errors_of(kMinimal, {"wafer.grid_w_pes=-3"}) ==
        "--set[1]:1:18: error: wafer.grid_w_pes: must be >= 1, got -3");
  CHECK(errors_of(kMinimal, {"search.exhastive=true"}) ==
        "--set[1]:1:1: error: search.exhastive: unknown key; did you mean 'exhaustive'?");
  CHECK(errors_of(kMinimal, {"novalue"}) == "--set[1]:1:1: error: expected key.path=value, got 'novalue'");
  CHECK(errors_of(kMinimal, {"workloads.models.x=1"}) ==
        "--set[1]:1:1: error: workloads.models: cannot set 'x' inside a value that is not a map");
}

TEST_CASE("wafer overrides and derived figures") {
  const auto c = parse_config(
      "wafer: {preset: wse3, grid_w_pes: 64, grid_h_pes: 32, defective_pes: [[0, 0], [63, 31]]}\n"
      "workloads: {models: [llama3-8b]}\n",
      "x.yaml", {});
  CHECK(c.wafer.usable_pes() == 64 * 32 - 2);
  CHECK(c.wafer.total_sram_bytes() == (64 * 32 - 2) * 49152);
  CHECK(c.wafer.peak_flops_per_s() == doctest::Approx((64 * 32 - 2) * 8 * 2 * 1.1e9));
}

TEST_CASE("the resolved config reads back to the same config") {
  const auto c = parse_config(
      "wafer: {preset: wse2, beta_cycles_per_stage: 27.25, defective_pes: [[3, 4]]}\n"
      "workloads: {models: [llama3-8b, mixtral-8x7b], phases: decode, concurrent_requests: [1, 8]}\n"
      "search: {cut_ratios: [0.1, 0.5], seed: 42}\n",
      "x.yaml", {});
  const std::string resolved = wavel::config::to_yaml(c);
  const auto again = parse_config(resolved, "resolved.yaml", {});
  CHECK(wavel::config::to_yaml(again) == resolved);
  CHECK(again.wafer.beta_cycles_per_stage == 27.25);
  CHECK(again.search.cut_ratios == std::vector<double>{0.1, 0.5});
  CHECK(again.wafer.defective_pes.size() == 1);
}

TEST_CASE("models by HF config.json path, relative to the config file") {
  const auto dir = wavel::test::source_path("tests/data");
  const auto c = parse_config("workloads: {models: [hf/llama3-8b/config.json, hf/llama3-8b]}\n",
                              (dir / "sweep.yaml").string(), {});
  REQUIRE(c.workloads.models.size() == 2);
  CHECK(c.workloads.models[0].spec.hidden == 4096);
  CHECK(c.workloads.models[1].spec.num_layers == 32);
}

TEST_CASE("baselines and cost sections") {
  const auto c = parse_config(std::string(kMinimal) +
                                  "baselines: {waferllm_region_side_pes: 360}\n"
                                  "cost: {scalar_op_cycles: 7.5, beta_cycles_per_stage: 12}\n",
                              "x.yaml", {});
  CHECK(c.baselines.waferllm_region_side_pes == 360);
  CHECK(c.cost.params.scalar_op_cycles == 7.5);
  CHECK(c.cost.params.beta_cycles_per_stage == 12.0);
  CHECK(errors_of(std::string(kMinimal) + "baselines: {waferllm_region_side_pes: 2000}\n") ==
        "test.yaml:3:39: error: baselines.waferllm_region_side_pes: must be <= 755, got 2000");
  CHECK(errors_of(std::string(kMinimal) + "cost: {scalar_op_cyles: 7}\n") ==
        "test.yaml:3:8: error: cost.scalar_op_cyles: unknown key; did you mean 'scalar_op_cycles'?");
  CHECK(errors_of(std::string(kMinimal) + "cost: {params_file: nowhere.yaml}\n") ==
        "test.yaml:3:21: error: cost.params_file: params file not found: nowhere.yaml (nor " +
            wavel::cost::data_dir() + "/nowhere.yaml in the tool's data directory)");
  // Values from a params file replace the defaults.
  const auto params = wavel::test::source_path("configs/params/wse2-waferllm.yaml");
  const auto with_file = parse_config(std::string(kMinimal) + "cost: {params_file: " + params.string() + "}\n",
                                      "x.yaml", {});
  CHECK(with_file.cost.params_file == params.string());
  CHECK(with_file.cost.params.scalar_op_cycles != wavel::cost::CostParams{}.scalar_op_cycles);
}

TEST_CASE("cost parameters: the preset's calibrated file by default, found from any directory (issue 40)") {
  namespace fs = std::filesystem;
  const auto wse3_file = wavel::test::source_path("configs/params/wse3.yaml");
  const auto calibrated = wavel::cost::load_params(wse3_file.string(), wavel::cost::CostParams{});
  // No params_file: the committed calibration of the preset, not the uncalibrated built-in values.
  const auto plain = parse_config(kMinimal, "/nowhere/x.yaml", {});
  CHECK(plain.cost.params_file.empty());
  CHECK(fs::equivalent(plain.cost.params_path, wse3_file));
  CHECK(plain.cost.params.gemm_k_cycles == calibrated.gemm_k_cycles);
  CHECK(plain.cost.params.gemm_k_cycles != wavel::cost::CostParams{}.gemm_k_cycles);
  CHECK(wavel::config::describe_params(plain).find("the calibrated wse3 parameters") == 0);
  const auto wse2 = parse_config(kMinimal, "/nowhere/x.yaml", {"wafer.preset=wse2"});
  CHECK(fs::equivalent(wse2.cost.params_path, wavel::test::source_path("configs/params/wse2-waferllm.yaml")));
  // A relative name not beside the config is looked up in the data directory (a copied quickstart).
  const auto copied = parse_config(std::string(kMinimal) + "cost: {params_file: params/wse3.yaml}\n", "/nowhere/my.yaml", {});
  CHECK(copied.cost.params_from_data_dir);
  CHECK(fs::equivalent(copied.cost.params_path, wse3_file));
  CHECK(wavel::config::describe_params(copied) == "parameters from params/wse3.yaml in the tool's data directory");
  // `builtin` asks for the uncalibrated values, and says so.
  const auto builtin = parse_config(std::string(kMinimal) + "cost: {params_file: builtin}\n", "/nowhere/x.yaml", {});
  CHECK(builtin.cost.params_path.empty());
  CHECK(builtin.cost.params.gemm_k_cycles == wavel::cost::CostParams{}.gemm_k_cycles);
  CHECK(wavel::config::describe_params(builtin) == "built-in default parameters, uncalibrated");
  // A data directory without the file: a located error that says how to fix it.
  ::setenv("WAVEL_DATA_DIR", "/nonexistent-wavel-data", 1);
  const std::string missing = errors_of(kMinimal);
  ::unsetenv("WAVEL_DATA_DIR");
  CHECK(missing.find("cost.params_file: no cost.params_file given and the calibrated parameters for wse3 are missing: "
                     "/nonexistent-wavel-data/params/wse3.yaml") != std::string::npos);
  CHECK(missing.find("'params_file: builtin'") != std::string::npos);
}

TEST_CASE("the cluster section: the wafer's system by default, each figure overridable within bounds") {
  const auto wse3 = parse_config(kMinimal, "x.yaml", {});
  CHECK(wse3.cluster.preset == "cs3");
  CHECK(wse3.cluster.ingress_bytes_per_s == 150e9);
  CHECK(wse3.cluster.external_memory_bytes == 1.2e15);
  const auto wse2 = parse_config(kMinimal, "x.yaml", {"wafer.preset=wse2"});
  CHECK(wse2.cluster.preset == "cs2");
  CHECK(wse2.cluster.external_memory_bytes == 2.4e15);
  const auto set = parse_config(kMinimal, "x.yaml", {"cluster.ingress_bytes_per_s=3e11", "cluster.link_latency_s=2e-6"});
  CHECK(set.cluster.ingress_bytes_per_s == 3e11);
  CHECK(set.cluster.link_latency_s == 2e-6);
  CHECK(set.cluster.link_bytes_per_s == 150e9);
  // The resolved config carries it, and reads back the same.
  const auto again = parse_config(wavel::config::to_yaml(set), "resolved.yaml", {});
  CHECK(again.cluster.ingress_bytes_per_s == 3e11);
  CHECK(again.cluster.link_latency_s == 2e-6);
  CHECK(errors_of(kMinimal, {"cluster.link_latency_s=1"}).find("cluster.link_latency_s: must be <= 0.001") !=
        std::string::npos);
  CHECK(errors_of(kMinimal, {"cluster.preset=cs9"}).find("did you mean 'cs2'") != std::string::npos);
  CHECK(errors_of(kMinimal, {"cluster.ingres_bytes_per_s=1e9"}).find("did you mean 'ingress_bytes_per_s'") !=
        std::string::npos);
}

TEST_CASE("a config.json key that changes the prediction is refused unless allowed; others are noted (issue 40)") {
  const auto dir = wavel::test::scratch_dir("config-unmodelled");
  std::ofstream(dir / "m.json") << R"({"model_type": "mistral", "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
    "sliding_window": 4096})";
  const std::string sweep = "workloads: {models: [m.json], phases: [decode], input_tokens: [INPUT], output_tokens: [128]}\n";
  const auto with_input = [&](const std::string& n) { return std::regex_replace(sweep, std::regex("INPUT"), n); };
  const std::string file = (dir / "s.yaml").string();
  // Within the window: noted, runs.
  const auto inside = parse_config(with_input("2048"), file, {});
  REQUIRE(inside.notes.size() == 1);
  CHECK(inside.notes[0].find("m.json:3: sliding_window: attention over the last 4096 tokens only") != std::string::npos);
  // Past it: refused at the key, with the way out.
  try {
    parse_config(with_input("8192"), file, {});
    FAIL("no error");
  } catch (const wavel::ConfigError& e) {
    REQUIRE(e.diagnostics().size() == 1);
    CHECK(e.diagnostics()[0].line == 3);
    CHECK(e.diagnostics()[0].message.find("set workloads.allow_unmodelled_keys: true") != std::string::npos);
  }
  const auto allowed = parse_config(with_input("8192"), file, {"workloads.allow_unmodelled_keys=true"});
  CHECK(allowed.notes.at(0).find("(allowed by workloads.allow_unmodelled_keys)") != std::string::npos);
}

TEST_CASE("wafer.sram_reserved_per_pe_bytes: the preset's reserve, overridable, never all of the SRAM") {
  CHECK(errors_of("wafer: {sram_reserved_per_pe_bytes: 0}\nworkloads: {models: [llama3-8b]}\n").empty());
  const std::string too_much = errors_of("wafer: {sram_reserved_per_pe_bytes: 49152}\nworkloads: {models: [llama3-8b]}\n");
  CHECK(too_much.find("wafer.sram_reserved_per_pe_bytes: leaves no SRAM for data: 49152 of 49152 bytes") != std::string::npos);
  const std::string small = errors_of("wafer: {sram_per_pe_bytes: 4096}\nworkloads: {models: [llama3-8b]}\n");
  CHECK(small.find("wafer.sram_per_pe_bytes: leaves no SRAM for data: 5616 of 4096") != std::string::npos);
  const std::string sweep =
      errors_of("wafer: {sweep: {sram_per_pe_bytes: [4096, 98304]}}\nworkloads: {models: [llama3-8b]}\n");
  CHECK(sweep.find("wafer.sweep.sram_per_pe_bytes") != std::string::npos);
}
