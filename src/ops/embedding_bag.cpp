// bilinear and embedding_bag (issue 32), PyTorch 1.13's semantics, each a composite of recorded
// ops (matmul; index_select, index_add, max, where), so their first and second derivatives are
// those ops' and nothing here writes a backward. The bags' bookkeeping (which entry belongs to
// which bag, which are padding) is plain index arithmetic on the index values, read through the
// indexing kernels' read_indices (src/kernels/indexing.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../kernels/indexing.h"
#include "graft/autograd/grad_mode.h"
#include "graft/core/factory.h"
#include "graft/core/shape.h"
#include "graft/ops/ops.h"

namespace graft {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string describe(const Tensor& t, const char* what) {
  return t.defined() ? std::string("a ") + dtype_name(t.dtype()) + " " + what + " of shape " + shape_str(t.sizes())
                     : std::string("an undefined ") + what;
}

// The values of an int64 / int32 tensor in row-major order (no recording).
std::vector<int64_t> index_values(const Tensor& t) {
  NoGradGuard ng;
  Tensor d = t.detach();
  if (d.dtype() != kInt64) d = d.to(kInt64);
  return kernels::indexing::read_indices(d.contiguous().reshape({-1}));
}

// A 1-D int64 tensor holding v.
Tensor int64_tensor(const std::vector<int64_t>& v) {
  Tensor t = make_empty({static_cast<int64_t>(v.size())}, kInt64);
  kernels::indexing::write_indices(v, t);
  return t;
}

bool is_index_dtype(const Tensor& t) { return t.dtype() == kInt64 || t.dtype() == kInt32; }

}  // namespace

// ---- bilinear ----
// y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]: with the leading dims
// flattened to N rows, (x1 (N, in1) @ weight as (in1, out in2)) gives t (N, out, in2), and
// t @ x2 (N, in2, 1) the (N, out) result.
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias) {
  const char* op = "bilinear";
  GRAFT_CHECK(input1.defined() && input2.defined() && weight.defined(), op, "defined input1, input2 and weight",
              !input1.defined()   ? "an undefined input1"
              : !input2.defined() ? "an undefined input2"
                                  : "an undefined weight",
              "pass the two inputs and the weight (out_features, in1_features, in2_features)");
  if (is_integral(input1.dtype(), false) && input2.dtype() == input1.dtype() && weight.dtype() == input1.dtype() &&
      (!bias.defined() || bias.dtype() == input1.dtype())) {
    // Integer tensors multiply exactly in PyTorch; here through float64, exact while the products
    // and sums stay below 2^53, and the integer result converted back.
    auto f64 = [](const Tensor& t) { return t.defined() ? t.to(kFloat64) : t; };
    return bilinear(f64(input1), f64(input2), f64(weight), f64(bias)).to(input1.dtype());
  }
  GRAFT_CHECK(input1.is_floating_point() && input2.dtype() == input1.dtype() && weight.dtype() == input1.dtype() &&
                  (!bias.defined() || bias.dtype() == input1.dtype()),
              op, "floating-point input1, input2, weight and bias of one dtype",
              std::string(dtype_name(input1.dtype())) + " input1, " + dtype_name(input2.dtype()) + " input2, " +
                  dtype_name(weight.dtype()) + " weight" +
                  (bias.defined() ? std::string(", ") + dtype_name(bias.dtype()) + " bias" : std::string()),
              "convert them to one floating-point dtype, e.g. .to(graft::kFloat32)");
  GRAFT_CHECK(input1.dim() >= 1 && input1.dim() == input2.dim(), op,
              "input1 and input2 with the same number of dimensions (at least 1)",
              "input1 of shape " + shape_str(input1.sizes()) + " and input2 of shape " + shape_str(input2.sizes()),
              "input dimensions do not match: the inputs are (..., in1_features) and (..., in2_features)");
  for (int64_t d = 0; d + 1 < input1.dim(); ++d)
    GRAFT_CHECK(input1.size(d) == input2.size(d), op, "input1 and input2 with the same batch dimensions",
                "input1 of shape " + shape_str(input1.sizes()) + " and input2 of shape " + shape_str(input2.sizes()) +
                    " (dim " + num(d) + ": " + num(input1.size(d)) + " and " + num(input2.size(d)) + ")",
                "input batch dimensions do not match; the leading dims are not broadcast");
  GRAFT_CHECK(weight.dim() == 3, op, "a 3-D weight (out_features, in1_features, in2_features)",
              "a weight of shape " + shape_str(weight.sizes()), "pass a weight of shape (out, in1, in2)");
  const int64_t out = weight.size(0), in1 = weight.size(1), in2 = weight.size(2);
  GRAFT_CHECK(input1.size(-1) == in1, op, "input1's last dim equal to weight.size(1) = " + num(in1),
              "input1 of shape " + shape_str(input1.sizes()) + " and weight of shape " + shape_str(weight.sizes()),
              "input1 size does not match weight size");
  GRAFT_CHECK(input2.size(-1) == in2, op, "input2's last dim equal to weight.size(2) = " + num(in2),
              "input2 of shape " + shape_str(input2.sizes()) + " and weight of shape " + shape_str(weight.sizes()),
              "input2 size does not match weight size");
  GRAFT_CHECK(!bias.defined() || (bias.dim() == 1 && bias.size(0) == out), op,
              "a bias of shape [" + num(out) + "] (weight.size(0)) or none",
              "a bias of shape " + shape_str(bias.sizes()), "bias size does not match weight size");
  Shape out_shape;
  int64_t n = 1;
  for (int64_t d = 0; d + 1 < input1.dim(); ++d) {
    out_shape.push_back(input1.size(d));
    n *= input1.size(d);
  }
  out_shape.push_back(out);
  const Tensor x1 = input1.reshape({n, in1});
  const Tensor x2 = input2.reshape({n, in2});
  const Tensor w = weight.permute({1, 0, 2}).reshape({in1, out * in2});
  const Tensor t = matmul(x1, w).reshape({n, out, in2});
  Tensor y = matmul(t, x2.unsqueeze(2)).reshape({n, out});
  if (bias.defined()) y = y + bias;
  return y.reshape(out_shape);
}

