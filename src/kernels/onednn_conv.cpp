// float32 2-D convolution on oneDNN (see onednn_conv.h).
//
// Note [Convolution backends]
// graft has two convolution backends. im2col + OpenBLAS gemm (src/kernels/conv.cpp) serves every
// dtype, dimension and shape; oneDNN (GRAFT_WITH_ONEDNN, Debian's libdnnl 2.6, the same library
// LibTorch 1.13 runs its CPU convolutions on) serves float32 2-D convolutions with at least
// kMinChannels input and output channels per group. Measured on this project's 2-core AVX-512
// machine (BENCHMARKS.md, "Convolution backends"): for the CNN's second layer, (64, 32, 13, 13) *
// (64, 32, 3, 3), forward + input gradient + weight gradient take about 17 ms with im2col (its
// gemms alone 8.8 ms at 64 x 121 x 288 per sample, the column transforms most of the rest) and
// about 7 ms with oneDNN's AVX-512 direct kernels on blocked layouts (nChw16c), reorders included;
// for the CNN's first layer, one input channel, im2col takes 2.6 ms and LibTorch's oneDNN path 9 ms.
//
// How it is called. oneDNN picks its fastest layouts (format_tag::any); each call reorders the
// plain NCHW operands into them and the result back, which costs a small fraction of the
// convolution. Primitives are built once per shape and kept (a small cache under a mutex); they
// may run concurrently from several threads, each call with its own stream, layouts and scratchpad.
// Every call runs oneDNN single-threaded (its OpenMP team size is set to 1 for the call and put
// back after): graft's conv kernels split the batch over graft's pool in pieces that depend on the
// sizes only, so the bits never depend on the thread count. oneDNN computes each sample of a
// forward or input-gradient call the same way whatever the number of samples in the call, and a
// weight-gradient call sums its samples in a fixed order, so conv.cpp's fixed blocks
// (Note [Convolution weight gradient in blocks]) stay deterministic.
#include "onednn_conv.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "graft/core/error.h"
#include "graft/core/storage.h"

#if GRAFT_WITH_ONEDNN
#include <dnnl.hpp>
extern "C" {
// libgomp's API (oneDNN's OpenMP runtime), declared here so that graft need not compile with
// -fopenmp: graft's own code has no OpenMP regions.
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}
#endif

