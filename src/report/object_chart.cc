#include "report/charts.h"

#include <algorithm>

#include "report/svg.h"

namespace sentinel::report {
namespace {

const char* state_class(char c) {
  switch (c) {
    case 'F': return "o-fast";
    case 'S': return "o-slow";
    case 'P': return "o-tofast";
    case 'E': return "o-toslow";
    case 'M': return "o-moving";
    default: return nullptr;
  }
}

const char* state_text(char c) {
  switch (c) {
    case 'F': return "fast";
    case 'S': return "slow";
    case 'P': return "moving to fast (prefetch)";
    case 'E': return "moving to slow (eviction)";
    case 'M': return "moving";
    default: return "not alive";
  }
}

}  // namespace

std::string object_chart(const nlohmann::ordered_json& model, const nlohmann::ordered_json& rows,
                         const std::string& id, const std::string& title) {
  if (!rows.is_array() || rows.empty()) return "";
  const size_t P = model["profile"]["period"].get<size_t>();
  const double label_w = 150, right = 10, top = 22, row_h = 14;
  const double width = 900, cell = (width - label_w - right) / static_cast<double>(P);
  const double height = top + row_h * static_cast<double>(rows.size()) + 8;
  std::string s = svg_open(id, width, height, title);
  // Phase numbers along the top.
  const std::vector<double> xt = nice_ticks(static_cast<double>(P), 10);
  for (double t : xt) {
    if (t >= static_cast<double>(P)) break;
    s += "<text class=\"tick\" x=\"" + num(label_w + t * cell, 1) + "\" y=\"12\">" + num(t, 0) + "</text>";
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& o = rows[r];
    const std::string states = o["states"];
    const double y = top + row_h * static_cast<double>(r);
    const std::string tag = o["tag"];
    s += "<g class=\"obj-row\" data-tag=\"" + xml_escape(tag) + "\">";
    s += "<text class=\"obj-label\" x=\"" + num(label_w - 6, 1) + "\" y=\"" + num(y + row_h - 4, 1) +
         "\" text-anchor=\"end\">" + xml_escape(human_bytes(o["size_bytes"].get<double>())) +
         (o["persistent"].get<bool>() ? " (persistent)" : "") + "<title>" +
         xml_escape(tag + ": " + human_bytes(o["size_bytes"].get<double>()) + ", " +
                    std::to_string(o["accesses"].get<uint64_t>()) + " accesses per step") +
         "</title></text>";
    // Runs of one state as one rectangle.
    for (size_t k = 0; k < states.size() && k < P;) {
      size_t e = k;
      while (e < states.size() && e < P && states[e] == states[k]) ++e;
      if (const char* cls = state_class(states[k]))
        s += "<rect class=\"" + std::string(cls) + "\" x=\"" + num(label_w + static_cast<double>(k) * cell, 2) +
             "\" y=\"" + num(y + 1, 1) + "\" width=\"" + num(static_cast<double>(e - k) * cell, 2) +
             "\" height=\"" + num(row_h - 2, 1) + "\"><title>" +
             xml_escape(tag + " phases " + std::to_string(k) + "-" + std::to_string(e - 1) + ": " +
                        state_text(states[k])) +
             "</title></rect>";
      k = e;
    }
    auto mark = [&](const nlohmann::ordered_json& phases, const char* cls, const char* what) {
      for (const auto& p : phases) {
        const double x = label_w + (p.get<double>() + 0.5) * cell;
        const bool down = std::string(cls) == "m-evict";
        const double y0 = down ? y + 1 : y + row_h - 1, y1 = down ? y + 6 : y + row_h - 6;
        s += "<path class=\"" + std::string(cls) + "\" d=\"M" + num(x - 3.5, 1) + " " + num(y0, 1) + "L" +
             num(x + 3.5, 1) + " " + num(y0, 1) + "L" + num(x, 1) + " " + num(y1, 1) + "Z\"><title>" +
             xml_escape(tag + ": " + what + " issued at event " + std::to_string(p.get<uint32_t>())) +
             "</title></path>";
      }
    };
    mark(o["evictions"], "m-evict", "eviction");
    mark(o["prefetches"], "m-prefetch", "prefetch");
    for (const auto& l : o["late"]) {
      const double x = label_w + l["phase"].get<double>() * cell;
      s += "<rect class=\"m-late\" x=\"" + num(x, 2) + "\" y=\"" + num(y, 1) + "\" width=\"" +
           num(std::max(cell, 3.0), 2) + "\" height=\"" + num(row_h, 1) + "\"><title>" +
           xml_escape(tag + ": LATE prefetch, phase " + std::to_string(l["phase"].get<uint32_t>()) + " waited " +
                      human_ns(l["stall_ns"].get<double>())) +
           "</title></rect>";
    }
    s += "</g>";
  }
  s += "</svg>";
  s += "<ul class=\"legend\"><li><span class=\"swatch o-fast\"></span>fast (DRAM)</li>"
       "<li><span class=\"swatch o-slow\"></span>slow</li>"
       "<li><span class=\"swatch o-tofast\"></span>moving to fast</li>"
       "<li><span class=\"swatch o-toslow\"></span>moving to slow</li>"
       "<li><span class=\"swatch o-moving\"></span>moving (executed)</li>"
       "<li><span class=\"mark m-evict\">&#9660;</span>eviction issued</li>"
       "<li><span class=\"mark m-prefetch\">&#9650;</span>prefetch issued</li>"
       "<li><span class=\"swatch m-late\"></span>late prefetch (the phase waited)</li></ul>";
  return s;
}

}  // namespace sentinel::report
