// The cluster presets; see cluster.hpp.
#include "wavel/wafer/cluster.hpp"

#include "wavel/common/error.hpp"

namespace wavel::wafer {

ClusterParams cluster_preset(const std::string& name) {
  ClusterParams c;
  c.preset = name;
  // CS-2 and CS-3 systems each carry 12 x 100 GbE (1.2 Tb/s = 150e9 B/s); MemoryX feeds weights
  // through the same I/O. Latency: no vendor figure; 5 us is a switched-Ethernet hop, bounded above.
  c.link_bytes_per_s = 150e9;
  c.ingress_bytes_per_s = 150e9;
  c.link_latency_s = 5e-6;
  if (name == "cs3") {
    c.external_memory_bytes = 1.2e15;  // largest MemoryX option offered with CS-3
  } else if (name == "cs2") {
    c.external_memory_bytes = 2.4e15;  // MemoryX for CS-2, up to 2.4 PB
  } else {
    throw InputDataError("unknown cluster preset '" + name + "' (known: cs2, cs3)");
  }
  return c;
}

std::vector<std::string> cluster_preset_names() { return {"cs2", "cs3"}; }

}  // namespace wavel::wafer
