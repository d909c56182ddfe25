// Printing tensors in PyTorch's Python layout (graft::repr, Tensor::str, PrintStyle::Python; LibTorch's
// layout is print_libtorch.cpp's) (torch/_tensor_str.py, default print options:
// precision 4, threshold 1000, edgeitems 3, linewidth 80):
//   tensor([[1., 2.],
//           [3., 4.]], requires_grad=True)
//
// Note [Print formatting]
// One formatter is built from every element that will be printed (all of them, or the first and last
// 3 along each dim when the tensor has more than 1000 elements) and gives all elements one width:
//  - integer and bool tensors print their values ("5", "True"), right-aligned;
//  - floating tensors whose nonzero finite values are all integers print as "1." (int mode), in
//    scientific notation when max/min of the nonzero finite magnitudes exceeds 1000 or max > 1e8;
//  - other floating tensors print with 4 decimals, in scientific notation ("1.0000e+10") when the
//    ratio exceeds 1000, max > 1e8 or min < 1e-4.
// nan and inf print as "nan", "inf", "-inf". Suffixes follow the contents: dtype= for dtypes other
// than float32, int64 and bool (graft.float64), grad_fn=<MulBackward0> or requires_grad=True.
#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "core/autograd_interface.h"
#include "core/element_reader.h"
#include "core/format.h"
#include "graft/core/half.h"
#include "graft/core/tensor.h"

namespace graft {

namespace {

constexpr int64_t kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

using detail::ElementReader;

// Python's str.format of a float (core/format.h): 'e' and 'f' with kPrecision decimals, '0' with none.
std::string format_float(double v, char mode, int width) {
  constexpr int p = static_cast<int>(kPrecision);
  if (mode == 'e') return detail::py_scientific(v, p, width);
  return detail::py_fixed(v, mode == 'f' ? p : 0, width);
}

class Formatter {
 public:
  Formatter(const ElementReader& r, const std::vector<int64_t>& offsets) : r_(r) {
    floating_ = is_floating_point(r.dtype);
    if (!floating_) {
      for (int64_t off : offsets) max_width_ = std::max(max_width_, static_cast<int64_t>(plain(off).size()));
      return;
    }
    std::vector<double> vals;
    for (int64_t off : offsets) {
      const double v = r.as_double(off);
      if (std::isfinite(v) && v != 0) vals.push_back(v);
    }
    if (vals.empty()) return;
    double mn = std::fabs(vals[0]), mx = mn;
    for (double v : vals) {
      mn = std::min(mn, std::fabs(v));
      mx = std::max(mx, std::fabs(v));
      if (v != std::ceil(v)) int_mode_ = false;
    }
    if (int_mode_) {
      if (mx / mn > 1000. || mx > 1.e8) {
        sci_mode_ = true;
        for (double v : vals) widen(format_float(v, 'e', 0).size());
      } else {
        for (double v : vals) widen(format_float(v, '0', 0).size() + 1);
      }
    } else {
      if (mx / mn > 1000. || mx > 1.e8 || mn < 1.e-4) {
        sci_mode_ = true;
        for (double v : vals) widen(format_float(v, 'e', 0).size());
      } else {
        for (double v : vals) widen(format_float(v, 'f', 0).size());
      }
    }
  }

  int64_t width() const { return max_width_; }

  std::string format(int64_t off) const {
    std::string s;
    if (!floating_) {
      s = plain(off);
    } else {
      const double v = r_.as_double(off);
      if (sci_mode_) {
        s = format_float(v, 'e', static_cast<int>(max_width_));
      } else if (int_mode_) {
        s = format_float(v, '0', 0);
        if (std::isfinite(v)) s += '.';
      } else {
        s = format_float(v, 'f', 0);
      }
    }
    if (static_cast<int64_t>(s.size()) < max_width_) s.insert(0, static_cast<size_t>(max_width_) - s.size(), ' ');
    return s;
  }

 private:
  std::string plain(int64_t off) const {
    if (r_.dtype == DType::Bool) return r_.as_bool(off) ? "True" : "False";
    return std::to_string(r_.as_int(off));
  }
  void widen(size_t w) { max_width_ = std::max(max_width_, static_cast<int64_t>(w)); }

  ElementReader r_;
  bool floating_ = false;
  bool int_mode_ = true;
  bool sci_mode_ = false;
  int64_t max_width_ = 1;
};

struct Printer {
  IntArrayRef sizes;
  IntArrayRef strides;
  bool summarize = false;

