// LibTorch-style source (tests/porting, docs/porting.md): a program that prints tensors, sizes and
// modules with operator<<, as LibTorch programs do in their logs. Ported by
// tools/port-from-libtorch.sh and built against graft; where LibTorch is installed, also built
// unchanged against it and the two outputs compared line by line. Each printed form is also checked
// against the text worked out by hand from LibTorch's print rules.
#include <torch/torch.h>

#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "porting_checks.h"

namespace {

using porting::check;

template <typename T>
std::string printed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

// Prints `text` and checks it is `expected`.
void show_text(const std::string& name, const std::string& text, const std::string& expected) {
  std::cout << name << ":\n" << text << "\n";
  check(text == expected, name + " prints as LibTorch does");
}

}  // namespace

int main() {
  // Whole numbers: width = digits + 1; a matrix row per line, the type and sizes last.
  show_text("ints", printed(torch::tensor({{1.0f, 2.0f}, {30.0f, -4.0f}})),
            "  1   2\n 30  -4\n[ CPUFloatType{2,2} ]");
  // Fractions: 4 decimals in a column of digits + 6; a vector one value per line.
  show_text("fractions", printed(torch::tensor({0.5, -1.25}, torch::kFloat64)),
            " 0.5000\n-1.2500\n[ CPUDoubleType{2} ]");
  // Whole numbers keep their digits, however many ...
  show_text("whole", printed(torch::tensor({250000.0f, 500000.0f})), " 250000\n 500000\n[ CPUFloatType{2} ]");
  // ... fractions with more than 5 digits before the point get a scale line, the values divided by it.
  show_text("scaled", printed(torch::tensor({250000.5f, 500000.25f})), "1e+05 *\n 2.5000\n 5.0000\n[ CPUFloatType{2} ]");
  // Magnitudes 5 digits apart: scientific notation.
  show_text("scientific", printed(torch::tensor({1e-4f, 10.0f})), " 1.0000e-04\n 1.0000e+01\n[ CPUFloatType{2} ]");
  // A 0-dim tensor and integer types.
  show_text("scalar", printed(torch::tensor(2.5, torch::kFloat64)), "2.5\n[ CPUDoubleType{} ]");
  show_text("int64", printed(torch::arange(3)), " 0\n 1\n 2\n[ CPULongType{3} ]");
  show_text("bool", printed(torch::tensor({true, false})), " 1\n 0\n[ CPUBoolType{2} ]");
  // Three dims: one "(i,.,.) = " block per leading index.
  show_text("three dims", printed(torch::ones({2, 1, 2})),
            "(1,.,.) = \n  1  1\n\n(2,.,.) = \n  1  1\n[ CPUFloatType{2,1,2} ]");
  // Requires grad adds nothing to the printed form.
  auto w = torch::ones({1, 2}, torch::requires_grad());
  show_text("requires_grad", printed(w * 3), " 3  3\n[ CPUFloatType{1,2} ]");
  show_text("undefined", printed(torch::Tensor()), "[ Tensor (undefined) ]");

  // Sizes, strides, type strings and devices.
  auto m = torch::zeros({2, 3});
  show_text("sizes", printed(m.sizes()), "[2, 3]");
  show_text("strides of the transpose", printed(m.t().strides()), "[1, 3]");
  show_text("toString", m.toString(), "CPUFloatType");
  show_text("scalar_type", printed(m.scalar_type()), "Float");
  show_text("device", printed(m.device()), "cpu");

  // Modules, in LibTorch's form (graft:: where LibTorch writes torch::).
  torch::nn::Sequential seq(torch::nn::Linear(3, 4), torch::nn::ReLU(), torch::nn::Dropout(0.25));
  const std::string ns = printed(torch::nn::Linear(1, 1)).substr(0, 5) == "torch" ? "torch" : "graft";
  show_text("sequential", printed(*seq),
            ns + "::nn::Sequential(\n  (0): " + ns + "::nn::Linear(in_features=3, out_features=4, bias=true)\n  (1): " + ns +
                "::nn::ReLU()\n  (2): " + ns + "::nn::Dropout(p=0.25, inplace=false)\n)");
  // More modules' own lines: sizes as lists ("[5, 5]") but a 1-D size as its value, doubles as a
  // stream writes them ("1", "1e-06"), enums by their LibTorch names ("kNearest", "kReLU").
  const std::string prefix = ns + "::nn::";
  show_text("max pool 2d", printed(torch::nn::MaxPool2d(5)),
            prefix + "MaxPool2d(kernel_size=[5, 5], stride=[5, 5], padding=[0, 0], dilation=[1, 1], ceil_mode=false)");
  show_text("avg pool 1d", printed(torch::nn::AvgPool1d(5)), prefix + "AvgPool1d(kernel_size=5, stride=5, padding=0)");
  show_text("adaptive avg pool 2d", printed(torch::nn::AdaptiveAvgPool2d(torch::nn::AdaptiveAvgPool2dOptions({5, 6}))),
            prefix + "AdaptiveAvgPool2d(output_size=[5, 6])");
  show_text("layer norm", printed(torch::nn::LayerNorm(torch::nn::LayerNormOptions({2, 2}))),
            prefix + "LayerNorm([2, 2], eps=1e-05, elementwise_affine=true)");
  show_text("hardtanh", printed(torch::nn::Hardtanh()), prefix + "Hardtanh(min_val=-1, max_val=1)");
  show_text("pairwise distance", printed(torch::nn::PairwiseDistance()),
            prefix + "PairwiseDistance(p=2, eps=1e-06, keepdim=false)");
  show_text("cosine embedding loss",
            printed(torch::nn::CosineEmbeddingLoss(torch::nn::CosineEmbeddingLossOptions().margin(0.25))),
            prefix + "CosineEmbeddingLoss(margin=0.25)");
  show_text("triplet margin loss", printed(torch::nn::TripletMarginLoss()),
            prefix + "TripletMarginLoss(margin=1, p=2, eps=1e-06, swap=false)");
  show_text("reflection pad", printed(torch::nn::ReflectionPad1d(torch::nn::ReflectionPad1dOptions(2))),
            prefix + "ReflectionPad1d(padding=[2, 2])");
  show_text("zero pad", printed(torch::nn::ZeroPad2d(torch::nn::ZeroPad2dOptions({1, 1, 2, 0}))),
            prefix + "ZeroPad2d(padding=[1, 1, 2, 0])");
  show_text("upsample", printed(torch::nn::Upsample(torch::nn::UpsampleOptions().size(std::vector<int64_t>({2, 4, 4})))),
            prefix + "Upsample(size=[2, 4, 4], mode=kNearest)");
  show_text("rnn cell",
            printed(torch::nn::RNNCell(torch::nn::RNNCellOptions(20, 10).bias(false).nonlinearity(torch::kReLU))),
            prefix + "RNNCell(20, 10, bias=false, nonlinearity=kReLU)");
  show_text("multihead attention", printed(torch::nn::MultiheadAttention(20, 10)),
            prefix + "MultiheadAttention(\n  (out_proj): " + prefix + "Linear(in_features=20, out_features=20, bias=true)\n)");
  torch::nn::Sequential seq2(torch::nn::Embedding(4, 10), torch::nn::LSTM(4, 5));
  show_text("embedding and lstm", printed(*seq2),
            prefix + "Sequential(\n  (0): " + prefix + "Embedding(num_embeddings=4, embedding_dim=10)\n  (1): " + prefix +
                "LSTM(input_size=4, hidden_size=5, num_layers=1, bias=true, batch_first=false, dropout=0, "
                "bidirectional=false)\n)");
  // A stream's own format is as it was after a tensor.
  std::ostringstream os;
  os << torch::tensor({0.5f}) << " " << 0.1;
  show_text("stream after", os.str(), " 0.5000\n[ CPUFloatType{1} ] 0.1");
  return porting::finish();
}
