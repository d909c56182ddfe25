// The separable index-map kernel: src/kernels/resample.h; the maps are Note [Resampling as
// separable index maps] in src/ops/resample.cpp.
#include "resample.h"

#include <algorithm>

#include "../core/dispatch.h"
#include "graft/runtime/parallel.h"

namespace graft::kernels::resample {

namespace {

// Runs the map (Adjoint = false: src is (planes, iD, iH, iW), dst (planes, oD, oH, oW)) or its
// adjoint (src the gradient (planes, oD, oH, oW), dst the zeroed input gradient).
template <bool Adjoint, class T>
void run_map(const Axis& ad, const Axis& ah, const Axis& aw, const T* src, T* dst, int64_t planes) {
  const int64_t iW = aw.in, oW = aw.out, in_slice = ah.in * aw.in, out_slice = ah.out * aw.out;
  const int64_t in_plane = ad.in * in_slice, out_plane = ad.out * out_slice;
  const int64_t grain =
      std::max<int64_t>(1, 32768 / std::max<int64_t>(1, out_plane * ad.taps * ah.taps * aw.taps));
  parallel_for(0, planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* s = src + pl * (Adjoint ? out_plane : in_plane);
      T* d = dst + pl * (Adjoint ? in_plane : out_plane);
      for (int64_t od = 0; od < ad.out; ++od) {
        for (int64_t oh = 0; oh < ah.out; ++oh) {
          for (int64_t ow = 0; ow < oW; ++ow) {
            const int64_t o = (od * ah.out + oh) * oW + ow;
            if constexpr (Adjoint) {
              const T g = s[o];
              for (int64_t tc = 0; tc < ad.taps; ++tc) {
                const auto kc = static_cast<size_t>(od * ad.taps + tc);
                const T wc = static_cast<T>(ad.w[kc]);
                T* slice = d + ad.idx[kc] * in_slice;
                for (int64_t ta = 0; ta < ah.taps; ++ta) {
                  const auto ka = static_cast<size_t>(oh * ah.taps + ta);
                  const T wa = wc * static_cast<T>(ah.w[ka]);
                  T* row = slice + ah.idx[ka] * iW;
                  for (int64_t tb = 0; tb < aw.taps; ++tb) {
                    const auto kb = static_cast<size_t>(ow * aw.taps + tb);
                    row[aw.idx[kb]] += wa * static_cast<T>(aw.w[kb]) * g;
                  }
                }
              }
            } else {
              T acc = 0;
              for (int64_t tc = 0; tc < ad.taps; ++tc) {
                const auto kc = static_cast<size_t>(od * ad.taps + tc);
                const T* slice = s + ad.idx[kc] * in_slice;
                T mid = 0;
                for (int64_t ta = 0; ta < ah.taps; ++ta) {
                  const auto ka = static_cast<size_t>(oh * ah.taps + ta);
                  const T* row = slice + ah.idx[ka] * iW;
                  T part = 0;
                  for (int64_t tb = 0; tb < aw.taps; ++tb) {
                    const auto kb = static_cast<size_t>(ow * aw.taps + tb);
                    part += static_cast<T>(aw.w[kb]) * row[aw.idx[kb]];
                  }
                  mid += static_cast<T>(ah.w[ka]) * part;
                }
                acc += static_cast<T>(ad.w[kc]) * mid;
              }
              d[o] = acc;
            }
          }
        }
      }
    }
  });
}

}  // namespace

void forward(const char* op, const Axis& d, const Axis& h, const Axis& w, const Tensor& x, Tensor& y,
             int64_t planes) {
  dispatch_numeric(x.dtype(), op, [&]<class T>() {
    if (y.is_meta()) return;  // Note [Meta device]: no kernel on meta
    run_map<false, T>(d, h, w, static_cast<const T*>(x.data_ptr()), y.data_ptr<T>(), planes);
  });
}

void adjoint(const char* op, const Axis& d, const Axis& h, const Axis& w, const Tensor& g, Tensor& gx,
             int64_t planes) {
  dispatch_floating(g.dtype(), op, [&]<class T>() {
    if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
    run_map<true, T>(d, h, w, static_cast<const T*>(g.data_ptr()), gx.data_ptr<T>(), planes);
  });
}

namespace {
Axis unit_axis() {
  Axis a;
  a.idx = {0};
  a.w = {1.0};
  return a;
}
}  // namespace

void forward(const char* op, const Axis& h, const Axis& w, const Tensor& x, Tensor& y, int64_t planes) {
  forward(op, unit_axis(), h, w, x, y, planes);
}

void adjoint(const char* op, const Axis& h, const Axis& w, const Tensor& g, Tensor& gx, int64_t planes) {
  adjoint(op, unit_axis(), h, w, g, gx, planes);
}

}  // namespace graft::kernels::resample