namespace graft::kernels::onednn {

#if GRAFT_WITH_ONEDNN

namespace {
// Fewer channels than this per group (the CNN's first layer has 1) and im2col wins.
constexpr int64_t kMinChannels = 16;

bool env_enabled() {
  const char* v = std::getenv("GRAFT_CONV_BACKEND");
  return v == nullptr || std::string(v) != "im2col";
}

using dnnl::memory;
using Tag = memory::format_tag;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// oneDNN's right (bottom) padding for PyTorch's symmetric padding: whatever makes the output
// size come out as PyTorch's floor formula gives it (smaller than the left one when the stride
// drops the last positions).
int64_t pad_end(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t out) {
  return (out - 1) * s + (k - 1) * d + 1 - in - p;
}

enum class Pass : int64_t { forward, backward_data, backward_weights };

// One pass of one shape: its primitive, and the plain layouts with their reorders to and from the
// primitive's own layouts (no reorder where they agree).
struct Plan {
  memory::desc plain_x, plain_w, plain_y;     // NCHW, (G)OIHW, NCHW
  memory::desc x_desc, w_desc, y_desc;        // the primitive's
  memory::desc scratch;
  dnnl::primitive prim;
  bool has_bias = false;
};

struct DnnlDims {
  memory::dims x, w, y, stride, dilation, pad_l, pad_r;
};

DnnlDims dims_of(const ConvShape& s, int64_t n) {
  const Conv2dGeometry& g = s.geo;
  const int64_t G = s.groups, C = g.channels, O = s.out_channels;
  DnnlDims d;
  d.x = {n, C, g.height, g.width};
  d.w = G == 1 ? memory::dims{O, C, g.kernel_h, g.kernel_w} : memory::dims{G, O / G, C / G, g.kernel_h, g.kernel_w};
  d.y = {n, O, g.out_h, g.out_w};
  d.stride = {g.stride_h, g.stride_w};
  d.dilation = {g.dilation_h - 1, g.dilation_w - 1};  // oneDNN counts the gaps
  d.pad_l = {g.pad_h, g.pad_w};
  d.pad_r = {pad_end(g.height, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, g.out_h),
             pad_end(g.width, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, g.out_w)};
  return d;
}

dnnl::convolution_forward::primitive_desc forward_pd(const DnnlDims& d, bool bias, const dnnl::primitive_attr& attr) {
  const auto f32 = memory::data_type::f32;
  const memory::desc x(d.x, f32, Tag::any), w(d.w, f32, Tag::any), y(d.y, f32, Tag::any);
  const memory::desc b = bias ? memory::desc({d.y[1]}, f32, Tag::x) : memory::desc();
  const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, x,
                                             w, b, y, d.stride, d.dilation, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, attr, cpu_engine());
}

Plan make_plan(Pass pass, const ConvShape& s, int64_t n, bool bias) {
  const DnnlDims d = dims_of(s, n);
  const auto f32 = memory::data_type::f32;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // one scratchpad per call: concurrent calls
  Plan p;
  p.plain_x = memory::desc(d.x, f32, Tag::nchw);
  p.plain_w = memory::desc(d.w, f32, s.groups == 1 ? Tag::oihw : Tag::goihw);
  p.plain_y = memory::desc(d.y, f32, Tag::nchw);
  p.has_bias = bias;
  const auto fwd = forward_pd(d, bias && pass == Pass::forward, attr);
  if (pass == Pass::forward) {
    p.x_desc = fwd.src_desc();
    p.w_desc = fwd.weights_desc();
    p.y_desc = fwd.dst_desc();
    p.scratch = fwd.scratchpad_desc();
    p.prim = dnnl::convolution_forward(fwd);
  } else if (pass == Pass::backward_data) {
    const memory::desc x(d.x, f32, Tag::any), w(d.w, f32, Tag::any), y(d.y, f32, Tag::any);
    const dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, x, w, y, d.stride,
                                                     d.dilation, d.pad_l, d.pad_r);
    const dnnl::convolution_backward_data::primitive_desc pd(desc, attr, cpu_engine(), fwd);
    p.x_desc = pd.diff_src_desc();
    p.w_desc = pd.weights_desc();
    p.y_desc = pd.diff_dst_desc();
    p.scratch = pd.scratchpad_desc();
    p.prim = dnnl::convolution_backward_data(pd);
  } else {
    const memory::desc x(d.x, f32, Tag::any), w(d.w, f32, Tag::any), y(d.y, f32, Tag::any);
    const dnnl::convolution_backward_weights::desc desc(dnnl::algorithm::convolution_direct, x, w, y, d.stride,
                                                        d.dilation, d.pad_l, d.pad_r);
    const dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, cpu_engine(), fwd);
    p.x_desc = pd.src_desc();
    p.w_desc = pd.diff_weights_desc();
    p.y_desc = pd.diff_dst_desc();
    p.scratch = pd.scratchpad_desc();
    p.prim = dnnl::convolution_backward_weights(pd);
  }
  return p;
}

// The plans built so far, by pass and shape. Shapes in a program are few (each layer, a couple of
// chunk sizes); the cache is emptied if it ever holds kMaxPlans.
using Key = std::array<int64_t, 17>;
constexpr size_t kMaxPlans = 512;

