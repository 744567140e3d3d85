// solve_milp (milp.h) with COIN-OR CBC through its C interface (Debian coinor-libcbc-dev).
#include <chrono>
#include <cmath>
#include <limits>

#include <coin/Cbc_C_Interface.h>

#include "plan/milp.h"

namespace sentinel {

size_t MilpProblem::nonzeros() const {
  size_t n = 0;
  for (const auto& r : rows) n += r.size();
  return n;
}

const char* milp_status_name(MilpStatus s) {
  switch (s) {
    case MilpStatus::kOptimal: return "optimal";
    case MilpStatus::kFeasible: return "best-found";
    case MilpStatus::kNoSolution: return "no-solution";
    case MilpStatus::kInfeasible: return "infeasible";
    case MilpStatus::kError: return "error";
  }
  return "?";
}

MilpResult solve_milp(const MilpProblem& p, const MilpOptions& options) {
  MilpResult res;
  res.solver = std::string("cbc ") + Cbc_getVersion();
  const int n = static_cast<int>(p.cols()), m = static_cast<int>(p.rows.size());
  // Column-major copy of the rows.
  std::vector<CoinBigIndex> start(n + 1, 0);
  for (const auto& row : p.rows)
    for (const auto& [c, v] : row) ++start[c + 1];
  for (int j = 0; j < n; ++j) start[j + 1] += start[j];
  std::vector<int> index(start[n]);
  std::vector<double> value(start[n]);
  std::vector<CoinBigIndex> fill(start.begin(), start.end() - 1);
  for (int r = 0; r < m; ++r)
    for (const auto& [c, v] : p.rows[r]) {
      index[fill[c]] = r;
      value[fill[c]++] = v;
    }
  auto finite = [](std::vector<double> v) {
    for (double& x : v) {
      if (x == MilpProblem::kInf) x = std::numeric_limits<double>::max();
      if (x == -MilpProblem::kInf) x = -std::numeric_limits<double>::max();
    }
    return v;
  };
  const std::vector<double> clo = finite(p.col_lo), chi = finite(p.col_hi), rlo = finite(p.row_lo),
                            rhi = finite(p.row_hi);
  Cbc_Model* model = Cbc_newModel();
  Cbc_loadProblem(model, n, m, start.data(), index.data(), value.data(), clo.data(), chi.data(), p.obj.data(),
                  rlo.data(), rhi.data());
  for (int j = 0; j < n; ++j)
    if (p.integer[j]) Cbc_setInteger(model, j);
  Cbc_setLogLevel(model, 0);
  Cbc_setMaximumSeconds(model, std::max(0.01, options.time_limit_s));
  Cbc_setParameter(model, "timeMode", "elapsed");  // the limit is wall time, not CPU time
  // CBC 2.10's preprocessing (CglPreProcess) crashes in postProcess on some of these programmes when
  // the time limit ends the search, and has declared feasible ones infeasible: leave it off.
  Cbc_setParameter(model, "preprocess", "off");
  Cbc_setAllowableGap(model, 0);
  Cbc_setAllowableFractionGap(model, 0);
  Cbc_setAllowablePercentageGap(model, 0);
  if (options.start.size() == p.cols()) {
    std::vector<int> idx;
    std::vector<double> val;
    for (int j = 0; j < n; ++j)
      if (p.integer[j]) {
        idx.push_back(j);
        val.push_back(options.start[j]);
      }
    Cbc_setMIPStartI(model, static_cast<int>(idx.size()), idx.data(), val.data());
  }
  const auto t0 = std::chrono::steady_clock::now();
  Cbc_solve(model);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double* best = Cbc_bestSolution(model);
  if (Cbc_isProvenInfeasible(model)) {
    res.status = MilpStatus::kInfeasible;
  } else if (Cbc_isAbandoned(model) || Cbc_status(model) == 2) {
    res.status = MilpStatus::kError;
    res.message = "CBC abandoned the search (numerical difficulties)";
  } else if (best == nullptr) {
    res.status = MilpStatus::kNoSolution;
  } else {
    res.status = Cbc_isProvenOptimal(model) ? MilpStatus::kOptimal : MilpStatus::kFeasible;
    res.objective = Cbc_getObjValue(model);
    res.values.assign(best, best + n);
  }
  res.bound = Cbc_getBestPossibleObjValue(model);
  if (res.status == MilpStatus::kOptimal) res.bound = std::min(res.bound, res.objective);
  Cbc_deleteModel(model);
  return res;
}

}  // namespace sentinel
