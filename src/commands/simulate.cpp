// The simulate subcommand: verification and scoring shared with `check`, then the sampled simulation.
#include "wavel/commands/commands.hpp"

#include <cmath>
#include <iomanip>
#include <iostream>

#include "wavel/calibrate/fit.hpp"
#include "wavel/common/text.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/common/format.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/sim/trace.hpp"

namespace wavel::driver {

void simulate_command(const std::string& meshir_path, const std::string& wafer_preset, const std::string& params_path,
                      const std::string& trace_path, const engine::RunContext& context, std::ostream& out) {
  const auto checked = load_checked_schedule(meshir_path, wafer_preset, params_path, context);
  const auto& s = checked.schedule;
  if (context.rank == 0) {
    std::cerr << "wavel-dse: simulator PE timing: "
              << (wafer::is_nominal(checked.wafer.pe_timing)
                      ? std::string("nominal (the parameters used have no sim_timing section; configs/params/wse3.yaml "
                                    "has the one measured on WSE-3, 3-5x slower)")
                      : "the sim_timing constants of " + checked.params_source)
              << '\n';
  }
  sim::SimOptions options;
  options.record_trace = !trace_path.empty();
  const auto model = cost::evaluate(s, checked.wafer, checked.params, checked.decode, checked.prompt_tokens);
  const auto simulated = sim::simulate(s, checked.wafer, checked.decode, checked.prompt_tokens, options);
  if (!trace_path.empty()) {
    engine::on_root_agreed(context.comm, 0, [&] {
      io::write_file_atomically(trace_path, sim::schedule_trace_json(s, simulated, checked.wafer.clock_hz));
    });
  }
  if (context.rank != 0) return;
  out << "schedule '" << printable(s.name) << "': " << s.ops.size() << " ops, verified OK; simulated "
      << simulated.ops_simulated << " ops (" << simulated.ops_reused << " reused), " << simulated.events
      << " events, " << simulated.wavelet_hops << " wavelet-hops, " << simulated.relays
      << " relays (routers out of colours)\n";
  out << std::left << std::setw(5) << "op" << std::setw(34) << "name" << std::setw(13) << "kernel" << std::right
      << std::setw(14) << "model cyc" << std::setw(14) << "sim cyc" << std::setw(9) << "model" << "  sample\n";
  std::vector<double> model_cycles, sim_cycles;  // ops the simulator gives a time to
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const double m = model.ops[i].total_cycles;
    const double x = simulated.ops[i].total_cycles;
    const double rel = x > 0 ? calibrate::rel_error(m, x) : 0.0;
    if (x > 0) {
      model_cycles.push_back(m);
      sim_cycles.push_back(x);
    }
    out << std::left << std::setw(5) << i << std::setw(34) << s.ops[i].name.substr(0, 33) << std::setw(13)
        << meshir::to_string(s.ops[i].kernel) << std::right << std::fixed << std::setprecision(0) << std::setw(14) << m
        << std::setw(14) << x << std::setw(8) << std::setprecision(1) << 100.0 * rel << "%  "
        << simulated.ops[i].sample.rule << "; sampling error " << std::setprecision(2)
        << 100.0 * simulated.ops[i].sampling_error << " %" << std::defaultfloat << '\n';
  }
  out << std::setprecision(3) << "model against simulator over ops, MAPE (mean |model - sim| / sim): "
      << (sim_cycles.empty() ? 0.0 : calibrate::mape_pct(model_cycles, sim_cycles)) << " %\n";
  out << (checked.decode ? "TPOT" : "TTFT") << ": model " << human(model.latency_s, "s") << ", simulated "
      << human(simulated.latency_s, "s") << "; throughput: model " << human(model.tokens_per_s, "tok/s")
      << ", simulated " << human(simulated.tokens_per_s, "tok/s") << " (both PREDICTED; " << simulated.scale_rule << ")\n";
  if (!trace_path.empty()) out << "trace: " << trace_path << " (open in ui.perfetto.dev or chrome://tracing)\n";
}

}  // namespace wavel::driver
