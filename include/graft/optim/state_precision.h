// How Adam, AdamW and SGD (momentum) hold their per-parameter state: in the parameter's dtype (the
// default), in bfloat16, or in 8 bits with block-wise dynamic quantization. One option on each
// optimiser's options, LibTorch-style:
//
//   using graft::optim::StatePrecision;
//   graft::optim::AdamW opt(model->parameters(), graft::optim::AdamWOptions(1e-3).state_precision(StatePrecision::Int8));
//
// Note [Compact optimizer state]
// The update is always computed in float32: each step reads the state into float32, runs the
// optimiser's own float32 update loop on it (the same bits as at full precision, given the same
// state), and writes the new state back compactly. The parameter's update uses the new state before
// it is rounded, as bitsandbytes' 8-bit optimisers do.
//   Full      the parameter's dtype: exactly PyTorch's optimiser (4 bytes a value for float32).
//   BFloat16  2 bytes a value: each state value rounded to bfloat16, to nearest, ties to even, after
//             every update.
//   Int8      1 byte a value, plus a float32 scale per block of kStateBlockSize (2048) values: the
//             block-wise dynamic quantization of Dettmers et al., "8-bit Optimizers via Block-wise
//             Quantization" (2022). A block's values are divided by its absmax (the largest |value|;
//             0 leaves every value at the code of 0) and each quotient is stored as the index of the
//             nearest of 256 values of a dynamic (tree) map, ties to the lower index; reading a value
//             back is map[code] * absmax in float32. The maps are bitsandbytes' create_dynamic_map:
//             for i = 0..6, the midpoints of linspace(0.1, 1, k_i) scaled by 10^(i-6), plus 0 and 1,
//             sorted; the signed map (Adam's exp_avg, SGD's momentum buffer) takes k_i = 2^i + 1 and
//             each midpoint with both signs, the unsigned one (Adam's exp_avg_sq and max_exp_avg_sq)
//             k_i = 2^(i+1) + 1, positive only. graft computes each value in double and rounds it
//             once to float32 (bitsandbytes computes them in float32 and may differ by an ulp).
//             As in bitsandbytes, a parameter of fewer than kInt8StateMinNumel (4096) values keeps
//             float32 state: its state is small, and small tensors (biases, norms' weights) are where
//             8-bit error hurts most. A block holding a NaN reads back as NaN throughout.
// Compact state applies to float32 parameters; a float64 parameter keeps float64 state.
//
// Stable embeddings. Dettmers et al. keep an embedding layer's optimiser state in 32 bits (with a
// layer norm after the embedding: their StableEmbedding). In graft, put the nn::Embedding weights in
// their own param group at full precision, the rest at Int8:
//   std::vector<graft::optim::OptimizerParamGroup> groups;
//   groups.emplace_back(embedding_params, graft::optim::AdamOptions(1e-3));  // Full
//   groups.emplace_back(other_params, graft::optim::AdamOptions(1e-3).state_precision(StatePrecision::Int8));
//
// The precision is a property of each param group, like lr: change it between steps and the state
// is converted at the parameter's next step. It is not part of the state dict's param_groups (so
// older state dicts load): the state tensors say their form. A state dict holds the compact state
// as it is, under the usual keys (state.<id>.exp_avg is uint8 codes or bfloat16), with the 8-bit
// blocks' scales as state.<id>.<name>_absmax (float32, one value per block); a state loaded at
// another precision than the group's is converted at the next step. Memory accounting
// (memory::stats, the meta device's plan) counts the compact tensors as they are, under
// OptimizerState.
#pragma once

#include <cstdint>
#include <string>

#include "graft/core/error.h"
#include "graft/core/tensor.h"

namespace graft::optim {

enum class StatePrecision : uint8_t { Full, BFloat16, Int8 };

inline constexpr int64_t kStateBlockSize = 2048;     // values per 8-bit block (one absmax each)
inline constexpr int64_t kInt8StateMinNumel = 4096;  // smaller parameters keep float32 state

// "full", "bfloat16", "int8".
inline const char* state_precision_name(StatePrecision p) {
  switch (p) {
    case StatePrecision::BFloat16: return "bfloat16";
    case StatePrecision::Int8: return "int8";
    default: return "full";
  }
}

// The inverse of state_precision_name ("float32" and "fp32" also mean full; "bf16" bfloat16; "8bit"
// int8), for command lines and configuration files; a graft::Error otherwise.
inline StatePrecision state_precision_from_name(const std::string& name) {
  if (name == "full" || name == "float32" || name == "fp32") return StatePrecision::Full;
  if (name == "bfloat16" || name == "bf16") return StatePrecision::BFloat16;
  if (name == "int8" || name == "8bit") return StatePrecision::Int8;
  throw Error("optim::state_precision_from_name", "one of full, bfloat16, int8", "'" + name + "'",
              "name the optimiser state's precision: full (the parameter's dtype), bfloat16 or int8 (8-bit blocks)");
}

namespace detail {

// Visits a state tensor that may be held compactly (uint8 codes, bfloat16 values, 8-bit block
// scales) through ParamStateVisitor::compact when the optimiser base has it: its loader keeps such a
// tensor's dtype (and, with param_shaped false, does not hold its shape to the parameter's); without
// it, as any state tensor.
template <class V>
void visit_compact(V& v, const char* name, Tensor& t, bool required, bool param_shaped = true) {
  if constexpr (requires { v.compact(name, t, required, param_shaped); }) v.compact(name, t, required, param_shaped);
  else v(name, t, required);
}

}  // namespace detail

}  // namespace graft::optim