std::shared_ptr<const Plan> plan_for(Pass pass, const ConvShape& s, int64_t n, bool bias) {
  const Conv2dGeometry& g = s.geo;
  const Key key{static_cast<int64_t>(pass), n, g.channels, g.height, g.width, s.out_channels, s.groups,
                g.kernel_h, g.kernel_w, g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dilation_h, g.dilation_w,
                bias, 0};
  static std::mutex mu;
  static std::map<Key, std::shared_ptr<const Plan>> plans;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(key);
    if (it != plans.end()) return it->second;
  }
  auto plan = std::make_shared<const Plan>(make_plan(pass, s, n, bias));  // outside the lock: slow
  std::lock_guard<std::mutex> lock(mu);
  if (plans.size() >= kMaxPlans) plans.clear();
  return plans.emplace(key, std::move(plan)).first->second;
}

// oneDNN's OpenMP team size is 1 for the guard's lifetime, on this thread (each thread outside
// OpenMP has its own setting).
class SingleThread {
 public:
  SingleThread() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~SingleThread() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }
  SingleThread(const SingleThread&) = delete;
  SingleThread& operator=(const SingleThread&) = delete;

 private:
  int saved_;
};

// A plain buffer seen in the primitive's layout `want`: the buffer itself when the layouts agree,
// else a new memory that `in` (true: an operand) is reordered into now, or that (false: a result)
// is reordered back into the buffer by finish().
// The buffers of the primitive's layouts and its scratchpad come from graft's allocator: reused
// from its cache (a fresh allocation per call costs page faults worth a tenth of the convolution),
// and counted in graft's memory accounting under the running op, like any temporary.
struct Operand {
  memory plain, used;
  std::unique_ptr<Storage> buffer;
  bool reordered = false;
};

std::unique_ptr<Storage> buffer_for(const memory::desc& d) {
  const size_t bytes = d.get_size();
  return bytes == 0 ? nullptr : std::make_unique<Storage>(bytes, cpu_allocator());
}

Operand bind(const memory::desc& plain_desc, const memory::desc& want, const float* data, bool in,
             dnnl::stream& st) {
  Operand o;
  o.plain = memory(plain_desc, cpu_engine(), const_cast<float*>(data));
  if (plain_desc == want) {
    o.used = o.plain;
    return o;
  }
  o.buffer = buffer_for(want);
  o.used = memory(want, cpu_engine(), o.buffer ? o.buffer->data : nullptr);
  o.reordered = true;
  if (in) dnnl::reorder(o.plain, o.used).execute(st, o.plain, o.used);
  return o;
}

void finish(Operand& o, dnnl::stream& st) {
  if (o.reordered) dnnl::reorder(o.used, o.plain).execute(st, o.used, o.plain);
}

template <class Fn>
void run_guarded(const char* op, Fn&& fn) {
  try {
    SingleThread one;
    fn();
  } catch (const dnnl::error& e) {
    throw Error(op, std::string("oneDNN failed: ") + e.what() +
                        " (set GRAFT_CONV_BACKEND=im2col to use graft's im2col backend instead)");
  }
}

}  // namespace

bool enabled() {
  static const bool on = env_enabled();
  return on;
}

bool use_for(const ConvShape& s) {
  if (!enabled()) return false;
  const Conv2dGeometry& g = s.geo;
  if (g.channels / s.groups < kMinChannels || s.out_channels / s.groups < kMinChannels) return false;
  // oneDNN takes no negative padding (a stride that drops more than the padding at the end).
  return pad_end(g.height, g.kernel_h, g.stride_h, g.pad_h, g.dilation_h, g.out_h) >= 0 &&
         pad_end(g.width, g.kernel_w, g.stride_w, g.pad_w, g.dilation_w, g.out_w) >= 0;
}

