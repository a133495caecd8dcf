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
  using D = std::vector<double>;
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
  for (std::size_t k = 0; k < std::size(kBaselineNames); ++k) {
    const std::string n = kBaselineNames[k];
    D tps, latency, tpr, headroom, joules;
    I pes, side, regions, mb, layers, groups, placed;
    S reason;
    for (std::size_t i = 0; i < results.size(); ++i) {
      const auto& r = results[i];
      if (k >= r.schedules.size()) continue;
      const auto& s = r.schedules[k];
      joules.push_back(s.placed ? setting_energy(config, settings.at(i), s.tokens_per_s).j_per_token : nan);
      placed.push_back(s.placed ? 1 : 0);
      tps.push_back(s.placed ? s.tokens_per_s : nan);
      latency.push_back(s.placed ? s.latency_s : nan);
      tpr.push_back(s.placed ? s.tpr_tokens_per_s : nan);
      headroom.push_back(s.sram_headroom);
      pes.push_back(s.pes_used);
      side.push_back(s.region_side_pes);
      regions.push_back(s.regions);
      mb.push_back(s.microbatches);
      layers.push_back(s.subset_layers);
      groups.push_back(s.request_groups);
      reason.push_back(s.na_reason);
    }
    if (placed.size() != results.size()) continue;  // dry run: no schedules
    table.columns.push_back({n + "_placed", "bool", placed});
    table.columns.push_back({n + "_tokens_per_s", "tokens/s", tps});
    table.columns.push_back({n + "_latency_s", "s", latency});
    table.columns.push_back({n + "_tpr_tokens_per_s", "tokens/s", tpr});
    table.columns.push_back({n + "_j_per_token", "J/token", joules});
    table.columns.push_back({n + "_pes_used", "PEs", pes});
    table.columns.push_back({n + "_sram_headroom", "1", headroom});
    table.columns.push_back({n + "_region_side_pes", "PEs", side});
    table.columns.push_back({n + "_regions", "1", regions});
    table.columns.push_back({n + "_microbatches", "1", mb});
    table.columns.push_back({n + "_layer_subset_layers", "layers", layers});
    table.columns.push_back({n + "_request_groups", "1", groups});
    table.columns.push_back({n + "_na_reason", "", reason});
  }
  if (results.empty() || results.front().schedules.empty()) return table;  // dry run: no search
  {
    // Weight streaming of the whole model (a deployment even when it does not fit the wafer).
    I placed;
    D tps, latency, tpr, need;
    S reason;
    for (const auto& r : results) {
      const auto& ws = r.weight_streaming;
      placed.push_back(ws.placed ? 1 : 0);
      tps.push_back(ws.placed ? ws.tokens_per_s : nan);
      latency.push_back(ws.placed ? ws.latency_s : nan);
      tpr.push_back(ws.placed ? ws.tpr_tokens_per_s : nan);
      need.push_back(ws.sram_required_bytes);
      reason.push_back(ws.na_reason);
    }
    table.columns.push_back({"weight_streaming_placed", "bool", placed});
    table.columns.push_back({"weight_streaming_tokens_per_s", "tokens/s", tps});
    table.columns.push_back({"weight_streaming_latency_s", "s", latency});
    table.columns.push_back({"weight_streaming_tpr_tokens_per_s", "tokens/s", tpr});
    table.columns.push_back({"weight_streaming_sram_required_bytes", "bytes", need});
    table.columns.push_back({"weight_streaming_na_reason", "", reason});
  }
  D tps, tps_per_wafer, latency, headroom, vs_waferllm, vs_fullchip, hv, joules, link_joules, per_kw, power;
  I pes, mb, stages, front_size, wavel_groups, wavel_wafers;
  S source;
  const FrontEntry nothing{"none", nan, nan, 0, 0, 0, nan, "", {}};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const auto& best = r.front.empty() ? nothing : r.front.front();
    const auto energy = setting_energy(config, settings.at(i), best.tokens_per_s);
    joules.push_back(energy.j_per_token);
    link_joules.push_back(energy.link_j_per_token);
    per_kw.push_back(energy.tokens_per_s_per_kw);
    power.push_back(energy.power_w);
    tps.push_back(best.tokens_per_s);
    tps_per_wafer.push_back(best.tokens_per_s / static_cast<double>(std::max<std::int64_t>(1, r.wafers)));
    wavel_wafers.push_back(r.wafers);
    latency.push_back(best.latency_s);
    headroom.push_back(best.sram_headroom);
    pes.push_back(best.pes_used);
    mb.push_back(best.microbatches);
    stages.push_back(best.stages);
    source.push_back(best.source);
    wavel_groups.push_back(best.request_groups);
    const auto speedup = [&](std::size_t k) {
      return k < r.schedules.size() && r.schedules[k].placed ? best.tokens_per_s / r.schedules[k].tokens_per_s : nan;
    };
    vs_fullchip.push_back(speedup(0));
    vs_waferllm.push_back(speedup(1));
    front_size.push_back(static_cast<std::int64_t>(r.front.size()));
    hv.push_back(r.hypervolume);
  }
  table.columns.push_back({"wavel_tokens_per_s", "tokens/s", tps});
  table.columns.push_back({"wavel_j_per_token", "J/token", joules});
  table.columns.push_back({"wavel_link_j_per_token", "J/token", link_joules});
  table.columns.push_back({"wavel_tokens_per_s_per_kw", "tokens/s/kW", per_kw});
  table.columns.push_back({"system_power_w", "W", power});
  table.columns.push_back({"wavel_wafers", "systems", wavel_wafers});
  table.columns.push_back({"tokens_per_s_per_wafer", "tokens/s", tps_per_wafer});
  table.columns.push_back({"wavel_latency_s", "s", latency});
  table.columns.push_back({"wavel_pes_used", "PEs", pes});
  table.columns.push_back({"wavel_sram_headroom", "1", headroom});
  table.columns.push_back({"wavel_microbatches", "1", mb});
  table.columns.push_back({"wavel_stages", "1", stages});
  table.columns.push_back({"wavel_source", "", source});
  table.columns.push_back({"wavel_request_groups", "1", wavel_groups});
  table.columns.push_back({"speedup_vs_waferllm", "1", vs_waferllm});
  table.columns.push_back({"speedup_vs_fullchip", "1", vs_fullchip});
  {
    D t_lo, t_hi, w_lo, w_hi, f_lo, f_hi;
    I draws;
    for (const auto& r : results) {
      const auto& iv = r.intervals;
      t_lo.push_back(iv.wavel_tokens_per_s_lo);
      t_hi.push_back(iv.wavel_tokens_per_s_hi);
      w_lo.push_back(iv.speedup_vs_waferllm_lo);
      w_hi.push_back(iv.speedup_vs_waferllm_hi);
      f_lo.push_back(iv.speedup_vs_fullchip_lo);
      f_hi.push_back(iv.speedup_vs_fullchip_hi);
      draws.push_back(iv.draws);
    }
    table.columns.push_back({"wavel_tokens_per_s_lo", "tokens/s", t_lo});
    table.columns.push_back({"wavel_tokens_per_s_hi", "tokens/s", t_hi});
    table.columns.push_back({"speedup_vs_waferllm_lo", "1", w_lo});
    table.columns.push_back({"speedup_vs_waferllm_hi", "1", w_hi});
    table.columns.push_back({"speedup_vs_fullchip_lo", "1", f_lo});
    table.columns.push_back({"speedup_vs_fullchip_hi", "1", f_hi});
    table.columns.push_back({"parameter_draws", "1", draws});
  }
  table.columns.push_back({"front_size", "1", front_size});
  table.columns.push_back({"hypervolume", "1", hv});
  D sim_latency, sim_error;
  for (const auto& r : results) {
    // A grouped best is another setting's schedule: its simulation is that setting's.
    const bool best = !r.sim.empty() && r.sim.front().schedule == "wavel" && !r.front.empty() &&
                      r.front.front().request_groups == 1;
    sim_latency.push_back(best ? r.sim.front().sim_latency_s : nan);
    sim_error.push_back(best ? (r.sim.front().model_latency_s - r.sim.front().sim_latency_s) / r.sim.front().sim_latency_s
                             : nan);
  }
  table.columns.push_back({"wavel_sim_latency_s", "s", sim_latency});
  table.columns.push_back({"wavel_model_vs_sim_rel_error", "1", sim_error});
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

io::Table rank_stats_table(const std::vector<RankStats>& ranks) {
  io::Table table{"rank_stats", {}};
  add_field_columns<RankStats>(table.columns, [](const char*, fields::Column) { return true; },
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
