// Result tables of a run (settings, front, schedules, simulation pairs, search and rank statistics)
// and the printed summary: the views of the gathered results that land in results.h5, summary.csv
// and on stdout.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>

#include "wavel/common/error.hpp"
#include "wavel/engine/distribute.hpp"
#include "wavel/common/format.hpp"
#include "wavel/report/whatif.hpp"
#include "wavel/report/tables.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver {

io::Table settings_table(const config::Config& config, const std::vector<config::Setting>& settings,
                         const std::vector<SettingResult>& results) {
  using I = std::vector<std::int64_t>;
  using S = std::vector<std::string>;
  io::Table table{"settings", {}};
  add_field_columns<SettingResult>(
      table.columns, [](const char*, fields::Column c) { return c == fields::Column::own; },
      [&](const auto& row) { for (const auto& r : results) row(r); });
  // After setting_id: the setting's model and shape.
  I requests, input, output;
  S model, phase;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& st = settings.at(i);
    model.push_back(config.workloads.models.at(st.model_index).spec.name);
    phase.emplace_back(workload::to_string(st.shape.phase));
    requests.push_back(st.shape.concurrent_requests);
    input.push_back(st.shape.input_tokens);
    output.push_back(st.shape.output_tokens);
  }
  table.columns.insert(table.columns.begin() + 1, {{"model", "", model},
                                                   {"phase", "", phase},
                                                   {"concurrent_requests", "requests", requests},
                                                   {"input_tokens", "tokens", input},
                                                   {"output_tokens", "tokens", output}});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (config.hardware.size() > 1) {
    // The hardware point each setting ran on (the `hardware` table holds its every figure).
    I hw;
    S label;
    for (std::size_t i = 0; i < results.size(); ++i) {
      hw.push_back(static_cast<std::int64_t>(settings.at(i).hardware));
      label.push_back(config.hardware.at(settings.at(i).hardware).label);
    }
    table.columns.insert(table.columns.begin() + 1, {"hardware", "1", hw});
    table.columns.insert(table.columns.begin() + 2, {"hardware_label", "", label});
  }
  const std::size_t rows = results.size();
  const auto add = [&](std::string name, std::string units, auto get) {
    table.columns.push_back(io::column(std::move(name), std::move(units), rows, get));
  };
  for (std::size_t k = 0; k < std::size(kBaselineNames); ++k) {
    const bool dry = std::any_of(results.begin(), results.end(), [&](const auto& r) { return r.schedules.size() <= k; });
    if (dry) continue;  // a dry run has no schedules
    const std::string n = kBaselineNames[k];
    const auto sched = [&](std::size_t i) -> const ScheduleResult& { return results[i].schedules[k]; };
    // Figures of a schedule that was not placed are NaN; its shape columns say what was tried.
    const auto placed_or_nan = [&](double ScheduleResult::*figure) {
      return [&, figure](std::size_t i) { return sched(i).placed ? sched(i).*figure : nan; };
    };
    add(n + "_placed", "bool", [&](std::size_t i) { return sched(i).placed; });
    add(n + "_tokens_per_s", "tokens/s", placed_or_nan(&ScheduleResult::tokens_per_s));
    add(n + "_latency_s", "s", placed_or_nan(&ScheduleResult::latency_s));
    add(n + "_tpr_tokens_per_s", "tokens/s", placed_or_nan(&ScheduleResult::tpr_tokens_per_s));
    add(n + "_j_per_token", "J/token", [&](std::size_t i) {
      return sched(i).placed ? setting_energy(config, settings.at(i), sched(i).tokens_per_s).j_per_token : nan;
    });
    add(n + "_pes_used", "PEs", [&](std::size_t i) { return sched(i).pes_used; });
    add(n + "_sram_headroom", "1", [&](std::size_t i) { return sched(i).sram_headroom; });
    add(n + "_region_side_pes", "PEs", [&](std::size_t i) { return sched(i).region_side_pes; });
    add(n + "_regions", "1", [&](std::size_t i) { return sched(i).regions; });
    add(n + "_microbatches", "1", [&](std::size_t i) { return sched(i).microbatches; });
    add(n + "_layer_subset_layers", "layers", [&](std::size_t i) { return sched(i).subset_layers; });
    add(n + "_request_groups", "1", [&](std::size_t i) { return sched(i).request_groups; });
    add(n + "_na_reason", "", [&](std::size_t i) { return sched(i).na_reason; });
  }
  if (results.empty() || results.front().schedules.empty()) return table;  // dry run: no search
  // Weight streaming of the whole model (a deployment even when it does not fit the wafer).
  const auto ws = [&](std::size_t i) -> const deploy::WeightStreaming& { return results[i].weight_streaming; };
  add("weight_streaming_placed", "bool", [&](std::size_t i) { return ws(i).placed; });
  add("weight_streaming_tokens_per_s", "tokens/s", [&](std::size_t i) { return ws(i).placed ? ws(i).tokens_per_s : nan; });
  add("weight_streaming_latency_s", "s", [&](std::size_t i) { return ws(i).placed ? ws(i).latency_s : nan; });
  add("weight_streaming_tpr_tokens_per_s", "tokens/s",
      [&](std::size_t i) { return ws(i).placed ? ws(i).tpr_tokens_per_s : nan; });
  add("weight_streaming_sram_required_bytes", "bytes", [&](std::size_t i) { return ws(i).sram_required_bytes; });
  add("weight_streaming_na_reason", "", [&](std::size_t i) { return ws(i).na_reason; });
  // The best front point (none placed: "none" and NaN figures).
  const FrontEntry nothing{"none", nan, nan, 0, 0, 0, nan, "", {}};
  const auto best = [&](std::size_t i) -> const FrontEntry& {
    return results[i].front.empty() ? nothing : results[i].front.front();
  };
  std::vector<cost::TokenEnergy> energy;
  for (std::size_t i = 0; i < rows; ++i) energy.push_back(setting_energy(config, settings.at(i), best(i).tokens_per_s));
  const auto speedup = [&](std::size_t i, std::size_t k) {
    const auto& r = results[i];
    return k < r.schedules.size() && r.schedules[k].placed ? best(i).tokens_per_s / r.schedules[k].tokens_per_s : nan;
  };
  add("wavel_tokens_per_s", "tokens/s", [&](std::size_t i) { return best(i).tokens_per_s; });
  add("wavel_j_per_token", "J/token", [&](std::size_t i) { return energy[i].j_per_token; });
  add("wavel_link_j_per_token", "J/token", [&](std::size_t i) { return energy[i].link_j_per_token; });
  add("wavel_tokens_per_s_per_kw", "tokens/s/kW", [&](std::size_t i) { return energy[i].tokens_per_s_per_kw; });
  add("system_power_w", "W", [&](std::size_t i) { return energy[i].power_w; });
  add("wavel_wafers", "systems", [&](std::size_t i) { return results[i].wafers; });
  add("tokens_per_s_per_wafer", "tokens/s", [&](std::size_t i) {
    return best(i).tokens_per_s / static_cast<double>(std::max<std::int64_t>(1, results[i].wafers));
  });
  add("wavel_latency_s", "s", [&](std::size_t i) { return best(i).latency_s; });
  add("wavel_pes_used", "PEs", [&](std::size_t i) { return best(i).pes_used; });
  add("wavel_sram_headroom", "1", [&](std::size_t i) { return best(i).sram_headroom; });
  add("wavel_microbatches", "1", [&](std::size_t i) { return best(i).microbatches; });
  add("wavel_prompt_chunks", "1", [&](std::size_t i) { return best(i).prompt_chunks; });
  add("wavel_stages", "1", [&](std::size_t i) { return best(i).stages; });
  add("wavel_source", "", [&](std::size_t i) { return best(i).source; });
  add("wavel_request_groups", "1", [&](std::size_t i) { return best(i).request_groups; });
  add("speedup_vs_waferllm", "1", [&](std::size_t i) { return speedup(i, 1); });
  add("speedup_vs_fullchip", "1", [&](std::size_t i) { return speedup(i, 0); });
  const auto iv = [&](std::size_t i) -> const PredictionIntervals& { return results[i].intervals; };
  add("wavel_tokens_per_s_lo", "tokens/s", [&](std::size_t i) { return iv(i).wavel_tokens_per_s_lo; });
  add("wavel_tokens_per_s_hi", "tokens/s", [&](std::size_t i) { return iv(i).wavel_tokens_per_s_hi; });
  add("speedup_vs_waferllm_lo", "1", [&](std::size_t i) { return iv(i).speedup_vs_waferllm_lo; });
  add("speedup_vs_waferllm_hi", "1", [&](std::size_t i) { return iv(i).speedup_vs_waferllm_hi; });
  add("speedup_vs_fullchip_lo", "1", [&](std::size_t i) { return iv(i).speedup_vs_fullchip_lo; });
  add("speedup_vs_fullchip_hi", "1", [&](std::size_t i) { return iv(i).speedup_vs_fullchip_hi; });
  add("parameter_draws", "1", [&](std::size_t i) { return iv(i).draws; });
  add("front_size", "1", [&](std::size_t i) { return results[i].front.size(); });
  add("hypervolume", "1", [&](std::size_t i) { return results[i].hypervolume; });
  // A grouped best is another setting's schedule: its simulation is that setting's.
  const auto simulated_best = [&](std::size_t i) -> const SimPair* {
    const auto& r = results[i];
    const bool own = !r.sim.empty() && r.sim.front().schedule == "wavel" && !r.front.empty() &&
                     r.front.front().request_groups == 1;
    return own ? &r.sim.front() : nullptr;
  };
  add("wavel_sim_latency_s", "s", [&](std::size_t i) {
    const SimPair* x = simulated_best(i);
    return x ? x->sim_latency_s : nan;
  });
  add("wavel_model_vs_sim_rel_error", "1", [&](std::size_t i) {
    const SimPair* x = simulated_best(i);
    return x ? (x->model_latency_s - x->sim_latency_s) / x->sim_latency_s : nan;
  });
  return table;
}

