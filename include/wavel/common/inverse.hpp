// The inverse of a small dense matrix (a fit's J^T J, a covariance block): one implementation for
// calibration and the parameter draws.
#pragma once

#include <cstddef>
#include <vector>

namespace wavel {

/// Gauss-Jordan elimination with partial pivoting. A column whose pivot is not above `min_pivot` in
/// magnitude is left unreduced (conditioning on a zero-variance block changes nothing) and counted in
/// `skipped`; the caller decides whether that is an error.
std::vector<std::vector<double>> gauss_jordan_inverse(std::vector<std::vector<double>> a, double min_pivot,
                                                      std::size_t& skipped);

}  // namespace wavel
