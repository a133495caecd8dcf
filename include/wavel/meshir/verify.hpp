// Checks that a MeshIR schedule can execute on its wafer, and the one SRAM-per-PE model of the tool.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/meshir/kernels.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/meshir/text.hpp"

namespace wavel::meshir {

/// Routing colours an op occupies per PE; the tool passes cost::colours_needed.
using ColoursNeeded = std::function<int(const PlacedOp&)>;

/// SRAM per PE of one region, in bytes, split by what occupies it.
struct RegionSram {
  std::int64_t resident_bytes = 0;  ///< weights and KV cache, kept for the whole run
  std::int64_t buffer_bytes = 0;    ///< double-buffered activations of the largest op
  [[nodiscard]] std::int64_t total_bytes() const;
};

/// The SRAM model, used by the verifier and the cost model alike. For the ops placed in `region`:
///   resident = sum over weight-holding ops of ceil((weight_bytes + kv_cache_bytes) * repl_x * repl_y / used PEs)
///   buffers  = 2 * max over all ops of ceil((input_bytes + output_bytes) / used PEs)
/// with repl_x, repl_y from the op's in_layout. Ops with an empty `used` rectangle are left out (the
/// verifier reports them); negative byte counts count as 0, factors below 1 as 1. Sums saturate at
/// INT64_MAX. A PE also holds the resident bytes of every other region covering it (the expert CUT's
/// strips lie inside their block's region): the most loaded cell of that overlap is added, and the
/// largest buffer of any overlapping region counts. Throws wavel::InternalError if `region` is not an
/// index of schedule.regions.
RegionSram region_sram_per_pe(const Schedule& schedule, int region);

/// SRAM per PE of one op's work spread over `pes` PEs: resident = ceil((weight_bytes + kv_cache_bytes)
/// * weight_copies / pes), buffers = 2 * ceil((input_bytes + output_bytes) / pes). A region adds up the
/// resident parts of its ops and keeps the largest buffer; layer packing uses the same rule.
/// Attention ops (work.heads > 1) hold one head at a time: their buffers count (input + output) / heads.
RegionSram op_sram_per_pe(const OpWork& work, std::int64_t weight_copies, std::int64_t pes);

/// region_sram_per_pe of every region, in order, in O(R^2 log R) for R regions.
std::vector<RegionSram> region_sram_per_pe_all(const Schedule& schedule);

/// region_sram_per_pe(schedule, region).total_bytes().
std::int64_t resident_bytes_per_pe(const Schedule& schedule, int region);

/// The largest resident_bytes_per_pe over all regions; 0 without regions.
std::int64_t resident_bytes_per_pe_max(const Schedule& schedule);

/// What verify needs besides the schedule.
struct VerifyOptions {
  std::string file_label;         ///< named in every diagnostic
  SourceLines lines;              ///< where ops, regions and header items are in the text; may be empty
  ColoursNeeded colours_needed;   ///< empty: the colour budget is not checked
};

/// Every problem that keeps `schedule` from executing, ordered by line:
///  (a) a region or an op's used rectangle off the grid, or used not inside its region;
///  (b) an op's used rectangle that contains a defective PE (a region may hold defective PEs outside
///      the used rectangles of its ops: they stay idle, and their routers still forward);
///  (c) different regions that overlap while ops on them run in the same step;
///  (d) a region needing more SRAM per PE than sram_per_pe_bytes (see region_sram_per_pe);
///  (e) data crossing regions other than through a mover (transfer, moe_dispatch, moe_combine) whose
///      to_region is the consumer's region, or a consumer whose in_layout is not aligned with its
///      producer's out_layout while the consumer is neither a relayout nor a mover;
///  (f) an op needing more routing colours than the schedule has;
///  (g) structural faults: bad indices, inputs not earlier, steps decreasing, bad factors, negative
///      figures, empty or repeated names, header values out of range (e.g. more microbatches than requests).
std::vector<Diagnostic> verify(const Schedule& schedule, const VerifyOptions& options);

/// verify() with only the op lines known (op index -> 1-based line; empty: unknown).
std::vector<Diagnostic> verify(const Schedule& schedule, const std::string& file_label,
                               const std::vector<int>& op_line_numbers, const ColoursNeeded& colours_needed);

/// Throws wavel::DataError carrying every problem verify() finds.
void verify_or_throw(const Schedule& schedule, const VerifyOptions& options);

}  // namespace wavel::meshir