io::Table sim_pairs_table(const std::vector<SettingResult>& results) {
  io::Table table{"sim_pairs", {{"setting_id", "1", std::vector<std::int64_t>{}}}};
  std::vector<double> err;
  add_field_columns<SimPair>(table.columns, [](const char*, fields::Column) { return true; }, [&](const auto& row) {
    for (const auto& r : results) {
      for (const auto& x : r.sim) {
        std::get<std::vector<std::int64_t>>(table.columns[0].values).push_back(r.setting_id);
        err.push_back((x.model_latency_s - x.sim_latency_s) / x.sim_latency_s);
        row(x);
      }
    }
  });
  // The relative error follows the four figures it compares.
  const auto after = std::find_if(table.columns.begin(), table.columns.end(),
                                  [](const io::Column& c) { return c.name == "sim_tokens_per_s"; });
  table.columns.insert(after + 1, io::Column{"model_vs_sim_rel_error", "1", std::move(err)});
  return table;
}

io::Table sim_op_pairs_table(const std::vector<SettingResult>& results) {
  io::Table table{"sim_op_pairs", {{"setting_id", "1", std::vector<std::int64_t>{}}}};
  add_field_columns<SimOpPair>(table.columns, [](const char*, fields::Column) { return true; }, [&](const auto& row) {
    for (const auto& r : results) {
      for (const auto& x : r.sim_ops) {
        std::get<std::vector<std::int64_t>>(table.columns[0].values).push_back(r.setting_id);
        row(x);
      }
    }
  });
  return table;
}

