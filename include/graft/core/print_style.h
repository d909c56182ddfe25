// How `std::cout << tensor` and `std::cout << module` print (Note [Print styles]).
#pragma once

namespace graft {

// Note [Print styles]
// graft prints tensors and modules in one of two styles, chosen process-wide:
// - PrintStyle::LibTorch (the default): what LibTorch 1.13's operator<< prints, so that a ported
//   program's output does not change with the renaming. A tensor prints as at::print does,
//     " 1  2\n 3  4\n[ CPUFloatType{2,2} ]"
//   (Note [LibTorch's tensor print], src/core/print_libtorch.cpp); a module as
//   "graft::nn::Linear(in_features=3, out_features=4, bias=true)" (torch:: renamed graft::), each
//   module's libtorch_repr() (or its pretty_print override), then, when it has children, "(\n",
//   one "  (name): child" line each, indented, and ")".
// - PrintStyle::Python: PyTorch's repr, "tensor([[1., 2.],\n        [3., 4.]])" and
//   "Linear(in_features=3, out_features=4, bias=True)", children as "(name): ..." lines indented by
//   two spaces: what a PyTorch user reads, and what graft's Python-written fixtures compare with.
// Whatever the style, graft::repr(tensor) and Tensor::str() give the Python form and
// graft::print(stream, tensor, linesize) LibTorch's.
enum class PrintStyle { LibTorch, Python };
void set_print_style(PrintStyle style) noexcept;
PrintStyle print_style() noexcept;

// Sets a style for a scope and restores the previous one.
class PrintStyleGuard {
 public:
  explicit PrintStyleGuard(PrintStyle style) noexcept : previous_(print_style()) { set_print_style(style); }
  ~PrintStyleGuard() { set_print_style(previous_); }
  PrintStyleGuard(const PrintStyleGuard&) = delete;
  PrintStyleGuard& operator=(const PrintStyleGuard&) = delete;

 private:
  PrintStyle previous_;
};

}  // namespace graft
