// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/html_report.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "report/fleet_view.hpp"
#include "report/html_style.hpp"
#include "report/svg_plot.hpp"

namespace pw::report {

namespace {

constexpr std::string_view kGreen = "#1a7f37";
constexpr std::string_view kRed = "#cf222e";
constexpr std::string_view kAmber = "#9a6700";
constexpr std::string_view kGrey = "#6e7781";  // unobserved: no verdict on the path, so no traffic light

// The meaning of an exit code, from the one table (run_report.hpp).
std::string_view exit_meaning(int code) {
  for (const auto& line : exit_code_list()) {
    if (line.code == std::to_string(code) || (code > 128 && line.code == "128+N")) return line.meaning;
  }
  return "an unknown exit code";
}

std::string_view exit_colour(int code) {
  if (code == 0 || code == 2) return kGreen;
  if (code == 3) return kAmber;
  return kRed;
}

class Page {
 public:
  Page(const RunReport& r, const HtmlOptions& o) : r_(r), o_(o) {}

  std::string render() {
    out_ << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
         << "<title>" << html_escape(title()) << "</title>\n<style>" << kPageStyle << "</style>\n</head>\n<body>\n";
    header();
    out_ << "<main>\n";
    if (r_.policies.empty()) {
      out_ << "<p>This report has no policies.</p>\n";
    } else {
      out_ << render_fleet_html(r_);
      overview();
    }
    for (const auto& p : r_.policies) policy(p);
    out_ << "</main>\n<footer>pathwarden " PW_VERSION " · report format " << format_version();
    if (!r_.plan_id.empty()) out_ << " · plan <code>" << html_escape(r_.plan_id) << "</code>";
    out_ << "</footer>\n</body>\n</html>\n";
    return out_.str();
  }

 private:
  std::string title() const { return r_.run_id.empty() ? o_.title : o_.title + " " + r_.run_id; }

  // " (3 h 2 min ago)" when the page knows its time and the time is readable.
  std::string ago(std::string_view when) const {
    if (!o_.now) return {};
    const auto text = time_ago(when, *o_.now);
    return text.empty() ? text : " (" + html_escape(text) + ")";
  }

  void header() {
    out_ << "<header>\n<h1>" << html_escape(o_.title);
    if (!r_.run_id.empty()) out_ << " <code>" << html_escape(r_.run_id) << "</code>";
    out_ << "</h1>\n<p class=\"meta\">";
    std::vector<std::string> meta;
    meta.push_back(r_.mode == RunMode::last_results ? std::string("last result per policy")
                                                    : html_escape(to_string(r_.mode)));
    if (!r_.started_at.empty()) meta.push_back("started " + html_escape(r_.started_at));
    if (!r_.finished_at.empty()) meta.push_back("finished " + html_escape(r_.finished_at) + ago(r_.finished_at));
    const auto started = unix_seconds(r_.started_at);
    const auto finished = unix_seconds(r_.finished_at);
    if (started && finished) meta.push_back("took " + human_duration(*finished - *started));
    if (!r_.policies_revision.empty()) {
      meta.push_back("policies at <code>" + html_escape(r_.policies_revision.substr(0, 12)) + "</code>" +
                     (r_.policies_dirty ? " <b>(uncommitted changes)</b>" : ""));
    }
    for (std::size_t i = 0; i < meta.size(); ++i) out_ << (i ? " · " : "") << meta[i];
    out_ << "</p>\n";
    const int code = exit_code(r_);
    // A page of last results gathers several runs: it has an overall state, not an exit code.
    out_ << "<div class=\"exit\" style=\"background:" << exit_colour(code) << "\">"
         << (r_.run_id.empty() ? "overall" : "exit code " + std::to_string(code)) << ": "
         << html_escape(exit_meaning(code)) << "</div>\n";
    if (r_.journal_left) {
      out_ << "<p class=\"alert\">A journal was left behind: run <code>pathwarden recover</code>.</p>\n";
    }
    std::vector<std::pair<Verdict, int>> tally;
    for (const auto& p : r_.policies) {
      auto it = std::find_if(tally.begin(), tally.end(), [&](const auto& t) { return t.first == p.verdict; });
      if (it == tally.end())
        tally.emplace_back(p.verdict, 1);
      else
        ++it->second;
    }
    out_ << "<ul class=\"tally\">";
    for (const auto& [verdict, n] : tally) {
      out_ << "<li><span class=\"dot\" style=\"background:" << verdict_colour(verdict) << "\"></span>" << n << " "
           << html_escape(to_string(verdict)) << "</li>";
    }
    out_ << "</ul>\n</header>\n";
  }

