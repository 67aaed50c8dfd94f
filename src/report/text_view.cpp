// SPDX-License-Identifier: GPL-3.0-or-later
// The run as text, for a terminal or a log: per policy its verdict (coloured on a terminal),
// what changed or would, the verification with the bytes per interface, and the exit code.
#include <sstream>

#include "diagnostics/error.hpp"
#include "report/run_report.hpp"

namespace pw::report {
namespace {

// Every string of the report that came from outside (guest output, API answers, file names) as
// one terminal line: escape_controls. The JSON and HTML views escape on their own.
void clean(std::string& s) {
  s = escape_controls(s);
}
void clean(std::optional<std::string>& s) {
  if (s) clean(*s);
}
void clean(std::vector<std::string>& v) {
  for (auto& s : v) clean(s);
}
void clean(std::vector<Change>& v) {
  for (auto& c : v) {
    clean(c.action);
    clean(c.target);
    clean(c.before);
    clean(c.after);
    clean(c.text);
  }
}

RunReport cleaned(RunReport r) {
  clean(r.run_id);
  clean(r.policies_revision);
  for (auto& p : r.policies) {
    for (auto* s : {&p.policy, &p.source, &p.node, &p.host, &p.nas}) clean(*s);
    clean(p.planned);
    clean(p.changes);
    for (auto* v : {&p.rolled_back, &p.restored_checks, &p.warnings, &p.errors, &p.notes, &p.remedy}) clean(*v);
    clean(p.rests_on);
    if (auto& v = p.verification) {
      clean(v->summary);
      for (auto& i : v->interfaces) {
        clean(i.name);
        clean(i.mac);
      }
      clean(v->exactly_old_number);
      clean(v->diagnosis);
      clean(v->remedies);
      clean(v->failed_preconditions);
      for (auto& sig : v->signals) clean(sig.detail);
      clean(v->carried_by);
      clean(v->server_address);
      clean(v->server_name);
      if (v->commit) clean(v->commit->error);
    }
  }
  return r;
}

}  // namespace

// The text report. Long because it is the view itself, written in the order it prints.
std::string render_text(const RunReport& report, bool colour, bool diff) {
  const RunReport r = cleaned(report);
  auto paint = [&](const std::string& text, const char* code) {
    return colour ? std::string("\033[") + code + "m" + text + "\033[0m" : text;
  };
  auto verdict_colour = [](Verdict v) {
    switch (tone_of(v)) {
      case Tone::good:
        return "32";
      case Tone::bad:
        return "31";
      case Tone::unknown:
        return "36";
      case Tone::attention:
        return "33";
    }
    return "33";
  };
  std::ostringstream out;
  out << "Run " << r.run_id << " (" << to_string(r.mode) << ")";
  if (!r.policies_revision.empty()) {
    out << ", policies at " << r.policies_revision.substr(0, 12) << (r.policies_dirty ? " (dirty)" : "");
  }
  out << "\n";
  for (const auto& p : r.policies) {
    out << "\n" << paint(p.policy, "1") << ": " << paint(std::string(to_string(p.verdict)), verdict_colour(p.verdict));
    if (p.cause) out << " (" << cause_label(*p.cause) << ")";
    out << "  VM " << p.vmid << " on " << p.node << ", host " << p.host << "\n";
    auto before_after = [&](const Change& c) {
      if (!diff) return;
      if (c.before && c.after && *c.before == *c.after) {
        // The value stays (a mount re-made with its fstab line, an entry adopted with a comment
        // above it): said once, not as a "-" and "+" of the same line.
        out << "    = " << *c.before << "  (unchanged)\n";
        return;
      }
      if (c.before) out << "    " << paint("- " + *c.before, "31") << "\n";
      if (c.after) out << "    " << paint("+ " + *c.after, "32") << "\n";
    };
    const auto marked = [&](const Change& c) { return c.disruptive ? c.text + paint("  [disruptive]", "33") : c.text; };
    for (const auto& c : p.changes) {
      out << "  changed: " << marked(c) << "\n";
      before_after(c);
    }
    for (const auto& s : p.planned) {
      if (p.changes.empty() && p.verdict != Verdict::converged) {
        out << "  planned: " << marked(s) << "\n";
        before_after(s);
      }
    }
    if (p.verification) {
      const auto& v = *p.verification;
      out << "  verification: " << v.summary << "\n";
      for (const auto& i : v.interfaces) {
        const auto bytes = v.probe_bytes_of(i);
        out << "    " << (i.intended ? "→ " : "  ") << i.name << " (" << i.mac << ")"
            << std::string(i.name.size() < 10 ? 10 - i.name.size() : 1, ' ') << v.counter_name() << " "
            << human_bytes(bytes) << (i.intended ? "   intended" : "") << "\n";
      }
      if (v.throughput) out << "    throughput " << human_rate(*v.throughput) << "\n";
      if (v.commit)
        out << "    " << (v.commit->below_minimum() ? paint(v.commit->describe(), "33") : v.commit->describe()) << "\n";
      if (v.exactly_old_number) out << "    " << paint("! " + *v.exactly_old_number, "33") << "\n";
      for (const auto& sig : v.signals) {
        const bool decided = v.decided_by && *v.decided_by == sig.signal;
        out << "    " << (decided ? "▸ " : "  ") << sig.signal << ": " << sig.state << (decided ? " (decided)" : "")
            << " — " << sig.detail << "\n";
      }
      if (v.carried_by) out << "    the host saw " << *v.carried_by << " carry the probe\n";
      if (v.server_name) out << "    NAS " << *v.server_name << " = " << v.server_address << " in the guest\n";
      if (v.transports) out << "    " << describe(*v.transports) << "\n";
      if (v.diagnosis) out << "    diagnosis: " << *v.diagnosis << "\n";
      for (const auto& rem : v.remedies) out << "    remedy: " << rem << "\n";
      for (const auto& pre : v.failed_preconditions) out << "    precondition: " << pre << "\n";
    }
    if (p.rests_on) out << "  rests on: " << *p.rests_on << "\n";
    for (const auto& s : p.rolled_back) out << "  rolled back: " << s << "\n";
    for (const auto& s : p.restored_checks) out << "  restored: " << s << "\n";
    // A recover's notes say what it found where it undid nothing; elsewhere notes stay in the JSON.
    if (r.mode == RunMode::recover) {
      for (const auto& s : p.notes) out << "  note: " << s << "\n";
    }
    for (const auto& s : p.warnings) out << "  " << paint("warning: " + s, "33") << "\n";
    for (const auto& s : p.errors) out << "  " << paint("error: " + s, "31") << "\n";
    for (std::size_t i = 0; i < p.remedy.size(); ++i) {
      out << "  " << paint("remedy " + std::to_string(i + 1) + ": " + p.remedy[i], "33") << "\n";
    }
  }
  out << "\nexit code " << exit_code(r);
  if (r.journal_left)
    out << " (a journal needs 'pathwarden recover')";
  else if (r.stopped_by_signal > 0)
    out << " (stopped by " << signal_name(r.stopped_by_signal) << " at a safe point; what it had begun was undone)";
  out << "\n";
  return out.str();
}

}  // namespace pw::report
