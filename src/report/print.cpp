// The settings table as printed: narrow or wide, with what was done to place each row and the notes
// its rows need (the tables written to files are in result_tables.cpp).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "wavel/common/format.hpp"
#include "wavel/report/tables.hpp"
#include "wavel/report/whatif.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::driver {

namespace {

/// A search this many times the default options' (top two levels of CUT options) is called long:
/// the time grows much faster than this measure (quickstart's llama3-8b decode at 8 requests:
/// cut_step_pes 64 is 3.3x the default's size and took 156 s against 5.6 s, with 3 GB against 0.6 GB).
constexpr double kLongSearchRatio = 2.0;

void print_search_size_warnings(std::ostream& out, const std::vector<SettingResult>& results,
                                const std::vector<search::SearchSizeEstimate>& estimates) {
  std::size_t long_ones = 0;
  for (std::size_t i = 0; i < results.size() && i < estimates.size(); ++i) {
    if (estimates[i].pieces < 0) continue;  // not estimated
    const double ratio = estimates[i].relative_to_default();
    if (ratio <= kLongSearchRatio) continue;
    out << "warning: setting " << results[i].setting_id << ": its search is " << (estimates[i].at_least ? "over " : "")
        << std::setprecision(3) << ratio
        << "x the default options' (CUT options in the top two levels); expect far longer searches and more "
           "memory than the default's (3.3x took 28x the time on quickstart; raise search.cut_step_pes or lower "
           "search.max_cut_depth)\n";
    ++long_ones;
  }
  out << "search size: CUT options in the top two levels of the CUT tree (all footprints and microbatch counts), "
         "and that as a multiple of the default search options'.\n";
  if (long_ones > 0) out << long_ones << " setting" << (long_ones == 1 ? "" : "s") << " will take long.\n";
  const auto skipped = std::count_if(estimates.begin(), estimates.end(), [](const auto& e) { return e.pieces < 0; });
  if (skipped > 0) {
    out << skipped << " settings beyond the first " << kEstimatedSettings
        << " are not estimated (a dry run stays short); dry-run a slice of the sweep to see them.\n";
  }
}

}  // namespace

// No-fit reasons printed under the table; the rest are counted (all are in summary.csv).
constexpr std::size_t kNoFitReasonsShown = 12;

// What was done to place a setting, in words: "whole", "subset 20/40", "27+27+26 on 3 wafers",
// "4 request groups" (the largest grouping any placed schedule of the setting needed).
std::string placement_text(const SettingResult& r) {
  if (r.wafers > 1) return r.stage_layers + " on " + std::to_string(r.wafers) + " wafers";
  if (r.layer_subset_layers > 0) {
    return "subset " + std::to_string(r.layer_subset_layers) + "/" + std::to_string(r.model_layers);
  }
  std::int64_t groups = 1;
  for (const auto& s : r.schedules) {
    if (s.placed) groups = std::max(groups, s.request_groups);
  }
  if (!r.front.empty()) groups = std::max(groups, r.front.front().request_groups);
  if (groups > 1) return std::to_string(groups) + " request groups";
  return "whole";
}

