// Op records: cat, stack, split, split_with_sizes, chunk, index_select, gather, scatter_add, index_add, embedding,
// one_hot. References are plain loops in double over row-major index arithmetic written here.
#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;
using Idx = std::vector<int64_t>;

Tensor ids(const std::vector<double>& v, IntArrayRef shape) { return make(v, shape, kInt64); }

int64_t count(const Idx& s) {
  int64_t n = 1;
  for (int64_t v : s) n *= v;
  return n;
}
Idx unravel(int64_t lin, const Idx& s) {
  Idx i(s.size(), 0);
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    const auto k = static_cast<size_t>(d);
    i[k] = s[k] == 0 ? 0 : lin % s[k];
    lin = s[k] == 0 ? 0 : lin / s[k];
  }
  return i;
}
int64_t ravel(const Idx& i, const Idx& s) {
  int64_t lin = 0;
  for (size_t d = 0; d < s.size(); ++d) lin = lin * s[d] + i[d];
  return lin;
}
int64_t wrap(int64_t d, int64_t n) { return d < 0 ? d + n : d; }

// cat in double: output position p comes from the input whose range along `dim` holds p[dim].
Tensor ref_cat(const TensorList& in, int64_t dim) {
  std::vector<Idx> shapes;
  std::vector<std::vector<double>> vals;
  for (const auto& t : in) {
    if (t.dim() == 1 && t.size(0) == 0) continue;  // legacy: empty 1-D tensors are skipped
    shapes.push_back(t.sizes().vec());
    vals.push_back(values(t));
  }
  const int64_t d = wrap(dim, static_cast<int64_t>(shapes[0].size()));
  Idx out = shapes[0];
  out[static_cast<size_t>(d)] = 0;
  for (const auto& s : shapes) out[static_cast<size_t>(d)] += s[static_cast<size_t>(d)];
  std::vector<double> res;
  for (int64_t lin = 0; lin < count(out); ++lin) {
    Idx p = unravel(lin, out);
    size_t k = 0;
    while (p[static_cast<size_t>(d)] >= shapes[k][static_cast<size_t>(d)]) p[static_cast<size_t>(d)] -= shapes[k++][static_cast<size_t>(d)];
    res.push_back(vals[k][static_cast<size_t>(ravel(p, shapes[k]))]);
  }
  return make(res, out);
}

// x scaled along `dim` by (piece number + 1), pieces given by their sizes: the reference for
// cat(piece_i * (i + 1)) after split / chunk.
Tensor ref_scaled_pieces(const Tensor& x, int64_t dim, const Idx& piece_sizes) {
  const Idx s = x.sizes().vec();
  const int64_t d = wrap(dim, x.dim());
  const auto v = values(x);
  std::vector<double> res;
  for (int64_t lin = 0; lin < count(s); ++lin) {
    int64_t pos = unravel(lin, s)[static_cast<size_t>(d)], piece = 0;
    while (pos >= piece_sizes[static_cast<size_t>(piece)]) pos -= piece_sizes[static_cast<size_t>(piece++)];
    res.push_back(v[static_cast<size_t>(lin)] * static_cast<double>(piece + 1));
  }
  return make(res, s);
}
Tensor cat_scaled(const TensorList& pieces, int64_t dim) {
  TensorList scaled;
  for (size_t i = 0; i < pieces.size(); ++i) scaled.push_back(pieces[i] * static_cast<double>(i + 1));
  return cat(scaled, dim);
}

// index_select in double.
Tensor ref_index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const Idx s = x.sizes().vec();
  const int64_t d = wrap(dim, x.dim());
  const auto v = values(x), iv = values(index);
  Idx out = s;
  out[static_cast<size_t>(d)] = static_cast<int64_t>(iv.size());
  std::vector<double> res;
  for (int64_t lin = 0; lin < count(out); ++lin) {
    Idx p = unravel(lin, out);
    p[static_cast<size_t>(d)] = static_cast<int64_t>(iv[static_cast<size_t>(p[static_cast<size_t>(d)])]);
    res.push_back(v[static_cast<size_t>(ravel(p, s))]);
  }
  return make(res, out);
}

