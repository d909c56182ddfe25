// Tensor indexing in LibTorch's spelling (PyTorch's x[1:3, None, ..., idx]):
//
//   using namespace graft::indexing;
//   Tensor y = x.index({Slice(1, 3), None, Ellipsis, idx});
//   x.index_put_({0, Slice()}, 7.0);
//
// Note [Tensor indexing]
// The indices are read left to right against x's dims, as Python reads them: an integer selects
// (the dim goes), a Slice(start, stop, step) narrows (negative start/stop count from the end, None
// is the end), None inserts a dim of size 1, true inserts a dim of size 1 and false one of size 0,
// Ellipsis stands for as many full dims as the other indices leave, and a tensor is an advanced
// index: int64 positions (any shape; the result has the index's shape in that dim's place) or a
// bool mask (its true positions; a k-D mask covers k dims). The basic indices make views (they
// share x's memory and are recorded by autograd as the views are); an advanced index makes a copy
// through index_select. Several advanced indices broadcast together, as PyTorch's (Note [Several
// advanced indices] in src/ops/tensor_indexing.cpp).
// index_put_ writes through the same indices: a tensor (broadcast to the indexed shape) or a
// number; with an advanced index, the positions are written in order, so a repeated position keeps
// the last value. It is not recorded by autograd (docs/porting.md): under grad mode, a tensor that
// requires grad on either side is an error, not a silently wrong gradient.
#pragma once

#include <cstdint>
#include <optional>
#include <type_traits>

#include "graft/core/tensor.h"

namespace graft::indexing {

struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};
// LibTorch's None is c10::nullopt: Slice(None, 3) and x.index({None}) read the same.
inline constexpr std::nullopt_t None = std::nullopt;

class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step.value_or(1)) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  int64_t step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_;
  int64_t step_;
};

class TensorIndex {
 public:
  enum class Kind { None, Ellipsis, Integer, Boolean, Slice, Tensor };

  TensorIndex(std::nullopt_t) : kind_(Kind::None) {}  // NOLINT: implicit, as in LibTorch
  TensorIndex(EllipsisIndexType) : kind_(Kind::Ellipsis) {}  // NOLINT
  TensorIndex(const char* s);  // NOLINT: "..." is Ellipsis, as in LibTorch
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  TensorIndex(I i) : kind_(Kind::Integer), integer_(static_cast<int64_t>(i)) {}  // NOLINT
  TensorIndex(bool b) : kind_(Kind::Boolean), boolean_(b) {}  // NOLINT
  TensorIndex(Slice s) : kind_(Kind::Slice), slice_(s) {}  // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::Tensor), tensor_(std::move(t)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_ellipsis() const { return kind_ == Kind::Ellipsis; }
  bool is_integer() const { return kind_ == Kind::Integer; }
  bool is_boolean() const { return kind_ == Kind::Boolean; }
  bool is_slice() const { return kind_ == Kind::Slice; }
  bool is_tensor() const { return kind_ == Kind::Tensor; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return boolean_; }
  const Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  bool boolean_ = false;
  Slice slice_;
  Tensor tensor_;
};

}  // namespace graft::indexing