io::Table front_table(const config::Config& config, const std::vector<config::Setting>& settings,
                      const std::vector<SettingResult>& results) {
  std::vector<std::int64_t> id, point, wafers;
  std::vector<double> joules;
  io::Table table{"front", {}};
  const auto listed = [](const char* name, fields::Column) {
    return std::string(name) != "meshir" && std::string(name) != "request_groups";
  };
  add_field_columns<FrontEntry>(table.columns, listed, [&](const auto& row) {
    for (std::size_t s = 0; s < results.size(); ++s) {
      const auto& r = results[s];
      for (std::size_t i = 0; i < r.front.size(); ++i) {
        id.push_back(r.setting_id);
        point.push_back(static_cast<std::int64_t>(i));
        joules.push_back(setting_energy(config, settings.at(s), r.front[i].tokens_per_s).j_per_token);
        wafers.push_back(r.wafers);
        row(r.front[i]);
      }
    }
  });
  const auto after = [&](const char* name) {
    return std::find_if(table.columns.begin(), table.columns.end(), [&](const io::Column& c) { return c.name == name; }) + 1;
  };
  table.columns.insert(after("latency_s"), io::Column{"j_per_token", "J/token", std::move(joules)});
  table.columns.insert(after("pes_used"), io::Column{"wafers", "systems", std::move(wafers)});
  table.columns.insert(table.columns.begin(), {{"setting_id", "1", std::move(id)}, {"point", "1", std::move(point)}});
  return table;
}

