// Chrome / Perfetto trace JSON ("traceEvents" with complete "X" events) of simulated timelines.
#pragma once

#include <string>
#include <vector>

#include "wavel/meshir/schedule.hpp"
#include "wavel/sim/simulate.hpp"

namespace wavel::sim {

/// One complete ("X") event.
struct TraceEvent {
  std::string name;
  std::string category;
  int pid = 0;                ///< one process per region
  int tid = 0;                ///< one thread per op lane or sampled PE
  double start_cycles = 0;
  double duration_cycles = 0;
  std::string detail;         ///< shown under args.detail; empty: none
};

/// A process (tid < 0) or thread name, written as "M" metadata events.
struct TrackName {
  int pid = 0;
  int tid = -1;
  std::string name;
};

/// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}} with names first, then the events
/// in the given order. Times are microseconds at `clock_hz` (ts, dur; 6 decimals); every event also
/// carries args.cycles. Strings are JSON-escaped. The caller writes the text (atomically) where it likes.
std::string chrome_trace_json(const std::vector<TraceEvent>& events, const std::vector<TrackName>& names,
                              double clock_hz);

/// The timeline of one simulated pass of `schedule` (unscaled by layer_scale): one process per
/// region; thread 0 holds its ops at their composed start times, threads 1.. the recorded tasks and
/// messages of each sampled PE (SimOptions::record_trace), shifted to the op's start. A reused op
/// shows only its op event, whose args.detail names the op that carries the PE timeline.
std::string schedule_trace_json(const meshir::Schedule& schedule, const SimResult& result, double clock_hz);

/// The timeline of one op's sample: process 0, thread = sampled PE.
std::string op_trace_json(const meshir::PlacedOp& op, const OpSimResult& result, double clock_hz);

}  // namespace wavel::sim