// gather in double: out[p] = x[p with p[dim] = index[p]].
Tensor ref_gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const Idx s = x.sizes().vec(), is = index.sizes().vec();
  const int64_t d = wrap(dim, x.dim());
  const auto v = values(x), iv = values(index);
  std::vector<double> res;
  for (int64_t lin = 0; lin < count(is); ++lin) {
    Idx p = unravel(lin, is);
    p[static_cast<size_t>(d)] = static_cast<int64_t>(iv[static_cast<size_t>(lin)]);
    res.push_back(v[static_cast<size_t>(ravel(p, s))]);
  }
  return make(res, is);
}

// scatter_add in double: out = x; out[p with p[dim] = index[p]] += src[p] for p over index.
Tensor ref_scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const Idx s = x.sizes().vec(), is = index.sizes().vec(), ss = src.sizes().vec();
  const int64_t d = wrap(dim, x.dim());
  auto out = values(x);
  const auto iv = values(index), sv = values(src);
  for (int64_t lin = 0; lin < count(is); ++lin) {
    Idx p = unravel(lin, is);
    const double add = sv[static_cast<size_t>(ravel(p, ss))];
    p[static_cast<size_t>(d)] = static_cast<int64_t>(iv[static_cast<size_t>(lin)]);
    out[static_cast<size_t>(ravel(p, s))] += add;
  }
  return make(out, s);
}

// index_add in double: out = x; out[p with p[dim] = index[p[dim]]] += alpha * source[p].
Tensor ref_index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  const Idx s = x.sizes().vec(), ss = source.sizes().vec();
  const int64_t d = wrap(dim, x.dim());
  auto out = values(x);
  const auto iv = values(index), sv = values(source);
  for (int64_t lin = 0; lin < count(ss); ++lin) {
    Idx p = unravel(lin, ss);
    p[static_cast<size_t>(d)] = static_cast<int64_t>(iv[static_cast<size_t>(p[static_cast<size_t>(d)])]);
    out[static_cast<size_t>(ravel(p, s))] += alpha * sv[static_cast<size_t>(lin)];
  }
  return make(out, s);
}

// embedding in double: out[p, :] = weight[ids[p], :].
Tensor ref_embedding(const Tensor& input, const Tensor& weight) {
  const auto iv = values(input), wv = values(weight);
  const int64_t dim = weight.size(1);
  std::vector<double> res;
  for (double id : iv)
    for (int64_t j = 0; j < dim; ++j) res.push_back(wv[static_cast<size_t>(static_cast<int64_t>(id) * dim + j)]);
  Idx out = input.sizes().vec();
  out.push_back(dim);
  return make(res, out);
}

Tensor ref_one_hot(const Tensor& input, int64_t c) {
  const auto iv = values(input);
  if (c < 0) {
    c = 0;
    for (double v : iv) c = std::max(c, static_cast<int64_t>(v) + 1);
  }
  std::vector<double> res;
  for (double v : iv)
    for (int64_t k = 0; k < c; ++k) res.push_back(static_cast<int64_t>(v) == k ? 1.0 : 0.0);
  Idx out = input.sizes().vec();
  out.push_back(c);
  return make(res, out, kInt64);
}

const std::vector<bool> kFloatThenIndex{true, false};           // (x, index)
const std::vector<bool> kXIndexSrc{true, false, true};          // (x, index, src)
const std::vector<bool> kIndexThenWeight{false, true};          // (ids, weight)

}  // namespace

