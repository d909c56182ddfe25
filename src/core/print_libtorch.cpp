// Printing tensors as LibTorch 1.13 does (at::print, Tensor::toString, TensorBase::print), for the
// default print style (Note [Print styles]), and the print style itself.
//
// Note [LibTorch's tensor print]
// The values are read as float64, in row-major order, and one format serves them all:
//  - int mode when every finite value is a whole number: plain numbers (the stream's own default
//    float format, so 1e+09 style past its precision), width = digits of the largest + 1; in
//    scientific notation with 4 decimals (width 11) when the largest has more than 9 digits.
//  - otherwise, with d(x) = floor(log10 |x|) + 1 the digits before the point: scientific (width 11,
//    12 when an exponent has three digits) when d(max) - d(min) > 4; else fixed with 4 decimals,
//    width d(max) + 6 (7 when d(max) is 0), and when d(max) > 5 or d(max) < 0 the values are divided
//    by a scale 10^(d(max) - 1) printed on a line of its own ("1e+06 *"), width 7.
//  Trap, kept for LibTorch's sake: the maximum starts at the first finite value's magnitude and then
//  rises only for values greater than it, compared signed, so a negative value after the first
//  never widens the columns (it is printed wider than its column).
// A 0-dim tensor prints its value in the stream's default float format; a vector one value per
// line; a matrix in rows, its columns split into blocks of (linesize - indent) / (width + 1)
// ("Columns 1 to 8"); more dims as "(i,j,.,.) = " matrices indented by one space, the first index
// counting fastest. Last comes
// "[ CPUFloatType{2,3} ]" (the type string and the sizes). The stream's format flags, precision and
// width are as they were afterwards.
#include <atomic>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "core/element_reader.h"
#include "graft/core/tensor.h"

namespace graft {

namespace {

std::atomic<PrintStyle> g_print_style{PrintStyle::LibTorch};

// Restores a stream's format flags, precision and width.
class StreamStateGuard {
 public:
  explicit StreamStateGuard(std::ostream& os) : os_(os), flags_(os.flags()), precision_(os.precision()), width_(os.width()) {}
  ~StreamStateGuard() {
    os_.flags(flags_);
    os_.precision(precision_);
    os_.width(width_);
  }
  StreamStateGuard(const StreamStateGuard&) = delete;
  StreamStateGuard& operator=(const StreamStateGuard&) = delete;

