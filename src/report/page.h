// The report page: one self-contained HTML file (inline CSS, inline SVG, a few lines of inline script,
// no network) drawn from the report model (report_model.h), with the model itself embedded as
// <script type="application/json" id="report-data">. docs/report.md describes the page.
//
// Thread safety: pure function.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace sentinel::report {

// version: the sentinel version shown in the footer.
std::string render_report_html(const nlohmann::ordered_json& model, const std::string& version);

// The model as embedded in the page: JSON with every '<' written \u003c, so that no text from the
// inputs can end the script element.
std::string embedded_json(const nlohmann::ordered_json& model);

}  // namespace sentinel::report
