// The config reader's internals: optional-key readers and the readers of the run sections
// (cluster, baselines, search, sim, output, energy) that sections.cpp holds, each from its key table.
#pragma once

#include <cstdint>
#include <string>

#include "wavel/common/yaml_schema.hpp"
#include "wavel/common/yaml_tree.hpp"
#include "wavel/config/config.hpp"

namespace wavel::config::detail {
using yaml::child_or_null;
using yaml::join_key;
using yaml::Node;
using yaml::Validator;

inline bool present(const Node& map, const std::string& key) {
  return map.kind == Node::Kind::map && map.find(key) != nullptr;
}

// Reads an optional integer key into `target`; leaves the default when the key is absent.
inline void read_int(Validator& v, const Node& map, const std::string& path, const std::string& key, std::int64_t& target,
              std::int64_t min, std::int64_t max) {
  if (!present(map, key)) return;
  if (auto value = v.integer(child_or_null(map, key), join_key(path, key), min, max)) target = *value;
}

inline void read_double(Validator& v, const Node& map, const std::string& path, const std::string& key, double& target,
                 double min, double max, bool min_exclusive = false) {
  if (!present(map, key)) return;
  if (auto value = v.number(child_or_null(map, key), join_key(path, key), min, max, min_exclusive)) target = *value;
}

inline void read_bool(Validator& v, const Node& map, const std::string& path, const std::string& key, bool& target) {
  if (!present(map, key)) return;
  if (auto value = v.boolean(child_or_null(map, key), join_key(path, key))) target = *value;
}

void read_cluster(Validator& v, const Node& node, const wafer::WaferParams& wafer, wafer::ClusterParams& c);
void read_baselines(Validator& v, const Node& node, const wafer::WaferParams& wafer, BaselinesConfig& b);
void read_search(Validator& v, const Node& node, const wafer::WaferParams& wafer, SearchConfig& s);
void read_sim(Validator& v, const Node& node, const wafer::WaferParams& wafer, SimConfig& c);
void read_output(Validator& v, const Node& node, const wafer::WaferParams& wafer, OutputConfig& o, const std::string& file);
void read_energy(Validator& v, const Node& node, const wafer::WaferParams& wafer, EnergyConfig& e);

}  // namespace wavel::config::detail
