// Hardware measurements of single WaferLLM kernels (MeshGEMM, MeshGEMV, shift) and their predictions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/calibrate/least_squares.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::calibrate {

/// The kernels a measurement file may hold.
enum class KernelKind { meshgemm, meshgemv, shift };

/// "meshgemm", "meshgemv", "shift".
std::string to_string(KernelKind kind);

/// One timed configuration: a P x P square of PEs, global sizes, mean cycles of one repetition.
struct KernelPoint {
  KernelKind kind = KernelKind::meshgemm;
  std::int64_t side_pes = 0;    ///< P
  std::int64_t m = 0;           ///< meshgemm: [M,K] @ [K,N]; meshgemv: [1,M] @ [M,N]; shift: M x N matrix
  std::int64_t k = 0;           ///< meshgemm only
  std::int64_t n = 0;
  std::int64_t groups = 0;      ///< meshgemv: group_num G (the reduce tree's first level has P / G PEs)
  std::int64_t hops = 0;        ///< shift: distance L in PEs
  double mean_cycles = 0;       ///< mean over PEs of one repetition's cycles, as measured
  int line = 0;                 ///< 1-based position in its file
  int column = 0;
};

/// A measurement file, `../shared/reference/wse3_kernels/*.yaml` in shape.
struct KernelSet {
  std::string file;
  std::string source;
  KernelKind kind = KernelKind::meshgemm;
  std::vector<KernelPoint> points;  ///< measured points in file order (failed runs, mean_cycles null, skipped)
  std::size_t skipped = 0;          ///< failed runs
};

/// True if the YAML text is a kernel measurement file (a top-level `kernel:` key).
bool looks_like_kernel_file(const std::string& text);

/// Reads a kernel measurement file. InputMissingError if unreadable, DataError (file:line:col, key)
/// for every problem: unknown keys, sizes that are not multiples of P, out-of-range values.
KernelSet load_kernel_set(const std::string& path);
KernelSet parse_kernel_set(const std::string& text, const std::string& file_label);

/// DataError (file:line, key) for every point whose P x P square (and, for the shift, P + L PEs of
/// width) does not fit `wafer`: the hardware could not have run it, and the simulator would not end.
void check_on_wafer(const KernelSet& set, const wafer::WaferParams& wafer);

/// The cost model's cycles for one repetition of the point's kernel on a P x P region of `wafer`,
/// through the model's own op costs (MeshGEMM and MeshGEMV as placed ops, the shift through its
/// neighbour-shift term). The timed span is inside one launch: no host launch is charged.
double predict_kernel_cycles(const KernelPoint& point, const wafer::WaferParams& wafer, const cost::CostParams& params);

/// Scalar instructions of one MeshGEMM k-iteration as WaferLLM's tile loop writes it (prefill.csl
/// matmul_compute): a base-address set, three DSR loads and two offset increments around the @map.
inline constexpr int kScalarInstructionsPerKIteration = 6;

/// A scalar instruction's cycles from a fitted k-iteration: gemm_k_cycles / 6. (On WSE-2, where both
/// are fitted end to end, the two agree within about 10 %: docs/calibration.md.)
inline double scalar_op_cycles_from_k_iteration(double gemm_k_cycles) {
  return gemm_k_cycles / kScalarInstructionsPerKIteration;
}

/// The parameters kernel measurements pin, in registry order: alpha, beta and the gemm_*, gemv_* and
/// shift_* constants of the kernels present in `sets`.
std::vector<std::string> kernel_fit_names(const std::vector<KernelSet>& sets);

/// The held-out split of kernel points: by kernel, the points whose P is the second-largest P of that
/// kernel (an interpolation check inside the measured range; cross-validation leaves each P out in turn).
std::vector<bool> kernel_held_out_mask(const std::vector<KernelPoint>& points);

/// All points of all sets, in set then file order, and the fit problem on them (cycles, log space).
std::vector<KernelPoint> all_points(const std::vector<KernelSet>& sets);
LogFitProblem kernel_problem(const std::vector<KernelPoint>& points, const std::vector<bool>& held_out,
                             const wafer::WaferParams& wafer);

/// Each point predicted by a fit of `names` (from `start`) that saw no point of its grid side P, of any
/// kernel: leave-one-P-out cross-validation. Sides whose fold has fewer training points than
/// parameters keep NaN.
struct LeaveOneSideOut {
  std::vector<double> predicted;            ///< per point, cycles; NaN where its fold could not be fitted
  std::vector<std::string> bound_warnings;  ///< "P=side: " + bound_warning for each fold's parameter that ended on a bound
  std::size_t folds = 0;
};
LeaveOneSideOut leave_one_side_out(const std::vector<KernelPoint>& points, const wafer::WaferParams& wafer,
                                   const cost::CostParams& start, const std::vector<std::string>& names);

}  // namespace wavel::calibrate