// ---- embedding_bag ----
// The kept entries (not padding, inside a bag) in bag order: their rows of weight (index_select),
// scaled by their per-sample weights, summed into their bag (index_add into zeros (B, dim)) and
// divided by the bag's count for a mean. For a max, the kept rows are laid out as (B, Lmax, dim),
// short bags filled with -inf rows, max over dim 1 (which takes the first maximum, as ATen's loop
// does), and empty bags set to 0. scale_grad_by_freq: r.detach() + (r - r.detach()) / count is r's
// value exactly with r's gradient divided by count.
Tensor embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets, bool scale_grad_by_freq,
                     int64_t mode, bool sparse, const Tensor& per_sample_weights, bool include_last_offset,
                     std::optional<int64_t> padding_idx) {
  const char* op = "embedding_bag";
  detail::MetaOpScope meta_scope(op, {&weight, &indices, &offsets, &per_sample_weights});  // Note [Meta device]
  GRAFT_CHECK(weight.defined() && weight.dim() == 2 && weight.is_floating_point(), op,
              "a floating-point 2-D weight (num_embeddings, embedding_dim)", describe(weight, "weight"),
              "pass a float32 or float64 weight of shape (num_embeddings, embedding_dim)");
  GRAFT_CHECK(indices.defined() && is_index_dtype(indices), op, "int64 or int32 indices", describe(indices, "input"),
              "convert the indices with .to(graft::kInt64)");
  GRAFT_CHECK(indices.dim() == 1 || indices.dim() == 2, op, "1-D indices with offsets, or 2-D indices (bags, length)",
              describe(indices, "input"), "flatten the bags into one 1-D input and pass where each starts as offsets");
  GRAFT_CHECK(mode >= 0 && mode <= 2, op, "mode 0 (sum), 1 (mean) or 2 (max)", "mode " + num(mode),
              "pick one of the three modes");
  GRAFT_CHECK(!sparse, op, "sparse = false", "sparse = true",
              "graft has no sparse tensors: the weight's gradient is dense; set sparse(false)");
  GRAFT_CHECK(!(scale_grad_by_freq && mode == 2), op, "scale_grad_by_freq = false with mode max",
              "scale_grad_by_freq = true with mode max",
              "max mode does not support scaling the gradient by the frequency");
  const int64_t num_rows = weight.size(0), dim = weight.size(1);
  if (indices.dim() == 2) {
    GRAFT_CHECK(!offsets.defined(), op, "no offsets with a 2-D input", describe(offsets, "offsets"),
                "a 2-D input is a batch of bags of one length: leave offsets undefined, or flatten the input");
  } else {
    GRAFT_CHECK(offsets.defined() && offsets.dim() == 1 && is_index_dtype(offsets), op,
                "1-D int64 or int32 offsets with a 1-D input", describe(offsets, "offsets"),
                "pass where each bag starts in the input (offsets[0] = 0)");
  }
  if (per_sample_weights.defined()) {
    GRAFT_CHECK(mode == 0, op, "per_sample_weights with mode sum only",
                std::string("per_sample_weights with mode ") + (mode == 1 ? "mean" : "max"),
                "per_sample_weights is only supported for mode sum");
    GRAFT_CHECK(per_sample_weights.dtype() == weight.dtype(), op,
                std::string("per_sample_weights of the weight's dtype ") + dtype_name(weight.dtype()),
                describe(per_sample_weights, "per_sample_weights"), "convert per_sample_weights to the weight's dtype");
    GRAFT_CHECK(per_sample_weights.sizes() == indices.sizes(), op,
                "per_sample_weights of the input's shape " + shape_str(indices.sizes()),
                describe(per_sample_weights, "per_sample_weights"), "pass one weight per input entry");
  }
  std::optional<int64_t> pad = padding_idx;
  if (pad) {
    GRAFT_CHECK(*pad >= -num_rows && *pad < num_rows, op,
                "padding_idx in [" + num(-num_rows) + ", " + num(num_rows) + ")",
                "padding_idx " + num(*pad) + " for num_embeddings " + num(num_rows),
                "pick padding_idx among the rows of the weight, or leave it unset");
    if (*pad < 0) *pad += num_rows;
  }
  const int64_t n = indices.numel();
  const int64_t fixed_len = indices.dim() == 2 ? indices.size(1) : 0;
  const int64_t num_offsets = indices.dim() == 2 ? indices.size(0) : offsets.size(0);
  GRAFT_CHECK(!include_last_offset || num_offsets >= 1, op, "at least one offset with include_last_offset",
              "no offsets", "include_last_offset takes the end of the last bag as a last offset");
  const int64_t bags = include_last_offset ? num_offsets - 1 : num_offsets;
  const Tensor flat_psw = per_sample_weights.defined() ? per_sample_weights.reshape({-1}) : Tensor();

  if (meta_scope.meta()) {
    // Note [Meta device]: no values, so every entry is taken as kept in bag 0; the graph has the
    // same ops and shapes as the CPU one's sum.
    const Tensor ids = zeros({n}, kInt64), bag_of = zeros({n}, kInt64);
    Tensor rows = index_select(weight, 0, ids);
    if (flat_psw.defined()) rows = rows * flat_psw.unsqueeze(1);
    return index_add(zeros({bags, dim}, weight.dtype()), 0, bag_of, rows);
  }

  // Bag b holds the entries [starts[b], starts[b + 1]) (the last one up to n, or up to the last
  // offset with include_last_offset).
  const std::vector<int64_t> ids = index_values(indices);
  for (int64_t v : ids)
    GRAFT_CHECK(v >= 0 && v < num_rows, op, "indices in [0, " + num(num_rows) + ")",
                "index " + num(v) + ", out of range for num_embeddings " + num(num_rows),
                "index out of range: every index picks a row of the weight");
  std::vector<int64_t> starts;
  if (indices.dim() == 2) {
    for (int64_t b = 0; b < num_offsets; ++b) starts.push_back(b * fixed_len);
  } else {
    starts = index_values(offsets);
    if (!starts.empty())
      GRAFT_CHECK(starts[0] == 0, op, "offsets[0] == 0 (the first bag starts at the input's start)",
                  "offsets[0] = " + num(starts[0]), "offsets[0] has to be 0");
    for (size_t b = 1; b < starts.size(); ++b)
      GRAFT_CHECK(starts[b] >= starts[b - 1], op, "non-decreasing offsets",
                  "offsets[" + num(static_cast<int64_t>(b)) + "] = " + num(starts[b]) + " after offsets[" +
                      num(static_cast<int64_t>(b) - 1) + "] = " + num(starts[b - 1]),
                  "offsets hold where each bag starts, in order (an empty bag repeats its start)");
    if (!starts.empty())
      GRAFT_CHECK(starts.back() <= n, op, "offsets[-1] <= the input's length " + num(n),
                  "offsets[-1] = " + num(starts.back()), "offsets[-1] can not be greater than input's length");
  }
  std::vector<int64_t> kept_pos, kept_id, kept_bag, count(static_cast<size_t>(bags), 0);
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t end = b + 1 < num_offsets ? starts[static_cast<size_t>(b) + 1] : n;
    for (int64_t k = starts[static_cast<size_t>(b)]; k < end; ++k) {
      const int64_t id = ids[static_cast<size_t>(k)];
      if (pad && id == *pad) continue;
      kept_pos.push_back(k);
      kept_id.push_back(id);
      kept_bag.push_back(b);
      ++count[static_cast<size_t>(b)];
    }
  }
  const int64_t kept = static_cast<int64_t>(kept_id.size());
  const DType dt = weight.dtype();
  Tensor rows = index_select(weight, 0, int64_tensor(kept_id));
  if (scale_grad_by_freq) {
    std::vector<int64_t> freq(static_cast<size_t>(num_rows), 0);
    for (int64_t v : ids) ++freq[static_cast<size_t>(v)];
    std::vector<int64_t> kept_freq(static_cast<size_t>(kept));
    for (int64_t j = 0; j < kept; ++j)
      kept_freq[static_cast<size_t>(j)] = freq[static_cast<size_t>(kept_id[static_cast<size_t>(j)])];
    const Tensor scale = reciprocal(int64_tensor(kept_freq).to(dt)).reshape({kept, 1});
    const Tensor value = rows.detach();
    rows = value + (rows - value) * scale;
  }
  if (flat_psw.defined()) rows = rows * index_select(flat_psw, 0, int64_tensor(kept_pos)).unsqueeze(1);

  if (mode != 2) {
    Tensor out = index_add(zeros({bags, dim}, dt), 0, int64_tensor(kept_bag), rows);
    if (mode == 1) {
      std::vector<int64_t> denom(count.size());
      for (size_t b = 0; b < count.size(); ++b) denom[b] = std::max<int64_t>(count[b], 1);
      out = out / int64_tensor(denom).to(dt).reshape({bags, 1});
    }
    return out;
  }
  // max: slot (b, j) holds kept entry first[b] + j, or the -inf row at position `kept`.
  int64_t longest = 1;
  for (int64_t c : count) longest = std::max(longest, c);
  std::vector<int64_t> slot(static_cast<size_t>(bags * longest), kept);
  std::vector<int64_t> nonempty(static_cast<size_t>(bags));
  int64_t first = 0;
  for (int64_t b = 0; b < bags; ++b) {
    const int64_t c = count[static_cast<size_t>(b)];
    for (int64_t j = 0; j < c; ++j) slot[static_cast<size_t>(b * longest + j)] = first + j;
    nonempty[static_cast<size_t>(b)] = c > 0;
    first += c;
  }
  const Tensor padded = cat({rows, full({1, dim}, -std::numeric_limits<double>::infinity(), dt)}, 0);
  const Tensor laid = index_select(padded, 0, int64_tensor(slot)).reshape({bags, longest, dim});
  const Tensor maxima = std::get<0>(max(laid, 1));
  const Tensor has_rows = ne(int64_tensor(nonempty).reshape({bags, 1}), 0);
  return where(has_rows, maxima, 0);
}

}  // namespace graft
