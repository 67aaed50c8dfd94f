// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// Small inline SVG plots of a policy's last runs for the HTML page: a strip of verdicts, the
// intended NIC's share and the throughput per run. Inline SVG needs no script and no external
// asset, so the page's Content-Security-Policy (default-src 'none') still holds. Every label is
// escaped; numbers are written with a fixed precision, so the same history gives the same bytes.
// (Inline SVG in HTML needs no xmlns: the page names no external URL at all.) The plot area is
// #f1f8ff, a colour used nowhere else, so a screenshot test can find each plot.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/history.hpp"

namespace pw::report {

// One run on a plot: its value (nullopt: no figure that run, the line breaks there), the colour
// of its dot and the tooltip (an SVG <title>) it shows on hover.
struct PlotPoint {
  std::optional<double> value;
  std::string colour;
  std::string tooltip;
};

struct PlotFrame {
  int width = 280;
  int height = 60;
  double y_max = 1.0;        // the top of the plot; values above it are drawn at the top
  std::string top_label;     // "100%", "1.2 GB/s"
  std::string bottom_label;  // "0"
  std::string aria_label;    // what the plot shows, for screen readers
};

// A line through the points with one dot per run (the run's colour), left to right in run order.
std::string svg_line_plot(const std::vector<PlotPoint>& points, const PlotFrame& frame);

// One square per run in the colour of its verdict, oldest first.
std::string svg_verdict_strip(const std::vector<HistoryPoint>& runs, int cell = 9);

// The two plots of a history: the intended share (0–100 %) and the throughput (0 to the largest).
std::string svg_share_plot(const std::vector<HistoryPoint>& runs);
std::string svg_throughput_plot(const std::vector<HistoryPoint>& runs);

// The x of run i of n on a plot `width` wide with `pad` on each side (a single run sits in the middle).
double plot_x(std::size_t i, std::size_t n, int width, int pad);

}  // namespace pw::report
