#include "evolve/search/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace ks {

namespace {

void check(int rc, const char *what) {
  if (rc != 0) throw std::runtime_error(std::string("the cost model failed ") + what + ": " + XGBGetLastError());
}

// A dense matrix of the rows, freed with its scope.
class Matrix {
 public:
  explicit Matrix(const std::vector<std::vector<float>> &rows) {
    const size_t cols = rows.empty() ? 0 : rows[0].size();
    std::vector<float> data;
    data.reserve(rows.size() * cols);
    for (const std::vector<float> &r : rows) {
      if (r.size() != cols) throw std::runtime_error("the cost model's rows differ in length");
      data.insert(data.end(), r.begin(), r.end());
    }
    check(XGDMatrixCreateFromMat(data.data(), rows.size(), cols, NAN, &handle), "making a matrix");
  }
  ~Matrix() { XGDMatrixFree(handle); }
  Matrix(const Matrix &) = delete;
  Matrix &operator=(const Matrix &) = delete;
  DMatrixHandle handle = nullptr;
};

// Boosting rounds: the runs train on tens to a few thousand rows; more rounds only
// memorise them.
constexpr int kRounds = 60;

}  // namespace

CostModel::CostModel(std::string objective) : objective_(std::move(objective)) {}

CostModel::~CostModel() {
  if (booster_) XGBoosterFree(booster_);
}

void CostModel::train(const std::vector<std::vector<float>> &features, const std::vector<float> &labels,
                      const std::vector<unsigned> &groups, const std::vector<float> &group_weights) {
  if (features.empty() || features.size() != labels.size())
    throw std::runtime_error("the cost model needs one label per row, and a row at least");
  std::vector<unsigned> sizes = groups.empty() ? std::vector<unsigned>{static_cast<unsigned>(features.size())} : groups;
  if (std::accumulate(sizes.begin(), sizes.end(), size_t{0}) != features.size())
    throw std::runtime_error("the cost model's groups do not add up to its rows");
  if (!group_weights.empty() && group_weights.size() != sizes.size())
    throw std::runtime_error("the cost model's group weights are not one a group");
  Matrix m(features);
  check(XGDMatrixSetFloatInfo(m.handle, "label", labels.data(), labels.size()), "setting the labels");
  check(XGDMatrixSetUIntInfo(m.handle, "group", sizes.data(), sizes.size()), "setting the groups");
  if (!group_weights.empty())  // a ranking objective reads one weight a group
    check(XGDMatrixSetFloatInfo(m.handle, "weight", group_weights.data(), group_weights.size()),
          "setting the group weights");
  BoosterHandle booster = nullptr;
  check(XGBoosterCreate(&m.handle, 1, &booster), "creating a booster");
  try {
    // Shallow trees and shrinkage: few rows, noisy labels.
    const std::pair<const char *, const char *> params[] = {{"objective", objective_.c_str()},
                                                            {"max_depth", "5"},
                                                            {"eta", "0.2"},
                                                            {"min_child_weight", "1"},
                                                            {"subsample", "1"},
                                                            {"nthread", "1"},
                                                            {"seed", "0"},
                                                            {"verbosity", "0"},
                                                            {"tree_method", "exact"}};
    for (const auto &[name, value] : params) check(XGBoosterSetParam(booster, name, value), "setting a parameter");
    for (int i = 0; i < kRounds; ++i) check(XGBoosterUpdateOneIter(booster, i, m.handle), "training");
  } catch (...) {
    XGBoosterFree(booster);
    throw;
  }
  if (booster_) XGBoosterFree(booster_);
  booster_ = booster;
}

std::vector<float> CostModel::predict(const std::vector<std::vector<float>> &features) const {
  if (!booster_) throw std::runtime_error("the cost model predicts before it is trained");
  if (features.empty()) return {};
  Matrix m(features);
  bst_ulong n = 0;
  const float *out = nullptr;
  check(XGBoosterPredict(booster_, m.handle, 0, 0, 0, &n, &out), "predicting");
  return std::vector<float>(out, out + n);
}

namespace {
std::vector<double> ranks(const std::vector<double> &v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i) + static_cast<double>(j)) / 2;
    i = j + 1;
  }
  return r;
}
}  // namespace

double rank_correlation(const std::vector<double> &a, const std::vector<double> &b) {
  if (a.size() != b.size() || a.size() < 3) return 0;
  std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : 0;
}

}  // namespace ks
