// Serialization as a LibTorch program writes it: torch::save / torch::load of a tensor, a vector of
// tensors, a module and an optimiser, and nested torch::serialize archives. Written in LibTorch's
// spelling; graft builds it renamed (torch:: to graft::). Each build reads only the files it
// wrote (LibTorch's .pt files are TorchScript zip archives, graft's are safetensors). Prints what it
// checks and exits 1 when a value differs from the one derived by hand in the comments.
#include <torch/torch.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(const char* what, double got, double expected) {
  const bool ok = std::fabs(got - expected) <= 1e-6 * std::fmax(1.0, std::fabs(expected));
  std::printf("%-44s %.9f%s\n", what, got, ok ? "" : "   MISMATCH");
  if (!ok) {
    std::printf("  expected %.9f\n", expected);
    ++failures;
  }
}

void check_true(const char* what, bool ok) {
  std::printf("%-44s %s\n", what, ok ? "true" : "false   MISMATCH");
  if (!ok) ++failures;
}

// One Adam step on loss = sum(w * w) (gradient 2w).
void adam_step(torch::optim::Adam& adam, const torch::Tensor& w) {
  adam.zero_grad();
  (w * w).sum().backward();
  adam.step();
}

}  // namespace

int main() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("porting_serialize_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto file = [&](const char* name) { return (dir / name).string(); };

  // ---- a tensor: dtype, shape and values come back ----
  {
    torch::Tensor t = torch::arange(6, torch::kLong).reshape({2, 3});
    torch::save(t, file("tensor.pt"));
    torch::Tensor back;
    torch::load(back, file("tensor.pt"));
    check_true("tensor: dtype int64", back.dtype() == torch::kLong);
    check("tensor: size(0)", static_cast<double>(back.size(0)), 2);
    check("tensor: size(1)", static_cast<double>(back.size(1)), 3);
    check("tensor: sum of 0..5", static_cast<double>(back.sum().item<int64_t>()), 15);  // 0+1+2+3+4+5
    check("tensor: sum of squares", static_cast<double>((back * back).sum().item<int64_t>()), 55);  // 0+1+4+9+16+25
    check_true("tensor: equal to the saved one", torch::equal(back, t));
  }

  // ---- a vector of tensors ----
  {
    std::vector<torch::Tensor> tensors = {torch::ones({2}), torch::full({3}, 0.5, torch::kDouble)};
    torch::save(tensors, file("tensors.pt"));
    std::vector<torch::Tensor> back;
    torch::load(back, file("tensors.pt"));
    check("vector: count", static_cast<double>(back.size()), 2);
    check("vector: sum of ones(2)", back[0].sum().item<double>(), 2);
    check("vector: sum of full(3, 0.5)", back[1].sum().item<double>(), 1.5);
    check_true("vector: second is float64", back[1].dtype() == torch::kDouble);
  }

  // ---- a module: a freshly initialised Linear takes the saved weights ----
  {
    torch::manual_seed(0);
    torch::nn::Linear saved(2, 1);
    {
      torch::NoGradGuard no_grad;
      saved->weight.copy_(torch::tensor({{0.5, -1.0}}));
      saved->bias.copy_(torch::tensor({0.25}));
    }
    torch::save(saved, file("linear.pt"));
    torch::manual_seed(1);
    torch::nn::Linear loaded(2, 1);
    torch::load(loaded, file("linear.pt"));
    const torch::Tensor x = torch::tensor({{4.0, 1.0}});
    // 0.5 * 4 - 1 * 1 + 0.25
    check("module: loaded(4, 1)", loaded(x).item<double>(), 1.25);
    check_true("module: weight equal", torch::equal(loaded->weight, saved->weight));
  }

  // ---- an optimiser: the step after save/load is the step without ----
  {
    auto w = torch::ones({1}, torch::kDouble).requires_grad_();
    torch::optim::Adam adam({w}, torch::optim::AdamOptions(0.1));
    // Adam's first step moves by lr (m_hat / sqrt(v_hat) = g / |g|, eps aside): 1 - 0.1.
    adam_step(adam, w);
    check("adam: w after step 1", w.item<double>(), 0.9000000005);
    torch::save(adam, file("adam.pt"));

    auto w2 = w.detach().clone().requires_grad_();
    // The same options: LibTorch's load restores only the per-parameter state and keeps the
    // optimiser's own options, graft's also restores the options (as PyTorch's load_state_dict).
    torch::optim::Adam resumed({w2}, torch::optim::AdamOptions(0.1));
    torch::load(resumed, file("adam.pt"));
    adam_step(adam, w);
    adam_step(resumed, w2);
    // Step 2, g = 1.8: m = 0.9 * 0.2 + 0.1 * 1.8 = 0.36, v = 0.999 * 0.004 + 0.001 * 3.24 = 0.007236;
    // m_hat = 0.36 / 0.19, v_hat = 0.007236 / 0.001999; w = 0.9 - 0.1 * m_hat / (sqrt(v_hat) + 1e-8).
    check("adam: w after step 2", w.item<double>(), 0.8004122286917928);
    check("adam: resumed w after step 2", w2.item<double>(), 0.8004122286917928);
    check_true("adam: resumed equals uninterrupted", torch::equal(w, w2));
  }

  // ---- nested archives ----
  {
    torch::serialize::OutputArchive inner;
    inner.write("scale", torch::full({1}, 3.0));
    torch::serialize::OutputArchive root;
    root.write("inner", inner);
    root.write("step", torch::full({1}, 7, torch::kLong));
    root.save_to(file("archive.pt"));

    torch::serialize::InputArchive in;
    in.load_from(file("archive.pt"));
    torch::serialize::InputArchive in_inner;
    in.read("inner", in_inner);
    torch::Tensor scale, step, absent;
    in_inner.read("scale", scale);
    in.read("step", step);
    check("archive: inner.scale", scale.item<double>(), 3);
    check("archive: step", static_cast<double>(step.item<int64_t>()), 7);
    check_true("archive: try_read of an absent key is false", !in.try_read("absent", absent));
  }

  // ---- values beside the tensors (OutputArchive::write(key, IValue)) ----
  {
    torch::serialize::OutputArchive inner;
    inner.write("epoch", torch::IValue(int64_t{4}));
    torch::serialize::OutputArchive root;
    root.write("weights", torch::ones({2}));
    root.write("lr", torch::IValue(0.125));
    root.write("name", torch::IValue(std::string("run-7")));
    root.write("inner", inner);
    root.save_to(file("values.pt"));

    torch::serialize::InputArchive in;
    in.load_from(file("values.pt"));
    torch::IValue lr, name, epoch, absent;
    in.read("lr", lr);
    in.read("name", name);
    torch::serialize::InputArchive in_inner;
    in.read("inner", in_inner);
    in_inner.read("epoch", epoch);
    check("values: lr", lr.toDouble(), 0.125);
    check_true("values: name", name.toStringRef() == "run-7");
    check("values: inner.epoch", static_cast<double>(epoch.toInt()), 4);
    check_true("values: try_read of an absent value is false", !in.try_read("absent", absent));
  }

  std::filesystem::remove_all(dir);
  std::printf("%s\n", failures == 0 ? "all checks passed" : "MISMATCHES");
  return failures == 0 ? 0 : 1;
}
