// `graft report`: the page for a run log written by the test, opened in headless Chromium (Debian's
// chromium package): it must render without console messages, and its charts must hold the log's
// data (each chart records what it drew in data-* attributes, see report.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../io/temp_dir.h"
#include "../support/test_util.h"
#include "report.h"
#include "train.h"

namespace graft::test {
namespace {

using nlohmann::json;

struct Browser {
  std::string dom, console;  // --dump-dom output; Chromium's CONSOLE log lines
  int status = -1;
};

// Loads `html` in headless Chromium and returns the DOM after its scripts ran. Skips the test when
// Chromium is missing, unless GRAFT_REQUIRE_CHROMIUM is set (tools/test.sh sets it: CI must run it).
std::optional<Browser> open_in_chromium(const TempDir& dir, const std::string& html) {
  const std::string exe = "/usr/bin/chromium";
  if (!std::filesystem::exists(exe)) return std::nullopt;
  write_bytes(dir / "page.html", std::vector<uint8_t>(html.begin(), html.end()));
  const std::string cmd = "timeout 120 " + exe +
                          " --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir=" + (dir / "profile") +
                          " --enable-logging=stderr --v=0 --dump-dom file://" + (dir / "page.html") + " > " +
                          (dir / "dom.txt") + " 2> " + (dir / "stderr.txt");
  Browser b;
  b.status = std::system(cmd.c_str());
  const auto dom = read_bytes(dir / "dom.txt"), err = read_bytes(dir / "stderr.txt");
  b.dom.assign(dom.begin(), dom.end());
  std::istringstream lines(std::string(err.begin(), err.end()));
  for (std::string line; std::getline(lines, line);)
    if (line.find("CONSOLE") != std::string::npos) b.console += line + "\n";
  return b;
}

#define REQUIRE_CHROMIUM(opt)                                                                  \
  if (!(opt)) {                                                                                \
    if (std::getenv("GRAFT_REQUIRE_CHROMIUM")) FAIL() << "/usr/bin/chromium is missing";       \
    GTEST_SKIP() << "chromium is not installed (tools/install-deps.sh installs it)";          \
  }

// The value of attribute `attr` on the element with id `id` in a serialised DOM (plain string search:
// Chromium writes attributes as name="value").
std::string attribute(const std::string& dom, const std::string& id, const std::string& attr) {
  const size_t at = dom.find(" id=\"" + id + "\"");
  if (at == std::string::npos) return "(no element #" + id + ")";
  const size_t open = dom.rfind('<', at), close = dom.find('>', at);
  const std::string tag = dom.substr(open, close - open);
  const std::string key = " " + attr + "=\"";
  const size_t v = tag.find(key);
  if (v == std::string::npos) return "(no " + attr + ")";
  const size_t begin = v + key.size();
  return tag.substr(begin, tag.find('"', begin) - begin);
}

// A run log with known contents: 30 steps, 3 epochs, 2 monitored parameters over 10 sampled steps
// (one non-finite norm), 2 flags, one of whose messages tries to close the <script> element.
std::vector<std::string> synthetic_log(int64_t& finite_positive_ratios) {
  std::vector<json> recs;
  recs.push_back({{"type", "run"}, {"model", "mlp"}, {"optimizer", "sgd"}, {"lr", 0.05}});
  for (int s = 0; s < 30; ++s)
    recs.push_back({{"type", "step"}, {"step", s}, {"epoch", s / 10 + 1}, {"loss", 2.0 / (1 + s)}, {"lr", 0.05 * (1 - s / 30.0)}});
  for (int e = 1; e <= 3; ++e)
    recs.push_back({{"type", "epoch"}, {"epoch", e}, {"last_step", 10 * e - 1}, {"train_loss", 1.0 / e},
                    {"train_accuracy", 0.5 + 0.1 * e}, {"test_loss", 1.2 / e}, {"test_accuracy", 0.45 + 0.1 * e},
                    {"lr", 0.05}, {"seconds", 1.0}});
  recs.push_back({{"type", "monitor"}, {"params", json::array({{{"name", "0.weight"}, {"shape", {4, 3}}},
                                                               {{"name", "0.bias"}, {"shape", {4}}}})}});
  finite_positive_ratios = 0;
  for (int s = 0; s < 30; s += 3) {
    json params;
    for (const char* name : {"0.weight", "0.bias"}) {
      const bool broken = s == 27 && std::string(name) == "0.bias";
      const double ratio = s == 0 ? 0.0 : 1e-3 * s;  // step 0: zero, not drawable on a log axis
      params[name] = {{"grad_norm", broken ? json(nullptr) : json(std::pow(10.0, -s / 10.0))},
                      {"grad_max", 0.1}, {"weight_norm", 1.0}, {"update_ratio", ratio},
                      {"zero_fraction", 0.0}, {"nan", broken ? 1 : 0}, {"inf", 0}};
      if (ratio > 0) ++finite_positive_ratios;
    }
    recs.push_back({{"type", "grad"}, {"step", s}, {"params", params}});
  }
  recs.push_back({{"type", "flag"}, {"step", 27}, {"kind", "nonfinite"}, {"param", "0.bias"}, {"value", nullptr},
                  {"message", "NaN in 0.bias </script><script>document.title='pwned'</script>"}});
  recs.push_back({{"type", "flag"}, {"step", 24}, {"kind", "vanishing"}, {"param", "0.weight"}, {"value", 1e-9},
                  {"message", "0.weight: gradient norm 1e-09"}});
  // Memory: a 7-event timeline over 5 categories, and one record of peaks by category.
  const json cats = json::array({"parameters", "gradients", "optimizer_state", "saved_activations", "other"});
  json points = json::array();
  for (int i = 0; i < 7; ++i)
    points.push_back({{"seq", i}, {"step", i / 3}, {"op", "tanh"}, {"totals", {1 << 20, i * 1000, 0, i * 5000, 300}}});
  recs.push_back({{"type", "memory_timeline"}, {"categories", cats}, {"events", 7}, {"points", points}});
  json peak = json::object(), current = json::object();
  for (const auto& c : cats) {
    peak[c.get<std::string>()] = 2 << 20;
    current[c.get<std::string>()] = 1 << 20;
  }
  recs.push_back({{"type", "memory"}, {"epoch", 3}, {"peak", peak}, {"current", current}, {"peak_total", 10 << 20},
                  {"cached", 0}});
  recs.push_back({{"type", "result"}, {"test_accuracy", 0.75}, {"epochs", 3}});
  std::vector<std::string> lines;
  for (const auto& r : recs) lines.push_back(r.dump());
  return lines;
}

TEST(Report, RendersInChromiumWithTheRunsData) {
  TempDir dir;
  int64_t ratios = 0;
  const auto lines = synthetic_log(ratios);
  const std::string html = cli::render_report(lines, "test run");
  // self-contained: nothing is fetched
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));
  EXPECT_EQ(html.find("https://"), std::string::npos);
  const auto browser = open_in_chromium(dir, html);
  REQUIRE_CHROMIUM(browser);
  ASSERT_EQ(browser->status, 0) << browser->console;
  EXPECT_EQ(browser->console, "") << "the page must not log anything (errors show up here)";
  const std::string& dom = browser->dom;
  EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(attribute(dom, "loss", "data-points"), "36");      // 30 steps + 3 train + 3 test epoch points
  EXPECT_EQ(attribute(dom, "accuracy", "data-points"), "6");   // 3 epochs x (train, test)
  EXPECT_EQ(attribute(dom, "lr", "data-points"), "30");
  EXPECT_EQ(attribute(dom, "grad-heatmap", "data-cells"), "20");  // 2 parameters x 10 sampled steps
  EXPECT_EQ(attribute(dom, "update-ratio", "data-points"), std::to_string(ratios));
  EXPECT_EQ(attribute(dom, "flags", "data-rows"), "2");
  EXPECT_EQ(attribute(dom, "memory-timeline", "data-points"), "7");
  EXPECT_EQ(attribute(dom, "memory-table", "data-rows"), "5");  // one row per category
  EXPECT_NE(dom.find("data-category=\"saved_activations\""), std::string::npos);
  EXPECT_NE(dom.find("<td>saved activations</td><td>2.00</td><td>1.00</td>"), std::string::npos);
  // the hostile message is table text, not markup that ran
  EXPECT_NE(dom.find("<title>test run</title>"), std::string::npos);
  EXPECT_NE(dom.find("&lt;/script&gt;&lt;script&gt;document.title='pwned'"), std::string::npos);
  EXPECT_NE(dom.find("<td>nonfinite</td>"), std::string::npos);
  EXPECT_NE(dom.find("<td>0.bias</td>"), std::string::npos);
}

