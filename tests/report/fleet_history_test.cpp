// SPDX-License-Identifier: GPL-3.0-or-later
// The fleet page's parts: the history a run leaves per policy, its plots, the fleet by node and
// by NAS, the reason of a failed precondition and the drift's fstab diff.
#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <regex>

#include "report/fleet_view.hpp"
#include "report/history.hpp"
#include "report/html_report.hpp"
#include "report/svg_plot.hpp"
#include "text_files.hpp"

using namespace pw::report;

namespace {

PolicyReport policy(std::string name, std::string node, std::string nas, Verdict verdict) {
  PolicyReport p;
  p.policy = std::move(name);
  p.node = std::move(node);
  p.nas = std::move(nas);
  p.verdict = verdict;
  return p;
}

HistoryPoint run(std::string at, Verdict v, std::optional<double> share, std::optional<double> rate) {
  return {std::move(at), "run-" + std::to_string(static_cast<int>(v)), v, share, rate};
}

// The centres of the plot's dots, in order.
std::vector<std::pair<double, double>> dots(const std::string& svg) {
  static const std::regex circle(R"re(<circle cx="([0-9.]+)" cy="([0-9.]+)")re");
  std::vector<std::pair<double, double>> out;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), circle); it != std::sregex_iterator(); ++it) {
    out.emplace_back(std::stod((*it)[1]), std::stod((*it)[2]));
  }
  return out;
}

}  // namespace

TEST_CASE("a run's history point carries its verdict, share and throughput, and reads back") {
  auto p = policy("movies", "pve1", "nas1", Verdict::verified);
  p.verification.emplace();
  p.verification->intended_share = 0.97;
  p.verification->throughput = 1.1e9;
  const auto h = history_point(p, "2026-12-03T10:00:00.000Z", "r1");
  const auto json = to_json(h);
  CHECK(
      boost::json::serialize(json) ==
      R"({"finished_at":"2026-12-03T10:00:00.000Z","run_id":"r1","verdict":"verified","intended_share":9.7E-1,"throughput_bytes_per_second":1.1E9})");
  const auto drift = to_json(history_point(policy("m", "pve1", "nas1", Verdict::drift), "t2", "r2"));
  CHECK_FALSE(drift.as_object().contains("intended_share"));  // no probe: no figure, not a zero

  auto back = history_from_json(boost::json::array{json, drift}, "results/movies.json");
  REQUIRE(back);
  REQUIRE(back->size() == 2);
  CHECK((*back)[0].verdict == Verdict::verified);
  CHECK((*back)[0].intended_share == Approx(0.97));
  CHECK_FALSE((*back)[1].throughput);

  auto unknown = history_from_json(boost::json::parse(R"([{"finished_at":"t","verdict":"splendid"}])"), "r.json");
  REQUIRE(!unknown);
  CHECK(unknown.error().what == "history[0]: unknown verdict 'splendid'");
  CHECK(unknown.error().where == "r.json");
  CHECK(!history_from_json(boost::json::parse(R"({"finished_at":"t"})"), "r.json"));
  CHECK(!history_from_json(boost::json::parse(R"([{"verdict":"drift"}])"), "r.json"));
}

TEST_CASE("the share plot puts each run at its share, breaks the line where a run had no probe") {
  const std::vector<HistoryPoint> runs{
      run("t1", Verdict::wrong_path, 0.02, 9e7), run("t2", Verdict::drift, std::nullopt, std::nullopt),
      run("t3", Verdict::verified, 1.0, 1.1e9), run("t4", Verdict::verified, 0.5, 1.0e9)};
  const auto svg = svg_share_plot(runs);
  const auto d = dots(svg);
  REQUIRE(d.size() == 3);  // the drift run drew no dot
  const PlotFrame frame;
  // x: run order over the width (4 runs), y: 0 at the bottom (height - 6), 100 % at the top (6).
  CHECK(d[0].first == Approx(plot_x(0, 4, frame.width, 6)).margin(0.05));
  CHECK(d[1].first == Approx(plot_x(2, 4, frame.width, 6)).margin(0.05));
  CHECK(d[0].second == Approx(54 - 0.02 * 48).margin(0.05));
  CHECK(d[1].second == Approx(6).margin(0.05));
  CHECK(d[2].second == Approx(30).margin(0.05));
  // Two pieces of line: the lone first run, then runs 3 and 4.
  CHECK(pw::testing::occurrences(svg, "<path d=\"M") == 1);
  CHECK(pw::testing::occurrences(svg, " M") == 1);
  CHECK(pw::testing::occurrences(svg, " L") == 1);
  // Dots in the verdict's colour, with the run in the tooltip.
  CHECK(svg.find("fill=\"" + std::string(verdict_colour(Verdict::wrong_path)) +
                 "\"><title>t1 · wrong-path · 2.0% on the intended NIC</title>") != std::string::npos);
  CHECK(plot_x(0, 1, 280, 6) == Approx(140));

  const auto rate = svg_throughput_plot(runs);
  const auto r = dots(rate);
  REQUIRE(r.size() == 3);
  CHECK(r[1].second == Approx(6).margin(0.05));  // the largest at the top
  CHECK(rate.find(">1100.0 MB/s</text>") != std::string::npos);
}

