// Op records: unfold and fold (F::unfold / F::fold, issue 32), batched and unbatched, with dilation,
// padding and stride. References are plain loops in double written here from PyTorch's documented
// definition (block l's tap (i, j) of channel c reads input[c, oh sH - pH + i dH, ow sW - pW + j dW],
// 0 outside; fold adds each entry back there); PyTorch's own values are checked in
// tests/nn/test_fold.cpp.
#include <string>
#include <vector>

#include "../support/op_table.h"
#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = nn::functional;

struct FoldRefGeo {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

int64_t fold_ref_blocks(int64_t size, int64_t k, int64_t d, int64_t p, int64_t s) {
  return (size + 2 * p - d * (k - 1) - 1) / s + 1;  // positive in every sample below
}

// Calls f(col_index, image_index) for every column entry that reads a pixel (not the padding) of
// an (N, C, H, W) image; entries are numbered in (n, c, i, j, oh, ow) order, pixels row-major.
template <class Fn>
void fold_ref_walk(int64_t N, int64_t C, int64_t H, int64_t W, const FoldRefGeo& g, Fn&& f) {
  const int64_t oH = fold_ref_blocks(H, g.kh, g.dh, g.ph, g.sh), oW = fold_ref_blocks(W, g.kw, g.dw, g.pw, g.sw);
  int64_t col = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j)
          for (int64_t oh = 0; oh < oH; ++oh)
            for (int64_t ow = 0; ow < oW; ++ow, ++col) {
              const int64_t ih = oh * g.sh - g.ph + i * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
              if (ih >= 0 && ih < H && iw >= 0 && iw < W) f(col, ((n * C + c) * H + ih) * W + iw);
            }
}

Tensor unfold_ref(const Tensor& x, const FoldRefGeo& g) {
  const bool batched = x.dim() == 4;
  const int64_t N = batched ? x.size(0) : 1, C = x.size(-3), H = x.size(-2), W = x.size(-1);
  const int64_t L = fold_ref_blocks(H, g.kh, g.dh, g.ph, g.sh) * fold_ref_blocks(W, g.kw, g.dw, g.pw, g.sw);
  const std::vector<double> v = values(x);
  std::vector<double> out(static_cast<size_t>(N * C * g.kh * g.kw * L), 0.0);
  fold_ref_walk(N, C, H, W, g,
                [&](int64_t col, int64_t pix) { out[static_cast<size_t>(col)] = v[static_cast<size_t>(pix)]; });
  if (batched) return make(out, {N, C * g.kh * g.kw, L});
  return make(out, {C * g.kh * g.kw, L});
}

Tensor fold_ref(const Tensor& cols, int64_t H, int64_t W, const FoldRefGeo& g) {
  const bool batched = cols.dim() == 3;
  const int64_t N = batched ? cols.size(0) : 1, C = cols.size(-2) / (g.kh * g.kw);
  const std::vector<double> v = values(cols);
  std::vector<double> out(static_cast<size_t>(N * C * H * W), 0.0);
  fold_ref_walk(N, C, H, W, g,
                [&](int64_t col, int64_t pix) { out[static_cast<size_t>(pix)] += v[static_cast<size_t>(col)]; });
  if (batched) return make(out, {N, C, H, W});
  return make(out, {C, H, W});
}

F::UnfoldFuncOptions unfold_opts(const FoldRefGeo& g) {
  return F::UnfoldFuncOptions({g.kh, g.kw}).dilation({g.dh, g.dw}).padding({g.ph, g.pw}).stride({g.sh, g.sw});
}
F::FoldFuncOptions fold_opts(int64_t H, int64_t W, const FoldRefGeo& g) {
  return F::FoldFuncOptions({H, W}, {g.kh, g.kw}).dilation({g.dh, g.dw}).padding({g.ph, g.pw}).stride({g.sh, g.sw});
}

}  // namespace

GRAFT_OP_RECORDS(fold) {
  std::vector<OpRecord> recs;
  const std::vector<ErrorCase> unfold_errors = {
      {[] { F::unfold(zeros({4, 4}, kFloat64), F::UnfoldFuncOptions(2)); }, {"unfold", "[4, 4]", "4-D (N, C, H, W)"}},
      {[] { F::unfold(zeros({1, 1, 2, 2}, kFloat64), F::UnfoldFuncOptions(3)); },
       {"unfold", "sliding blocks", "(0, 0)"}},
      int_input([](const Tensor& x) { return F::unfold(x.reshape({1, 1, 1, 2}), F::UnfoldFuncOptions(1)); }, "unfold")};
  const std::vector<ErrorCase> fold_errors = {
      {[] { F::fold(zeros({1, 8, 8}, kFloat64), F::FoldFuncOptions(4, 2)); }, {"fold", "3 * 3 = 9", "input.size(2)=8"}},
      {[] { F::fold(zeros({1, 7, 9}, kFloat64), F::FoldFuncOptions(4, 2)); }, {"fold", "divisible", "input.size(1)=7"}},
      int_input([](const Tensor& x) { return F::fold(x.reshape({1, 2}), F::FoldFuncOptions({1, 2}, 1)); }, "fold")};

  struct UnfoldCase {
    std::string variant;
    std::vector<int64_t> shape;
    FoldRefGeo g;
  };
  for (const UnfoldCase& c : std::vector<UnfoldCase>{
           {"k23", {2, 3, 4, 5}, {2, 3, 1, 1, 0, 0, 1, 1}},
           {"unbatched_dilation_padding_stride", {2, 5, 6}, {2, 2, 2, 2, 1, 1, 2, 1}},
           {"mixed", {1, 2, 7, 8}, {3, 3, 1, 2, 1, 0, 2, 2}}}) {
    // (clang 14 cannot capture structured bindings: the case's fields are copied by name.)
    recs.push_back({.name = "unfold",
                    .variant = c.variant,
                    .fn = [g = c.g](const TensorList& a) { return F::unfold(a[0], unfold_opts(g)); },
                    .reference = [g = c.g](const TensorList& a) { return unfold_ref(a[0], g); },
                    .samples = lazy({{S(c.shape, 301)}}),
                    .errors = unfold_errors});
  }

  struct FoldCase {
    std::string variant;
    std::vector<int64_t> shape;
    int64_t H, W;
    FoldRefGeo g;
  };
  for (const FoldCase& c : std::vector<FoldCase>{
           // 3 x 4 blocks of 2 x 2 over 4 x 5, overlapping
           {"k2", {2, 12, 12}, 4, 5, {2, 2, 1, 1, 0, 0, 1, 1}},
           // 3 x 3 blocks: (5 + 2 - 2 - 1) / 2 + 1 rows, (6 + 2 - 3) / 2 + 1 columns
           {"unbatched_dilation_padding_stride", {12, 9}, 5, 6, {2, 3, 2, 1, 1, 1, 2, 2}},
           // kernel 3, padding 1 over 4 x 4: 16 blocks, every pixel in 4 to 9 of them
           {"overlap_padding", {1, 18, 16}, 4, 4, {3, 3, 1, 1, 1, 1, 1, 1}}}) {
    recs.push_back({.name = "fold",
                    .variant = c.variant,
                    .fn = [H = c.H, W = c.W, g = c.g](const TensorList& a) { return F::fold(a[0], fold_opts(H, W, g)); },
                    .reference = [H = c.H, W = c.W, g = c.g](const TensorList& a) { return fold_ref(a[0], H, W, g); },
                    .samples = lazy({{S(c.shape, 302)}}),
                    .errors = fold_errors});
  }
  return recs;
}

}  // namespace graft::test
