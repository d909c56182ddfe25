// Unflatten (issue 32): checks, the view, printing.
#include "graft/nn/modules/flatten.h"

#include <string>
#include <utility>
#include <vector>

#include "graft/core/shape.h"

namespace graft::nn {

namespace {

std::string unflatten_sizes_str(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

}  // namespace

UnflattenImpl::UnflattenImpl(UnflattenOptions options_) : options(std::move(options_)) { reset(); }

void UnflattenImpl::reset() {
  const auto& sizes = options.sizes();
  int64_t inferred = 0;
  bool valid = !sizes.empty();
  for (const int64_t s : sizes) {
    if (s == -1) ++inferred;
    else if (s < 0) valid = false;
  }
  GRAFT_CHECK(valid && inferred <= 1, "Unflatten", "a non-empty list of sizes >= 0 (one of them may be -1)",
              "sizes {" + unflatten_sizes_str(sizes) + "}",
              "give the sizes the dim splits into, e.g. UnflattenOptions(1, {2, 3})");
}

Tensor UnflattenImpl::forward(const Tensor& input) {
  const int64_t n = input.dim();
  GRAFT_CHECK(n > 0 && options.dim() >= -n && options.dim() < n, "Unflatten",
              "dim in [" + std::to_string(-n) + ", " + std::to_string(n) + ")",
              "dim " + std::to_string(options.dim()) + " for an input of shape " + shape_str(input.sizes()),
              "dim names the input's dim to split; negative values count from the end");
  const int64_t dim = options.dim() < 0 ? options.dim() + n : options.dim();
  const int64_t size = input.size(dim);
  // The -1 (if any) takes what is left of dim's size.
  int64_t known = 1;
  for (const int64_t s : options.sizes())
    if (s != -1) known *= s;
  std::vector<int64_t> sizes = options.sizes();
  for (int64_t& s : sizes)
    if (s == -1) s = known == 0 ? -1 : size / known;
  int64_t product = 1;
  for (const int64_t s : sizes) product *= s;
  GRAFT_CHECK(product == size, "Unflatten",
              "sizes whose product is dim " + std::to_string(dim) + "'s size " + std::to_string(size),
              "sizes {" + unflatten_sizes_str(options.sizes()) + "} for an input of shape " + shape_str(input.sizes()),
              "the sizes must multiply to the size of the dim they replace");
  std::vector<int64_t> shape(input.sizes().begin(), input.sizes().begin() + dim);
  shape.insert(shape.end(), sizes.begin(), sizes.end());
  shape.insert(shape.end(), input.sizes().begin() + dim + 1, input.sizes().end());
  return input.view(shape);
}

std::string UnflattenImpl::extra_repr() const {
  // Python writes a tuple: (2, 2), or (4,) for one size.
  const auto& s = options.sizes();
  return "dim=" + std::to_string(options.dim()) + ", unflattened_size=(" + unflatten_sizes_str(s) +
         (s.size() == 1 ? ",)" : ")");
}

std::string UnflattenImpl::libtorch_repr() const {
  return "graft::nn::Unflatten(dim=" + std::to_string(options.dim()) + ", unflattened_size={" +
         unflatten_sizes_str(options.sizes()) + "})";
}

}  // namespace graft::nn
