// A mixed-integer linear programme and the one interface through which Sentinel solves it, so that the
// solver (today CBC, milp_cbc.cc) can be replaced without touching the formulations (optimal_plan.h).
//
//   minimise  sum_j obj[j] x[j]
//   subject to row_lo[r] <= sum_j a[r][j] x[j] <= row_hi[r]   for every row r
//              col_lo[j] <= x[j] <= col_hi[j], x[j] integer where integer[j]
//
// Thread safety: MilpProblem is a plain value; solve_milp may run concurrently on different problems.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace sentinel {

struct MilpProblem {
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  std::vector<double> obj, col_lo, col_hi;
  std::vector<bool> integer;
  std::vector<double> row_lo, row_hi;
  std::vector<std::vector<std::pair<int, double>>> rows;  // (column, coefficient)

  int add_col(double lo, double hi, double cost, bool is_integer) {
    obj.push_back(cost);
    col_lo.push_back(lo);
    col_hi.push_back(hi);
    integer.push_back(is_integer);
    return static_cast<int>(obj.size()) - 1;
  }
  int add_binary(double cost = 0) { return add_col(0, 1, cost, true); }
  int add_row(std::vector<std::pair<int, double>> terms, double lo, double hi) {
    rows.push_back(std::move(terms));
    row_lo.push_back(lo);
    row_hi.push_back(hi);
    return static_cast<int>(rows.size()) - 1;
  }
  size_t cols() const { return obj.size(); }
  size_t nonzeros() const;
};

enum class MilpStatus {
  kOptimal,      // proved optimal (within the solver's tolerances)
  kFeasible,     // stopped at the time limit with a solution; bound and gap say how good it is
  kNoSolution,   // stopped at the time limit before finding any solution
  kInfeasible,   // proved infeasible
  kError,        // the solver gave up (numerical trouble) or is not available
};

const char* milp_status_name(MilpStatus s);

struct MilpOptions {
  double time_limit_s = 10;
  // Values of the integer columns of a known feasible solution (same size as cols(), or empty).
  // Continuous columns are recomputed by the solver.
  std::vector<double> start;
};

struct MilpResult {
  MilpStatus status = MilpStatus::kError;
  double objective = 0;  // of the best solution found (kOptimal, kFeasible)
  double bound = 0;      // proven lower bound on the optimum (any status with a search)
  std::vector<double> values;
  double seconds = 0;    // wall time of the solve
  std::string solver;    // e.g. "cbc 2.10.8"
  std::string message;
};

// Solves with the solver this build links (CBC). Never throws.
MilpResult solve_milp(const MilpProblem& problem, const MilpOptions& options);

}  // namespace sentinel
