// Op records: bilinear and embedding_bag (issue 32). References are plain loops in double written
// here from PyTorch's documented formulas (y_o = sum_ij x1_i A_oij x2_j + b_o; a bag's sum, mean or
// per-feature maximum of its rows, padding left out, empty bags 0); PyTorch's own values and
// gradients are checked in tests/nn/test_bilinear_bag.cpp.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

Tensor bag_idx(const std::vector<double>& v) { return make(v, {static_cast<int64_t>(v.size())}, kInt64); }

Tensor bilinear_ref(const TensorList& a) {
  const std::vector<double> x1 = values(a[0]), x2 = values(a[1]), w = values(a[2]);
  const bool has_bias = a.size() > 3 && a[3].defined();
  const std::vector<double> b = has_bias ? values(a[3]) : std::vector<double>();
  const int64_t out = a[2].size(0), in1 = a[2].size(1), in2 = a[2].size(2);
  const int64_t n = a[0].numel() / std::max<int64_t>(in1, 1);
  std::vector<double> y;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = has_bias ? b[static_cast<size_t>(o)] : 0.0;
      for (int64_t i = 0; i < in1; ++i)
        for (int64_t j = 0; j < in2; ++j)
          s += x1[static_cast<size_t>(r * in1 + i)] * w[static_cast<size_t>((o * in1 + i) * in2 + j)] *
               x2[static_cast<size_t>(r * in2 + j)];
      y.push_back(s);
    }
  std::vector<int64_t> shape(a[0].sizes().begin(), a[0].sizes().end());
  shape.back() = out;
  return make(y, shape);
}

// a = {weight, indices (1-D), offsets, per_sample_weights or undefined}.
Tensor bag_ref(const TensorList& a, int mode, bool include_last_offset, std::optional<int64_t> pad) {
  const std::vector<double> w = values(a[0]), ids = values(a[1]), offs = values(a[2]);
  const std::vector<double> psw = a[3].defined() ? values(a[3]) : std::vector<double>();
  const int64_t dim = a[0].size(1), n = static_cast<int64_t>(ids.size());
  const int64_t bags = static_cast<int64_t>(offs.size()) - (include_last_offset ? 1 : 0);
  std::vector<double> y;
  for (int64_t b = 0; b < bags; ++b) {
    const auto lo = static_cast<int64_t>(offs[static_cast<size_t>(b)]);
    const int64_t hi =
        b + 1 < static_cast<int64_t>(offs.size()) ? static_cast<int64_t>(offs[static_cast<size_t>(b) + 1]) : n;
    for (int64_t d = 0; d < dim; ++d) {
      double acc = mode == 2 ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t count = 0;
      for (int64_t k = lo; k < hi; ++k) {
        const auto id = static_cast<int64_t>(ids[static_cast<size_t>(k)]);
        if (pad && id == *pad) continue;
        const double v = w[static_cast<size_t>(id * dim + d)] * (psw.empty() ? 1.0 : psw[static_cast<size_t>(k)]);
        acc = mode == 2 ? std::max(acc, v) : acc + v;
        ++count;
      }
      if (count == 0) acc = 0;
      if (mode == 1 && count > 0) acc /= static_cast<double>(count);
      y.push_back(acc);
    }
  }
  return make(y, {bags, dim});
}

const char* bag_mode_name(int mode) { return mode == 0 ? "sum" : mode == 1 ? "mean" : "max"; }

}  // namespace