io::Table search_stats_table(const std::vector<SettingResult>& results) {
  std::vector<std::int64_t> id;
  std::vector<double> wall, rate;
  io::Table table{"search_stats", {}};
  add_field_columns<SearchCounts>(table.columns, [](const char*, fields::Column) { return true; }, [&](const auto& row) {
    for (const auto& r : results) {
      id.push_back(r.setting_id);
      wall.push_back(r.search_wall_s);
      rate.push_back(r.search_wall_s > 0 ? static_cast<double>(r.search.nodes_visited) / r.search_wall_s : 0.0);
      row(r.search);
    }
  });
  table.columns.insert(table.columns.begin(), io::Column{"setting_id", "1", std::move(id)});
  table.columns.push_back({"wall_s", "s", std::move(wall)});
  table.columns.push_back({"nodes_per_s", "1/s", std::move(rate)});
  return table;
}

io::Table rank_stats_table(const std::vector<engine::RankStats>& ranks) {
  io::Table table{"rank_stats", {}};
  add_field_columns<engine::RankStats>(table.columns, [](const char*, fields::Column) { return true; },
                               [&](const auto& row) { for (const auto& r : ranks) row(r); });
  return table;
}

io::Table schedules_table(const std::vector<SettingResult>& results, const TextFetch& texts) {
  std::vector<std::int64_t> id;
  std::vector<std::string> name;
  // Where each row's text is: in memory, or on disk (read back as the column is written).
  std::vector<std::pair<const std::string*, TextRef>> where;
  std::size_t max_bytes = 0;
  const auto add = [&](std::int64_t setting_id, std::string schedule, const std::string& text, const TextRef& ref) {
    id.push_back(setting_id);
    name.push_back(std::move(schedule));
    where.emplace_back(&text, ref);
    max_bytes = std::max<std::size_t>(max_bytes, text.empty() ? ref.bytes : text.size());
  };
  for (const auto& r : results) {
    for (const auto& s : r.schedules) {
      if (s.placed) add(r.setting_id, s.name, s.meshir, s.meshir_ref);
    }
    for (std::size_t i = 0; i < r.front.size(); ++i) {
      add(r.setting_id, i == 0 ? "wavel" : "front." + std::to_string(i), r.front[i].meshir, r.front[i].meshir_ref);
    }
  }
  io::TextRows text{where.size(), max_bytes, [where = std::move(where), texts](std::size_t row) {
                      return meshir_text(*where.at(row).first, where.at(row).second, texts);
                    }};
  return io::Table{"schedules", {{"setting_id", "1", id}, {"schedule", "", name}, {"meshir", "", std::move(text)}}};
}

}  // namespace wavel::driver