 private:
  std::ostream& os_;
  std::ios_base::fmtflags flags_;
  std::streamsize precision_, width_;
};

// The tensor's elements as float64, row-major.
std::vector<double> row_major_values(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  const detail::ElementReader reader{static_cast<const char*>(t.data_ptr()), t.dtype()};
  const IntArrayRef sizes = t.sizes(), strides = t.strides();
  const int64_t nd = t.dim();
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  int64_t offset = 0;
  for (int64_t n = 0; n < t.numel(); ++n) {
    out.push_back(reader.as_double(offset));
    for (int64_t d = nd - 1; d >= 0; --d) {  // odometer over the sizes, moving the offset by strides
      const auto du = static_cast<size_t>(d);
      if (++index[du] < sizes[du]) {
        offset += strides[du];
        break;
      }
      offset -= (sizes[du] - 1) * strides[du];
      index[du] = 0;
    }
  }
  return out;
}

struct ColumnLayout {
  double scale = 1;   // values are printed divided by it
  int64_t width = 0;  // each value's column width
};

// Digits before the decimal point of a magnitude: floor(log10 x) + 1, and 1 for 0.
double digits(double magnitude) { return magnitude != 0 ? std::floor(std::log10(magnitude)) + 1 : 1; }

// Chooses the format of `n` values (Note [LibTorch's tensor print]), setting the stream's float
// notation and precision; returns the scale and the column width.
ColumnLayout choose_layout(std::ostream& os, const double* v, int64_t n) {
  ColumnLayout column_layout;
  if (n == 0) return column_layout;
  bool int_mode = true;
  for (int64_t i = 0; i < n && int_mode; ++i)
    if (std::isfinite(v[i]) && v[i] != std::ceil(v[i])) int_mode = false;
  int64_t first = 0;
  while (first < n && !std::isfinite(v[first])) ++first;
  double exp_min = 1, exp_max = 1;
  if (first < n) {
    double lo = std::fabs(v[first]), hi = lo;
    for (int64_t i = first; i < n; ++i) {
      if (!std::isfinite(v[i])) continue;
      lo = std::min(lo, std::fabs(v[i]));
      if (v[i] > hi) hi = v[i];  // signed on purpose: the trap in the Note
    }
    exp_min = digits(lo);
    exp_max = digits(hi);
  }
  if (int_mode) {
    if (exp_max > 9) {
      column_layout.width = 11;
      os << std::scientific << std::setprecision(4);
    } else {
      column_layout.width = static_cast<int64_t>(exp_max) + 1;
      os.unsetf(std::ios_base::floatfield);
    }
  } else if (exp_max - exp_min > 4) {
    column_layout.width = std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99 ? 12 : 11;
    os << std::scientific << std::setprecision(4);
  } else {
    if (exp_max > 5 || exp_max < 0) {
      column_layout.width = 7;
      column_layout.scale = std::pow(10, exp_max - 1);
    } else {
      column_layout.width = exp_max == 0 ? 7 : static_cast<int64_t>(exp_max) + 6;
    }
    os << std::fixed << std::setprecision(4);
  }
  return column_layout;
}

void print_scale(std::ostream& os, double scale) {
  const StreamStateGuard guard(os);
  os.unsetf(std::ios_base::floatfield);
  os << scale << " *\n";
}

void indent_by(std::ostream& os, int64_t n) {
  for (int64_t i = 0; i < n; ++i) os << ' ';
}

// One matrix of `rows` x `cols` row-major values, in blocks of columns that fit the line.
void print_matrix(std::ostream& os, const double* v, int64_t rows, int64_t cols, int64_t linesize, int64_t indent) {
  const ColumnLayout column_layout = choose_layout(os, v, rows * cols);
  indent_by(os, indent);
  const int64_t per_line = (linesize - indent) / (column_layout.width + 1);
  for (int64_t first = 0; first < cols;) {
    const int64_t last = first + per_line <= cols ? first + per_line - 1 : cols - 1;
    if (per_line < cols) {
      if (first != 0) os << '\n';
      os << "Columns " << first + 1 << " to " << last + 1;
      indent_by(os, indent);
    }
    if (column_layout.scale != 1) {
      print_scale(os, column_layout.scale);
      indent_by(os, indent);
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = first; c <= last; ++c) {
        os << std::setw(static_cast<int>(column_layout.width)) << v[r * cols + c] / column_layout.scale;
        if (c != last) {
          os << ' ';
          continue;
        }
        os << '\n';
        if (r != rows - 1) {
          indent_by(os, indent);
          if (column_layout.scale != 1) os << ' ';
        }
      }
    }
    first = last + 1;
  }
}

// Three or more dims: each trailing matrix under its "(i,j,.,.) = " heading. Trap: LibTorch counts
// the leading indices with the first one fastest, (1,1), (2,1), (1,2), (2,2), not in memory order.
void print_slices(std::ostream& os, const std::vector<double>& v, IntArrayRef sizes, int64_t linesize) {
  const size_t lead = sizes.size() - 2;
  const int64_t rows = sizes[lead], cols = sizes[lead + 1];
  const auto matrix = static_cast<size_t>(rows * cols);
  const size_t count = v.size() / matrix;
  std::vector<int64_t> index(lead, 0);
  for (size_t slice = 0; slice < count; ++slice) {
    if (slice != 0) os << '\n';
    os << '(';
    size_t offset = 0;
    for (size_t d = 0; d < lead; ++d) {
      os << index[d] + 1 << ',';
      offset = offset * static_cast<size_t>(sizes[d]) + static_cast<size_t>(index[d]);
    }
    os << ".,.) = \n";
    print_matrix(os, v.data() + offset * matrix, rows, cols, linesize, 1);
    for (size_t d = 0; d < lead; ++d) {  // the next heading: the first index fastest
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

void set_print_style(PrintStyle style) noexcept { g_print_style.store(style, std::memory_order_relaxed); }
PrintStyle print_style() noexcept { return g_print_style.load(std::memory_order_relaxed); }

std::string Tensor::toString() const {
  if (!defined()) return "UndefinedType";
  return std::string(is_meta() ? "Meta" : "CPU") + kDTypeTable[static_cast<size_t>(dtype())].scalar_type_name + "Type";
}

void Tensor::print() const {
  if (!defined()) {
    std::cerr << "[UndefinedTensorImpl]" << std::endl;
    return;
  }
  std::cerr << "[" << toString() << " " << sizes() << "]" << std::endl;
}

std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize) {
  const StreamStateGuard guard(os);
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  const IntArrayRef sizes = t.sizes();
  // A meta tensor has no values (Note [Meta device]): only its type and sizes are printed.
  if (!t.is_meta() && t.numel() > 0) {
    const std::vector<double> v = row_major_values(t);
    if (t.dim() == 0) {
      os.unsetf(std::ios_base::floatfield);
      os << v[0] << '\n';
    } else if (t.dim() == 1) {
      const ColumnLayout column_layout = choose_layout(os, v.data(), static_cast<int64_t>(v.size()));
      if (column_layout.scale != 1) print_scale(os, column_layout.scale);
      for (double x : v) os << std::setw(static_cast<int>(column_layout.width)) << x / column_layout.scale << '\n';
    } else if (t.dim() == 2) {
      print_matrix(os, v.data(), sizes[0], sizes[1], linesize, 0);
    } else {
      print_slices(os, v, sizes, linesize);
    }
  }
  os << "[ " << t.toString() << '{';
  for (size_t d = 0; d < sizes.size(); ++d) os << (d ? "," : "") << sizes[d];
  return os << "} ]";
}

void print(const Tensor& tensor, int64_t linesize) { print(std::cout, tensor, linesize); }

}  // namespace graft
