// float32 conv2d and conv_transpose2d on the shapes graft's oneDNN backend serves (at least 16
// channels per group: Note [Convolution backends] in src/kernels/onednn_conv.cpp), forward and
// every gradient, against plain loops in double. The same cases run on the im2col backend when
// graft is built without oneDNN or the tests run under GRAFT_CONV_BACKEND=im2col.
#include <cmath>

#include "../support/test_util.h"

namespace graft::test {
namespace {

namespace F = graft::nn::functional;

struct Geo {
  int64_t n, c, o, h, w, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};

// Visits every (output, input, weight) index triple of the convolution: y[yi] += x[xi] * w[wi].
template <class Fn>
void for_each_tap(const Geo& g, Fn&& fn) {
  const int64_t Cg = g.c / g.groups, Og = g.o / g.groups, oH = g.oh(), oW = g.ow();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t o = 0; o < g.o; ++o)
      for (int64_t y = 0; y < oH; ++y)
        for (int64_t x = 0; x < oW; ++x)
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < g.kh; ++i)
              for (int64_t j = 0; j < g.kw; ++j) {
                const int64_t ih = y * g.sh - g.ph + i * g.dh, iw = x * g.sw - g.pw + j * g.dw;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const int64_t ci = (o / Og) * Cg + c;
                fn(static_cast<size_t>(((n * g.o + o) * oH + y) * oW + x),
                   static_cast<size_t>(((n * g.c + ci) * g.h + ih) * g.w + iw),
                   static_cast<size_t>(((o * Cg + c) * g.kh + i) * g.kw + j));
              }
}

F::Conv2dFuncOptions geo_opts(const Geo& g) {
  return F::Conv2dFuncOptions().stride({g.sh, g.sw}).padding({g.ph, g.pw}).dilation({g.dh, g.dw}).groups(g.groups);
}

const Geo kCases[] = {
    // n, c,  o,  h,  w, kh, kw, sh, sw, ph, pw, dh, dw, groups
    {3, 32, 64, 13, 13, 3, 3, 1, 1, 0, 0, 1, 1, 1},   // the benchmark CNN's second layer
    {2, 16, 32, 14, 14, 4, 4, 2, 2, 1, 1, 1, 1, 1},   // DCGAN's discriminator: stride 2, padding 1, kernel 4
    {2, 32, 16, 7, 7, 4, 4, 2, 2, 1, 1, 1, 1, 1},     // an odd size halved (floor drops a column)
    {2, 32, 32, 9, 11, 3, 2, 1, 2, 1, 0, 2, 1, 2},    // groups, dilation, non-square everything
    {1, 16, 16, 5, 5, 3, 3, 3, 3, 0, 0, 1, 1, 1},     // a stride that leaves input rows unread
};

std::string name(const Geo& g) {
  return std::to_string(g.n) + "x" + std::to_string(g.c) + "x" + std::to_string(g.h) + "x" + std::to_string(g.w) +
         " -> " + std::to_string(g.o) + " k" + std::to_string(g.kh) + "x" + std::to_string(g.kw) + " s" +
         std::to_string(g.sh) + "," + std::to_string(g.sw) + " p" + std::to_string(g.ph) + "," +
         std::to_string(g.pw) + " d" + std::to_string(g.dh) + "," + std::to_string(g.dw) + " g" +
         std::to_string(g.groups);
}

