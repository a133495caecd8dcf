// Writes simulated timelines as Chrome trace JSON text; the caller owns the file.
#include "wavel/sim/trace.hpp"

#include <cstdio>
#include <set>
#include <utility>

namespace wavel::sim {

namespace {

void append_escaped(std::string& out, const std::string& text) {
  out += '"';
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// Fixed decimals keep the text identical from run to run (and locale-free in library code).
void append_number(std::string& out, double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  out += buf;
}

std::string rect_text(const meshir::Rect& r) {
  return "(" + std::to_string(r.x) + ", " + std::to_string(r.y) + ") " + std::to_string(r.w) + "x" + std::to_string(r.h);
}

// The recorded spans of one op's sample as events on process `pid`, threads 1 + local PE index.
void add_spans(std::vector<TraceEvent>& events, std::set<std::pair<int, int>>& threads, const OpSimResult& r,
               int pid, double offset_cycles) {
  for (const Span& s : r.spans) {
    TraceEvent e;
    e.category = std::string(to_string(s.kind));
    e.name = s.kind == SpanKind::message ? "message to PE " + std::to_string(s.peer_pe) : e.category;
    e.pid = pid;
    e.tid = 1 + s.pe;
    e.start_cycles = offset_cycles + s.start_cycles;
    e.duration_cycles = s.end_cycles - s.start_cycles;
    events.push_back(std::move(e));
    threads.emplace(pid, 1 + s.pe);
  }
}

void add_thread_names(std::vector<TrackName>& names, const std::set<std::pair<int, int>>& threads) {
  for (const auto& [pid, tid] : threads) {
    names.push_back(TrackName{pid, tid, tid == 0 ? "ops" : "sampled PE " + std::to_string(tid - 1)});
  }
}

}  // namespace

std::string chrome_trace_json(const std::vector<TraceEvent>& events, const std::vector<TrackName>& names,
                              double clock_hz) {
  const double us_per_cycle = 1e6 / clock_hz;
  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  auto separator = [&]() {
    if (!first) out += ",\n";
    first = false;
  };
  for (const TrackName& n : names) {
    separator();
    out += n.tid < 0 ? "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" : "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":";
    out += std::to_string(n.pid);
    out += ",\"tid\":";
    out += std::to_string(n.tid < 0 ? 0 : n.tid);
    out += ",\"args\":{\"name\":";
    append_escaped(out, n.name);
    out += "}}";
  }
  for (const TraceEvent& e : events) {
    separator();
    out += "{\"name\":";
    append_escaped(out, e.name);
    out += ",\"cat\":";
    append_escaped(out, e.category);
    out += ",\"ph\":\"X\",\"ts\":";
    append_number(out, e.start_cycles * us_per_cycle, 6);
    out += ",\"dur\":";
    append_number(out, e.duration_cycles * us_per_cycle, 6);
    out += ",\"pid\":";
    out += std::to_string(e.pid);
    out += ",\"tid\":";
    out += std::to_string(e.tid);
    out += ",\"args\":{\"cycles\":";
    append_number(out, e.duration_cycles, 3);
    if (!e.detail.empty()) {
      out += ",\"detail\":";
      append_escaped(out, e.detail);
    }
    out += "}}";
  }
  out += "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock_hz\":";
  append_number(out, clock_hz, 1);
  out += ",\"time_unit\":\"us\"}}\n";
  return out;
}

std::string schedule_trace_json(const meshir::Schedule& schedule, const SimResult& result, double clock_hz) {
  std::vector<TraceEvent> events;
  std::vector<TrackName> names;
  std::set<std::pair<int, int>> threads;
  for (std::size_t r = 0; r < schedule.regions.size(); ++r) {
    names.push_back(TrackName{static_cast<int>(r), -1, "region " + std::to_string(r) + " " + rect_text(schedule.regions[r])});
  }
  for (std::size_t i = 0; i < schedule.ops.size() && i < result.ops.size(); ++i) {
    const meshir::PlacedOp& op = schedule.ops[i];
    const OpSimResult& r = result.ops[i];
    const double start = i < result.op_start_cycles.size() ? result.op_start_cycles[i] : 0.0;
    TraceEvent e;
    e.name = op.name;
    e.category = std::string(meshir::to_string(op.kernel));
    e.pid = op.region;
    e.tid = 0;
    e.start_cycles = start;
    e.duration_cycles = r.total_cycles;
    e.detail = r.sample.rule + (r.reused_from >= 0 ? "; reuses op " + std::to_string(r.reused_from) : "");
    events.push_back(std::move(e));
    threads.emplace(op.region, 0);
    add_spans(events, threads, r, op.region, start);
  }
  add_thread_names(names, threads);
  return chrome_trace_json(events, names, clock_hz);
}

std::string op_trace_json(const meshir::PlacedOp& op, const OpSimResult& result, double clock_hz) {
  std::vector<TraceEvent> events;
  std::set<std::pair<int, int>> threads{{0, 0}};
  TraceEvent e;
  e.name = op.name;
  e.category = std::string(meshir::to_string(op.kernel));
  e.duration_cycles = result.total_cycles;
  e.detail = result.sample.rule;
  events.push_back(std::move(e));
  add_spans(events, threads, result, 0, 0.0);
  std::vector<TrackName> names{TrackName{0, -1, "op " + op.name + " " + rect_text(op.used)}};
  add_thread_names(names, threads);
  return chrome_trace_json(events, names, clock_hz);
}

}  // namespace wavel::sim
