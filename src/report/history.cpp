// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/history.hpp"

#include <boost/json.hpp>

namespace pw::report {
namespace json = boost::json;

HistoryPoint history_point(const PolicyReport& p, const std::string& finished_at, const std::string& run_id) {
  HistoryPoint h;
  h.finished_at = finished_at;
  h.run_id = run_id;
  h.verdict = p.verdict;
  h.changed = !p.changes.empty();
  if (p.verification) {
    h.intended_share = p.verification->intended_share;
    h.throughput = p.verification->throughput;
  }
  return h;
}

json::value to_json(const HistoryPoint& h) {
  json::object o{{"finished_at", h.finished_at}, {"run_id", h.run_id}, {"verdict", to_string(h.verdict)}};
  if (h.intended_share) o["intended_share"] = *h.intended_share;
  if (h.throughput) o["throughput_bytes_per_second"] = *h.throughput;
  if (h.changed) o["changed"] = true;
  return o;
}

Result<std::vector<HistoryPoint>> history_from_json(const json::value& list, std::string_view where) {
  const auto* a = list.if_array();
  if (a == nullptr)
    return fail("history: expected a list", std::string(where), "remove the file; the next run writes it again");
  std::vector<HistoryPoint> out;
  out.reserve(a->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    const std::string at = "history[" + std::to_string(i) + "]";
    const auto* o = (*a)[i].if_object();
    if (o == nullptr)
      return fail(at + ": expected an object", std::string(where), "remove the file; the next run writes it again");
    HistoryPoint h;
    const auto* finished = o->if_contains("finished_at");
    const auto* verdict = o->if_contains("verdict");
    if (finished == nullptr || !finished->is_string() || verdict == nullptr || !verdict->is_string()) {
      return fail(at + ": needs finished_at and verdict as strings", std::string(where),
                  "remove the file; the next run writes it again");
    }
    h.finished_at = std::string(finished->get_string());
    if (const auto* id = o->if_contains("run_id"); id != nullptr && id->is_string())
      h.run_id = std::string(id->get_string());
    const auto v = verdict_from(verdict->get_string());
    if (!v) {
      return fail(
          at + ": unknown verdict '" + std::string(verdict->get_string()) + "'", std::string(where),
          "a newer pathwarden wrote it, or the file was edited; remove the file and the next run writes it again");
    }
    h.verdict = *v;
    for (auto [key, into] :
         {std::pair{"intended_share", &h.intended_share}, std::pair{"throughput_bytes_per_second", &h.throughput}}) {
      if (const auto* n = o->if_contains(key); n != nullptr && n->is_number()) *into = n->to_number<double>();
    }
    if (const auto* c = o->if_contains("changed"); c != nullptr && c->is_bool()) h.changed = c->as_bool();
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace pw::report
