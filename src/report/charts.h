// The charts of the report, each an SVG (with an HTML legend) drawn from the report model
// (report_model.h) alone:
//   dram_chart       fast-memory (DRAM) residency over the step for every policy, the budget as a line
//   object_chart     rows = objects, columns = phases: fast / slow / moving, evictions and prefetches
//                    marked, late prefetches flagged
//   traffic_chart    bytes evicted and prefetched per phase
//   sweep_chart      modeled step time against the DRAM share for Sentinel, the best baseline and the
//                    optimal plan when it was computed
// Each returns "" when the model lacks what it draws.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace sentinel::report {

std::string dram_chart(const nlohmann::ordered_json& model);
// rows: the "rows" of model["objects"] or model["executed"]["objects"]; id: the <svg> id.
std::string object_chart(const nlohmann::ordered_json& model, const nlohmann::ordered_json& rows,
                         const std::string& id, const std::string& title);
std::string traffic_chart(const nlohmann::ordered_json& model);
std::string sweep_chart(const nlohmann::ordered_json& model);

}  // namespace sentinel::report
