// `graft report`: renders a run log (Note [Run log] in report.h) as one HTML page with inline SVG
// charts drawn by inline JavaScript from the embedded data.
#include "report.h"

#include "line_file.h"
#include "paths.h"
#include "report_page.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

#include "graft/core/error.h"
#include "graft/io/file.h"

namespace graft::cli {
namespace {

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

// Limits of what `graft report` reads (issue 14, items 6 and 8). A line of graft train's log is a
// few KiB at most; a whole log of a long monitored run a few hundred MiB.
constexpr size_t kMaxLineBytes = size_t{64} << 20;
constexpr uint64_t kMaxLogBytes = uint64_t{2} << 30;
// nlohmann::json parses recursively: a line nested 100,000 deep overflowed the stack. graft's
// records nest 4 deep.
constexpr size_t kMaxJsonDepth = 64;
// At most this many points per line series: thousands of points are more than a 520-pixel chart
// shows, and hundreds of thousands made the page slow (and, with argument spreading, broke it).
constexpr size_t kMaxStepPoints = 5000;
// At most this many gradient records: the heatmap's columns and the update-ratio chart's points.
constexpr size_t kMaxGradRecords = 1000;


// The lines of a regular file, each at most kMaxLineBytes, the file at most kMaxLogBytes. The open
// is non-blocking and the type is checked on the open descriptor: a FIFO without a writer used to
// block for ever, /dev/zero to grow without bound.
std::vector<std::string> read_lines(const std::string& path) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    throw Error("graft report", "a readable run log", path + " (cannot open it: " + errno_text(err) + ")",
                err == ENOENT ? "write one with graft train --log RUN.jsonl" : "check the path and its permissions");
  }
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  const bool stat_ok = ::fstat(fd, &st) == 0;
  GRAFT_CHECK(stat_ok && S_ISREG(st.st_mode), "graft report", "a run log that is a regular file",
              path + (!stat_ok ? " (cannot stat it)"
                      : S_ISDIR(st.st_mode) ? " is a directory"
                      : S_ISFIFO(st.st_mode) ? " is a FIFO (named pipe), not a regular file"
                                             : " is not a regular file (a device or a socket)"),
              "pass the file that graft train --log wrote");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  auto too_large = [&](uint64_t bytes) {
    return Error("graft report", "a run log of at most " + std::to_string(kMaxLogBytes >> 20) + " MiB",
                 path + " of " + std::to_string(bytes) + " bytes", "this is not a run log graft train wrote");
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxLogBytes) throw too_large(static_cast<uint64_t>(st.st_size));
  std::vector<std::string> lines(1);
  std::vector<char> buf(size_t{1} << 20);
  uint64_t total = 0;
  for (;;) {
    const ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Error("graft report", "to read the run log", path + ": a read error (" + errno_text(errno) + ")", "");
    }
    if (r == 0) break;
    total += static_cast<uint64_t>(r);
    if (total > kMaxLogBytes) throw too_large(total);  // it grew while it was read
    for (const char* p = buf.data(); p != buf.data() + r;) {
      const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(buf.data() + r - p)));
      const char* stop = nl ? nl : buf.data() + r;
      std::string& line = lines.back();
      GRAFT_CHECK(line.size() + static_cast<size_t>(stop - p) <= kMaxLineBytes, "graft report",
                  "lines of at most " + std::to_string(kMaxLineBytes >> 20) + " MiB",
                  path + " line " + std::to_string(lines.size()) + ": longer than that",
                  "this is not a run log graft train wrote");
      line.append(p, stop);
      if (nl) lines.emplace_back();
      p = nl ? nl + 1 : stop;
    }
  }
  if (lines.back().empty()) lines.pop_back();
  return lines;
}

// Parses one record after checking (without recursion) that it nests at most kMaxJsonDepth deep;
// returns a discarded value for text that is not JSON. `where` names the file and line.
nlohmann::json parse_record(const std::string& line, const std::string& where) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      GRAFT_CHECK(++depth <= kMaxJsonDepth, "graft report", "JSON nested at most " + std::to_string(kMaxJsonDepth) + " deep",
                  where + ": deeper than that (at byte " + std::to_string(i + 1) + ")",
                  "this is not a record graft train wrote");
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
}

// The run's configuration and result for the header line.
std::string summary(const nlohmann::json& j) {
  std::string out;
  for (const auto& item : j.items()) {
    const auto& v = item.value();
    if (item.key() == "type" || v.is_structured()) continue;
    std::string shown;
    if (v.is_string()) shown = v.get<std::string>();
    else if (v.is_number_float()) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.4g", v.get<double>());
      shown = buf;
    } else shown = v.dump();
    out += (out.empty() ? "" : " · ") + item.key() + " " + shown;
  }
  return out;
}

