// LibTorch's print form of the modules (Note [Print styles], src/nn/modules/print_libtorch.cpp):
// pools, pads, Upsample, LayerNorm, Hardtanh, the distance and margin losses, MultiheadAttention and
// the recurrent modules. Every expected string is what LibTorch 1.13 prints for the same module
// (`std::cout << torch::nn::X(...)`, run against the installed LibTorch, torch:: renamed graft::):
// numbers as a std::ostream writes a double ("1", "0.5", "1e-06"), booleans true/false, sizes as
// lists "[5, 5]" but a 1-D ExpandingArray as its one value ("5"), enums by their LibTorch name
// ("kReLU", "kBilinear").
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "../support/test_util.h"
#include "graft/graft.h"

namespace graft::test {
namespace {

template <class T> std::string printed(const T& module) {
  std::ostringstream s;
  s << module;
  return s.str();
}

TEST(PrintLibTorch, Pools) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::MaxPool1d(5)),
            "graft::nn::MaxPool1d(kernel_size=5, stride=5, padding=0, dilation=1, ceil_mode=false)");
  EXPECT_EQ(printed(nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(1).padding(1).dilation(2))),
            "graft::nn::MaxPool1d(kernel_size=3, stride=1, padding=1, dilation=2, ceil_mode=false)");
  EXPECT_EQ(printed(nn::MaxPool2d(5)),
            "graft::nn::MaxPool2d(kernel_size=[5, 5], stride=[5, 5], padding=[0, 0], "
            "dilation=[1, 1], ceil_mode=false)");
  EXPECT_EQ(printed(nn::MaxPool2d(nn::MaxPool2dOptions(5).stride(2).padding(1).dilation(2).ceil_mode(true))),
            "graft::nn::MaxPool2d(kernel_size=[5, 5], stride=[2, 2], padding=[1, 1], dilation=[2, 2], ceil_mode=true)");
  EXPECT_EQ(
      printed(nn::MaxPool2d(nn::MaxPool2dOptions({5, 6}).stride({1, 2}))),
      "graft::nn::MaxPool2d(kernel_size=[5, 6], stride=[1, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=false)");
  // ceil_mode and count_include_pad are not printed.
  EXPECT_EQ(printed(nn::AvgPool1d(nn::AvgPool1dOptions(5).ceil_mode(true).count_include_pad(false))),
            "graft::nn::AvgPool1d(kernel_size=5, stride=5, padding=0)");
  EXPECT_EQ(printed(nn::AvgPool2d(5)), "graft::nn::AvgPool2d(kernel_size=[5, 5], stride=[5, 5], padding=[0, 0])");
  EXPECT_EQ(printed(nn::AvgPool2d(nn::AvgPool2dOptions({5, 6}).stride({1, 2}).divisor_override(2))),
            "graft::nn::AvgPool2d(kernel_size=[5, 6], stride=[1, 2], padding=[0, 0])");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool1d(5)), "graft::nn::AdaptiveAvgPool1d(output_size=5)");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool2d(5)), "graft::nn::AdaptiveAvgPool2d(output_size=[5, 5])");
  EXPECT_EQ(printed(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({5, 6}))),
            "graft::nn::AdaptiveAvgPool2d(output_size=[5, 6])");
  EXPECT_EQ(printed(nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({5, 6}))),
            "graft::nn::AdaptiveMaxPool2d(output_size=[5, 6])");
  EXPECT_EQ(printed(nn::AdaptiveMaxPool1d(3)), "graft::nn::AdaptiveMaxPool1d(output_size=3)");
  EXPECT_EQ(printed(nn::MaxPool3d(nn::MaxPool3dOptions({1, 2, 3}))),
            "graft::nn::MaxPool3d(kernel_size=[1, 2, 3], stride=[1, 2, 3], padding=[0, 0, 0], dilation=[1, 1, 1], "
            "ceil_mode=false)");
}

