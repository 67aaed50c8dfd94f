// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/html_report.hpp"

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <sstream>

#include "report/report_json.hpp"
#include "text_files.hpp"

using namespace pw::report;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

RunReport fixture() {
  const std::string path = PW_TEST_DATA_DIR "/report/data/trunking-and-fix.json";
  auto json = parse_json_text(read_file(path), path);
  REQUIRE(json);
  auto rep = run_report_from_json(*json, path);
  REQUIRE(rep);
  return *rep;
}

// The width of every bar, in page order.
std::vector<double> bar_widths(const std::string& html) {
  static const std::regex bar(R"re(class="bar" style="width:([0-9.]+)%")re");
  std::vector<double> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), bar); it != std::sregex_iterator(); ++it) {
    out.push_back(std::stod((*it)[1]));
  }
  return out;
}

}  // namespace

TEST_CASE("html_escape escapes markup and control characters") {
  CHECK(html_escape("a<b>&\"c\"'d'") == "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  CHECK(html_escape("tab\tnew\nline") == "tab\tnew\nline");
  CHECK(html_escape(std::string("nul\0bell\a", 9)) ==
        "nul\xEF\xBF\xBD"
        "bell\xEF\xBF\xBD");
  CHECK(html_escape("größe → 10 GbE") == "größe → 10 GbE");  // UTF-8 passes through
}

TEST_CASE("the text report is one line per item whatever guests and the API sent") {
  RunReport r;
  PolicyReport p;
  p.policy = "movies";
  p.host = "media\x1b[2J";
  p.verdict = pw::report::Verdict::rollback_failed;
  p.errors = {"guest stderr: first\nexit code 0\x1b[32m (forged)"};
  Verification v;
  v.summary = "ok\rverified";
  v.signals = {{pw::verify::Signal::host_taps, pw::verify::SignalState::agreed, "net1\ncarried"}};
  p.verification = v;
  r.policies.push_back(p);
  const auto text = render_text(r, false);
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\r') == std::string::npos);
  CHECK(text.find("error: guest stderr: first\\x0aexit code 0\\x1b[32m (forged)\n") != std::string::npos);
  CHECK(text.find("host media\\x1b[2J") != std::string::npos);
  CHECK(text.find("net1\\x0acarried") != std::string::npos);
}

TEST_CASE("untrusted policy values cannot inject markup into the page") {
  RunReport r;
  r.run_id = "run</title><script>alert(1)</script>";
  PolicyReport p;
  p.policy = "<img src=x onerror=alert(1)>";
  p.node = "pve1\" style=\"x";
  p.host = "h'><b>";
  p.verdict = pw::report::Verdict::drift;
  p.planned = {{"change-fstab", "h /mnt/<x>", "a <b> /mnt nfs", "c </code><script> nfs",
                "write the fstab entry of /mnt/<script>evil()</script>"}};
  p.notes = {"reason: a & b"};
  Verification v;
  v.summary = "</p><iframe src=//x>";
  v.interfaces = {{"eth0<svg onload=x>", "aa:bb\"", true, 10, 0, 10, std::nullopt}};
  v.diagnosis = "<style>body{display:none}</style>";
  v.remedies = {"<a href=javascript:x>click</a>"};
  p.verification = v;
  r.policies.push_back(p);

  const auto html = render_html(r);
  // The only elements are the page's own: no script, iframe, img, svg, link or a second style.
  CHECK(pw::testing::occurrences(html, "<script") == 0);
  CHECK(pw::testing::occurrences(html, "<iframe") == 0);
  CHECK(pw::testing::occurrences(html, "<img") == 0);
  CHECK(pw::testing::occurrences(html, "<svg") == 0);
  CHECK(pw::testing::occurrences(html, "<a ") == 0);
  CHECK(pw::testing::occurrences(html, "<style") == 1);
  CHECK(pw::testing::occurrences(html, "</style>") == 1);
  CHECK(html.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(html.find("pve1&quot; style=&quot;x") != std::string::npos);
  CHECK(html.find("h&#39;&gt;&lt;b&gt;") != std::string::npos);
  CHECK(html.find("reason: a &amp; b") != std::string::npos);
  CHECK(html.find("&lt;/title&gt;&lt;script&gt;") != std::string::npos);
  // Scripts and external assets are forbidden by the page itself, should anything slip through.
  CHECK(html.find("content=\"default-src 'none'; style-src 'unsafe-inline'\"") != std::string::npos);
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
}

TEST_CASE("bars are proportional to the bytes each interface carried") {
  Verification v;
  v.direction = pw::verify::ProbeDirection::read;
  v.interfaces = {{"ens19", "m2", true, 16 << 20, 64 << 20, 0, 10000},
                  {"ens18", "m1", false, 64 << 20, 1 << 20, 0, 1000},
                  {"ens20", "m3", false, 0, 0, 0, std::nullopt}};
  auto w = bar_percentages(v);
  REQUIRE(w.size() == 3);
  CHECK(w[0] == Approx(25.0));
  CHECK(w[1] == Approx(100.0));
  CHECK(w[2] == Approx(0.0));

  // A write probe is judged on tx.
  v.direction = pw::verify::ProbeDirection::write;
  w = bar_percentages(v);
  CHECK(w[0] == Approx(100.0));
  CHECK(w[1] == Approx(100.0 / 64));

  v.interfaces = {{"a", "m", true, 0, 0, 0, std::nullopt}};
  CHECK(bar_percentages(v) == std::vector<double>{0.0});  // nothing moved: no division by zero

  // The page draws exactly those widths.
  RunReport r;
  PolicyReport p;
  p.policy = "x";
  p.verdict = pw::report::Verdict::verified;
  v.direction = pw::verify::ProbeDirection::read;
  v.interfaces = {{"ens19", "m2", true, 48 << 20, 0, 0, 10000}, {"ens18", "m1", false, 12 << 20, 0, 0, 1000}};
  p.verification = v;
  r.policies.push_back(p);
  const auto widths = bar_widths(render_html(r));
  REQUIRE(widths.size() == 2);
  CHECK(widths[0] == Approx(100.0));
  CHECK(widths[1] == Approx(25.0));
}

TEST_CASE("the page shows each policy's verdict, bars, throughput, changes, rollback and diagnosis") {
  const auto r = fixture();
  const auto html = render_html(r);

  // Run header: the exit code with its meaning and the policies' git revision.
  CHECK(html.find("exit code 4: a change failed verification and was rolled back (or kept inconclusive") !=
        std::string::npos);
  CHECK(html.find("policies at <code>3f9a1c2b7d4e</code>") != std::string::npos);

  // Verdict badges in their colours.
  CHECK(html.find("style=\"background:#cf222e\">rolled-back</span>") != std::string::npos);
  CHECK(html.find("style=\"background:#1a7f37\">verified</span>") != std::string::npos);
  CHECK(html.find("verification: wrong-path") != std::string::npos);

  // One bar per interface; the intended NIC marked; the trunked policy's bytes on the old link.
  const auto widths = bar_widths(html);
  REQUIRE(widths.size() == 5);
  CHECK(widths[0] < 0.1);             // ens19 (intended) of the rolled-back policy
  CHECK(widths[1] == Approx(100.0));  // ens18 carried the probe
  CHECK(widths[2] == Approx(0.0));    // lo
  CHECK(widths[3] == Approx(100.0));  // ens19 of the verified policy
  CHECK(widths[4] < 0.1);
  CHECK(pw::testing::occurrences(html, "<tr class=\"intended\"><th>ens19<span class=\"tag\">intended</span>") == 2);
  CHECK(html.find("rx 65.8 MiB") != std::string::npos);

  CHECK(html.find("throughput <b>117.4 MB/s</b>") != std::string::npos);
  CHECK(html.find("intended share <b>99.6%</b>") != std::string::npos);
  CHECK(html.find("exactly the old number?") != std::string::npos);
  CHECK(html.find("<h3>Diagnosis</h3><p>trunked: /proc/mounts") != std::string::npos);
  // What the verdict rests on: every signal, the deciding one marked, the NIC the host saw.
  CHECK(pw::testing::occurrences(html, "<h3>What the verdict rests on</h3>") == 1);
  CHECK(html.find("<li class=\"error\"><b>host-taps</b> contradicted (decided): net1 (intended) carried") !=
        std::string::npos);
  CHECK(html.find("The host saw <b>net2</b> carry the probe.") != std::string::npos);
  CHECK(html.find("<h3>Remedies</h3>") != std::string::npos);
  CHECK(html.find("<h3>Rolled back</h3>") != std::string::npos);
  CHECK(html.find("<h3>Found restored</h3>") != std::string::npos);
  CHECK(
      html.find("<h3>Changed</h3><ul class=\"items\"><li class=\"change\">set net1 queues=8 (hot-plug the NIC)</li>") !=
      std::string::npos);
  // The overview: one row per policy with the share of the probe's bytes per NIC and the steps.
  CHECK(
      html.find(
          "0.0% ens19 (intended), 100.0% ens18</small></td><td>117.4 MB/s</td><td class=\"what\">1 step rolled back") !=
      std::string::npos);
  CHECK(html.find("100.0% ens19 (intended)</small></td><td>612.4 MB/s</td><td class=\"what\">3 steps applied") !=
        std::string::npos);
}

TEST_CASE("a page of last results shows where each result came from") {
  RunReport r;
  r.mode = pw::report::RunMode::last_results;
  PolicyReport p;
  p.policy = "movies";
  p.verdict = pw::report::Verdict::converged;
  r.policies.push_back(p);
  HtmlOptions o;
  o.title = "pathwarden: last results";
  o.policy_context["movies"] = "recorded 2025-06-14T02:17:41Z by run <r1>";
  const auto html = render_html(r, o);
  CHECK(html.find("<h1>pathwarden: last results</h1>") != std::string::npos);
  CHECK(html.find("recorded 2025-06-14T02:17:41Z by run &lt;r1&gt;") != std::string::npos);
  CHECK(html.find("overall: nothing to do") != std::string::npos);  // several runs: no exit code
  CHECK(html.find("exit code") == std::string::npos);
  CHECK(render_html(RunReport{}).find("This report has no policies.") != std::string::npos);
}

TEST_CASE("the page says how long ago and how long; marks disruptive steps; shows what a rollback undid") {
  RunReport r;
  r.run_id = "r1";
  r.started_at = "2026-12-06T10:00:00.000Z";
  r.finished_at = "2026-12-06T10:02:05.000Z";
  PolicyReport& p = r.policies.emplace_back();
  p.policy = "movies";
  p.verdict = Verdict::rolled_back;
  p.cause = RollbackCause::wrong_path;
  p.planned.push_back({"change-fstab", "media-vm /mnt/movies", std::nullopt,
                       "198.51.100.2:/srv/movies /mnt/movies nfs vers=4.2 0 0", "write the fstab entry", true});
  p.rolled_back.emplace_back("fstab of media-vm restored");
  PolicyReport& q = r.policies.emplace_back();
  q.policy = "tv";
  q.host = "tv-vm";
  q.verdict = Verdict::unobserved;
  q.errors.emplace_back("could not observe guest tv-vm: unreachable");
  HtmlOptions o;
  o.now = 1796551325.0 + 3 * 3600;  // 3 h after the run's end (2026-12-06T10:02:05Z)
  const auto html = render_html(r, o);
  INFO(html);
  CHECK(html.find("finished 2026-12-06T10:02:05.000Z (3 h ago) · took 2 min 5 s") != std::string::npos);
  // The fstab line a rolled-back run tried, not only that it was undone; disruptive marked.
  CHECK(html.find("<h3>Tried, then rolled back</h3><ul class=\"items\"><li class=\"change\">write the fstab entry"
                  "<span class=\"tag disruptive\">disruptive</span><code class=\"add\">+ 198.51.100.2:/srv/movies") !=
        std::string::npos);
  // Unobserved: a colour of its own (not the red of a failed change) and what to do.
  CHECK(html.find("style=\"background:#6e7781\">unobserved</span>") != std::string::npos);
  CHECK(html.find("<h3>What to do</h3>") != std::string::npos);
  CHECK(html.find("ansible tv-vm -i INVENTORY -m ping") != std::string::npos);
  // The text report marks the disruptive step as the plan does.
  r.policies[0].verdict = Verdict::drift;  // as `reconcile --check` reports it
  r.policies[0].rolled_back.clear();
  CHECK(render_text(r).find("  planned: write the fstab entry  [disruptive]\n") != std::string::npos);
  CHECK(boost::json::serialize(to_json(r)).find("\"disruptive\":true") != std::string::npos);
}

TEST_CASE("durations and ages read as people say them") {
  CHECK(human_duration(0) == "0 s");
  CHECK(human_duration(59.4) == "59 s");
  CHECK(human_duration(60) == "1 min");
  CHECK(human_duration(125) == "2 min 5 s");
  CHECK(human_duration(3 * 3600 + 120) == "3 h 2 min");
  CHECK(human_duration(2 * 86400 + 3600) == "2 d 1 h");
  CHECK(time_ago("2026-12-06T10:00:00Z", 1796551200.0 + 0.5) == "just now");
  CHECK(time_ago("2026-12-06T10:00:00Z", 1796551200.0 + 90) == "1 min 30 s ago");
  CHECK(time_ago("2026-12-06T10:00:00Z", 1796551200.0 - 3600).starts_with("in the future"));
  CHECK(time_ago("yesterday", 1796551200.0).empty());
}

TEST_CASE("a report survives the JSON round trip") {
  const auto r = fixture();
  const auto again = run_report_from_json(to_json(r), "round trip");
  REQUIRE(again);
  CHECK(boost::json::serialize(to_json(*again)) == boost::json::serialize(to_json(r)));
  REQUIRE(r.policies.size() == 2);
  CHECK(r.policies[0].verification->interfaces[1].rx_bytes == 68947210u);
  REQUIRE(r.policies[0].verification->signals.size() == 4);
  CHECK(r.policies[0].verification->signals[1].signal == pw::verify::Signal::host_taps);
  CHECK(r.policies[0].verification->signals[1].state == pw::verify::SignalState::contradicted);
  CHECK(r.policies[0].verification->decided_by == pw::verify::Signal::host_taps);
  CHECK(r.policies[0].verification->carried_by == "net2");
  CHECK(r.policies[1].verification->signals.empty());  // a report from before the signals reads as none
  CHECK(!r.policies[0].verification->interfaces[2].speed_mbps);
  CHECK_FALSE(r.policies[1].cause.has_value());

  // One policy's entry, as the result store keeps it.
  const auto entry = to_json(r).as_object().at("policies").as_array()[1];
  auto p = policy_report_from_json(entry, "results/backups-10g.json");
  REQUIRE(p);
  CHECK(p->changes.size() == 3);
  CHECK(p->verification->throughput == Approx(612368384.0));
}

TEST_CASE("a report says its format_version; format 1's changes and format 2's planned (strings) are read") {
  RunReport r;
  r.run_id = "r1";
  PolicyReport& p = r.policies.emplace_back();
  p.policy = "movies";
  p.verdict = Verdict::verified;
  p.changes.push_back({"set-nic", "VM 101 net1", "virtio=BC:24:11:00:00:02,bridge=vmbr1",
                       "virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8", "set net1 queues 1 → 8"});
  p.changes.push_back({"restart-vm", "VM 101", std::nullopt, std::nullopt, "reboot VM 101"});
  const auto json = to_json(r).as_object();
  CHECK(json.at("format") == "pathwarden-report");
  CHECK(json.at("format_version") == "3.6");
  CHECK(json.at("pathwarden_version") == PW_VERSION);
  CHECK(json.at("schema") == "pathwarden-report/v3");  // a pathwarden before format_version refuses it
  const auto& c = json.at("policies").as_array()[0].at("changes").as_array()[0].as_object();
  CHECK(c.at("action") == "set-nic");
  CHECK(c.at("before") == "virtio=BC:24:11:00:00:02,bridge=vmbr1");
  CHECK(c.at("after") == "virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8");
  CHECK(c.at("text") == "set net1 queues 1 → 8");
  CHECK(json.at("policies").as_array()[0].at("changes").as_array()[1].at("before").is_null());

  auto back = run_report_from_json(json, "r.json");
  REQUIRE(back);
  REQUIRE(back->policies[0].changes.size() == 2);
  CHECK(back->policies[0].changes[0].after == "virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8");
  CHECK(back->policies[0].changes[1].target == "VM 101");
  CHECK_FALSE(back->policies[0].changes[1].before.has_value());
  CHECK(boost::json::serialize(to_json(*back)) == boost::json::serialize(json));
  CHECK(render_text(*back).find("  changed: set net1 queues 1 → 8\n") != std::string::npos);
  CHECK(render_html(*back).find(
            "<li class=\"change\">set net1 queues 1 → 8<code class=\"del\">- virtio=BC:24:11:00:00:02,bridge=vmbr1"
            "</code><code class=\"add\">+ virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=8</code></li>") !=
        std::string::npos);

  // Format 1, and a stored entry of before: the lines only.
  auto v1 = run_report_from_json(boost::json::parse(R"({"schema":"pathwarden-report/v1","policies":[
      {"policy":"a","verdict":"verified","changes":["set net1 queues 1 → 8"]}]})"),
                                 "v1.json");
  REQUIRE(v1);
  REQUIRE(v1->policies[0].changes.size() == 1);
  CHECK(v1->policies[0].changes[0].text == "set net1 queues 1 → 8");
  CHECK(v1->policies[0].changes[0].action.empty());
  auto entry = policy_report_from_json(boost::json::parse(R"({"policy":"a","changes":["x"]})"), "results/a.json");
  REQUIRE(entry);
  CHECK(entry->changes[0].text == "x");
  // Format 2: planned as the lines only.
  auto v2 = run_report_from_json(boost::json::parse(R"({"format":"pathwarden-report","format_version":"2.0",
      "policies":[{"policy":"a","verdict":"drift","planned":["set net1 queues 1 → 8"],"changes":[]}]})"),
                                 "v2.json");
  REQUIRE(v2);
  REQUIRE(v2->policies[0].planned.size() == 1);
  CHECK(v2->policies[0].planned[0].text == "set net1 queues 1 → 8");
  CHECK_FALSE(v2->policies[0].planned[0].after.has_value());

  // A later minor's fields are ignored; an unknown major is refused, naming both versions.
  auto newer = json;
  newer["format_version"] = "3.9";
  newer["added_later"] = 1;
  CHECK(run_report_from_json(newer, "n.json"));
  auto major = json;
  major["format_version"] = "4.0";
  major["pathwarden_version"] = "7.0.0";
  auto refused = run_report_from_json(major, "m.json");
  REQUIRE(!refused);
  CHECK(refused.error().where == "m.json");
  CHECK(refused.error().what == "report format_version 4.0 is not one this pathwarden (" PW_VERSION
                                ") reads: it reads 3.x, 2.x, and format 1; the report was written by pathwarden 7.0.0");
  auto v2_string =
      run_report_from_json(boost::json::parse(R"({"schema":"pathwarden-report/v2","policies":[]})"), "s.json");
  CHECK(!v2_string);  // "schema" alone names only format 1
}

