// The fixed parts of `graft report`'s page (report.cpp writes the rest around them): its
// stylesheet and the JavaScript that draws the charts from the embedded run log.
#pragma once

namespace graft::cli {

extern const char* const kReportStyle;
extern const char* const kReportScript;

}  // namespace graft::cli
