// Request grouping across a sweep: serving R requests is never reported slower than serving them
// as R / R' groups of R' for an R' the sweep holds.
#include <doctest/doctest.h>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/sweep/grouping.hpp"

using namespace wavel;

namespace {

driver::ScheduleResult schedule(const char* name, double tokens_per_s) {
  driver::ScheduleResult s;
  s.name = name;
  s.placed = tokens_per_s > 0;
  s.tokens_per_s = tokens_per_s;
  s.latency_s = tokens_per_s > 0 ? 1.0 / tokens_per_s : 0.0;
  if (!s.placed) s.na_reason = "does not fit";
  return s;
}

driver::SettingResult result(double fullchip, double waferllm, double best, double best_latency_s) {
  driver::SettingResult r;
  r.schedules = {schedule("fullchip", fullchip), schedule("waferllm", waferllm)};
  r.front.push_back(driver::FrontEntry{"search", best, best_latency_s, 1000, 1, 1, 0.5, ""});
  r.front.push_back(driver::FrontEntry{"search", best / 2, best_latency_s / 2, 500, 1, 1, 0.5, ""});
  return r;
}

}  // namespace

TEST_CASE("a setting takes a faster grouping of fewer requests, per schedule, chained") {
  const auto c = config::parse_config(
      "workloads:\n"
      "  models: [llama3-8b]\n"
      "  phases: [decode]\n"
      "  concurrent_requests: [1, 4, 16, 64, 6]\n"
      "  lengths: [[2048, 128]]\n"
      "cost:\n"
      "  draws: 0\n",
      "g.yaml", {});
  const auto settings = config::expand_sweep(c);
  REQUIRE(settings.size() == 5);
  // Full-Chip slows at 64 (KV for all 64 resident); WaferLLM slows at 16 and is n/a at 64; the
  // search's best slows at 64; R = 6 has only 1 as a divisor in the sweep.
  std::vector<driver::SettingResult> r{result(100, 50, 200, 1e-3), result(500, 300, 900, 1e-3),
                                       result(1000, 200, 3000, 2e-3), result(900, 0, 2500, 3e-3),
                                       result(90, 40, 150, 1e-3)};
  driver::apply_request_grouping(c, settings, r);
  // Full-Chip at 64: 4 groups of 16.
  CHECK(r[3].schedules[0].tokens_per_s == 1000.0);
  CHECK(r[3].schedules[0].request_groups == 4);
  CHECK(r[2].schedules[0].request_groups == 1);
  // WaferLLM at 16 takes 4 groups of 4; at 64 that, as 16 groups of 4, and is placed with no reason.
  CHECK(r[2].schedules[1].tokens_per_s == 300.0);
  CHECK(r[2].schedules[1].request_groups == 4);
  CHECK(r[3].schedules[1].placed);
  CHECK(r[3].schedules[1].na_reason.empty());
  CHECK(r[3].schedules[1].request_groups == 16);
  // The search's best at 64: the 16-request point, grouped; own points it dominates leave the front.
  CHECK(r[3].front.front().tokens_per_s == 3000.0);
  CHECK(r[3].front.front().source == "grouped:4x16");
  CHECK(r[3].front.front().request_groups == 4);
  CHECK(r[3].front.size() == 2);  // (2500, 3 ms) is dominated; (1250, 1.5 ms) is not (lower latency)
  // R = 6: 6 groups of 1 where that is faster.
  CHECK(r[4].schedules[0].tokens_per_s == 100.0);
  CHECK(r[4].schedules[0].request_groups == 6);
  CHECK(r[4].front.front().tokens_per_s == 200.0);
  // The invariant over the sweep: R never below a divisor R'.
  for (std::size_t i = 0; i < settings.size(); ++i) {
    for (std::size_t j = 0; j < settings.size(); ++j) {
      const auto ri = settings[i].shape.concurrent_requests, rj = settings[j].shape.concurrent_requests;
      if (rj >= ri || ri % rj != 0) continue;
      for (std::size_t k = 0; k < 2; ++k) {
        if (r[j].schedules[k].placed) CHECK(r[i].schedules[k].tokens_per_s >= r[j].schedules[k].tokens_per_s);
      }
      CHECK(r[i].front.front().tokens_per_s >= r[j].front.front().tokens_per_s);
    }
  }
}