TEST_CASE("the Prometheus textfile carries the shard, the build, and per policy its node and vmid") {
  RunReport r;
  r.started_at = "2026-12-06T10:00:00.000Z";
  r.finished_at = "2026-12-06T10:00:42.500Z";  // 1796551242.5
  auto add = [&](std::string name, Verdict v) -> PolicyReport& {
    PolicyReport& p = r.policies.emplace_back();
    p.policy = std::move(name);
    p.node = "pve1";
    p.vmid = 101;
    p.verdict = v;
    return p;
  };
  add("movies", Verdict::verified).changes.push_back({"set-nic", "VM 101 net1", "a", "b", "x"});
  add("tv", Verdict::converged);
  add("pg", Verdict::unobserved);
  Verification probe;
  probe.interfaces = {{"ens19", "bc:24:11:00:00:02", true, 64u << 20, 0, 64 << 20, 10000}};
  probe.throughput = 123456789.0;
  const std::map<std::string, StoredFigures> stored{
      {"tv", {.last_success = 1750000000, .last_verified = 1740000000, .last_probe = probe}},
      {"pg", {.last_success = 1750000002, .last_verified = std::nullopt, .last_probe = std::nullopt}},
      {"other-shards-policy", {.last_success = 1750000001, .last_verified = std::nullopt, .last_probe = std::nullopt}}};
  const auto text = render_prometheus(r, stored, {.shard = "cluster-a", .commit = "0123abcd"});
  INFO(text);
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  CHECK(has("pathwarden_build_info{shard=\"cluster-a\",version=\"" PW_VERSION "\",commit=\"0123abcd\"} 1"));
  const std::string movies = "{shard=\"cluster-a\",policy=\"movies\",node=\"pve1\",vmid=\"101\"";
  const std::string tv = "{shard=\"cluster-a\",policy=\"tv\",node=\"pve1\",vmid=\"101\"";
  const std::string pg = "{shard=\"cluster-a\",policy=\"pg\",node=\"pve1\",vmid=\"101\"";
  CHECK(has("pathwarden_policy_verdict" + movies + ",verdict=\"verified\"} 1"));
  // Healthy now: this run's end; not healthy: the stored last success, which stays.
  CHECK(has("pathwarden_policy_last_success_timestamp_seconds" + movies + "} 1796551243"));
  CHECK(has("pathwarden_policy_last_success_timestamp_seconds" + tv + "} 1796551243"));
  CHECK(has("pathwarden_policy_last_success_timestamp_seconds" + pg + "} 1750000002"));
  // Verified by a probe: this run for movies, the stored time for tv, never for pg.
  CHECK(has("pathwarden_policy_last_verified_timestamp_seconds" + movies + "} 1796551243"));
  CHECK(has("pathwarden_policy_last_verified_timestamp_seconds" + tv + "} 1740000000"));
  CHECK(text.find("pathwarden_policy_last_verified_timestamp_seconds" + pg) == std::string::npos);
  // A converged run probes nothing: the last probe's series stay present.
  CHECK(has("pathwarden_probe_bytes" + tv + ",interface=\"ens19\",intended=\"true\"} 67108864"));
  CHECK(has("pathwarden_probe_throughput_bytes_per_second" + tv + "} 123456789"));
  CHECK(text.find("other-shards-policy") == std::string::npos);  // that shard's file reports it
  CHECK(has("pathwarden_run_exit_code{shard=\"cluster-a\"} 6"));
  CHECK(has("pathwarden_run_last_timestamp_seconds{shard=\"cluster-a\"} 1796551242.500"));
  CHECK(has("pathwarden_run_duration_seconds{shard=\"cluster-a\"} 42.500"));
}