GRAFT_OP_RECORDS(bilinear_bag) {
  std::vector<OpRecord> recs;
  recs.push_back({.name = "bilinear",
                  .fn = [](const TensorList& a) { return bilinear(a[0], a[1], a[2], a.size() > 3 ? a[3] : Tensor()); },
                  .reference = bilinear_ref,
                  .samples =
                      [] {
                        return std::vector<TensorList>{{r({3, 4}, 401), r({3, 5}, 402), r({2, 4, 5}, 403), r({2}, 404)},
                                                       {r({2, 3, 4}, 405), r({2, 3, 2}, 406), r({3, 4, 2}, 407)},
                                                       {r({4}, 408), r({4}, 409), r({2, 4, 4}, 410), r({2}, 411)}};
                      },
                  .errors = {{[] {
                                bilinear(zeros({2, 3}), zeros({3, 4}), zeros({5, 3, 4}));
                              },
                              {"bilinear", "[2, 3]", "[3, 4]", "batch dimensions"}},
                             {[] {
                                bilinear(zeros({2, 3}), zeros({2, 4}), zeros({5, 3, 3}));
                              },
                              {"bilinear", "input2", "weight.size(2) = 3"}},
                             {[] {
                                bilinear(zeros({2, 3}), zeros({2, 4}), zeros({5, 3, 4}), zeros({4}));
                              },
                              {"bilinear", "bias of shape [5]", "[4]"}},
                             {[] {
                                bilinear(zeros({2}), bag_idx({1, 2}), zeros({1, 2, 2}, kInt64));
                              },
                              {"bilinear", "floating-point", "int64"}}}});

  // Bags [0, 3), [3, 3) (empty), [3, 7), [7, 9): repeated rows, row 2 twice in a bag.
  for (int mode : {0, 1, 2})
    for (bool padded : {false, true}) {
      const std::optional<int64_t> pad = padded ? std::optional<int64_t>(2) : std::nullopt;
      recs.push_back({.name = "embedding_bag",
                      .variant = std::string(bag_mode_name(mode)) + (padded ? "_padding" : ""),
                      .fn =
                          [mode, pad](const TensorList& a) {
                            return embedding_bag(a[0], a[1], a[2], false, mode, false, a[3], false, pad);
                          },
                      .reference = [mode, pad](const TensorList& a) { return bag_ref(a, mode, false, pad); },
                      .samples =
                          [] {
                            return std::vector<TensorList>{{r({6, 3}, 412), bag_idx({1, 2, 2, 0, 5, 3, 2, 4, 1}),
                                                            bag_idx({0, 3, 3, 7}), Tensor()}};
                          },
                      .differentiable = {true, false, false, false},
                      .errors = {{[] {
                                    embedding_bag(zeros({4, 2}), bag_idx({0, 1}), bag_idx({1}));
                                  },
                                  {"embedding_bag", "offsets[0] == 0", "offsets[0] = 1"}},
                                 {[] {
                                    embedding_bag(zeros({4, 2}), bag_idx({0, 1, 2}), bag_idx({0, 2, 1}));
                                  },
                                  {"embedding_bag", "non-decreasing", "offsets[2] = 1"}},
                                 {[] {
                                    embedding_bag(zeros({4, 2}), bag_idx({0, 1}), bag_idx({0, 3}));
                                  },
                                  {"embedding_bag", "offsets[-1] = 3", "length 2"}},
                                 {[] {
                                    embedding_bag(zeros({4, 2}), bag_idx({0, 4}), bag_idx({0}));
                                  },
                                  {"embedding_bag", "index 4", "[0, 4)"}},
                                 {[] {
                                    embedding_bag(zeros({4, 2}), make({0, 1}, {2}), bag_idx({0}));
                                  },
                                  {"embedding_bag", "int64 or int32", "float64"}}}});
    }
  // per_sample_weights (sum only), include_last_offset (the last offset is the input's length).
  recs.push_back(
      {.name = "embedding_bag",
       .variant = "sum_per_sample_weights_last_offset",
       .fn = [](const TensorList& a) { return embedding_bag(a[0], a[1], a[2], false, 0, false, a[3], true, 5); },
       .reference = [](const TensorList& a) { return bag_ref(a, 0, true, 5); },
       .samples =
           [] {
             return std::vector<TensorList>{
                 {r({6, 3}, 413), bag_idx({1, 5, 2, 0, 5, 3, 2, 4, 1}), bag_idx({0, 3, 3, 7, 9}), r({9}, 414)}};
           },
       .differentiable = {true, false, false, true},
       .errors = {{[] {
                     embedding_bag(zeros({4, 2}), bag_idx({0, 1}), bag_idx({0}), false, 1, false, zeros({2}));
                   },
                   {"embedding_bag", "mode sum only", "mean"}},
                  {[] {
                     embedding_bag(zeros({4, 2}), bag_idx({0, 1}), bag_idx({0}), false, 0, false, zeros({3}));
                   },
                   {"embedding_bag", "input's shape [2]", "[3]"}},
                  {[] {
                     embedding_bag(zeros({4, 2}), bag_idx({0, 1}), bag_idx({0}), false, 0, true);
                   },
                   {"embedding_bag", "sparse", "no sparse tensors"}},
                  {[] {
                     embedding_bag(zeros({4, 2}), zeros({2, 2}, kInt64), bag_idx({0}));
                   },
                   {"embedding_bag", "no offsets with a 2-D input"}}}});
  return recs;
}

}  // namespace graft::test