// Which records a long run embeds: steps thinned to at most kMaxStepPoints (in each of
// (kMaxStepPoints - 2) / 2 runs of consecutive steps, the lowest and the highest finite loss, or
// the first step when none is finite; and always the first and the last step, which cost nothing
// extra when they are already their run's extremes), gradient records to every k-th and the last.
// Everything else (epochs, flags, memory) is kept whole.
struct Thinned {
  std::vector<bool> keep;
  size_t steps = 0, steps_kept = 0, grads = 0, grads_kept = 0, grad_stride = 1;
};

Thinned thin(const std::vector<std::string>& types, const std::vector<double>& losses) {
  Thinned t;
  t.keep.assign(types.size(), true);
  std::vector<size_t> steps, grads;
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i] == "step") steps.push_back(i);
    if (types[i] == "grad") grads.push_back(i);
  }
  t.steps = t.steps_kept = steps.size();
  t.grads = t.grads_kept = grads.size();
  if (steps.size() > kMaxStepPoints) {
    for (size_t i : steps) t.keep[i] = false;
    const size_t buckets = (kMaxStepPoints - 2) / 2, n = steps.size();
    for (size_t b = 0; b < buckets; ++b) {
      const size_t begin = b * n / buckets, end = (b + 1) * n / buckets;
      size_t lo = n, hi = n;
      for (size_t k = begin; k < end; ++k) {
        const double v = losses[steps[k]];
        if (!std::isfinite(v)) continue;
        if (lo == n || v < losses[steps[lo]]) lo = k;
        if (hi == n || v > losses[steps[hi]]) hi = k;
      }
      if (lo == n) lo = hi = begin;
      t.keep[steps[lo]] = t.keep[steps[hi]] = true;
    }
    t.keep[steps.front()] = t.keep[steps.back()] = true;
    t.steps_kept = 0;
    for (size_t i : steps) t.steps_kept += t.keep[i] ? 1 : 0;
  }
  if (grads.size() > kMaxGradRecords) {
    t.grad_stride = (grads.size() + kMaxGradRecords - 2) / (kMaxGradRecords - 1);  // every k-th + the last
    t.grads_kept = 0;
    for (size_t k = 0; k < grads.size(); ++k) {
      t.keep[grads[k]] = k % t.grad_stride == 0 || k + 1 == grads.size();
      t.grads_kept += t.keep[grads[k]] ? 1 : 0;
    }
  }
  return t;
}

// Appends a JSON text for an inline <script>: '<', '>' and '&' (which valid JSON holds only inside
// strings) and the line separators U+2028 / U+2029 become \u escapes; JSON.parse reads them back.
void append_script_safe(std::string& out, const std::string& json_text) {
  for (size_t i = 0; i < json_text.size(); ++i) {
    const char c = json_text[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < json_text.size() && json_text[i + 1] == '\x80' &&
             (json_text[i + 2] == '\xA8' || json_text[i + 2] == '\xA9')) {
      out += json_text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else out += c;
  }
}

}  // namespace

std::vector<std::string> read_run_log(const std::string& path) {
  const std::vector<std::string> raw = read_lines(path);
  std::vector<std::string> lines;
  bool has_run_or_step = false;
  for (size_t i = 0; i < raw.size(); ++i) {
    const std::string& line = raw[i];
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = path + " line " + std::to_string(i + 1);
    const auto j = parse_record(line, where);
    GRAFT_CHECK(j.is_object() && j.contains("type"), "graft report",
                "one JSON object with a \"type\" per line", where + ": " +
                    (line.size() > 60 ? line.substr(0, 60) + "..." : line),
                "pass the file that graft train --log wrote");
    const auto& type = j["type"];
    has_run_or_step = has_run_or_step || type == "run" || type == "step";
    lines.push_back(j.dump());
  }
  // An empty file (or one without a run) used to give an empty page and exit 0.
  GRAFT_CHECK(has_run_or_step, "graft report", "a run log with at least a run or step record",
              path + (lines.empty() ? " (no records)" : " (" + std::to_string(lines.size()) + " records, none a run or a step)"),
              "pass the file that graft train --log wrote");
  return lines;
}

