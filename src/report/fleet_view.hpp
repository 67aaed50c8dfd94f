// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The fleet at a glance on the HTML page: the policies counted per verdict, grouped by Proxmox
// node and by NAS, so that "everything on pve3 is amber" or "every mount of nas2 went wrong" is
// one look, not a scroll through every policy.
#include <array>
#include <string>
#include <vector>

#include "report/run_report.hpp"

namespace pw::report {

struct VerdictCounts {
  std::string name;                                // the node, or the NAS as the policy names it
  std::array<int, std::size(kVerdicts)> counts{};  // indexed as kVerdicts
  int total = 0;

  int of(Verdict v) const;
};

// The NAS a policy mounts from, as the policy names it; "(unknown)" in a report that predates
// the field (format 3.0 added "nas").
std::string nas_of(const PolicyReport& policy);

// Groups sorted by name, each with its policies counted per verdict.
std::vector<VerdictCounts> by_node(const RunReport& report);
std::vector<VerdictCounts> by_nas(const RunReport& report);

// The page's fleet section: the two groupings as tables, a stacked bar and counts per row.
std::string render_fleet_html(const RunReport& report);

}  // namespace pw::report
