// The separable index-map kernel: src/kernels/resample.h; the maps are Note [Resampling as
// separable index maps] in src/ops/resample.cpp.
#include "resample.h"

#include <algorithm>

#include "../core/dispatch.h"
#include "graft/runtime/parallel.h"

namespace graft::kernels::resample {

namespace {

// Runs the map (Adjoint = false: src is (planes, iH, iW), dst (planes, oH, oW)) or its adjoint
// (src the gradient (planes, oH, oW), dst the zeroed input gradient).
template <bool Adjoint, class T>
void run_map(const Axis& ah, const Axis& aw, const T* src, T* dst, int64_t planes) {
  const int64_t iW = aw.in, oW = aw.out, in_plane = ah.in * aw.in, out_plane = ah.out * aw.out;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, out_plane * ah.taps * aw.taps));
  parallel_for(0, planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; ++pl) {
      const T* s = src + pl * (Adjoint ? out_plane : in_plane);
      T* d = dst + pl * (Adjoint ? in_plane : out_plane);
      for (int64_t oh = 0; oh < ah.out; ++oh) {
        for (int64_t ow = 0; ow < oW; ++ow) {
          if constexpr (Adjoint) {
            const T g = s[oh * oW + ow];
            for (int64_t ta = 0; ta < ah.taps; ++ta) {
              const auto ka = static_cast<size_t>(oh * ah.taps + ta);
              const T wa = static_cast<T>(ah.w[ka]);
              T* row = d + ah.idx[ka] * iW;
              for (int64_t tb = 0; tb < aw.taps; ++tb) {
                const auto kb = static_cast<size_t>(ow * aw.taps + tb);
                row[aw.idx[kb]] += wa * static_cast<T>(aw.w[kb]) * g;
              }
            }
          } else {
            T acc = 0;
            for (int64_t ta = 0; ta < ah.taps; ++ta) {
              const auto ka = static_cast<size_t>(oh * ah.taps + ta);
              const T* row = s + ah.idx[ka] * iW;
              T part = 0;
              for (int64_t tb = 0; tb < aw.taps; ++tb) {
                const auto kb = static_cast<size_t>(ow * aw.taps + tb);
                part += static_cast<T>(aw.w[kb]) * row[aw.idx[kb]];
              }
              acc += static_cast<T>(ah.w[ka]) * part;
            }
            d[oh * oW + ow] = acc;
          }
        }
      }
    }
  });
}

}  // namespace

void forward(const char* op, const Axis& h, const Axis& w, const Tensor& x, Tensor& y, int64_t planes) {
  dispatch_numeric(x.dtype(), op, [&]<class T>() {
    if (y.is_meta()) return;  // Note [Meta device]: no kernel on meta
    run_map<false, T>(h, w, static_cast<const T*>(x.data_ptr()), y.data_ptr<T>(), planes);
  });
}

void adjoint(const char* op, const Axis& h, const Axis& w, const Tensor& g, Tensor& gx, int64_t planes) {
  dispatch_floating(g.dtype(), op, [&]<class T>() {
    if (gx.is_meta()) return;  // Note [Meta device]: no kernel on meta
    run_map<true, T>(h, w, static_cast<const T*>(g.data_ptr()), gx.data_ptr<T>(), planes);
  });
}

}  // namespace graft::kernels::resample