TEST(PrintLibTorch, PadsAndUpsample) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::ReflectionPad1d(2)), "graft::nn::ReflectionPad1d(padding=[2, 2])");
  EXPECT_EQ(printed(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, 3, 4}))),
            "graft::nn::ReflectionPad2d(padding=[1, 2, 3, 4])");
  EXPECT_EQ(printed(nn::ReplicationPad1d(2)), "graft::nn::ReplicationPad1d(padding=[2, 2])");
  EXPECT_EQ(printed(nn::ReplicationPad2d(1)), "graft::nn::ReplicationPad2d(padding=[1, 1, 1, 1])");
  EXPECT_EQ(printed(nn::ZeroPad2d(2)), "graft::nn::ZeroPad2d(padding=[2, 2, 2, 2])");
  EXPECT_EQ(printed(nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 1, 2, 0}))), "graft::nn::ZeroPad2d(padding=[1, 1, 2, 0])");
  EXPECT_EQ(printed(nn::ConstantPad1d(nn::ConstantPad1dOptions(2, 0.5))),
            "graft::nn::ConstantPad1d(padding=[2, 2], value=0.5)");
  EXPECT_EQ(printed(nn::ConstantPad2d(nn::ConstantPad2dOptions(1, -1))),
            "graft::nn::ConstantPad2d(padding=[1, 1, 1, 1], value=-1)");
  EXPECT_EQ(printed(nn::ReflectionPad3d(1)), "graft::nn::ReflectionPad3d(padding=[1, 1, 1, 1, 1, 1])");

  EXPECT_EQ(printed(nn::Upsample(nn::UpsampleOptions().size(std::vector<int64_t>{2, 4, 4}))),
            "graft::nn::Upsample(size=[2, 4, 4], mode=kNearest)");
  EXPECT_EQ(printed(nn::Upsample(nn::UpsampleOptions().size(std::vector<int64_t>{4}))),
            "graft::nn::Upsample(size=[4], mode=kNearest)");
  // align_corners is not printed; the scale factors are doubles ("2", "0.5").
  EXPECT_EQ(printed(nn::Upsample(
                nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 2.0}).mode(kBilinear).align_corners(true))),
            "graft::nn::Upsample(scale_factor=[2, 2], mode=kBilinear)");
  EXPECT_EQ(printed(nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{0.5, 1.5}).mode(kBilinear))),
            "graft::nn::Upsample(scale_factor=[0.5, 1.5], mode=kBilinear)");
  EXPECT_EQ(printed(nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0}).mode(kLinear))),
            "graft::nn::Upsample(scale_factor=[2], mode=kLinear)");
  EXPECT_EQ(printed(nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2, 2}).mode(kTrilinear))),
            "graft::nn::Upsample(scale_factor=[2, 2, 2], mode=kTrilinear)");
  EXPECT_EQ(printed(nn::Upsample(nn::UpsampleOptions().scale_factor(std::vector<double>{2, 2}).mode(kBicubic))),
            "graft::nn::Upsample(scale_factor=[2, 2], mode=kBicubic)");
}

TEST(PrintLibTorch, ActivationsNormsDistancesLosses) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::Hardtanh()), "graft::nn::Hardtanh(min_val=-1, max_val=1)");
  EXPECT_EQ(printed(nn::Hardtanh(nn::HardtanhOptions().min_val(-0.5).max_val(2.5).inplace(true))),
            "graft::nn::Hardtanh(min_val=-0.5, max_val=2.5, inplace=true)");
  EXPECT_EQ(printed(nn::Hardtanh(nn::HardtanhOptions().min_val(1e-7).max_val(1e7))),
            "graft::nn::Hardtanh(min_val=1e-07, max_val=1e+07)");
  EXPECT_EQ(printed(nn::ELU()), "graft::nn::ELU(alpha=1)");
  EXPECT_EQ(printed(nn::LayerNorm(nn::LayerNormOptions({3}))),
            "graft::nn::LayerNorm([3], eps=1e-05, elementwise_affine=true)");
  EXPECT_EQ(printed(nn::LayerNorm(nn::LayerNormOptions({2, 3}).eps(1e-3).elementwise_affine(false))),
            "graft::nn::LayerNorm([2, 3], eps=0.001, elementwise_affine=false)");
  EXPECT_EQ(printed(nn::PairwiseDistance()), "graft::nn::PairwiseDistance(p=2, eps=1e-06, keepdim=false)");
  EXPECT_EQ(printed(nn::PairwiseDistance(nn::PairwiseDistanceOptions().p(1.5).eps(1e-8).keepdim(true))),
            "graft::nn::PairwiseDistance(p=1.5, eps=1e-08, keepdim=true)");
  EXPECT_EQ(printed(nn::CosineEmbeddingLoss()), "graft::nn::CosineEmbeddingLoss(margin=0)");
  EXPECT_EQ(printed(nn::CosineEmbeddingLoss(nn::CosineEmbeddingLossOptions().margin(-0.5))),
            "graft::nn::CosineEmbeddingLoss(margin=-0.5)");
  EXPECT_EQ(printed(nn::TripletMarginLoss()), "graft::nn::TripletMarginLoss(margin=1, p=2, eps=1e-06, swap=false)");
  EXPECT_EQ(printed(nn::TripletMarginLoss(nn::TripletMarginLossOptions().margin(0.5).p(3).swap(true))),
            "graft::nn::TripletMarginLoss(margin=0.5, p=3, eps=1e-06, swap=true)");
  EXPECT_EQ(printed(nn::Embedding(4, 10)), "graft::nn::Embedding(num_embeddings=4, embedding_dim=10)");
}