  // Indices along a dim that get printed (-1 marks the "..." gap).
  std::vector<int64_t> shown(int64_t n) const {
    std::vector<int64_t> idx;
    if (summarize && n > 2 * kEdgeItems) {
      for (int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
      idx.push_back(-1);
      for (int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
    } else {
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
    }
    return idx;
  }

  void collect(size_t d, int64_t off, std::vector<int64_t>& out) const {
    if (d == sizes.size()) {
      out.push_back(off);
      return;
    }
    for (int64_t i : shown(sizes[d]))
      if (i >= 0) collect(d + 1, off + i * strides[d], out);
  }

  std::string vector_str(int64_t off, int64_t indent, const Formatter& f) const {
    const size_t d = sizes.size() - 1;
    const int64_t element_length = f.width() + 2;
    const int64_t per_line = std::max<int64_t>(1, (kLineWidth - indent) / element_length);
    std::vector<std::string> data;
    for (int64_t i : shown(sizes[d])) data.push_back(i < 0 ? " ..." : f.format(off + i * strides[d]));
    std::string s = "[";
    for (size_t i = 0; i < data.size(); ++i) {
      if (i > 0) {
        if (static_cast<int64_t>(i) % per_line == 0) {
          s += ",\n";
          s.append(static_cast<size_t>(indent + 1), ' ');
        } else {
          s += ", ";
        }
      }
      s += data[i];
    }
    return s + "]";
  }

  std::string tensor_str(size_t d, int64_t off, int64_t indent, const Formatter& f) const {
    if (sizes.empty()) return f.format(off);
    if (d + 1 == sizes.size()) return vector_str(off, indent, f);
    const int64_t remaining = static_cast<int64_t>(sizes.size() - d);
    std::string sep(1, ',');
    sep.append(static_cast<size_t>(remaining - 1), '\n');
    sep.append(static_cast<size_t>(indent + 1), ' ');
    std::string s = "[";
    bool first = true;
    for (int64_t i : shown(sizes[d])) {
      if (!first) s += sep;
      first = false;
      if (i < 0) s += "...";
      else s += tensor_str(d + 1, off + i * strides[d], indent + 1, f);
    }
    return s + "]";
  }
};

std::string shape_tuple(IntArrayRef s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

// PyTorch's _add_suffixes: a suffix moves to a new line when the current one would pass 80 columns.
std::string add_suffixes(const std::string& body, const std::vector<std::string>& suffixes, int64_t indent) {
  std::string out = body;
  const size_t nl = body.rfind('\n');
  // Python computes len(s) - s.rfind('\n') + 1, where rfind gives -1 when there is no newline.
  int64_t last_line_len = static_cast<int64_t>(body.size()) - (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const auto& suffix : suffixes) {
    const int64_t len = static_cast<int64_t>(suffix.size());
    if (last_line_len + len + 2 > kLineWidth) {
      out += ",\n";
      out.append(static_cast<size_t>(indent), ' ');
      out += suffix;
      last_line_len = indent + len;
    } else {
      out += ", " + suffix;
      last_line_len += len + 2;
    }
  }
  return out + ")";
}

}  // namespace

std::string repr(const Tensor& t) { return t.str(); }

std::string Tensor::str() const {
  if (!defined()) return "[ Tensor (undefined) ]";
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  std::vector<std::string> suffixes;
  if (!device().is_cpu()) suffixes.push_back("device='" + device().str() + "'");
  const DType dt = dtype();
  const std::string dtype_suffix = std::string("dtype=graft.") + dtype_name(dt);
  std::string body;
  if (is_meta()) {  // PyTorch's form: no values to show (Note [Meta device])
    suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dt != kFloat32) suffixes.push_back(dtype_suffix);
    body = "...";
  } else if (numel() == 0) {
    if (dim() != 1) suffixes.push_back("size=" + shape_tuple(sizes()));
    if (dt != kFloat32) suffixes.push_back(dtype_suffix);
    body = "[]";
  } else {
    if (dt != kFloat32 && dt != kInt64 && dt != kBool) suffixes.push_back(dtype_suffix);
    Printer p{sizes(), strides(), numel() > kThreshold};
    const ElementReader reader{static_cast<const char*>(data_ptr()), dt};
    std::vector<int64_t> offsets;
    p.collect(0, 0, offsets);
    const Formatter f(reader, offsets);
    body = p.tensor_str(0, 0, indent, f);
  }
  if (const char* fn = detail::grad_fn_name(*this)) suffixes.push_back(std::string("grad_fn=<") + fn + ">");
  else if (requires_grad()) suffixes.push_back("requires_grad=True");
  return add_suffixes(prefix + body, suffixes, indent);
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (print_style() == PrintStyle::Python) return os << t.str();
  return print(os, t, 80);
}

}  // namespace graft