TEST_CASE("grouping stays within one model, deployment, phase and lengths") {
  const auto c = config::parse_config(
      "workloads:\n"
      "  models: [llama3-8b, llama2-13b]\n"
      "  phases: [decode, prefill]\n"
      "  concurrent_requests: [1, 2]\n"
      "  lengths: [[2048, 128], [4096, 128]]\n"
      "cluster:\n"
      "  wafers: [1, 2]\n"
      "cost:\n"
      "  draws: 0\n",
      "g.yaml", {});
  const auto settings = config::expand_sweep(c);
  std::vector<driver::SettingResult> r;
  // Every 2-request setting is slower than any 1-request one, but only its own problem may donate.
  for (const auto& s : settings) {
    const double base = 1000.0 + 10.0 * static_cast<double>(s.id);
    r.push_back(s.shape.concurrent_requests == 1 ? result(base, base, base, 1e-3) : result(1, 1, 1, 1e-3));
  }
  driver::apply_request_grouping(c, settings, r);
  for (std::size_t i = 0; i < settings.size(); ++i) {
    if (settings[i].shape.concurrent_requests != 2) continue;
    CAPTURE(i);
    std::size_t donor = settings.size();
    for (std::size_t j = 0; j < settings.size(); ++j) {
      // A one-wafer setting never serves its requests as another deployment's groups (nor the reverse).
      if (settings[j].shape.concurrent_requests == 1 && settings[j].model_index == settings[i].model_index &&
          settings[j].wafers == settings[i].wafers && settings[j].shape.phase == settings[i].shape.phase &&
          settings[j].shape.input_tokens == settings[i].shape.input_tokens &&
          settings[j].shape.output_tokens == settings[i].shape.output_tokens) {
        donor = j;
      }
    }
    REQUIRE(donor < settings.size());
    CHECK(r[i].schedules[0].tokens_per_s == r[donor].schedules[0].tokens_per_s);
    CHECK(r[i].front.front().tokens_per_s == r[donor].front.front().tokens_per_s);
    CHECK(r[i].front.front().source == "grouped:2x1");
  }
}

TEST_CASE("a grouped point displaces front points only in the front's own objectives") {
  // At R = 2 the own front holds (800 tok/s, 1 ms, 500 PEs); the grouped 1-request point is
  // (900 tok/s, 1 ms, 1000 PEs): it displaces the own point when PEs are not an objective, and
  // leaves it (fewer PEs) when they are.
  for (const bool with_pes : {true, false}) {
    const auto c = config::parse_config(std::string("workloads:\n"
                                                    "  models: [llama3-8b]\n"
                                                    "  phases: [decode]\n"
                                                    "  concurrent_requests: [1, 2]\n"
                                                    "  lengths: [[2048, 128]]\n"
                                                    "cost:\n"
                                                    "  draws: 0\n"
                                                    "search:\n"
                                                    "  objectives: ") +
                                            (with_pes ? "[throughput, latency, pes]\n" : "[throughput, latency]\n"),
                                        "g.yaml", {});
    const auto settings = config::expand_sweep(c);
    REQUIRE(settings.size() == 2);
    std::vector<driver::SettingResult> r(2);
    for (auto& s : r) s.schedules = {schedule("fullchip", 0), schedule("waferllm", 0)};
    r[0].front.push_back(driver::FrontEntry{"search", 900, 1e-3, 1000, 1, 1, 0.5, ""});
    r[1].front.push_back(driver::FrontEntry{"search", 800, 1e-3, 500, 1, 1, 0.5, ""});
    driver::apply_request_grouping(c, settings, r);
    CHECK(r[1].front.front().source == "grouped:2x1");
    CHECK(r[1].front.size() == (with_pes ? 2u : 1u));
  }
}
