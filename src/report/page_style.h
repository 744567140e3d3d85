// The report page's stylesheet and its script, kept apart from the page assembly (page.cc).
#pragma once

namespace sentinel::report {

// Screen and print CSS; system fonts only.
extern const char kReportCss[];
// Checks the embedded model against the page and marks <html data-report-ready="yes"> (the headless
// browser test reads that mark); adds nothing else.
extern const char kReportScript[];

}  // namespace sentinel::report
