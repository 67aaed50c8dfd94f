// SPDX-License-Identifier: GPL-3.0-or-later
#include "report/svg_plot.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "report/html_report.hpp"

namespace pw::report {

namespace {

constexpr int kPad = 6;          // room for a dot at either end
constexpr int kLabelWidth = 84;  // the y labels, left of the plot ("1100.0 MB/s" fits)

std::string fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string tooltip(const HistoryPoint& h, std::string_view figure) {
  std::string t = h.finished_at + " · " + std::string(to_string(h.verdict));
  if (!figure.empty()) t += " · " + std::string(figure);
  return t;
}

}  // namespace

double plot_x(std::size_t i, std::size_t n, int width, int pad) {
  if (n <= 1) return width / 2.0;
  return pad + static_cast<double>(i) * (width - 2.0 * pad) / static_cast<double>(n - 1);
}

std::string svg_line_plot(const std::vector<PlotPoint>& points, const PlotFrame& f) {
  const int w = f.width, h = f.height, total = kLabelWidth + w;
  const double top = kPad, bottom = h - kPad;
  auto y_of = [&](double v) {
    const double clamped = std::clamp(f.y_max > 0 ? v / f.y_max : 0.0, 0.0, 1.0);
    return bottom - clamped * (bottom - top);
  };
  std::ostringstream out;
  out << "<svg class=\"plot\" width=\"" << total << "\" height=\"" << h << "\" viewBox=\"0 0 " << total << " " << h
      << "\" role=\"img\" aria-label=\"" << html_escape(f.aria_label) << "\">";
  out << "<text x=\"" << kLabelWidth - 6 << "\" y=\"" << fixed(top + 4)
      << "\" text-anchor=\"end\" font-size=\"10\" fill=\"#59636e\">" << html_escape(f.top_label) << "</text>";
  out << "<text x=\"" << kLabelWidth - 6 << "\" y=\"" << fixed(bottom + 3)
      << "\" text-anchor=\"end\" font-size=\"10\" fill=\"#59636e\">" << html_escape(f.bottom_label) << "</text>";
  out << "<g transform=\"translate(" << kLabelWidth << ",0)\">";
  out << "<rect x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h << "\" fill=\"#f1f8ff\" rx=\"4\"/>";
  out << "<line x1=\"0\" y1=\"" << fixed(top) << "\" x2=\"" << w << "\" y2=\"" << fixed(top)
      << "\" stroke=\"#d0d7de\" stroke-dasharray=\"3 3\"/>";
  out << "<line x1=\"0\" y1=\"" << fixed(bottom) << "\" x2=\"" << w << "\" y2=\"" << fixed(bottom)
      << "\" stroke=\"#d0d7de\"/>";
  // The line breaks where a run has no figure: a gap, not a zero.
  std::string path;
  bool pen_down = false;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!points[i].value) {
      pen_down = false;
      continue;
    }
    path += (pen_down ? " L" : (path.empty() ? "M" : " M")) + fixed(plot_x(i, points.size(), w, kPad)) + " " +
            fixed(y_of(*points[i].value));
    pen_down = true;
  }
  if (!path.empty()) out << "<path d=\"" << path << "\" fill=\"none\" stroke=\"#0969da\" stroke-width=\"2\"/>";
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!points[i].value) continue;
    out << "<circle cx=\"" << fixed(plot_x(i, points.size(), w, kPad)) << "\" cy=\"" << fixed(y_of(*points[i].value))
        << "\" r=\"3.5\" fill=\"" << html_escape(points[i].colour) << "\"><title>" << html_escape(points[i].tooltip)
        << "</title></circle>";
  }
  out << "</g></svg>";
  return out.str();
}

std::string svg_verdict_strip(const std::vector<HistoryPoint>& runs, int cell) {
  const int gap = 2, w = static_cast<int>(runs.size()) * (cell + gap);
  std::ostringstream out;
  out << "<svg class=\"strip\" width=\"" << std::max(w, 1) << "\" height=\"" << cell << "\" viewBox=\"0 0 "
      << std::max(w, 1) << " " << cell << "\" role=\"img\" aria-label=\"verdicts of the last " << runs.size()
      << (runs.size() == 1 ? " run" : " runs") << ", oldest first\">";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    out << "<rect x=\"" << static_cast<int>(i) * (cell + gap) << "\" y=\"0\" width=\"" << cell << "\" height=\"" << cell
        << "\" rx=\"2\" fill=\"" << verdict_colour(runs[i].verdict) << "\"><title>" << html_escape(tooltip(runs[i], ""))
        << "</title></rect>";
  }
  out << "</svg>";
  return out.str();
}

std::string svg_share_plot(const std::vector<HistoryPoint>& runs) {
  std::vector<PlotPoint> points;
  for (const auto& h : runs) {
    points.push_back(
        {h.intended_share, std::string(verdict_colour(h.verdict)),
         tooltip(h, h.intended_share ? percent_text(*h.intended_share * 100) + " on the intended NIC" : "no probe")});
  }
  return svg_line_plot(points, {.y_max = 1.0,
                                .top_label = "100%",
                                .bottom_label = "0%",
                                .aria_label = "the intended NIC's share of the probe's bytes, per run"});
}

std::string svg_throughput_plot(const std::vector<HistoryPoint>& runs) {
  std::vector<PlotPoint> points;
  double most = 0;
  for (const auto& h : runs) {
    if (h.throughput) most = std::max(most, *h.throughput);
    points.push_back({h.throughput, std::string(verdict_colour(h.verdict)),
                      tooltip(h, h.throughput ? human_rate(*h.throughput) : "no probe")});
  }
  return svg_line_plot(points, {.y_max = most,
                                .top_label = most > 0 ? human_rate(most) : "",
                                .bottom_label = "0",
                                .aria_label = "the probe's throughput, per run"});
}

}  // namespace pw::report