namespace {
// One pass of the plan for (pass, s, n): x, w and y are the plain buffers of its three operands
// (input, weight, output of the forward convolution), `result` the one this pass writes (the other
// two are read), arg_x, arg_w and arg_y oneDNN's argument names for them, and b the forward's bias.
enum class Result { x, w, y };

void run_pass(Pass pass, const ConvShape& s, int64_t n, const float* x, const float* w, const float* y, Result result,
              int arg_x, int arg_w, int arg_y, const float* b = nullptr) {
  run_guarded("conv2d", [&] {
    const auto plan = plan_for(pass, s, n, b != nullptr);
    thread_local dnnl::stream st(cpu_engine());
    Operand ox = bind(plan->plain_x, plan->x_desc, x, result != Result::x, st);
    Operand ow = bind(plan->plain_w, plan->w_desc, w, result != Result::w, st);
    Operand oy = bind(plan->plain_y, plan->y_desc, y, result != Result::y, st);
    const auto scratch_buf = buffer_for(plan->scratch);
    memory scratch(plan->scratch, cpu_engine(), scratch_buf ? scratch_buf->data : nullptr);
    std::unordered_map<int, memory> args{
        {arg_x, ox.used}, {arg_w, ow.used}, {arg_y, oy.used}, {DNNL_ARG_SCRATCHPAD, scratch}};
    if (b) {
      const memory::desc bd({s.out_channels}, memory::data_type::f32, Tag::x);
      args.emplace(DNNL_ARG_BIAS, memory(bd, cpu_engine(), const_cast<float*>(b)));
    }
    plan->prim.execute(st, args);
    finish(result == Result::x ? ox : result == Result::w ? ow : oy, st);
    st.wait();
  });
}
}  // namespace

void conv2d_forward(const ConvShape& s, int64_t n, const float* x, const float* w, const float* b, float* y) {
  run_pass(Pass::forward, s, n, x, w, y, Result::y, DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, b);
}

void conv2d_backward_data(const ConvShape& s, int64_t n, const float* gy, const float* w, float* gx) {
  run_pass(Pass::backward_data, s, n, gx, w, gy, Result::x, DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST);
}

void conv2d_backward_weights(const ConvShape& s, int64_t n, const float* gy, const float* x, float* gw) {
  run_pass(Pass::backward_weights, s, n, x, gw, gy, Result::w, DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS,
           DNNL_ARG_DIFF_DST);
}

int64_t buffer_bytes(ConvPass pass, const ConvShape& s, int64_t n, bool bias) {
  int64_t bytes = 0;
  run_guarded("conv2d", [&] {
    const Pass p = pass == ConvPass::forward         ? Pass::forward
                   : pass == ConvPass::backward_data ? Pass::backward_data
                                                     : Pass::backward_weights;
    const auto plan = plan_for(p, s, n, bias);
    // As bind() and run_pass() allocate: a buffer per operand whose layout differs, and the scratchpad.
    auto differs = [](const memory::desc& plain, const memory::desc& want) {
      return plain == want ? int64_t{0} : static_cast<int64_t>(want.get_size());
    };
    bytes = differs(plan->plain_x, plan->x_desc) + differs(plan->plain_w, plan->w_desc) +
            differs(plan->plain_y, plan->y_desc) + static_cast<int64_t>(plan->scratch.get_size());
  });
  return bytes;
}

#else  // built without oneDNN: im2col serves every convolution

bool enabled() { return false; }
bool use_for(const ConvShape&) { return false; }

namespace {
[[noreturn]] void unavailable() {
  throw Error("conv2d", "graft was built without oneDNN (GRAFT_WITH_ONEDNN=OFF); this is a bug in graft's dispatch");
}
}  // namespace
void conv2d_forward(const ConvShape&, int64_t, const float*, const float*, const float*, float*) { unavailable(); }
void conv2d_backward_data(const ConvShape&, int64_t, const float*, const float*, float*) { unavailable(); }
void conv2d_backward_weights(const ConvShape&, int64_t, const float*, const float*, float*) { unavailable(); }
int64_t buffer_bytes(ConvPass, const ConvShape&, int64_t, bool) { unavailable(); }

#endif

}  // namespace graft::kernels::onednn