TEST_CASE("the verdict strip has one square per run, coloured by verdict") {
  const std::vector<HistoryPoint> runs{run("t1", Verdict::wrong_path, {}, {}), run("t2", Verdict::rolled_back, {}, {}),
                                       run("t3", Verdict::verified, {}, {})};
  const auto svg = svg_verdict_strip(runs);
  CHECK(pw::testing::occurrences(svg, "<rect ") == 3);
  CHECK(pw::testing::occurrences(svg, std::string("fill=\"") + std::string(verdict_colour(Verdict::verified)) + "\"") ==
        1);
  CHECK(pw::testing::occurrences(
            svg, std::string("fill=\"") + std::string(verdict_colour(Verdict::wrong_path)) + "\"") == 2);
  CHECK(svg.find("aria-label=\"verdicts of the last 3 runs, oldest first\"") != std::string::npos);
}

TEST_CASE("the fleet is counted per verdict by node and by NAS") {
  RunReport r;
  r.policies = {policy("a", "pve1", "nas1.lab", Verdict::verified),
                policy("b", "pve1", "nas2.lab", Verdict::wrong_path),
                policy("c", "pve2", "nas1.lab", Verdict::verified), policy("d", "pve2", "2001:db8::5", Verdict::drift),
                policy("e", "", "", Verdict::unobserved)};
  const auto nodes = by_node(r);
  REQUIRE(nodes.size() == 3);
  CHECK(nodes[0].name == "(unknown)");
  CHECK(nodes[1].name == "pve1");
  CHECK(nodes[1].total == 2);
  CHECK(nodes[1].of(Verdict::verified) == 1);
  CHECK(nodes[1].of(Verdict::wrong_path) == 1);
  CHECK(nodes[2].of(Verdict::drift) == 1);
  const auto nas = by_nas(r);
  REQUIRE(nas.size() == 4);
  CHECK(nas[0].name == "(unknown)");
  CHECK(nas[1].name == "2001:db8::5");
  CHECK(nas[2].name == "nas1.lab");
  CHECK(nas[2].of(Verdict::verified) == 2);
  CHECK(nas[3].name == "nas2.lab");

  const auto html = render_fleet_html(r);
  CHECK(html.find("<caption>By Proxmox node</caption>") != std::string::npos);
  CHECK(html.find("<caption>By NAS</caption>") != std::string::npos);
  CHECK(html.find("<tr><th>nas1.lab</th><td class=\"n\">2</td>") != std::string::npos);
  CHECK(html.find("width:50.0%;background:" + std::string(verdict_colour(Verdict::wrong_path))) != std::string::npos);
}

TEST_CASE("the page of last results: fleet, plots per policy, why a precondition failed, the drift's fstab diff") {
  RunReport r;
  r.mode = RunMode::last_results;
  auto blocked = policy("backups", "pve2", "nas2", Verdict::precondition_failed);
  blocked.errors = {"guest media-vm unreachable <ssh>"};
  auto drift = policy("movies", "pve1", "nas1", Verdict::drift);
  drift.planned = {{"change-fstab", "media-vm /mnt/movies", "192.0.2.10:/tank /mnt/movies nfs vers=4.1 0 0",
                    "203.0.113.10:/tank /mnt/movies nfs vers=4.2,nconnect=8 0 0", "re-make /mnt/movies"}};
  r.policies = {blocked, drift};
  HtmlOptions o;
  o.history["movies"] = {run("t1", Verdict::verified, 0.99, 1e9), run("t2", Verdict::drift, {}, {})};
  const auto html = render_html(r, o);
  CHECK(pw::testing::occurrences(html, "<caption>") == 2);
  CHECK(html.find("<p class=\"why\"><b>Why:</b> guest media-vm unreachable &lt;ssh&gt;</p>") != std::string::npos);
  CHECK(html.find("<br><small>guest media-vm unreachable &lt;ssh&gt;</small>") != std::string::npos);  // overview
  CHECK(html.find("<h3>Drift: what a run would change</h3>") != std::string::npos);
  CHECK(html.find("<code class=\"del\">- 192.0.2.10:/tank /mnt/movies nfs vers=4.1 0 0</code>"
                  "<code class=\"add\">+ 203.0.113.10:/tank /mnt/movies nfs vers=4.2,nconnect=8 0 0</code>") !=
        std::string::npos);
  // movies has a history: a strip in the overview, strip + two plots in its section; backups none.
  CHECK(pw::testing::occurrences(html, "<svg class=\"strip\"") == 2);
  CHECK(pw::testing::occurrences(html, "<svg class=\"plot\"") == 2);
  CHECK(html.find("last 2 runs: t1 → t2") != std::string::npos);
  CHECK(html.find("<th>last runs</th>") != std::string::npos);
  CHECK(failed_reason(drift).empty());
}
