// The systems a wafer sits in: the links that join them and the external memory that feeds them
// weights (CS-2, CS-3 presets), and the mesh edge where a system's I/O enters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wavel::wafer {

/// A side of the wafer: where a system's I/O (its links to other systems) enters the mesh.
enum class Edge { west, east, north, south };

/// What joins the systems of a cluster and feeds them weights.
struct ClusterParams {
  std::string preset;                    ///< "cs2", "cs3" or "" (given by hand)
  double link_bytes_per_s = 0;           ///< one system's I/O, each direction
  double link_latency_s = 0;             ///< one crossing between systems (no vendor figure: a bounded parameter)
  double external_memory_bytes = 0;      ///< weight store outside the wafer (MemoryX-like)
  double ingress_bytes_per_s = 0;        ///< weights from that store into one wafer
  std::vector<std::int64_t> wafers{1};   ///< systems per deployment: a sweep axis (1: one wafer)
  /// >0: the wafer count is searched, every count from 1 to this (each model up to its decoder
  /// layers), and each problem's fewest, fastest and most efficient count is reported.
  std::int64_t max_wafers = 0;
  double target_tpr_tokens_per_s = 0;    ///< >0: decode tokens/s per user (1 / TPOT) a deployment must reach
  double target_ttft_s = 0;              ///< >0: the TTFT a prefill deployment must stay within
  Edge io_edge = Edge::west;               ///< where each wafer's I/O enters its mesh (unpublished: a parameter)
};

/// The most systems one pipeline may span.
constexpr std::int64_t kMaxWafers = 64;

/// Bounds of the link latency a config may give (s).
constexpr double kMinLinkLatencyS = 1e-7;
constexpr double kMaxLinkLatencyS = 1e-3;

/// The presets (docs/config.md, cluster): 12 x 100 GbE per system (1.2 Tb/s = 150 GB/s) for CS-2 and CS-3,
/// weights streamed in through the same I/O; latency 5 us by default. Throws wavel::InputDataError
/// for an unknown name.
ClusterParams cluster_preset(const std::string& name);
/// Names of the cluster presets, in a stable order.
std::vector<std::string> cluster_preset_names();

}  // namespace wavel::wafer
