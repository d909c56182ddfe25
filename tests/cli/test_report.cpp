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

// Issue 14, item 8: a long run (more than about 125,000 steps broke the page: Math.min(...array)
// overflowed Chromium's stack) and a log string holding `<!--<script>` (it kept the page's own
// script from running: only `</` was escaped). 200,000 steps draw as 2 points (lowest and highest
// loss) in each of 2499 runs of 80 or 81 steps: 4998 points, and the one spike survives.
TEST(Report, RendersALongRunAndAScriptCommentInChromium) {
  TempDir dir;
  std::vector<std::string> lines;
  lines.push_back(json({{"type", "run"}, {"model", "mlp <!--<script> & \u2028"}}).dump());
  for (int s = 0; s < 200000; ++s) {
    const double loss = s == 123457 ? 100.0 : 2.0 / (1 + s);  // falling, with one spike
    lines.push_back(json({{"type", "step"}, {"step", s}, {"epoch", 1}, {"loss", loss}, {"lr", 0.05}}).dump());
  }
  lines.push_back(json({{"type", "epoch"}, {"epoch", 1}, {"last_step", 199999}, {"train_loss", 0.5},
                        {"train_accuracy", 0.8}, {"test_loss", 0.6}, {"test_accuracy", 0.7}, {"lr", 0.05},
                        {"seconds", 1.0}})
                      .dump());
  lines.push_back(json({{"type", "flag"}, {"step", 5}, {"kind", "vanishing"}, {"param", "0.weight"}, {"value", 1e-9},
                        {"message", "<!--<script> x"}})
                      .dump());
  const std::string html = cli::render_report(lines, "long run");
  const size_t data = html.find("id=\"run-data\">");
  ASSERT_NE(data, std::string::npos);
  const std::string embedded = html.substr(data + 14, html.find("</script>", data) - data - 14);
  EXPECT_EQ(embedded.find('<'), std::string::npos);
  EXPECT_EQ(embedded.find('&'), std::string::npos);
  EXPECT_NE(embedded.find("\\u003c!--\\u003cscript\\u003e x"), std::string::npos);
  EXPECT_NE(html.find("200000 steps drawn as 4998 points"), std::string::npos);
  const auto browser = open_in_chromium(dir, html);
  REQUIRE_CHROMIUM(browser);
  ASSERT_EQ(browser->status, 0) << browser->console;
  EXPECT_EQ(browser->console, "");
  const std::string& dom = browser->dom;
  EXPECT_NE(dom.find("data-rendered=\"ok\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_EQ(attribute(dom, "loss", "data-points"), "5000");  // 4998 steps + the epoch's train and test loss
  EXPECT_EQ(attribute(dom, "lr", "data-points"), "4998");
  EXPECT_NE(dom.find(">100</text>"), std::string::npos) << "the spike (loss 100) sets the top of the loss axis";
  EXPECT_EQ(attribute(dom, "flags", "data-rows"), "1");
  EXPECT_NE(dom.find("<td>&lt;!--&lt;script&gt; x</td>"), std::string::npos);
}

// Issue 14, item 8: thinning keeps every 1 in k gradient records and the last, at most 1000.
TEST(Report, ThinsLongGradientRecords) {
  std::vector<std::string> lines = {json({{"type", "run"}}).dump()};
  for (int s = 0; s < 2500; ++s)
    lines.push_back(json({{"type", "grad"}, {"step", s}, {"params", {{"w", {{"grad_norm", 1.0}}}}}}).dump());
  const std::string html = cli::render_report(lines, "grads");
  // k = ceil(2500 / 999) = 3: steps 0, 3, ..., 2499 (834 records; 2499 is a multiple of 3).
  EXPECT_NE(html.find("834 of 2500 sampled steps: one in 3, and the last"), std::string::npos);
  EXPECT_NE(html.find("\"step\":2499"), std::string::npos);
  EXPECT_NE(html.find("\"step\":2496"), std::string::npos);
  EXPECT_EQ(html.find("\"step\":2498"), std::string::npos);
}

std::string write_text(const TempDir& dir, const std::string& name, const std::string& text) {
  write_bytes(dir / name, std::vector<uint8_t>(text.begin(), text.end()));
  return dir / name;
}

// Issue 14, item 8: a line nested 100,000 deep crashed `graft report` (stack overflow in the
// recursive parser); the depth is checked before parsing, in read_run_log and in render_report.
TEST(Report, DeeplyNestedLinesAreAnError) {
  TempDir dir;
  // A record (so the old reader went on to dump it, recursively) holding 100,000 nested arrays: the
  // 64th '[' is depth 65, at byte 19 + 64 after the 19-byte prefix.
  const std::string deep =
      "{\"type\":\"step\",\"a\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  const std::string path = write_text(dir, "deep.jsonl", "{\"type\":\"run\"}\n" + deep + "\n");
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(path); },
                           {"graft report", "nested at most 64 deep", "deep.jsonl line 2", "at byte 83"}));
  EXPECT_TRUE(throws_error([&] { cli::render_report({"{\"type\":\"run\"}", deep}, "t"); },
                           {"nested at most 64 deep", "record 2"}));
  // Brackets inside strings (and escaped quotes) do not count; 64 levels are fine.
  const std::string in_string = "{\"type\":\"run\",\"s\":\"\\\"" + std::string(1000, '[') + "\"}";
  const std::string ok64 = "{\"type\":\"step\",\"a\":" + std::string(63, '[') + std::string(63, ']') + "}";
  const auto lines = cli::read_run_log(write_text(dir, "ok.jsonl", in_string + "\n" + ok64 + "\n"));
  EXPECT_EQ(lines.size(), 2u);
  const std::string deep65 = "{\"type\":\"step\",\"a\":" + std::string(64, '[') + std::string(64, ']') + "}";
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(write_text(dir, "d65.jsonl", deep65 + "\n")); },
                           {"nested at most 64 deep", "d65.jsonl line 1"}));
}