TEST(PrintLibTorch, RecurrentAndAttention) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::RNNCell(3, 4)), "graft::nn::RNNCell(3, 4)");
  EXPECT_EQ(printed(nn::RNNCell(nn::RNNCellOptions(3, 4).nonlinearity(kReLU))),
            "graft::nn::RNNCell(3, 4, nonlinearity=kReLU)");
  EXPECT_EQ(printed(nn::RNNCell(nn::RNNCellOptions(20, 10).bias(false).nonlinearity(kTanh))),
            "graft::nn::RNNCell(20, 10, bias=false)");
  EXPECT_EQ(printed(nn::LSTMCell(3, 4)), "graft::nn::LSTMCell(3, 4)");
  EXPECT_EQ(printed(nn::GRUCell(nn::GRUCellOptions(3, 4).bias(false))), "graft::nn::GRUCell(3, 4, bias=false)");
  EXPECT_EQ(printed(nn::RNN(3, 4)),
            "graft::nn::RNN(input_size=3, hidden_size=4, num_layers=1, bias=true, "
            "batch_first=false, dropout=0, bidirectional=false)");
  // The nonlinearity is not printed.
  EXPECT_EQ(printed(nn::RNN(nn::RNNOptions(3, 4)
                                .nonlinearity(kReLU)
                                .num_layers(2)
                                .dropout(0.5)
                                .bidirectional(true)
                                .batch_first(true)
                                .bias(false))),
            "graft::nn::RNN(input_size=3, hidden_size=4, num_layers=2, bias=false, batch_first=true, dropout=0.5, "
            "bidirectional=true)");
  EXPECT_EQ(printed(nn::LSTM(4, 5)),
            "graft::nn::LSTM(input_size=4, hidden_size=5, num_layers=1, bias=true, "
            "batch_first=false, dropout=0, bidirectional=false)");
  EXPECT_EQ(printed(nn::GRU(nn::GRUOptions(4, 5).num_layers(2).dropout(0.25))),
            "graft::nn::GRU(input_size=4, hidden_size=5, num_layers=2, bias=true, batch_first=false, dropout=0.25, "
            "bidirectional=false)");
  // MultiheadAttention's own line has no arguments; out_proj is its one child.
  EXPECT_EQ(printed(nn::MultiheadAttention(20, 10)),
            "graft::nn::MultiheadAttention(\n"
            "  (out_proj): graft::nn::Linear(in_features=20, out_features=20, bias=true)\n"
            ")");
  EXPECT_EQ(printed(nn::MultiheadAttention(nn::MultiheadAttentionOptions(8, 2).kdim(4).vdim(4).bias(false))),
            "graft::nn::MultiheadAttention(\n"
            "  (out_proj): graft::nn::Linear(in_features=8, out_features=8, bias=false)\n"
            ")");
}

TEST(PrintLibTorch, ContainersOfTheseModules) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  nn::Sequential seq(nn::Linear(10, 3), nn::Conv2d(1, 2, 3), nn::Dropout(0.5), nn::BatchNorm2d(5), nn::Embedding(4, 10),
                     nn::LSTM(4, 5));
  const std::string children =
      "  (0): graft::nn::Linear(in_features=10, out_features=3, bias=true)\n"
      "  (1): graft::nn::Conv2d(1, 2, kernel_size=[3, 3], stride=[1, 1])\n"
      "  (2): graft::nn::Dropout(p=0.5, inplace=false)\n"
      "  (3): graft::nn::BatchNorm2d(5, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true)\n"
      "  (4): graft::nn::Embedding(num_embeddings=4, embedding_dim=10)\n"
      "  (5): graft::nn::LSTM(input_size=4, hidden_size=5, num_layers=1, bias=true, batch_first=false, dropout=0, "
      "bidirectional=false)\n";
  EXPECT_EQ(printed(*seq), "graft::nn::Sequential(\n" + children + ")");
  EXPECT_EQ(graft::str(*seq), "graft::nn::Sequential(\n" + children + ")");
  nn::ModuleList list(nn::Linear(10, 3), nn::Conv2d(1, 2, 3), nn::Dropout(0.5), nn::BatchNorm2d(5),
                      nn::Embedding(4, 10), nn::LSTM(4, 5));
  EXPECT_EQ(printed(*list), "graft::nn::ModuleList(\n" + children + ")");
}