GRAFT_OP_RECORDS(indexing) {
  std::vector<OpRecord> recs;

  // ---- cat ----
  recs.push_back({.name = "cat", .variant = "dim0_three_inputs",
                  .fn = [](const TensorList& a) { return cat(a, 0); },
                  .reference = [](const TensorList& a) { return ref_cat(a, 0); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 1), r({1, 3}, 2), r({3, 3}, 3)}}; },
                  .errors = {{[] { cat({}, 0); }, {"cat", "empty list"}},
                             {[] { cat({zeros({2, 3}), zeros({3, 3})}, 1); },
                              {"cat", "tensor 1", "[3, 3]", "[2, 3]", "dimension 1"}},
                             {[] { cat({zeros({2, 3}), zeros({2, 3, 1})}, 0); },
                              {"cat", "tensor 1", "[2, 3, 1]", "[2, 3]", "number of dimensions"}},
                             {[] { cat({zeros({2}), tensor(1.0)}, 0); }, {"cat", "zero-dimensional", "position 1"}},
                             {[] { cat({zeros({2, 3}), zeros({2, 3})}, 2); }, {"cat", "dim 2"}}}});
  recs.push_back({.name = "cat", .variant = "dim1_mixed_sizes",
                  .fn = [](const TensorList& a) { return cat(a, 1); },
                  .reference = [](const TensorList& a) { return ref_cat(a, 1); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 1}, 4), r({2, 3}, 5), r({2, 2}, 6)},
                                                   {r({2, 2}, 7), r({2, 2}, 8)}};
                  }});
  recs.push_back({.name = "cat", .variant = "last_dim_3d",
                  .fn = [](const TensorList& a) { return cat(a, -1); },
                  .reference = [](const TensorList& a) { return ref_cat(a, 2); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 2, 1}, 9), r({2, 2, 3}, 10), r({2, 2, 2}, 11)}}; }});
  recs.push_back({.name = "cat", .variant = "skips_empty_1d",
                  .fn = [](const TensorList& a) { return cat(a, 0); },
                  .reference = [](const TensorList& a) { return ref_cat(a, 0); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 12), zeros({0}, kFloat64), r({1, 3}, 13)}}; },
                  .non_contiguous = false});
  recs.push_back({.name = "cat", .variant = "promotes_int64",
                  .fn = [](const TensorList& a) { return cat(a, 0); },
                  .reference = [](const TensorList& a) { return ref_cat(a, 0); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 2}, 14), ids({1, -3, 4, 0}, {2, 2})}}; }});

  // ---- stack ----
  auto ref_stack = [](const TensorList& a, int64_t dim) {
    TensorList u;
    for (const auto& t : a) {
      Idx s = t.sizes().vec();
      s.insert(s.begin() + wrap(dim, t.dim() + 1), 1);
      u.push_back(make(values(t), s));
    }
    return ref_cat(u, wrap(dim, a[0].dim() + 1));
  };
  recs.push_back({.name = "stack", .variant = "dim0",
                  .fn = [](const TensorList& a) { return stack(a, 0); },
                  .reference = [ref_stack](const TensorList& a) { return ref_stack(a, 0); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 3}, 15), r({2, 3}, 16), r({2, 3}, 17)}}; },
                  .errors = {{[] { stack({zeros({2, 3}), zeros({2, 3}), zeros({3, 2})}, 0); },
                              {"stack", "tensor 2", "[3, 2]", "[2, 3]"}},
                             {[] { stack({}, 0); }, {"stack", "empty list"}},
                             {[] { stack({zeros({2}), zeros({2})}, 2); }, {"stack", "dim 2"}}}});
  recs.push_back({.name = "stack", .variant = "last_dim",
                  .fn = [](const TensorList& a) { return stack(a, -1); },
                  .reference = [ref_stack](const TensorList& a) { return ref_stack(a, -1); },
                  .samples = [] { return std::vector<TensorList>{{r({3}, 18), r({3}, 19)}, {r({2, 2}, 20), r({2, 2}, 21)}}; }});

  // ---- split / chunk: cat(piece_i * (i + 1)) so every piece's gradient is distinct ----
  recs.push_back({.name = "split", .variant = "dim0_uneven",
                  .fn = [](const TensorList& a) { return cat_scaled(a[0].split(2, 0), 0); },
                  .reference = [](const TensorList& a) { return ref_scaled_pieces(a[0], 0, {2, 2, 1}); },
                  .samples = [] { return std::vector<TensorList>{{r({5, 3}, 22)}}; },
                  .errors = {{[] { zeros({4}).split(-1, 0); }, {"split", "-1"}},
                             {[] { zeros({2, 5}).split(2, 2); }, {"split", "dim 2"}}}});
  recs.push_back({.name = "split_with_sizes", .variant = "dim1",
                  .fn = [](const TensorList& a) { return cat_scaled(split_with_sizes(a[0], {1, 3, 1}, 1), 1); },
                  .reference = [](const TensorList& a) { return ref_scaled_pieces(a[0], 1, {1, 3, 1}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 5}, 23)}}; },
                  .errors = {{[] { split_with_sizes(zeros({2, 5}), {1, 3}, 1); }, {"split_with_sizes", "5", "[1, 3]", "4"}}}});
  recs.push_back({.name = "split_with_sizes", .variant = "dim0",
                  .fn = [](const TensorList& a) { return cat_scaled(split_with_sizes(a[0], {3, 1}), 0); },
                  .reference = [](const TensorList& a) { return ref_scaled_pieces(a[0], 0, {3, 1}); },
                  .samples = [] { return std::vector<TensorList>{{r({4, 3}, 29)}}; }});
  recs.push_back({.name = "chunk", .variant = "dim1",
                  .fn = [](const TensorList& a) { return cat_scaled(a[0].chunk(3, 1), 1); },
                  .reference = [](const TensorList& a) { return ref_scaled_pieces(a[0], 1, {3, 3, 1}); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 7}, 24)}}; },
                  .errors = {{[] { zeros({4}).chunk(0, 0); }, {"chunk", "positive", "0"}},
                             {[] { chunk(zeros({4}), 2, 1); }, {"chunk", "dim 1"}}}});
  recs.push_back({.name = "chunk", .variant = "dim0_even",
                  .fn = [](const TensorList& a) { return cat_scaled(chunk(a[0], 2, 0), 0); },
                  .reference = [](const TensorList& a) { return ref_scaled_pieces(a[0], 0, {2, 2}); },
                  .samples = [] { return std::vector<TensorList>{{r({4, 2}, 25)}}; }});

  // ---- index_select ----
  recs.push_back({.name = "index_select", .variant = "dim0_repeated",
                  .fn = [](const TensorList& a) { return index_select(a[0], 0, a[1]); },
                  .reference = [](const TensorList& a) { return ref_index_select(a[0], 0, a[1]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({4, 3}, 26), ids({2, 0, 2, 3, 2}, {5})},
                                                   {r({4}, 27), ids({1, 1}, {2})}};
                  },
                  .differentiable = kFloatThenIndex,
                  .errors = {{[] { index_select(zeros({4, 3}), 0, ids({1, 4}, {2})); },
                              {"index_select", "index 4", "size 4", "out of range"}},
                             {[] { index_select(zeros({4, 3}), 1, ids({-1}, {1})); }, {"index_select", "index -1", "size 3"}},
                             {[] { index_select(zeros({4, 3}), 0, zeros({2})); }, {"index_select", "int64", "float32"}},
                             {[] { index_select(zeros({4, 3}), 0, ids({0, 1}, {1, 2})); }, {"index_select", "[1, 2]"}}}});
  recs.push_back({.name = "index_select", .variant = "dim1",
                  .fn = [](const TensorList& a) { return a[0].index_select(-1, a[1]); },
                  .reference = [](const TensorList& a) { return ref_index_select(a[0], 2, a[1]); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 2, 3}, 28), ids({2, 1, 2, 0}, {4})}}; },
                  .differentiable = kFloatThenIndex});
  recs.push_back({.name = "index_select", .variant = "scalar_index",
                  .fn = [](const TensorList& a) { return index_select(a[0], 1, a[1]); },
                  .reference = [](const TensorList& a) { return ref_index_select(a[0], 1, a[1]); },
                  .samples = [] { return std::vector<TensorList>{{r({3, 4}, 29), make({2}, {}, kInt64)}}; },
                  .differentiable = kFloatThenIndex});

  // ---- gather ----
  recs.push_back({.name = "gather", .variant = "dim1",
                  .fn = [](const TensorList& a) { return gather(a[0], 1, a[1]); },
                  .reference = [](const TensorList& a) { return ref_gather(a[0], 1, a[1]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({3, 4}, 30), ids({3, 0, 1, 1, 2, 3}, {3, 2})},
                                                   {r({3, 4}, 31), ids({0, 3, 3, 1, 2, 2, 0, 1}, {2, 4})}};
                  },
                  .differentiable = kFloatThenIndex,
                  .errors = {{[] { gather(zeros({3, 4}), 1, ids({0, 4}, {1, 2})); }, {"gather", "index 4", "size 4"}},
                             {[] { gather(zeros({3, 4}), 1, ids({0, 1}, {2})); }, {"gather", "[2]", "[3, 4]", "dims"}},
                             {[] { gather(zeros({3, 4}), 1, ids({0, 0, 0, 0}, {4, 1})); }, {"gather", "[4, 1]", "[3, 4]"}},
                             {[] { gather(zeros({3, 4}), 0, zeros({3, 4})); }, {"gather", "int64"}}}});
  recs.push_back({.name = "gather", .variant = "dim0_3d",
                  .fn = [](const TensorList& a) { return a[0].gather(0, a[1]); },
                  .reference = [](const TensorList& a) { return ref_gather(a[0], 0, a[1]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({2, 3, 2}, 32), ids({1, 0, 0, 1, 1, 1, 0, 0}, {2, 2, 2})}};
                  },
                  .differentiable = kFloatThenIndex});

  // ---- scatter_add (duplicate indices accumulate) ----
  recs.push_back({.name = "scatter_add", .variant = "dim1_duplicates",
                  .fn = [](const TensorList& a) { return scatter_add(a[0], 1, a[1], a[2]); },
                  .reference = [](const TensorList& a) { return ref_scatter_add(a[0], 1, a[1], a[2]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({3, 4}, 33), ids({1, 1, 0, 3, 2, 2}, {3, 2}), r({3, 2}, 34)},
                                                   // src larger than index: its extra entries get no gradient
                                                   {r({3, 4}, 35), ids({3, 3, 0, 0, 1, 2}, {3, 2}), r({3, 3}, 36)}};
                  },
                  .differentiable = kXIndexSrc,
                  .errors = {{[] { scatter_add(zeros({3, 4}), 1, ids({0, 5}, {1, 2}), zeros({1, 2})); },
                              {"scatter_add", "index 5", "size 4"}},
                             {[] { scatter_add(zeros({3, 4}), 1, ids({0, 1, 2}, {1, 3}), zeros({1, 2})); },
                              {"scatter_add", "[1, 2]", "[1, 3]", "src"}},
                             {[] { scatter_add(zeros({3, 4}), 0, ids({0, 1}, {2}), zeros({2})); }, {"scatter_add", "[2]", "[3, 4]"}}}});
  recs.push_back({.name = "scatter_add", .variant = "dim0",
                  .fn = [](const TensorList& a) { return a[0].scatter_add(0, a[1], a[2]); },
                  .reference = [](const TensorList& a) { return ref_scatter_add(a[0], 0, a[1], a[2]); },
                  .samples = [] {
                    return std::vector<TensorList>{{r({3, 2}, 37), ids({2, 0, 2, 2, 1, 0, 0, 0}, {4, 2}), r({4, 2}, 38)}};
                  },
                  .differentiable = kXIndexSrc});

  // ---- index_add ----
  recs.push_back({.name = "index_add", .variant = "dim0_alpha_duplicates",
                  .fn = [](const TensorList& a) { return index_add(a[0], 0, a[1], a[2], 2.0); },
                  .reference = [](const TensorList& a) { return ref_index_add(a[0], 0, a[1], a[2], 2.0); },
                  .samples = [] { return std::vector<TensorList>{{r({4, 3}, 39), ids({3, 0, 3}, {3}), r({3, 3}, 40)}}; },
                  .differentiable = kXIndexSrc,
                  .errors = {{[] { index_add(zeros({4, 3}), 0, ids({0, 4}, {2}), zeros({2, 3})); },
                              {"index_add", "index 4", "size 4"}},
                             {[] { index_add(zeros({4, 3}), 0, ids({0, 1}, {2}), zeros({3, 3})); },
                              {"index_add", "[3, 3]", "2"}},
                             {[] { index_add(zeros({4, 3}), 0, ids({0, 1}, {2}), zeros({2, 2})); },
                              {"index_add", "[2, 2]", "[4, 3]"}}}});
  recs.push_back({.name = "index_add", .variant = "dim1",
                  .fn = [](const TensorList& a) { return a[0].index_add(1, a[1], a[2]); },
                  .reference = [](const TensorList& a) { return ref_index_add(a[0], 1, a[1], a[2], 1.0); },
                  .samples = [] { return std::vector<TensorList>{{r({2, 4}, 41), ids({1, 1, 2}, {3}), r({2, 3}, 42)}}; },
                  .differentiable = kXIndexSrc});

  // ---- embedding ----
  recs.push_back({.name = "embedding",
                  .fn = [](const TensorList& a) { return F::embedding(a[0], a[1]); },
                  .reference = [](const TensorList& a) { return ref_embedding(a[0], a[1]); },
                  .samples = [] {
                    return std::vector<TensorList>{{ids({1, 4, 0, 1, 1, 3}, {2, 3}), r({5, 4}, 43)},
                                                   {make({2}, {}, kInt64), r({3, 2}, 44)}};
                  },
                  .differentiable = kIndexThenWeight,
                  .errors = {{[] { F::embedding(ids({0, 5}, {2}), zeros({5, 3})); }, {"embedding", "index 5", "size 5"}},
                             {[] { F::embedding(ids({-1}, {1}), zeros({5, 3})); }, {"embedding", "index -1"}},
                             {[] { F::embedding(zeros({2}), zeros({5, 3})); }, {"embedding", "int64", "float32"}},
                             {[] { F::embedding(ids({0}, {1}), zeros({5})); }, {"embedding", "2-D", "[5]"}},
                             {[] { F::embedding(ids({0}, {1}), zeros({5, 3}), F::EmbeddingFuncOptions().padding_idx(5)); },
                              {"embedding", "padding_idx 5"}}}});
  // padding_idx's row gets no gradient, which finite differences do not see: forward only here
  // (EmbeddingPadding.* below checks the gradient by hand).
  recs.push_back({.name = "embedding", .variant = "padding_idx",
                  .fn = [](const TensorList& a) { return F::embedding(a[0], a[1], F::EmbeddingFuncOptions().padding_idx(-2)); },
                  .reference = [](const TensorList& a) { return ref_embedding(a[0], a[1]); },
                  .samples = [] { return std::vector<TensorList>{{ids({1, 3, 0, 3}, {4}), r({5, 2}, 45)}}; },
                  .differentiable = kIndexThenWeight,
                  .gradcheck = false});

  // ---- one_hot ----
  recs.push_back({.name = "one_hot",
                  .fn = [](const TensorList& a) { return F::one_hot(a[0], 5); },
                  .reference = [](const TensorList& a) { return ref_one_hot(a[0], 5); },
                  .samples = [] { return std::vector<TensorList>{{ids({0, 4, 2, 2, 1, 0}, {2, 3})}, {make({3}, {}, kInt64)}}; },
                  .gradcheck = false,
                  .errors = {{[] { F::one_hot(ids({0, -1}, {2}), 3); }, {"one_hot", "-1", "non-negative"}},
                             {[] { F::one_hot(ids({0, 3}, {2}), 3); }, {"one_hot", "class value 3", "num_classes (3)"}},
                             {[] { F::one_hot(zeros({2}), 3); }, {"one_hot", "int64", "float32"}},
                             {[] { F::one_hot(ids({}, {0})); }, {"one_hot", "empty", "num_classes"}}}});
  recs.push_back({.name = "one_hot", .variant = "inferred_classes",
                  .fn = [](const TensorList& a) { return F::one_hot(a[0]); },
                  .reference = [](const TensorList& a) { return ref_one_hot(a[0], -1); },
                  .samples = [] { return std::vector<TensorList>{{ids({3, 1, 0}, {3})}}; },
                  .gradcheck = false});
  return recs;
}