std::string render_report(const std::vector<std::string>& log_lines, const std::string& title) {
  // Each record's type (and a step's loss), to thin long runs before they are embedded.
  std::vector<std::string> types(log_lines.size());
  std::vector<double> losses(log_lines.size(), std::numeric_limits<double>::quiet_NaN());
  std::string meta;
  for (size_t i = 0; i < log_lines.size(); ++i) {
    const auto j = parse_record(log_lines[i], "record " + std::to_string(i + 1));
    GRAFT_CHECK(j.is_object(), "graft report", "one JSON object per record",
                "record " + std::to_string(i + 1) + ": " + log_lines[i].substr(0, 60), "pass graft train's records");
    if (j.contains("type") && j["type"].is_string()) types[i] = j["type"].get<std::string>();
    const auto loss = j.find("loss");
    if (types[i] == "step" && loss != j.end() && loss->is_number()) losses[i] = loss->get<double>();
    if (types[i] == "run") meta += "run: " + summary(j) + "\n";
    if (types[i] == "result") meta += "result: " + summary(j) + "\n";
  }
  const Thinned kept = thin(types, losses);
  // The records go in as one JSON array, with '<', '>', '&', U+2028 and U+2029 written as \uXXXX
  // escapes (only ever inside JSON strings), so no string in the data can end the <script>
  // element or open a comment in it (`<!--<script>` kept the page's own script from running).
  std::string data = "[";
  bool first = true;
  for (size_t i = 0; i < log_lines.size(); ++i) {
    if (!kept.keep[i]) continue;
    data += (first ? "\n" : ",\n");
    first = false;
    append_script_safe(data, log_lines[i]);
  }
  data += "\n]";
  std::string loss_note, grad_note;
  if (kept.steps_kept < kept.steps) {
    loss_note = " (" + std::to_string(kept.steps) + " steps drawn as " + std::to_string(kept.steps_kept) +
                " points: the lowest and highest loss of each run of steps)";
  }
  if (kept.grads_kept < kept.grads) {
    grad_note = " (" + std::to_string(kept.grads_kept) + " of " + std::to_string(kept.grads) +
                " sampled steps: one in " + std::to_string(kept.grad_stride) + ", and the last)";
  }
  std::ostringstream html;
  html << "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << html_escape(title)
       << "</title>\n<style>" << kReportStyle << "</style>\n</head>\n<body>\n<h1>" << html_escape(title) << "</h1>\n"
       << "<p class=\"meta\">" << html_escape(meta) << "</p>\n"
       << "<h2>Loss and accuracy</h2>\n<div class=\"charts\">\n"
       << "<figure><svg id=\"loss\"></svg><figcaption>training loss per step, and per epoch with the test "
          "loss" << loss_note << "</figcaption></figure>\n"
       << "<figure><svg id=\"accuracy\"></svg><figcaption>accuracy per epoch</figcaption></figure>\n"
       << "<figure><svg id=\"lr\"></svg><figcaption>learning rate</figcaption></figure>\n</div>\n"
       << "<h2>Gradient health</h2>\n"
       << "<figure><svg id=\"grad-heatmap\"></svg><figcaption>gradient L2 norm per parameter and sampled step "
          "(colour: log scale)" << grad_note << "</figcaption></figure>\n"
       << "<figure><svg id=\"update-ratio\"></svg><figcaption>update-to-weight ratio ||&Delta;w|| / ||w|| per "
          "parameter (log scale; around 1e-3 is healthy)</figcaption></figure>\n"
       << "<h2>Flags</h2>\n<table id=\"flags\"><thead><tr><th>step</th><th>kind</th><th>parameter</th><th>value</th>"
          "<th>message</th></tr></thead><tbody></tbody></table>\n"
       << "<p id=\"no-flags\" class=\"none\" hidden>No vanishing, exploding, dead or non-finite gradients were "
          "flagged.</p>\n"
       << "<h2>Memory</h2>\n"
       << "<figure><svg id=\"memory-timeline\"></svg><figcaption>graft's tensor memory by category over the first "
          "training steps, one point per allocation event (graft::memory history)</figcaption></figure>\n"
       << "<table id=\"memory-table\"><thead><tr><th>category</th><th>peak MiB</th><th>at the end, MiB</th></tr>"
          "</thead><tbody></tbody></table>\n"
       << "<script type=\"application/json\" id=\"run-data\">" << data << "</script>\n"
       << "<script>" << kReportScript << "</script>\n</body>\n</html>\n";
  return html.str();
}

void write_report_lines(const std::vector<std::string>& log_lines, const std::string& html_path,
                        const std::string& title) {
  const std::string page = render_report(log_lines, title);
  io::write_file_atomically(html_path, page, "graft report");
}

void write_report(const std::string& log_path, const std::string& html_path) {
  check_distinct_paths("graft report", {{"the run log", log_path}, {"-o", html_path}});
  check_output_directory("graft report", "-o", html_path);
  check_output_file("graft report", "-o", html_path);
  write_report_lines(read_run_log(log_path), html_path, "graft run report: " + log_path);
}

}  // namespace graft::cli