  // One row per policy, so a page of many policies still shows every verdict on its first screen.
  void overview() {
    out_
        << "<table class=\"overview\">\n<thead><tr><th>policy</th><th>verdict</th><th>where the probe's bytes went</th>"
           "<th>throughput</th>"
        << (o_.history.empty() ? "" : "<th>last runs</th>") << "<th>changes</th></tr></thead>\n<tbody>\n";
    for (const auto& p : r_.policies) {
      out_ << "<tr><th>" << html_escape(p.policy)
           << "</th><td><span class=\"verdict\" style=\"background:" << verdict_colour(p.verdict) << "\">"
           << html_escape(to_string(p.verdict)) << "</span></td><td class=\"split\">";
      if (p.verification && !p.verification->interfaces.empty())
        split(*p.verification);
      else
        out_ << "<small>no probe</small>";
      out_ << "</td><td>";
      if (p.verification && p.verification->throughput) out_ << html_escape(human_rate(*p.verification->throughput));
      out_ << "</td>";
      if (!o_.history.empty()) {
        out_ << "<td>";
        if (const auto* runs = history_of(p.policy)) out_ << svg_verdict_strip(*runs, 8);
        out_ << "</td>";
      }
      out_ << "<td class=\"what\">";
      std::vector<std::string> counts;
      auto steps = [](std::size_t n) { return std::to_string(n) + (n == 1 ? " step " : " steps "); };
      if (!p.changes.empty()) counts.push_back(steps(p.changes.size()) + "applied");
      if (!p.rolled_back.empty()) counts.push_back(steps(p.rolled_back.size()) + "rolled back");
      if (p.changes.empty() && p.rolled_back.empty() && !p.planned.empty() && p.verdict != Verdict::converged)
        counts.push_back(steps(p.planned.size()) + "planned");
      if (!p.errors.empty())
        counts.push_back(std::to_string(p.errors.size()) + (p.errors.size() == 1 ? " error" : " errors"));
      for (std::size_t i = 0; i < counts.size(); ++i) out_ << (i ? ", " : "") << counts[i];
      if (p.verdict == Verdict::precondition_failed) {
        if (const auto why = failed_reason(p); !why.empty()) out_ << "<br><small>" << html_escape(why) << "</small>";
      }
      out_ << "</td></tr>\n";
    }
    out_ << "</tbody>\n</table>\n";
  }

  // The probe's bytes as one stacked bar (intended NIC blue) and the interfaces that carried them.
  void split(const Verification& v) {
    std::uint64_t total = 0;
    for (const auto& i : v.interfaces) total += v.probe_bytes_of(i);
    out_ << "<div class=\"stack\">";
    std::vector<std::string> parts;
    for (const auto& i : v.interfaces) {
      if (total == 0) break;
      const double share = 100.0 * static_cast<double>(v.probe_bytes_of(i)) / static_cast<double>(total);
      if (share > 0) {
        out_ << "<span" << (i.intended ? " class=\"intended\"" : "") << " style=\"width:" << percent_text(share)
             << "\"></span>";
      }
      if (share >= 1.0 || i.intended)
        parts.push_back(percent_text(share) + " " + html_escape(i.name) + (i.intended ? " (intended)" : ""));
    }
    out_ << "</div><small>";
    if (total == 0) out_ << "no bytes moved";
    for (std::size_t i = 0; i < parts.size(); ++i) out_ << (i ? ", " : "") << parts[i];
    out_ << "</small>";
  }