// padding_idx: the looked-up padding row gets no gradient; the other rows get the sum of the output
// gradients of their occurrences (computed by hand).
TEST(EmbeddingPadding, PaddingRowGetsNoGradient) {
  Tensor w = make({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2}).requires_grad_();
  Tensor in = ids({1, 3, 0, 3, 1}, {5});
  Tensor y = F::embedding(in, w, F::EmbeddingFuncOptions().padding_idx(3));
  EXPECT_EQ(y.grad_fn()->name(), "EmbeddingBackward0");
  EXPECT_TRUE(all_close(y, {2, 3, 6, 7, 0, 1, 6, 7, 2, 3}, {5, 2}));
  // d sum(y * c)/d w[row] = sum of c over the positions looking up row, c[i, j] = 10 i + j
  Tensor c = make({0, 1, 10, 11, 20, 21, 30, 31, 40, 41}, {5, 2});
  (y * c).sum().backward();
  EXPECT_TRUE(all_close(w.grad(), {20, 21, 0 + 40, 1 + 41, 0, 0, 0, 0, 0, 0}, {5, 2}));
  // Without padding_idx row 3 gets 10 + 30 (and 11 + 31).
  Tensor w2 = w.detach().clone().requires_grad_();
  (F::embedding(in, w2) * c).sum().backward();
  EXPECT_TRUE(all_close(w2.grad(), {20, 21, 40, 42, 0, 0, 40, 42, 0, 0}, {5, 2}));
}