TEST(ConvBackends, Conv2dFloat32ForwardAndGradientsMatchPlainLoops) {
  for (const Geo& g : kCases) {
    SCOPED_TRACE(name(g));
    const Tensor x64 = uniform_sample({g.n, g.c, g.h, g.w}, 1, -1, 1);
    const Tensor w64 = uniform_sample({g.o, g.c / g.groups, g.kh, g.kw}, 2, -0.3, 0.3);
    const Tensor b64 = uniform_sample({g.o}, 3, -1, 1);
    const Tensor gy64 = uniform_sample({g.n, g.o, g.oh(), g.ow()}, 4, -1, 1);
    const auto vx = values(x64), vw = values(w64), vb = values(b64), vg = values(gy64);
    std::vector<double> y(vg.size()), gx(vx.size(), 0.0), gw(vw.size(), 0.0), gb(vb.size(), 0.0);
    const int64_t L = g.oh() * g.ow();
    for (size_t k = 0; k < y.size(); ++k) {
      y[k] = vb[(k / static_cast<size_t>(L)) % static_cast<size_t>(g.o)];
      gb[(k / static_cast<size_t>(L)) % static_cast<size_t>(g.o)] += vg[k];
    }
    for_each_tap(g, [&](size_t yi, size_t xi, size_t wi) {
      y[yi] += vx[xi] * vw[wi];
      gx[xi] += vg[yi] * vw[wi];
      gw[wi] += vg[yi] * vx[xi];
    });

    Tensor x = x64.to(kFloat32).requires_grad_(), w = w64.to(kFloat32).requires_grad_(),
           b = b64.to(kFloat32).requires_grad_();
    const Tensor out = F::conv2d(x, w, b, geo_opts(g));
    out.backward(gy64.to(kFloat32));
    EXPECT_TRUE(all_close(out, y, out.sizes().vec(), 1e-4, 1e-4));
    EXPECT_TRUE(all_close(x.grad(), gx, x.sizes().vec(), 1e-4, 1e-4));
    EXPECT_TRUE(all_close(w.grad(), gw, w.sizes().vec(), 1e-4, 1e-4));
    EXPECT_TRUE(all_close(b.grad(), gb, b.sizes().vec(), 1e-4, 1e-4));
  }
}

// conv_transpose2d(x, w) is conv2d's input gradient for grad_output x, with w read as conv2d's
// weight (in_channels of the transpose = conv2d's out_channels); its weight gradient for upstream
// gradient u is conv2d's weight gradient for input u and grad_output x.
TEST(ConvBackends, ConvTranspose2dFloat32MatchesPlainLoops) {
  for (const Geo& g : kCases) {
    SCOPED_TRACE(name(g));
    // The transpose maps (n, o, oH, oW) to (n, c, h, w); output_padding recovers h and w.
    const int64_t oph = g.h - ((g.oh() - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + 1);
    const int64_t opw = g.w - ((g.ow() - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + 1);
    if (oph >= std::max(g.sh, g.dh) || opw >= std::max(g.sw, g.dw)) continue;  // not reachable by a transpose
    const Tensor x64 = uniform_sample({g.n, g.o, g.oh(), g.ow()}, 5, -1, 1);
    const Tensor w64 = uniform_sample({g.o, g.c / g.groups, g.kh, g.kw}, 6, -0.3, 0.3);
    const Tensor u64 = uniform_sample({g.n, g.c, g.h, g.w}, 7, -1, 1);
    const auto vx = values(x64), vw = values(w64), vu = values(u64);
    std::vector<double> y(vu.size(), 0.0), gx(vx.size(), 0.0), gw(vw.size(), 0.0);
    for_each_tap(g, [&](size_t xi, size_t yi, size_t wi) {  // the transpose's input is conv2d's output
      y[yi] += vx[xi] * vw[wi];
      gx[xi] += vu[yi] * vw[wi];
      gw[wi] += vu[yi] * vx[xi];
    });
    Tensor x = x64.to(kFloat32).requires_grad_(), w = w64.to(kFloat32).requires_grad_();
    const Tensor out = F::conv_transpose2d(x, w,
                                           F::ConvTranspose2dFuncOptions()
                                               .stride({g.sh, g.sw})
                                               .padding({g.ph, g.pw})
                                               .output_padding({oph, opw})
                                               .dilation({g.dh, g.dw})
                                               .groups(g.groups));
    ASSERT_EQ(out.sizes().vec(), (std::vector<int64_t>{g.n, g.c, g.h, g.w}));
    out.backward(u64.to(kFloat32));
    EXPECT_TRUE(all_close(out, y, out.sizes().vec(), 1e-4, 1e-4));
    EXPECT_TRUE(all_close(x.grad(), gx, x.sizes().vec(), 1e-4, 1e-4));
    EXPECT_TRUE(all_close(w.grad(), gw, w.sizes().vec(), 1e-4, 1e-4));
  }
}

}  // namespace
}  // namespace graft::test
