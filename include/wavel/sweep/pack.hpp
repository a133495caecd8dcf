// Objectives in the flat byte encoding of wavel/common/pack.hpp (messages between ranks, checkpoints).
#pragma once

#include <cstdint>
#include <vector>

#include "wavel/common/pack.hpp"
#include "wavel/search/pareto.hpp"

namespace wavel::driver {

using wavel::Packer;
using wavel::Unpacker;

/// The three objectives of a schedule (not its id).
inline void put_objectives(Packer& p, const search::Objectives& o) {
  p.put(o.tokens_per_s);
  p.put(o.latency_s);
  p.put(o.pes);
}
inline void get_objectives(Unpacker& u, search::Objectives& o) {
  u.get(o.tokens_per_s);
  u.get(o.latency_s);
  u.get(o.pes);
}

/// A list of objectives, count first.
inline void pack_objectives(const std::vector<search::Objectives>& v, Packer& p) {
  p.put(static_cast<std::uint64_t>(v.size()));
  for (const auto& o : v) put_objectives(p, o);
}
inline std::vector<search::Objectives> unpack_objectives(Unpacker& u) {
  std::vector<search::Objectives> v(u.count(2 * sizeof(double) + sizeof(std::int64_t)));
  for (auto& o : v) get_objectives(u, o);
  return v;
}

}  // namespace wavel::driver