  void policy(const PolicyReport& p) {
    const auto colour = verdict_colour(p.verdict);
    out_ << "<section class=\"policy\" style=\"border-left-color:" << colour << "\">\n<div class=\"head\"><h2>"
         << html_escape(p.policy) << "</h2><span class=\"verdict\" style=\"background:" << colour << "\">"
         << html_escape(to_string(p.verdict)) << "</span>";
    if (p.cause) out_ << "<span class=\"cause\">" << html_escape(cause_label(*p.cause)) << "</span>";
    out_ << "</div>\n<p class=\"where\">VM " << p.vmid << " on " << html_escape(p.node) << " · host "
         << html_escape(p.host);
    if (!p.source.empty()) out_ << " · " << html_escape(p.source);
    out_ << "</p>\n";
    if (auto it = o_.policy_context.find(p.policy); it != o_.policy_context.end()) {
      out_ << "<p class=\"context\">" << html_escape(it->second) << "</p>\n";
    }
    if (p.verdict == Verdict::precondition_failed) {
      if (const auto why = failed_reason(p); !why.empty())
        out_ << "<p class=\"why\"><b>Why:</b> " << html_escape(why) << "</p>\n";
    }
    if (const auto* runs = history_of(p.policy)) history(*runs);
    if (p.verification) verification(*p.verification);
    changes("Changed", p.changes);
    if (p.changes.empty() && p.rolled_back.empty() && p.verdict != Verdict::converged) {
      changes(p.verdict == Verdict::drift ? "Drift: what a run would change" : "Planned", p.planned);
    }
    // What a rolled-back run tried (the fstab line, the netN string), not only that it was undone.
    if (!p.rolled_back.empty()) changes("Tried, then rolled back", p.planned);
    items("Rolled back", p.rolled_back, "");
    if (p.verdict == Verdict::unobserved) items("What to do", unobserved_remedies(p), "");
    items("Found restored", p.restored_checks, "");
    items("Warnings", p.warnings, "warning");
    items("Errors", p.errors, "error");
    items("Remedy (pathwarden does not own this mount)", p.remedy, "warning");
    items("Notes", p.notes, "");
    out_ << "</section>\n";
  }

  void verification(const Verification& v) {
    if (!v.summary.empty()) out_ << "<p class=\"summary\">" << html_escape(v.summary) << "</p>\n";
    if (!v.interfaces.empty()) {
      const auto widths = bar_percentages(v);
      std::uint64_t total = 0;
      for (const auto& i : v.interfaces) total += v.probe_bytes_of(i);
      out_ << "<table class=\"bars\" aria-label=\"bytes per interface during the probe (" << v.counter_name()
           << ")\">\n";
      for (std::size_t k = 0; k < v.interfaces.size(); ++k) {
        const auto& i = v.interfaces[k];
        const auto bytes = v.probe_bytes_of(i);
        out_ << "<tr" << (i.intended ? " class=\"intended\"" : "") << "><th>" << html_escape(i.name);
        if (i.intended) out_ << "<span class=\"tag\">intended</span>";
        out_ << "<br><small>" << html_escape(i.mac);
        if (i.speed_mbps) out_ << " · " << *i.speed_mbps << " Mb/s";
        out_ << "</small></th><td class=\"track\"><div class=\"rail\"><div class=\"bar\" style=\"width:"
             << percent_text(widths[k]) << "\"></div></div></td><td class=\"num\">" << v.counter_name() << " "
             << html_escape(human_bytes(bytes));
        if (total > 0) out_ << " · " << percent_text(100.0 * static_cast<double>(bytes) / static_cast<double>(total));
        out_ << "</td></tr>\n";
      }
      out_ << "</table>\n";
    }
    out_ << "<ul class=\"figures\">";
    if (v.throughput) out_ << "<li>throughput <b>" << html_escape(human_rate(*v.throughput)) << "</b></li>";
    if (v.commit) {
      // describe() names the figure itself when it could not be measured.
      out_ << "<li" << (v.commit->below_minimum() || v.commit->error ? " class=\"warning\"" : "") << ">"
           << (v.commit->error ? "" : "commit latency ") << "<b>" << html_escape(v.commit->describe()) << "</b></li>";
    }
    if (v.intended_share) out_ << "<li>intended share <b>" << percent_text(*v.intended_share * 100) << "</b></li>";
    if (v.probe_bytes > 0)
      out_ << "<li>probe <b>" << html_escape(human_bytes(v.probe_bytes)) << "</b> " << verify::to_string(v.direction)
           << "</li>";
    if (v.probes > 0) out_ << "<li>measurements <b>" << v.probes << "</b></li>";
    out_ << "</ul>\n";
    if (v.exactly_old_number) out_ << "<p class=\"old\">" << html_escape(*v.exactly_old_number) << "</p>\n";
    if (!v.signals.empty()) {
      out_ << "<h3>What the verdict rests on</h3><ul class=\"items\">";
      for (const auto& sig : v.signals) {
        const bool decided = v.decided_by && *v.decided_by == sig.signal;
        out_ << "<li" << (sig.state == verify::SignalState::contradicted ? " class=\"error\"" : "") << "><b>"
             << verify::to_string(sig.signal) << "</b> " << verify::to_string(sig.state)
             << (decided ? " (decided)" : "") << ": " << html_escape(sig.detail) << "</li>";
      }
      out_ << "</ul>\n";
      if (v.carried_by) out_ << "<p>The host saw <b>" << html_escape(*v.carried_by) << "</b> carry the probe.</p>\n";
    }
    if (v.server_name) {
      out_ << "<p>NAS <b>" << html_escape(*v.server_name) << "</b> is " << html_escape(v.server_address)
           << " in the guest.</p>\n";
    }
    if (v.diagnosis || !v.remedies.empty() || !v.failed_preconditions.empty()) {
      out_ << "<div class=\"diagnosis\">\n";
      if (v.diagnosis) out_ << "<h3>Diagnosis</h3><p>" << html_escape(*v.diagnosis) << "</p>\n";
      items("Remedies", v.remedies, "");
      items("Failed preconditions", v.failed_preconditions, "error");
      out_ << "</div>\n";
    }
  }

