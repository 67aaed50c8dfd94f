// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A run (or the last result of every policy, with their histories) as one self-contained HTML
// page an operator reads at a glance: the fleet by node and by NAS, per policy the verdict in
// colour, its last runs as small plots, the probe's bytes per interface as bars (the intended NIC marked), throughput,
// what changed or was rolled back, the diagnosis and its remedies. No scripts and no external
// assets (a Content-Security-Policy forbids both); every text is escaped, since policy values
// and the kernel's strings are untrusted.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/history.hpp"
#include "report/run_report.hpp"

namespace pw::report {

struct HtmlOptions {
  std::string title = "pathwarden run";
  // Per policy, a line shown under its heading, e.g. when the result was recorded (used when the
  // page gathers the last result of each policy from different runs).
  std::map<std::string, std::string, std::less<>> policy_context;
  // Per policy, its last runs (oldest first, the store's bounded history): drawn as a verdict
  // strip in the overview and as plots of the intended share and the throughput in its section.
  std::map<std::string, std::vector<HistoryPoint>, std::less<>> history;
  // The time the page is made (Unix seconds), a value so the page stays pure: times are shown
  // with how long ago they were ("3 h 2 min ago"). Unset: absolute times only.
  std::optional<double> now;
};

// Why a policy could not act, in one line: its first failed precondition, else its first error;
// empty when there is none.
std::string failed_reason(const PolicyReport& policy);

std::string render_html(const RunReport& report, const HtmlOptions& options = {});

// Text as HTML character data or a quoted attribute value: & < > " ' escaped, control
// characters other than tab and newline replaced by U+FFFD.
std::string html_escape(std::string_view text);

// A percentage as every view of the page writes it: "12.5%" (value in percent, one decimal).
std::string percent_text(double value);

// Bar lengths in percent of the longest, one per interface in order: the bytes each carried in
// the probe's direction (rx for a read probe, tx for a write). All zero when nothing moved.
std::vector<double> bar_percentages(const Verification& verification);

// The CSS colour of a verdict: green for verified/converged, red for a wrong or undone change,
// amber for anything that needs a look.
std::string_view verdict_colour(Verdict verdict);

}  // namespace pw::report
