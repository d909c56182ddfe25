// The unfold / fold loops (fold.h): one sample at a time, samples in order, each sample's entries
// in the order of Note [im2col layout], so fold adds overlapping blocks in ATen's col2im order
// (channel, kernel row, kernel column, then block position) and the bits match PyTorch's.
#include "fold.h"

namespace graft::kernels::fold {

template <class T>
void unfold(const Tensor& img, Tensor& cols, const Conv2dGeometry& g) {
  const int64_t N = img.size(0);
  const int64_t in_per = g.channels * g.height * g.width;
  const int64_t out_per = g.channels * g.kernel_h * g.kernel_w * g.out_h * g.out_w;
  const T* src = static_cast<const T*>(img.data_ptr());
  T* dst = cols.data_ptr<T>();
  for (int64_t n = 0; n < N; ++n) kernels::im2col(src + n * in_per, g, dst + n * out_per);
}

template <class T>
void fold(const Tensor& cols, Tensor& img, const Conv2dGeometry& g) {
  const int64_t N = img.size(0);
  const int64_t in_per = g.channels * g.kernel_h * g.kernel_w * g.out_h * g.out_w;
  const int64_t out_per = g.channels * g.height * g.width;
  const T* src = static_cast<const T*>(cols.data_ptr());
  T* dst = img.data_ptr<T>();
  for (int64_t n = 0; n < N; ++n) kernels::col2im(src + n * in_per, g, dst + n * out_per);
}

template void unfold<float>(const Tensor&, Tensor&, const Conv2dGeometry&);
template void unfold<double>(const Tensor&, Tensor&, const Conv2dGeometry&);
template void fold<float>(const Tensor&, Tensor&, const Conv2dGeometry&);
template void fold<double>(const Tensor&, Tensor&, const Conv2dGeometry&);

}  // namespace graft::kernels::fold
