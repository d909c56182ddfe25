// Tensor: a cheap, reference-counted handle to a TensorImpl (storage + offset + sizes + strides +
// dtype + device, and autograd data only for tensors that need it). Copying a Tensor copies the
// handle, never the data, exactly like LibTorch's at::Tensor.
#pragma once

#include <functional>
#include <iosfwd>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "graft/core/dtype.h"
#include "graft/core/print_style.h"
#include "graft/core/scalar.h"
#include "graft/core/shape.h"
#include "graft/core/storage.h"
#include "graft/core/tensor_options.h"

namespace graft {

class Generator;
namespace indexing {
class TensorIndex;
}  // namespace indexing

class Tensor;
using TensorList = std::vector<Tensor>;
using tensor_list = TensorList;

namespace autograd {
class Node;
struct AutogradMeta;
}  // namespace autograd

// Returned by Tensor::register_hook; remove() unregisters the hook (idempotent).
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(unsigned id, std::function<void()> remover) : id_(id), remover_(std::move(remover)) {}
  void remove() {
    if (remover_) std::exchange(remover_, nullptr)();
  }
  unsigned id() const { return id_; }
  operator unsigned() const { return id_; }  // NOLINT: LibTorch returns the hook's position

 private:
  unsigned id_ = 0;
  std::function<void()> remover_;
};

namespace detail {
// Reading a meta tensor's memory (Note [Meta device] in graft/core/dtype.h): a graft::Error naming
// the op that tried (memory::current_op()), with a hint.
[[noreturn]] void throw_meta_data_access();
}  // namespace detail
class Tensor;
namespace detail {
// The device an op's outputs go to (Note [Meta device]): kMeta when any of `tensors` is a meta
// tensor, the CPU otherwise. A meta tensor beside a CPU tensor that is not 0-dim is a graft::Error
// naming `op` (a 0-dim CPU tensor is a wrapped number, as in PyTorch). Undefined tensors are skipped.
Device op_device(const char* op, std::initializer_list<const Tensor*> tensors);
// While it lives (on meta inputs), make_empty and the factories that name no device make meta
// tensors, so an op's temporaries follow its inputs. A no-op for CPU inputs.
class MetaOpScope {
 public:
  MetaOpScope(const char* op, std::initializer_list<const Tensor*> tensors);
  ~MetaOpScope();
  MetaOpScope(const MetaOpScope&) = delete;
  MetaOpScope& operator=(const MetaOpScope&) = delete;
  bool meta() const { return meta_; }

 private:
  bool meta_ = false;
  bool previous_ = false;
};
bool in_meta_op();  // a MetaOpScope on meta inputs is open on this thread
}  // namespace detail

struct TensorImpl {
  TensorImpl(std::shared_ptr<Storage> storage, int64_t offset, IntArrayRef sizes, IntArrayRef strides,
             DType dtype);
  ~TensorImpl();

  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape sizes;
  Shape strides;       // in elements
  int64_t numel = 0;
  DType dtype = DType::Float32;
  bool is_view = false;  // shares storage with a tensor it was derived from
  bool is_inference = false;  // made under InferenceMode: never records autograd, even later
  std::unique_ptr<autograd::AutogradMeta> autograd;  // null until the tensor takes part in autograd