  // Each change's line, and its value before and after where the step has one (a netN string,
  // a channel count, the fstab line), as a diff.
  void changes(std::string_view heading, const std::vector<Change>& list) {
    if (list.empty()) return;
    out_ << "<h3>" << heading << "</h3><ul class=\"items\">";
    for (const auto& c : list) {
      out_ << "<li class=\"change\">" << html_escape(c.text);
      if (c.disruptive) out_ << "<span class=\"tag disruptive\">disruptive</span>";
      if (c.before && c.after && *c.before == *c.after) {
        out_ << "<code>  " << html_escape(*c.after) << "</code>";  // the same line, re-applied
      } else {
        if (c.before) out_ << "<code class=\"del\">- " << html_escape(*c.before) << "</code>";
        if (c.after) out_ << "<code class=\"add\">+ " << html_escape(*c.after) << "</code>";
      }
      out_ << "</li>";
    }
    out_ << "</ul>\n";
  }

  const std::vector<HistoryPoint>* history_of(const std::string& policy) const {
    const auto it = o_.history.find(policy);
    return it == o_.history.end() || it->second.empty() ? nullptr : &it->second;
  }

  // The policy's last runs: verdicts, the intended share and the throughput, oldest left.
  void history(const std::vector<HistoryPoint>& runs) {
    const auto n = runs.size();
    out_ << "<div class=\"history\"><figure>" << svg_verdict_strip(runs) << "<figcaption>last " << n
         << (n == 1 ? " run" : " runs") << ": " << html_escape(runs.front().finished_at);
    if (n > 1) out_ << " → " << html_escape(runs.back().finished_at);
    out_ << ago(runs.back().finished_at);
    out_ << "</figcaption></figure><div class=\"plots\">";
    out_ << "<figure>" << svg_share_plot(runs) << "<figcaption>intended share</figcaption></figure>";
    out_ << "<figure>" << svg_throughput_plot(runs) << "<figcaption>throughput</figcaption></figure></div></div>\n";
  }

  void items(std::string_view heading, const std::vector<std::string>& list, std::string_view cls) {
    if (list.empty()) return;
    out_ << "<h3>" << heading << "</h3><ul class=\"items\">";
    for (const auto& s : list) {
      out_ << "<li" << (cls.empty() ? "" : " class=\"" + std::string(cls) + "\"") << ">" << html_escape(s) << "</li>";
    }
    out_ << "</ul>\n";
  }

  const RunReport& r_;
  const HtmlOptions& o_;
  std::ostringstream out_;
};

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
        out += c;
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

std::string failed_reason(const PolicyReport& p) {
  if (p.verification && !p.verification->failed_preconditions.empty())
    return p.verification->failed_preconditions.front();
  if (!p.errors.empty()) return p.errors.front();
  return {};
}

std::string percent_text(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", value);
  return buf;
}

std::vector<double> bar_percentages(const Verification& v) {
  std::uint64_t longest = 0;
  for (const auto& i : v.interfaces) longest = std::max(longest, v.probe_bytes_of(i));
  std::vector<double> out;
  for (const auto& i : v.interfaces) {
    out.push_back(longest == 0 ? 0.0 : 100.0 * static_cast<double>(v.probe_bytes_of(i)) / static_cast<double>(longest));
  }
  return out;
}

std::string_view verdict_colour(Verdict v) {
  switch (tone_of(v)) {
    case Tone::good:
      return kGreen;
    case Tone::bad:
      return kRed;
    case Tone::unknown:
      return kGrey;
    case Tone::attention:
      return kAmber;
  }
  return kAmber;
}

std::string render_html(const RunReport& report, const HtmlOptions& options) {
  return Page(report, options).render();
}

}  // namespace pw::report