TEST_CASE("a bad report is refused with where and what") {
  auto e = parse_json_text("{\n  \"schema\": \"pathwarden-report/v1\",\n  \"policies\": [ }\n", "r.json");
  REQUIRE(!e);
  CHECK(e.error().where == "r.json:3:17");
  CHECK(e.error().what.starts_with("not JSON"));

  CHECK(!parse_json_text("{} trailing", "t.json"));

  auto plan = run_report_from_json(boost::json::parse(R"({"id":"abc","policies":[]})"), "plan.json");
  REQUIRE(!plan);
  CHECK(plan.error().what.find("not a pathwarden run report") != std::string::npos);

  auto wrong = run_report_from_json(
      boost::json::parse(R"({"schema":"pathwarden-report/v1","policies":[{"policy":"a","vmid":"101"}]})"), "w.json");
  REQUIRE(!wrong);
  CHECK(wrong.error().where == "w.json");
  CHECK(wrong.error().what == "policies[0].vmid: expected a whole number");

  auto bytes = run_report_from_json(boost::json::parse(R"({"schema":"pathwarden-report/v1","policies":[
      {"policy":"a","verification":{"interfaces":[{"name":"e","rx_bytes":-5}]}}]})"),
                                    "b.json");
  REQUIRE(!bytes);
  CHECK(bytes.error().what == "policies[0].verification.interfaces[0].rx_bytes: number out of range");

  // Enumerations are checked where they are read: a typo is named, with the nearest value.
  auto typo = run_report_from_json(boost::json::parse(R"({"schema":"pathwarden-report/v1","policies":[
      {"policy":"a","verdict":"rolledback","cause":"wrong-path"}]})"),
                                   "t.json");
  REQUIRE(!typo);
  CHECK(typo.error().what.starts_with("policies[0].verdict: unknown value 'rolledback'"));
  CHECK(typo.error().what.find("rolled-back") != std::string::npos);
  auto cause = policy_report_from_json(boost::json::parse(R"({"policy":"a","verdict":"rolled-back","cause":"x"})"),
                                       "results/a.json");
  REQUIRE(!cause);
  CHECK(cause.error().what.starts_with("policy.cause: unknown value 'x'"));
  auto direction = policy_report_from_json(
      boost::json::parse(R"({"policy":"a","verification":{"direction":"sideways"}})"), "results/a.json");
  REQUIRE(!direction);
  CHECK(direction.error().what.starts_with("policy.verification.direction: unknown value 'sideways'"));

  auto nameless = policy_report_from_json(boost::json::parse(R"({"verdict":"verified"})"), "results/x.json");
  REQUIRE(!nameless);
  CHECK(nameless.error().what.find("policy.policy: missing") == 0);
}
