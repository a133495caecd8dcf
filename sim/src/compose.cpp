// The schedule as a pipeline run: each (micro-batch, step) starts when the micro-batch has finished
// its previous step and every stage the step holds is free; stages serve requests first come first.
#include "wavel/sim/detail/compose.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "wavel/common/error.hpp"

namespace wavel::sim {

namespace {

struct Step {
  double cycles = 0;         // slowest op, layer-scaled
  double unscaled = 0;
  std::vector<int> stages;   // stages held (sorted, distinct)
  std::size_t first_op = 0, end_op = 0;
};

// A transfer fed by another stage moves data between stages over links only.
bool links_only(const meshir::Schedule& s, const meshir::PlacedOp& op) {
  if (op.kernel != meshir::Kernel::transfer || op.inputs.empty()) return false;
  const int producer = op.inputs.front();
  if (producer < 0 || static_cast<std::size_t>(producer) >= s.ops.size()) return true;
  return s.ops[static_cast<std::size_t>(producer)].stage != op.stage;
}

}  // namespace

Pipeline run_pipeline(const meshir::Schedule& schedule, const std::vector<double>& op_cycles, double clock_hz,
                      bool decode, std::int64_t prompt_tokens, int rounds) {
  if (op_cycles.size() != schedule.ops.size()) throw InternalError("sim::run_pipeline: one time per op needed");
  if (!(clock_hz > 0)) throw InternalError("sim::run_pipeline: the clock must be positive");
  const double scale = static_cast<double>(std::max<std::int64_t>(1, schedule.layer_scale));
  Pipeline out;
  out.op_start_cycles.assign(schedule.ops.size(), 0.0);
  std::vector<Step> steps;
  std::map<int, int> stage_index;
  double unscaled_start = 0;
  for (std::size_t i = 0; i < schedule.ops.size();) {
    Step st;
    st.first_op = i;
    bool repeated = false;
    const int step = schedule.ops[i].step;
    for (; i < schedule.ops.size() && schedule.ops[i].step == step; ++i) {
      const auto& op = schedule.ops[i];
      st.unscaled = std::max(st.unscaled, op_cycles[i]);
      repeated = repeated || !op.once;
      out.op_start_cycles[i] = unscaled_start;
      // The link between two systems carries one micro-batch at a time: a resource of its own,
      // keyed below the stages by its sending wafer.
      const bool system_link = meshir::crosses_wafers(schedule, op);
      if (!system_link && links_only(schedule, op)) continue;
      const int resource = system_link ? -1 - static_cast<int>(meshir::wafer_of(schedule, op.region)) : op.stage;
      const auto found = stage_index.emplace(resource, static_cast<int>(stage_index.size())).first->second;
      if (std::find(st.stages.begin(), st.stages.end(), found) == st.stages.end()) st.stages.push_back(found);
    }
    st.end_op = i;
    st.cycles = st.unscaled * (repeated ? scale : 1.0);
    unscaled_start += st.unscaled;
    steps.push_back(st);
  }
  std::vector<double> stage_busy(stage_index.size(), 0.0);
  for (const Step& st : steps) {
    out.pass_cycles += st.cycles;
    for (int s : st.stages) stage_busy[static_cast<std::size_t>(s)] += st.cycles;
  }
  for (double b : stage_busy) out.bottleneck_stage_cycles = std::max(out.bottleneck_stage_cycles, b);

  // Prefill: each micro-batch's prompts enter as `chunks` units one after another (one unit each
  // without chunking); a unit is one chunk of one micro-batch.
  const auto groups = static_cast<std::size_t>(std::max<std::int64_t>(1, schedule.microbatches));
  const auto chunks = decode ? std::size_t{1} : static_cast<std::size_t>(std::max<std::int64_t>(1, schedule.prompt_chunks));
  const std::size_t units = groups * chunks;
  const int passes = decode ? std::max(2, rounds) : 1;
  std::vector<double> stage_free(stage_index.size(), 0.0);
  std::vector<double> ready(units, 0.0);  // when each unit may start its next step
  std::vector<double> pass_end(units, 0.0), previous_end(units, 0.0);
  for (int pass = 0; pass < passes; ++pass) {
    for (std::size_t j = 0; j < units; ++j) {
      double t = ready[j];
      for (const Step& st : steps) {
        for (int s : st.stages) t = std::max(t, stage_free[static_cast<std::size_t>(s)]);
        t += st.cycles;
        for (int s : st.stages) stage_free[static_cast<std::size_t>(s)] = t;
      }
      previous_end[j] = pass_end[j];
      pass_end[j] = t;
      ready[j] = t;  // decode: the next token of this micro-batch enters the first step
    }
  }
  const double requests = static_cast<double>(std::max<std::int64_t>(1, schedule.concurrent_requests));
  if (decode) {
    // Steady state: the period between a micro-batch's last two tokens (the slowest micro-batch).
    double period = 0;
    for (std::size_t j = 0; j < units; ++j) period = std::max(period, pass_end[j] - previous_end[j]);
    out.latency_s = period / clock_hz;
    out.tokens_per_s = period > 0 ? requests / out.latency_s : 0.0;
    out.tpr_tokens_per_s = period > 0 ? 1.0 / out.latency_s : 0.0;
  } else {
    // A micro-batch's first tokens come with its last chunk.
    double sum = 0, last = 0;
    for (std::size_t g = 0; g < groups; ++g) sum += pass_end[g * chunks + chunks - 1];
    for (double e : pass_end) last = std::max(last, e);
    out.latency_s = sum / static_cast<double>(groups) / clock_hz;
    const double tokens = static_cast<double>(std::max<std::int64_t>(1, prompt_tokens));
    out.tokens_per_s = last > 0 ? tokens * requests / (last / clock_hz) : 0.0;
    out.tpr_tokens_per_s = last > 0 ? tokens / out.latency_s : 0.0;
  }
  return out;
}

}  // namespace wavel::sim