TEST(PrintLibTorch, ConvolutionsAndOthers) {
  nn::PrintStyleGuard style(nn::PrintStyle::LibTorch);
  EXPECT_EQ(printed(nn::Conv1d(3, 4, 5)), "graft::nn::Conv1d(3, 4, kernel_size=5, stride=1)");
  EXPECT_EQ(printed(nn::Conv1d(nn::Conv1dOptions(3, 4, 5).padding(2))),
            "graft::nn::Conv1d(3, 4, kernel_size=5, stride=1, padding=2)");
  EXPECT_EQ(printed(nn::Conv3d(nn::Conv3dOptions(4, 4, {5, 6, 7}))),
            "graft::nn::Conv3d(4, 4, kernel_size=[5, 6, 7], stride=[1, 1, 1])");
  EXPECT_EQ(printed(nn::ConvTranspose2d(3, 4, 5)),
            "graft::nn::ConvTranspose2d(3, 4, kernel_size=[5, 5], stride=[1, 1])");
  // output_padding after dilation, before groups.
  EXPECT_EQ(printed(nn::ConvTranspose2d(
                nn::ConvTranspose2dOptions(4, 6, 3).stride(2).padding(1).output_padding(1).dilation(2).groups(2).bias(
                    false))),
            "graft::nn::ConvTranspose2d(4, 6, kernel_size=[3, 3], stride=[2, 2], padding=[1, 1], dilation=[2, 2], "
            "output_padding=[1, 1], groups=2, bias=false)");
  EXPECT_EQ(printed(nn::ConvTranspose1d(nn::ConvTranspose1dOptions(4, 6, 3).output_padding(1))),
            "graft::nn::ConvTranspose1d(4, 6, kernel_size=3, stride=1, output_padding=1)");
  EXPECT_EQ(printed(nn::GELU()), "graft::nn::GELU()");
  EXPECT_EQ(printed(nn::GELU(nn::GELUOptions().approximate("tanh"))), "graft::nn::GELU()");
  // These two without parentheses.
  EXPECT_EQ(printed(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.5))), "graft::nn::SmoothL1Loss");
  EXPECT_EQ(printed(nn::HuberLoss(nn::HuberLossOptions().delta(2))), "graft::nn::HuberLoss");
  // The transformer modules print their class names, Impl included.
  EXPECT_EQ(printed(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2))),
            "graft::nn::TransformerEncoderLayerImpl(\n"
            "  (self_attn): graft::nn::MultiheadAttention(\n"
            "    (out_proj): graft::nn::Linear(in_features=8, out_features=8, bias=true)\n"
            "  )\n"
            "  (linear1): graft::nn::Linear(in_features=8, out_features=2048, bias=true)\n"
            "  (dropout): graft::nn::Dropout(p=0.1, inplace=false)\n"
            "  (linear2): graft::nn::Linear(in_features=2048, out_features=8, bias=true)\n"
            "  (norm1): graft::nn::LayerNorm([8], eps=1e-05, elementwise_affine=true)\n"
            "  (norm2): graft::nn::LayerNorm([8], eps=1e-05, elementwise_affine=true)\n"
            "  (dropout1): graft::nn::Dropout(p=0.1, inplace=false)\n"
            "  (dropout2): graft::nn::Dropout(p=0.1, inplace=false)\n"
            ")");
  EXPECT_EQ(printed(nn::Hardtanh(nn::HardtanhOptions().min_val(0.1234567).max_val(123456789))),
            "graft::nn::Hardtanh(min_val=0.123457, max_val=1.23457e+08)");  // 6 significant digits
}

// The Python form is untouched: PyTorch 1.13's reprs of the same modules.
TEST(PrintLibTorch, PythonFormUnchanged) {
  nn::PrintStyleGuard style(nn::PrintStyle::Python);
  EXPECT_EQ(printed(nn::MaxPool2d(5)), "MaxPool2d(kernel_size=5, stride=5, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(printed(nn::Hardtanh()), "Hardtanh(min_val=-1.0, max_val=1.0)");
  EXPECT_EQ(printed(nn::LayerNorm(nn::LayerNormOptions({2, 2}))),
            "LayerNorm((2, 2), eps=1e-05, elementwise_affine=True)");
  EXPECT_EQ(printed(nn::ZeroPad2d(2)), "ZeroPad2d((2, 2, 2, 2))");
}

}  // namespace
}  // namespace graft::test