TEST(Report, ReadRunLogRejectsALineThatIsNotARecord) {
  TempDir dir;
  const std::string good = "{\"type\":\"step\",\"step\":0,\"loss\":1}\n\n";
  const std::string text = good + "{\"type\":\"step\",\"step\":1,\"loss\":\n";
  write_bytes(dir / "run.jsonl", std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(dir / "run.jsonl"); }, {"graft report", "run.jsonl line 3"}));
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(dir / "missing.jsonl"); }, {"graft report", "missing.jsonl"}));
}

// Issue 14, item 5: `graft report X -o X` replaced the log with its own report.
TEST(Report, RefusesToWriteOverItsOwnLog) {
  TempDir dir;
  const std::string text = "{\"type\":\"step\",\"step\":0,\"loss\":1}\n";
  write_bytes(dir / "run.jsonl", std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_TRUE(throws_error([&] { cli::write_report(dir / "run.jsonl", dir / "run.jsonl"); },
                           {"graft report", "same file", "-o"}));
  EXPECT_TRUE(throws_error([&] { cli::write_report(dir / "run.jsonl", dir.path() + "/./run.jsonl"); },
                           {"graft report", "same file"}));
  // The log is untouched (hand check: the same bytes as written).
  std::ifstream in(dir / "run.jsonl");
  std::string back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(back, text);
  EXPECT_TRUE(throws_error([&] { cli::write_report(dir / "run.jsonl", dir / "no-such-dir/r.html"); },
                           {"graft report -o", "no-such-dir", "does not exist"}));
}

}  // namespace
}  // namespace graft::test
