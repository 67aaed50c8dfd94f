// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/fleet_view.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>

#include "report/html_report.hpp"

namespace pw::report {

namespace {

std::size_t index_of(Verdict v) {
  return static_cast<std::size_t>(std::find(std::begin(kVerdicts), std::end(kVerdicts), v) - std::begin(kVerdicts));
}

std::vector<VerdictCounts> group(const RunReport& r, const std::function<std::string(const PolicyReport&)>& key) {
  std::map<std::string, VerdictCounts> groups;
  for (const auto& p : r.policies) {
    const auto name = key(p);
    auto& g = groups[name];
    g.name = name;
    ++g.counts[index_of(p.verdict)];
    ++g.total;
  }
  std::vector<VerdictCounts> out;
  for (auto& [_, g] : groups) out.push_back(std::move(g));
  return out;
}

void table(std::ostringstream& out, const std::string& heading, const std::vector<VerdictCounts>& groups) {
  out << "<table class=\"fleet\"><caption>" << html_escape(heading) << "</caption><tbody>";
  for (const auto& g : groups) {
    out << "<tr><th>" << html_escape(g.name) << "</th><td class=\"n\">" << g.total
        << "</td><td class=\"mix\"><div class=\"stack\">";
    for (std::size_t i = 0; i < std::size(kVerdicts); ++i) {
      if (g.counts[i] == 0) continue;
      out << "<span style=\"width:" << percent_text(100.0 * g.counts[i] / g.total)
          << ";background:" << verdict_colour(kVerdicts[i]) << "\"></span>";
    }
    out << "</div><small>";
    bool first = true;
    for (std::size_t i = 0; i < std::size(kVerdicts); ++i) {
      if (g.counts[i] == 0) continue;
      out << (first ? "" : " · ") << "<span class=\"dot\" style=\"background:" << verdict_colour(kVerdicts[i])
          << "\"></span> " << g.counts[i] << " " << to_string(kVerdicts[i]);
      first = false;
    }
    out << "</small></td></tr>";
  }
  out << "</tbody></table>\n";
}

}  // namespace

int VerdictCounts::of(Verdict v) const {
  return counts[index_of(v)];
}

std::string nas_of(const PolicyReport& p) {
  return p.nas.empty() ? std::string("(unknown)") : p.nas;
}

std::vector<VerdictCounts> by_node(const RunReport& r) {
  return group(r, [](const PolicyReport& p) { return p.node.empty() ? std::string("(unknown)") : p.node; });
}

std::vector<VerdictCounts> by_nas(const RunReport& r) {
  return group(r, nas_of);
}

std::string render_fleet_html(const RunReport& r) {
  std::ostringstream out;
  out << "<section class=\"fleet-view\" aria-label=\"the fleet by node and by NAS\">\n";
  table(out, "By Proxmox node", by_node(r));
  table(out, "By NAS", by_nas(r));
  out << "</section>\n";
  return out.str();
}

}  // namespace pw::report