TEST(EmbeddingPadding, DoubleBackwardThroughPadding) {
  Tensor w = make({1, 2, 3, 4, 5, 6}, {3, 2}).requires_grad_();
  Tensor in = ids({0, 2, 2}, {3});
  Tensor y = F::embedding(in, w, F::EmbeddingFuncOptions().padding_idx(0));
  // L = sum(y^2): dL/dw[r] = sum over lookups of 2 w[r] except the padding row; d2 on the diag.
  auto g = autograd::grad({(y * y).sum()}, {w}, {}, true, true);
  EXPECT_TRUE(all_close(g[0], {0, 0, 0, 0, 20, 24}, {3, 2}));
  auto gg = autograd::grad({g[0].sum()}, {w});
  EXPECT_TRUE(all_close(gg[0], {0, 0, 0, 0, 4, 4}, {3, 2}));
}

TEST(CatGrad, NamesAndSkippedEmpty) {
  Tensor a = make({1, 2}, {2}).requires_grad_();
  Tensor e = make({}, {0}).requires_grad_();
  Tensor y = cat({e, a, e, a}, 0);
  EXPECT_EQ(y.grad_fn()->name(), "CatBackward0");
  EXPECT_TRUE(all_close(y, {1, 2, 1, 2}, {4}));
  (y * make({1, 10, 100, 1000}, {4})).sum().backward();
  EXPECT_TRUE(all_close(a.grad(), {101, 1010}, {2}));
  EXPECT_EQ(cat({e, e}, 0).numel(), 0);
}

TEST(IndexGradFnNames, MatchPyTorch) {
  Tensor x = make({1, 2, 3, 4}, {2, 2}).requires_grad_();
  Tensor i = ids({1, 0}, {2});
  EXPECT_EQ(index_select(x, 0, i).grad_fn()->name(), "IndexSelectBackward0");
  EXPECT_EQ(gather(x, 1, ids({1, 0, 0, 0}, {2, 2})).grad_fn()->name(), "GatherBackward0");
  EXPECT_EQ(scatter_add(x, 1, ids({1, 0, 0, 0}, {2, 2}), x).grad_fn()->name(), "ScatterAddBackward0");
  EXPECT_EQ(index_add(x, 0, i, x).grad_fn()->name(), "IndexAddBackward0");
}

}  // namespace graft::test
