// A config section's keys, declared once: each key's name, unit, meaning, reader and writer. The
// allowed keys, the reading, the resolved YAML and docs/config.md's tables (config::key_reference)
// all come from one table per section.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "read.hpp"
#include "wavel/config/keys.hpp"

namespace wavel::config::detail {

/// What a reader may need besides its section: the wafer (bounds by grid side) and the config file.
struct KeyContext {
  const wafer::WaferParams& wafer;
  const std::string& file;
};

template <class S>
struct Key {
  std::string name;
  std::string unit;
  std::string meaning;       ///< for docs/config.md, with the bounds the factories append
  std::string default_text;  ///< docs/config.md's default when the section's defaults do not say it; "" derives it
  /// Reads the key's node (only called when the key is present).
  std::function<void(Validator&, const Node&, const std::string& path, S&, const KeyContext&)> read;
  /// Emits the value (the key is emitted before).
  std::function<void(YAML::Emitter&, const S&)> write;
  /// Whether the resolved YAML holds the key; empty: always.
  std::function<bool(const Config&, const S&)> written;
};

template <class S>
using KeyTable = std::vector<Key<S>>;

std::string bounds_text(double lo, double hi, bool lo_exclusive);
std::string bounds_text(std::int64_t lo, std::int64_t hi);
void emit_numbers(YAML::Emitter& out, const std::vector<double>& values);

/// Key factories over a section type S (members of S's bases convert to S's member pointers).
template <class S>
struct Keys {
  static Key<S> integer(std::string name, std::int64_t S::*m, std::int64_t lo, std::int64_t hi, std::string unit,
                        std::string meaning) {
    return {std::move(name), std::move(unit), std::move(meaning) + "; " + bounds_text(lo, hi), "",
            [m, lo, hi](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
              if (auto x = v.integer(n, p, lo, hi)) s.*m = *x;
            },
            [m](YAML::Emitter& out, const S& s) { out << s.*m; }, {}};
  }
  static Key<S> number(std::string name, double S::*m, double lo, double hi, bool lo_exclusive, std::string unit,
                       std::string meaning) {
    return {std::move(name), std::move(unit), std::move(meaning) + "; " + bounds_text(lo, hi, lo_exclusive), "",
            [m, lo, hi, lo_exclusive](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
              if (auto x = v.number(n, p, lo, hi, lo_exclusive)) s.*m = *x;
            },
            [m](YAML::Emitter& out, const S& s) { out << format_double(s.*m); }, {}};
  }
  static Key<S> flag(std::string name, bool S::*m, std::string meaning) {
    return {std::move(name), "", std::move(meaning), "",
            [m](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
              if (auto x = v.boolean(n, p)) s.*m = *x;
            },
            [m](YAML::Emitter& out, const S& s) { out << s.*m; }, {}};
  }
  static Key<S> choice(std::string name, std::string S::*m, std::vector<std::string> options, std::string meaning) {
    return {std::move(name), "", std::move(meaning), "",
            [m, options](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
              if (auto x = v.choice(n, p, options)) s.*m = *x;
            },
            [m](YAML::Emitter& out, const S& s) { out << s.*m; }, {}};
  }
  /// A list of integers; `empty_is_none`: `[]` clears it (else an empty list is an error).
  static Key<S> integers(std::string name, std::vector<std::int64_t> S::*m, std::int64_t lo, std::int64_t hi,
                         bool empty_is_none, std::string unit, std::string meaning) {
    return {std::move(name), std::move(unit), std::move(meaning) + "; each " + bounds_text(lo, hi), "",
            [m, lo, hi, empty_is_none](Validator& v, const Node& n, const std::string& p, S& s, const KeyContext&) {
              if (empty_is_none && n.kind == Node::Kind::sequence && n.items.empty()) {
                (s.*m).clear();
                return;
              }
              s.*m = v.axis(n, p, [&](const Node& item, const std::string& ip) { return v.integer(item, ip, lo, hi); });
            },
            [m](YAML::Emitter& out, const S& s) { out << YAML::Flow << s.*m; }, {}};
  }
  /// A list of numbers in [lo, hi] (lo excluded when `lo_exclusive`); `empty_is_none` as above.
  static Key<S> numbers(std::string name, std::vector<double> S::*m, double lo, double hi, bool lo_exclusive,
                        bool empty_is_none, std::string unit, std::string meaning) {
    return {std::move(name), std::move(unit), std::move(meaning) + "; each " + bounds_text(lo, hi, lo_exclusive), "",
            [m, lo, hi, lo_exclusive, empty_is_none](Validator& v, const Node& n, const std::string& p, S& s,
                                                     const KeyContext&) {
              if (empty_is_none && n.kind == Node::Kind::sequence && n.items.empty()) {
                (s.*m).clear();
                return;
              }
              s.*m = v.axis(n, p, [&](const Node& item, const std::string& ip) {
                return v.number(item, ip, lo, hi, lo_exclusive);
              });
            },
            [m](YAML::Emitter& out, const S& s) { emit_numbers(out, s.*m); }, {}};
  }
};

/// The key names of a table.
template <class S>
std::vector<std::string> names_of(const KeyTable<S>& table) {
  std::vector<std::string> names;
  for (const auto& k : table) names.push_back(k.name);
  return names;
}

/// Each present key of the table read, in table order.
template <class S>
void read_present_keys(Validator& v, const Node& node, const std::string& path, const KeyTable<S>& table, S& s,
                       const KeyContext& context) {
  for (const auto& k : table) {
    if (present(node, k.name)) k.read(v, child_or_null(node, k.name), join_key(path, k.name), s, context);
  }
}

/// The section's allowed keys checked, then each present key read.
template <class S>
void read_keys(Validator& v, const Node& node, const std::string& path, const KeyTable<S>& table, S& s,
               const KeyContext& context) {
  v.check_map(node, path, names_of(table));
  read_present_keys(v, node, path, table, s, context);
}

/// The table's keys into an open map of the resolved YAML.
template <class S>
void write_key_values(YAML::Emitter& out, const KeyTable<S>& table, const Config& c, const S& s) {
  for (const auto& k : table) {
    if (k.written && !k.written(c, s)) continue;
    out << YAML::Key << k.name << YAML::Value;
    k.write(out, s);
  }
}

/// The section as a block map of the resolved YAML.
template <class S>
void write_keys(YAML::Emitter& out, const std::string& section, const KeyTable<S>& table, const Config& c, const S& s) {
  out << YAML::Key << section << YAML::Value << YAML::BeginMap;
  write_key_values(out, table, c, s);
  out << YAML::EndMap;
}

/// The rows docs/config.md shows, defaults written as the resolved YAML writes `defaults`.
template <class S>
std::vector<KeyDoc> docs_of(const KeyTable<S>& table, const S& defaults) {
  std::vector<KeyDoc> rows;
  for (const auto& k : table) {
    std::string shown = k.default_text;
    if (shown.empty()) {
      YAML::Emitter out;
      k.write(out, defaults);
      shown = "`" + std::string(out.c_str()) + "`";
    }
    rows.push_back(KeyDoc{k.name, k.unit, shown, k.meaning});
  }
  return rows;
}

/// An integer axis of the workloads section: each value 1 … 2^max_log2, `fallback` when absent (the
/// axis, a case's key, a `lengths` pair's element).
struct IntAxis {
  const char* key;
  std::int64_t fallback;
  int max_log2;
  [[nodiscard]] constexpr std::int64_t max() const { return std::int64_t{1} << max_log2; }
};
constexpr IntAxis kRequestsAxis{"concurrent_requests", 1, 20};
constexpr IntAxis kInputTokensAxis{"input_tokens", 2048, 24};
constexpr IntAxis kOutputTokensAxis{"output_tokens", 128, 24};

/// The workloads section's sweep axes and cases (read in config.cpp): name and docs.
const std::vector<KeyDoc>& workload_axis_keys();
/// Its other keys.
const KeyTable<WorkloadAxes>& workload_keys();

/// cost.draws: parameter draws per setting, at most this many.
constexpr std::int64_t kMaxDraws = 100000;

/// The cost section's keys besides the parameters of cost::param_registry (read in config.cpp).
const std::vector<KeyDoc>& cost_other_keys();

// The tables of the sections they name (sections.cpp).
const KeyTable<BaselinesConfig>& baselines_keys();
const KeyTable<wafer::ClusterParams>& cluster_keys();
const KeyTable<SearchConfig>& search_keys();
const KeyTable<SimConfig>& sim_keys();
const KeyTable<OutputConfig>& output_keys();
const KeyTable<EnergyConfig>& energy_keys();

}  // namespace wavel::config::detail