  autograd::AutogradMeta& autograd_meta();  // creates on first use
  bool is_contiguous() const;
  char* data_bytes() const {
    if (storage->device.type() == DeviceType::Meta) [[unlikely]] detail::throw_meta_data_access();
    return static_cast<char*>(storage->data) + offset * static_cast<int64_t>(element_size(dtype));
  }
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  // Assigning to a named tensor rebinds it; assigning to a temporary (an index's view:
  // `x.index({0}) = 1`, `x[1] = y`) writes into it, as LibTorch does (fill_ and copy_).
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& src) && { return copy_(src); }
  Tensor& operator=(const Scalar& value) && { return fill_(value); }

  // ---- metadata ----
  bool defined() const { return impl_ != nullptr; }
  int64_t dim() const { return static_cast<int64_t>(impl().sizes.size()); }
  int64_t ndimension() const { return dim(); }
  IntArrayRef sizes() const { return impl().sizes; }
  IntArrayRef strides() const { return impl().strides; }
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t numel() const { return impl().numel; }
  DType dtype() const { return impl().dtype; }
  DType scalar_type() const { return impl().dtype; }
  Device device() const { return impl().storage->device; }
  bool is_meta() const { return impl().storage->device.type() == DeviceType::Meta; }
  bool is_cpu() const { return impl().storage->device.type() == DeviceType::CPU; }
  bool is_cuda() const { return impl().storage->device.type() == DeviceType::CUDA; }
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  Layout layout() const { return kStrided; }
  bool is_contiguous() const { return impl().is_contiguous(); }
  bool is_floating_point() const { return graft::is_floating_point(dtype()); }
  int64_t storage_offset() const { return impl().offset; }
  size_t element_size() const { return graft::element_size(dtype()); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }
  bool is_alias_of(const Tensor& o) const { return impl().storage == o.impl().storage; }
  long use_count() const { return impl_.use_count(); }

  void* data_ptr() const { return impl().data_bytes(); }
  template <class T> T* data_ptr() const;  // checks the dtype
  template <class T> T item() const;       // one-element tensors only
  Scalar item() const;

  // ---- autograd (see docs/autograd.md) ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true) const;
  const Tensor& set_requires_grad(bool r) const;
  bool is_leaf() const;
  bool is_inference() const { return impl().is_inference; }  // made under InferenceMode
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  const Tensor& grad() const;  // undefined tensor when there is none
  Tensor& mutable_grad();      // t.mutable_grad() = g, or reset it
  // Without `inputs`, every leaf's .grad; with it, only those tensors' (leaves or not), and an
  // empty list is an error, as LibTorch's optional `inputs` (two overloads here, so that `{h}`
  // reads as a list).
  void backward(const Tensor& gradient = {}, std::optional<bool> retain_graph = std::nullopt,
                bool create_graph = false) const;
  void backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                const TensorList& inputs) const;
  void retain_grad() const;
  bool retains_grad() const;
  Tensor detach() const;
  // LibTorch's .data() (variable_data) and tensor_data(): the same values without history, not
  // requiring grad. graft's share the version counter with this tensor (detach's), so an in-place
  // change through them is still caught by a backward that saved this tensor.
  Tensor data() const { return detach(); }
  Tensor variable_data() const { return detach(); }
  Tensor tensor_data() const { return detach(); }
  // Replaces this tensor's data (storage, sizes, strides, dtype) with new_data's, keeping its
  // identity: every handle, requires_grad and .grad stay (LibTorch's set_data). The storage takes
  // this tensor's memory category, so a parameter stays a parameter.
  void set_data(const Tensor& new_data) const;
  Tensor& detach_() const;
  // hook(grad) may return a replacement gradient (a Tensor) or nothing (void).
  template <class F>
  HookHandle register_hook(F&& hook) const {
    if constexpr (std::is_void_v<std::invoke_result_t<F, const Tensor&>>) {
      return register_hook_impl([h = std::forward<F>(hook)](const Tensor& g) {
        h(g);
        return Tensor();
      });
    } else {
      return register_hook_impl(std::function<Tensor(const Tensor&)>(std::forward<F>(hook)));
    }
  }
  HookHandle register_hook_impl(std::function<Tensor(const Tensor&)> hook) const;
  // PyTorch 2.1's register_post_accumulate_grad_hook: hook(leaf) runs after a backward pass has
  // added its gradient into this leaf's .grad (leaves only; the hook reads or replaces .grad).
  HookHandle register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const;
  void remove_hook(unsigned id) const;
  uint32_t _version() const { return impl().storage->version.load(std::memory_order_relaxed); }

  // ---- views: share storage (and version counter) with this tensor ----
  Tensor view(IntArrayRef shape) const;
  Tensor reshape(IntArrayRef shape) const;  // a view when strides allow, else a copy
  Tensor view_as(const Tensor& other) const { return view(other.sizes()); }
  Tensor reshape_as(const Tensor& other) const { return reshape(other.sizes()); }
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor t() const;
  // A view of the whole tensor: another handle on the same elements.
  Tensor alias() const { return view(sizes()); }
  // Tiles the tensor repeats[i] times along dimension i (leading repeats add dimensions).
  Tensor repeat(IntArrayRef repeats) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
               std::optional<int64_t> end = std::nullopt, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;
  // t[i]: select(0, i), as in LibTorch.
  Tensor operator[](int64_t index) const { return select(0, index); }
  // x.index({Slice(1, 3), None, Ellipsis, idx}) and x.index_put_({...}, v): PyTorch's x[...]
  // (graft/core/tensor_indexing.h, Note [Tensor indexing]).
  Tensor index(std::initializer_list<indexing::TensorIndex> indices) const;
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Tensor& value) const;
  Tensor& index_put_(std::initializer_list<indexing::TensorIndex> indices, const Scalar& value) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value) const;
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Scalar& value) const;
  Tensor expand(IntArrayRef sizes) const;  // -1 keeps a size
  Tensor expand_as(const Tensor& other) const { return expand(other.sizes()); }
  Tensor squeeze() const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor contiguous() const;
  TensorList split(int64_t split_size, int64_t dim = 0) const;
  TensorList split_with_sizes(IntArrayRef split_sizes, int64_t dim = 0) const;
  TensorList chunk(int64_t chunks, int64_t dim = 0) const;
  TensorList unbind(int64_t dim = 0) const;

  // ---- resize (LibTorch's resize_ and resize_as_, without the memory format: Note [resize_] in
  // src/core/resize.cpp): new sizes with contiguous strides; the storage grows (new elements zero),
  // never shrinks. An error on a tensor that requires grad, as in LibTorch.
  const Tensor& resize_(IntArrayRef size) const;
  const Tensor& resize_as_(const Tensor& the_template) const;

  // ---- conversions ----
  // LibTorch's to(dtype, non_blocking, copy): this tensor itself when nothing changes, unless copy.
  Tensor to(DType dtype, bool non_blocking = false, bool copy = false) const;
  // LibTorch's to(options, non_blocking, copy): the options' device and dtype, each only where the
  // options set it (a Device converts to options: to(kCPU), to(Device(kMeta))). graft runs on the
  // CPU and the meta device: another device is an error; to(kCPU) returns this tensor (a copy only
  // with copy = true).
  Tensor to(const TensorOptions& options, bool non_blocking = false, bool copy = false) const;
  Tensor to(Device device, DType dtype, bool non_blocking = false, bool copy = false) const;
  // other's device and dtype.
  Tensor to(const Tensor& other, bool non_blocking = false, bool copy = false) const;
  Tensor type_as(const Tensor& other) const { return to(other); }
  Tensor toType(DType dtype) const { return to(dtype); }
  Tensor cpu() const { return to(Device(DeviceType::CPU)); }
  // LibTorch's device index: -1 on the CPU.
  int64_t get_device() const { return device().is_cpu() ? -1 : device().index(); }
  // Whether the dtype holds negative values (every floating and signed integer dtype).
  bool is_signed() const { return dtype() != kUInt8 && dtype() != kBool; }
  Tensor clone() const;

  // ---- math (free functions in ops.h do the work; these forward to them) ----
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor neg() const;
  Tensor pow(const Tensor& exponent) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor log1p() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor erf() const;
  Tensor square() const;
  Tensor reciprocal() const;
  Tensor clamp(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor clamp_min(const Scalar& min) const;
  Tensor clamp_max(const Scalar& max) const;
  Tensor maximum(const Tensor& other) const;
  Tensor minimum(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor gt(const Scalar& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor lt(const Scalar& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor le(const Tensor& other) const;
  Tensor le(const Scalar& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor eq(const Scalar& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor ne(const Scalar& other) const;
  Tensor logical_not() const;
  Tensor logical_and(const Tensor& other) const;
  Tensor logical_or(const Tensor& other) const;
  // LibTorch's members over graft::allclose, isclose and equal (graft/ops/ops.h).
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor isclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  bool equal(const Tensor& other) const;
  bool is_same_size(const Tensor& other) const { return sizes().equals(other.sizes()); }
  Tensor where(const Tensor& condition, const Tensor& other) const;  // condition ? self : other
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;

  // ---- reductions ----
  Tensor sum(std::optional<DType> dtype = std::nullopt) const;
  Tensor sum(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(std::optional<DType> dtype = std::nullopt) const;
  Tensor mean(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  // (x.var({1}) reduces dim 1: the all-dims form takes a real bool only; see ops.h)
  Tensor var() const { return var_all(true); }
  template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
  Tensor var(B unbiased) const { return var_all(unbiased); }
  Tensor var(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor std() const { return std_all(true); }
  template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
  Tensor std(B unbiased) const { return std_all(unbiased); }
  Tensor std(IntArrayRef dim, bool unbiased = true, bool keepdim = false) const;
  Tensor var_all(bool unbiased) const;
  Tensor std_all(bool unbiased) const;
  Tensor prod(std::optional<DType> dtype = std::nullopt) const;
  Tensor prod(IntArrayRef dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  Tensor min() const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor amin(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor argmax(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor argmin(std::optional<int64_t> dim = std::nullopt, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor norm(const Scalar& p = 2) const;
  // The p-norm over `dim` (LibTorch's norm(p, dim, keepdim)).
  Tensor norm(const Scalar& p, IntArrayRef dim, bool keepdim = false) const;
  Tensor all() const;
  Tensor all(int64_t dim, bool keepdim = false) const;
  Tensor any() const;
  Tensor any(int64_t dim, bool keepdim = false) const;
  Tensor cumsum(int64_t dim, std::optional<DType> dtype = std::nullopt) const;
  Tensor cumprod(int64_t dim, std::optional<DType> dtype = std::nullopt) const;

  // ---- linear algebra, softmax, indexing ----
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor index_select(int64_t dim, const Tensor& index) const;
  Tensor gather(int64_t dim, const Tensor& index) const;
  Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  Tensor index_add(int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1) const;

  // ---- triangles, linear interpolation (graft::triu, tril, lerp; the _ forms write self) ----
  Tensor triu(int64_t diagonal = 0) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor& triu_(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0) const;
  Tensor lerp(const Tensor& end, const Scalar& weight) const;
  Tensor lerp(const Tensor& end, const Tensor& weight) const;
  Tensor& lerp_(const Tensor& end, const Scalar& weight) const;
  Tensor& lerp_(const Tensor& end, const Tensor& weight) const;

  // ---- in-place (bump the version counter; see Note [Version counter]) ----
  // They are const members, as in LibTorch: a Tensor is a handle, and a const handle does not make
  // the elements read-only (`p.grad().zero_()` on the const Tensor& that grad() returns). Only the
  // shared TensorImpl changes, never the handle itself.
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& mul_(const Tensor& other) const;
  Tensor& mul_(const Scalar& other) const;
  Tensor& div_(const Tensor& other) const;
  Tensor& div_(const Scalar& other) const;
  Tensor& relu_() const;
  Tensor& sigmoid_() const;
  Tensor& zero_() const;
  Tensor& fill_(const Scalar& value) const;
  Tensor& copy_(const Tensor& src) const;
  Tensor& clamp_(std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  // Random fills from graft's default generator (or `generator`), not recorded by autograd, as in
  // LibTorch: uniform on [from, to), normal(mean, std), 1 with probability p (else 0), and whole
  // numbers in [from, to) (random_(to): [0, to)).
  Tensor& uniform_(double from = 0, double to = 1, Generator* generator = nullptr) const;
  Tensor& normal_(double mean = 0, double std = 1, Generator* generator = nullptr) const;
  Tensor& bernoulli_(double p = 0.5, Generator* generator = nullptr) const;
  Tensor& random_(int64_t from, int64_t to, Generator* generator = nullptr) const;
  Tensor& random_(int64_t to, Generator* generator = nullptr) const;
  // (also const overloads are not provided: an in-place op changes the tensor it is called on)

  // LibTorch's type string, the backend and the scalar type: "CPUFloatType", "MetaLongType",
  // "UndefinedType" for an undefined tensor.
  std::string toString() const;
  // PyTorch's repr: "tensor([[1., 2.], [3., 4.]], requires_grad=True)" (graft::repr).
  std::string str() const;
  // LibTorch's TensorBase::print(): "[CPUFloatType [2, 3]]" and a newline to std::cerr.
  void print() const;

  TensorImpl& impl() const;
  TensorImpl* unsafe_impl() const { return impl_.get(); }
  TensorImpl* unsafeGetTensorImpl() const { return impl_.get(); }  // LibTorch's spelling
  // Makes this handle undefined (LibTorch's reset()); other handles of the tensor keep it.
  void reset() { impl_.reset(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }

 private:
  Tensor& mut() const { return const_cast<Tensor&>(*this); }  // for the const in-place members
  std::shared_ptr<TensorImpl> impl_;
};

// Writes the tensor in the current print style (Note [Print styles]): LibTorch's form by default.
std::ostream& operator<<(std::ostream& os, const Tensor& t);
// LibTorch's at::print: values in columns that fit `linesize` characters, then "[ CPUFloatType{2,3} ]"
// (Note [LibTorch's tensor print]); print(t) writes to std::cout with linesize 80.
std::ostream& print(std::ostream& stream, const Tensor& tensor, int64_t linesize);
void print(const Tensor& tensor, int64_t linesize = 80);
// PyTorch's repr of the tensor: "tensor([1., 2.], requires_grad=True)".
std::string repr(const Tensor& tensor);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor& operator+=(Tensor& a, const Tensor& b);
Tensor& operator+=(Tensor& a, const Scalar& b);
Tensor& operator-=(Tensor& a, const Tensor& b);
Tensor& operator-=(Tensor& a, const Scalar& b);
Tensor& operator*=(Tensor& a, const Tensor& b);
Tensor& operator*=(Tensor& a, const Scalar& b);
Tensor& operator/=(Tensor& a, const Tensor& b);
Tensor& operator/=(Tensor& a, const Scalar& b);
// Comparisons give bool tensors (gt, lt, ge, le, eq, ne), as in LibTorch: t < 3, t == u.
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator<(const Scalar& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator<=(const Scalar& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator>(const Scalar& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator>=(const Scalar& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Scalar& b);
Tensor operator==(const Scalar& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator!=(const Scalar& a, const Tensor& b);

}  // namespace graft