void print_settings(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                    const std::vector<SettingResult>& results, const std::vector<search::SearchSizeEstimate>& estimates) {
  const bool with_schedules = !results.empty() && !results.front().schedules.empty();
  const bool wide = config.output.table == "wide" || !with_schedules;
  std::vector<std::string> header{"id", "model", "phase", "req", "in", "out"};
  if (wide) header.push_back("SRAM bound");
  header.push_back("placed as");
  if (with_schedules && wide) {
    for (const char* n : kBaselineNames) {
      for (const char* c : {" tok/s", " TPOT|TTFT"}) header.push_back(std::string(n) + c);
    }
    for (const char* c : {"wavel tok/s", "wavel TPOT|TTFT", "wavel PEs", "wavel J/tok", "vs waferllm", "vs fullchip", "front"}) {
      header.push_back(c);
    }
  } else if (with_schedules) {
    header.insert(header.end(), {"waferllm tok/s", "wavel tok/s", "wavel TPOT|TTFT", "vs waferllm", "vs fullchip"});
  } else {
    header.insert(header.end(), {"FLOP/step", "params", "KV cache", "roofline bound"});
    if (!estimates.empty()) header.insert(header.end(), {"search pieces", "search size", "vs default"});
  }
  const bool hardware = config.hardware.size() > 1;  // a column naming each setting's hardware point
  if (hardware) header.insert(header.begin() + 2, "hw");
  if (with_schedules) {
    out << config.file << ": " << results.size() << (results.size() == 1 ? " setting" : " settings") << " on "
        << config.wafer.preset << ", every throughput and latency PREDICTED"
        << (wide ? "" : " (--wide for every column; summary.csv has them all)") << '\n';
  }
  std::vector<std::vector<std::string>> rows{header};
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& st = settings.at(i);
    const auto& r = results[i];
    std::vector<std::string> row{std::to_string(r.setting_id), config.workloads.models.at(st.model_index).spec.name,
                                 std::string(workload::to_string(st.shape.phase)),
                                 std::to_string(st.shape.concurrent_requests), std::to_string(st.shape.input_tokens),
                                 std::to_string(st.shape.output_tokens)};
    if (wide) {
      row.push_back(human(static_cast<double>(r.sram_required_bytes), "B"));
    }
    row.push_back(placement_text(r));
    if (with_schedules) {
      // The ratio with its 90 % interval over the parameter draws, e.g. "1.32x [1.25, 1.41]"; the narrow
      // table drops an interval that rounds to the ratio itself.
      auto ratio = [&](std::size_t k) {
        if (r.front.empty() || k >= r.schedules.size() || !r.schedules[k].placed) return std::string("-");
        const auto& iv = r.intervals;
        const double lo = k == 1 ? iv.speedup_vs_waferllm_lo : iv.speedup_vs_fullchip_lo;
        const double hi = k == 1 ? iv.speedup_vs_waferllm_hi : iv.speedup_vs_fullchip_hi;
        const auto two = [](double x) {
          std::ostringstream t;
          t << std::fixed << std::setprecision(2) << x;
          return t.str();
        };
        const std::string value = two(r.front.front().tokens_per_s / r.schedules[k].tokens_per_s);
        if (!std::isfinite(lo) || !std::isfinite(hi)) return value + "x";
        if (!wide && two(lo) == value && two(hi) == value) return value + "x";
        return value + "x [" + two(lo) + ", " + two(hi) + "]";
      };
      const auto placed_text = [](const ScheduleResult& s) {
        return s.meshir.empty() && s.meshir_ref.setting_index < 0 ? std::string("no fit") : std::string("SRAM overflow");
      };
      if (wide) {
        for (const auto& s : r.schedules) {
          if (!s.placed) {
            row.insert(row.end(), {placed_text(s), "-"});
            continue;
          }
          row.insert(row.end(), {human(s.tokens_per_s, "tok/s"), human(s.latency_s, "s")});
        }
      } else {
        const auto& w = r.schedules.at(1);
        row.push_back(w.placed ? human(w.tokens_per_s, "tok/s") : placed_text(w));
      }
      if (r.front.empty()) {
        row.insert(row.end(), {"no fit", "-"});
        if (wide) row.insert(row.end(), {"-", "-"});
        row.insert(row.end(), {"-", "-"});
        if (wide) row.push_back("0");
      } else {
        const auto& best = r.front.front();
        row.insert(row.end(), {human(best.tokens_per_s, "tok/s"), human(best.latency_s, "s")});
        if (wide) {
          row.insert(row.end(), {std::to_string(best.pes_used),
                                 human(setting_energy(config, st, best.tokens_per_s).j_per_token, "J")});
        }
        row.insert(row.end(), {ratio(1), ratio(0)});
        if (wide) row.push_back(std::to_string(r.front.size()));
      }
    } else {
      row.insert(row.end(), {human(static_cast<double>(r.flops_per_step), "FLOP"),
                             human(static_cast<double>(r.param_bytes), "B"),
                             human(static_cast<double>(r.kv_cache_bytes), "B"), human(r.roofline_tokens_per_s, "tok/s")});
      if (i < estimates.size() && estimates[i].pieces < 0) {
        row.insert(row.end(), {"-", "-", "-"});
      } else if (i < estimates.size()) {
        const auto& e = estimates[i];
        std::ostringstream ratio;
        ratio << (e.at_least ? "> " : "") << std::setprecision(3) << e.relative_to_default() << 'x';
        row.insert(row.end(), {std::to_string(e.pieces), (e.at_least ? "> " : "") + human(static_cast<double>(e.top_cut_options), ""),
                               ratio.str()});
      }
    }
    if (hardware) row.insert(row.begin() + 2, "#" + std::to_string(st.hardware));
    rows.push_back(row);
  }
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) {
      const bool left = rows[0][c] == "model" || rows[0][c] == "phase" || rows[0][c] == "placed as";
      out << (c ? "  " : "") << (left ? std::left : std::right) << std::setw(static_cast<int>(width[c])) << r[c];
    }
    out << '\n';
  }
  out << std::right;
  const auto& w = config.wafer;
  out << "wafer " << w.preset << ": " << w.grid_w_pes << " x " << w.grid_h_pes << " PEs (" << w.usable_pes()
      << " usable), " << human(static_cast<double>(w.total_sram_bytes()), "B") << " SRAM, peak "
      << human(w.peak_flops_per_s(), "FLOP/s") << " FP16, clock " << human(w.clock_hz, "Hz") << '\n';
  if (w.clock_hz_documented_min > 0 && w.clock_hz_documented_min < w.clock_hz_documented_max) {
    // Every cost is in cycles: a prediction at another clock is this one times clock'/clock.
    out << "the " << w.preset << " clock is uncertain: public sources give " << human(w.clock_hz_documented_min, "Hz")
        << " to " << human(w.clock_hz_documented_max, "Hz") << ", so every tokens/s above spans x"
        << std::setprecision(3) << w.clock_hz_documented_min / w.clock_hz << " to x"
        << w.clock_hz_documented_max / w.clock_hz << std::setprecision(6) << " of its value (latencies the inverse)\n";
  }
  if (hardware) {
    out << "hardware points (hw):";
    for (std::size_t h = 0; h < config.hardware.size(); ++h) {
      const auto& p = config.hardware[h];
      out << (h % 4 == 0 ? "\n  " : "   ") << '#' << h << ' ' << p.label << (p.base && p.label != "base" ? " (base)" : "")
          << " [" << p.wafer.defective_pes.size() << " defects]";
    }
    out << '\n';
  }
  if (with_schedules) {
    const bool any_subset = std::any_of(results.begin(), results.end(), [](const SettingResult& r) { return r.layer_subset_layers > 0; });
    if (any_subset) {
      out << "placed as 'subset k/L': the whole model's weights and KV cache exceed workloads.layer_subset_max_fill ("
          << std::setprecision(3) << 100.0 * config.workloads.layer_subset_max_fill
          << " %) of the wafer's SRAM;\n  its schedules hold k of the model's L decoder layers, whose costs are scaled by "
             "L/k (embedding and LM head charged once).\n";
    }
    const bool any_groups = std::any_of(results.begin(), results.end(), [](const SettingResult& r) {
      return placement_text(r).find("request groups") != std::string::npos;
    });
    if (any_groups) {
      out << "placed as 'N request groups': the requests' KV cache and activations do not fit at once, so a schedule "
             "serves them\n  as N groups one after another (its tok/s counts all of them).\n";
    }
    if (wide && std::any_of(results.begin(), results.end(),
                            [](const SettingResult& r) { return r.fits_sram == 0 && placement_text(r) == "whole"; })) {
      out << "SRAM bound: weights + KV cache + the largest activation, all at once (summary.csv fits_sram compares it "
             "with the wafer);\n  a row placed 'whole' above it passed each schedule's own per-PE SRAM check.\n";
    }
    if (std::any_of(results.begin(), results.end(), [](const SettingResult& r) { return r.wafers > 1; })) {
      out << "placed as 'a+b on N wafers': a pipeline of N systems holding a, b, ... decoder layers each.\n";
    }
    // Why a schedule could not be placed, from the same reasons summary.csv holds (*_na_reason).
    std::size_t listed = 0, unlisted = 0;
    for (const auto& r : results) {
      for (const auto& sch : r.schedules) {
        if (sch.placed || sch.na_reason.empty()) continue;
        if (listed < kNoFitReasonsShown) {
          out << "no fit, setting " << r.setting_id << ", " << sch.name << ": " << sch.na_reason << '\n';
          ++listed;
        } else {
          ++unlisted;
        }
      }
    }
    if (unlisted > 0) out << "... and " << unlisted << " more (columns *_na_reason of summary.csv)\n";
    const std::int64_t draws = results.empty() ? 0 : results.front().intervals.draws;
    if (draws > 0) {
      out << "[lo, hi]: 90 % interval of the ratio over " << draws
          << " draws of the fitted parameters' uncertainty (the same draws for every schedule).\n";
    } else {
      out << "No intervals: the params file has no uncertainty section or cost.draws is 0.\n";
    }
    out << "All throughputs and latencies are PREDICTED by the cost model ("
        << config::describe_params(config)
        << "); TPOT for decode, TTFT for prefill.\n";
  } else {
    out << "roofline bound = FLOPs / wafer peak: an upper bound on throughput, not a prediction.\n";
    if (!estimates.empty()) print_search_size_warnings(out, results, estimates);
  }
}

}  // namespace wavel::driver
