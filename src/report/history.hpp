// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A policy's past runs, as the result store keeps them (a bounded list per policy, oldest first)
// and the fleet page plots them: per run its verdict, the intended NIC's share of the probe and
// the probe's throughput. One point is a few dozen bytes of JSON, so a store of 100 points per
// policy stays small next to the policy's last report.
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics/error.hpp"
#include "report/run_report.hpp"

namespace pw::report {

struct HistoryPoint {
  std::string finished_at;  // RFC 3339 UTC, the run's end
  std::string run_id;
  Verdict verdict = Verdict::inconclusive;
  std::optional<double> intended_share;  // 0..1, when the run probed
  std::optional<double> throughput;      // bytes per second, when the run probed
  bool changed = false;                  // the run changed the path and did not undo it (status: the last change)
};

// The point a run leaves for one policy of its report.
HistoryPoint history_point(const PolicyReport& policy, const std::string& finished_at, const std::string& run_id);

boost::json::value to_json(const HistoryPoint& point);

// The stored list back (`where` names the file in errors). A point whose verdict this pathwarden
// does not know (a newer one wrote it) is an error, as for the stored result itself.
Result<std::vector<HistoryPoint>> history_from_json(const boost::json::value& list, std::string_view where);

}  // namespace pw::report