// Issue 14, items 6 and 9: an empty log, a directory and a device gave an empty report and exit 0
// (or read for ever); an over-long line or file is an error naming the file.
TEST(Report, InputsThatAreNotARunLog) {
  TempDir dir;
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(write_text(dir, "empty.jsonl", "")); },
                           {"graft report", "at least a run or step record", "empty.jsonl (no records)"}));
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(write_text(dir, "blank.jsonl", "\n \n")); },
                           {"at least a run or step record"}));
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(write_text(dir, "epochs.jsonl", "{\"type\":\"epoch\"}\n")); },
                           {"at least a run or step record", "1 records, none a run or a step"}));
  std::filesystem::create_directory(dir / "logdir");
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(dir / "logdir"); }, {"regular file", "logdir is a directory"}));
  EXPECT_TRUE(throws_error([&] { cli::write_report(dir / "logdir", dir / "r.html"); }, {"is a directory"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "r.html"));
  EXPECT_TRUE(throws_error([&] { cli::read_run_log("/dev/zero"); }, {"/dev/zero is not a regular file"}));
  // A 65 MiB line (no newline: what /dev/zero used to give) is refused at 64 MiB.
  {
    std::ofstream f(dir / "long.jsonl", std::ios::binary);
    f << "{\"type\":\"run\"}\n";
    const std::string mib(1 << 20, ' ');
    for (int i = 0; i < 65; ++i) f << mib;
  }
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(dir / "long.jsonl"); },
                           {"lines of at most 64 MiB", "long.jsonl line 2"}));
  // A (sparse) 3 GiB file is refused from its size, before reading.
  {
    std::ofstream f(dir / "huge.jsonl", std::ios::binary);
    f << "{\"type\":\"run\"}\n";
  }
  std::filesystem::resize_file(dir / "huge.jsonl", uint64_t{3} << 30);
  EXPECT_TRUE(throws_error([&] { cli::read_run_log(dir / "huge.jsonl"); },
                           {"a run log of at most 2048 MiB", "huge.jsonl of 3221225472 bytes"}));
}

}  // namespace
}  // namespace graft::test

#undef REQUIRE_CHROMIUM  // file-local (Note [Unity test builds])
