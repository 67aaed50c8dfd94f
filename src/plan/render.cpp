// SPDX-License-Identifier: GPL-3.0-or-later
#include "plan/render.hpp"

#include <sstream>

namespace pw::plan {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

struct Palette {
  bool on;
  std::string red() const { return on ? "\033[31m" : ""; }
  std::string green() const { return on ? "\033[32m" : ""; }
  std::string yellow() const { return on ? "\033[33m" : ""; }
  std::string bold() const { return on ? "\033[1m" : ""; }
  std::string dim() const { return on ? "\033[2m" : ""; }
  std::string reset() const { return on ? "\033[0m" : ""; }
};

}  // namespace

std::vector<std::string> line_diff(std::string_view before, std::string_view after) {
  const auto a = split_lines(before);
  const auto b = split_lines(after);
  // Longest common subsequence; fstabs are a few dozen lines.
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (std::size_t i = a.size(); i-- > 0;) {
    for (std::size_t j = b.size(); j-- > 0;) {
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  std::vector<std::string> out;
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      out.push_back("  " + std::string(a[i]));
      ++i, ++j;
    } else if (j < b.size() && (i == a.size() || lcs[i][j + 1] >= lcs[i + 1][j])) {
      out.push_back("+ " + std::string(b[j++]));
    } else {
      out.push_back("- " + std::string(a[i++]));
    }
  }
  return out;
}

std::string render_plan(const Plan& plan, const RenderOptions& options) {
  const Palette c{options.colour};
  std::ostringstream out;
  out << c.bold() << "Plan " << plan.id << c.reset();
  if (!plan.policies_revision.empty()) {
    out << " (policies at " << plan.policies_revision.substr(0, 12)
        << (plan.policies_dirty ? ", uncommitted changes" : "") << ")";
  }
  out << "\n";
  std::size_t changing = 0, blocked = 0, converged = 0, drifted = 0;
  for (const auto& p : plan.policies) {
    out << "\n"
        << c.bold() << "policy " << p.policy << c.reset() << c.dim() << "  VM " << p.vm.vmid << " on " << p.vm.node
        << ", host " << p.host << ", " << p.source << c.reset() << "\n";
    switch (p.state) {
      case PolicyState::converged:
        ++converged;
        out << "  " << c.green() << "= converged, nothing to do" << c.reset() << "\n";
        break;
      case PolicyState::precondition_failed:
      case PolicyState::unobserved:
        ++blocked;
        break;
      case PolicyState::changes:
        ++changing;
        break;
      case PolicyState::drift:
        ++drifted;
        out << "  " << c.yellow() << "≠ drift: not pathwarden's mount to change" << c.reset() << "\n";
        break;
    }
    for (const auto& b : p.blockers) out << "  " << c.red() << "✗ cannot apply: " << b << c.reset() << "\n";
    for (const auto& w : p.warnings) out << "  " << c.yellow() << "! warning: " << w << c.reset() << "\n";
    int n = 0;
    for (const auto& s : p.steps) {
      out << "  " << ++n << ". " << (s.disruptive ? c.yellow() + "~ " : "~ ") << s.summary << c.reset()
          << (s.disruptive ? c.yellow() + "  [disruptive]" + c.reset() : "") << "\n";
      if (const auto* nic = std::get_if<SetNic>(&s.action)) {
        out << "       " << c.red() << "- " << nic->device << ": " << nic->from << c.reset() << "\n";
        out << "       " << c.green() << "+ " << nic->device << ": " << nic->to << c.reset() << "\n";
      } else if (const auto* fs = std::get_if<ChangeFstab>(&s.action); fs != nullptr && fs->writes_file()) {
        out << "       " << c.dim() << "/etc/fstab on " << fs->host << " (backup " << fs->backup_path << ")"
            << c.reset() << "\n";
        for (const auto& line : line_diff(fs->old_content, fs->new_content)) {
          if (line.starts_with("+"))
            out << "       " << c.green() << line << c.reset() << "\n";
          else if (line.starts_with("-"))
            out << "       " << c.red() << line << c.reset() << "\n";
        }
      }
    }
    n = 0;
    for (const auto& r : p.remedy) out << "  " << c.yellow() << "→ remedy " << ++n << ": " << r << c.reset() << "\n";
    for (const auto& note : p.notes) out << "  " << c.dim() << "· " << note << c.reset() << "\n";
  }
  out << "\n" << changing << " to change, " << blocked << " blocked, " << converged << " converged";
  if (drifted > 0) out << ", " << drifted << " drifted (remedy by hand)";
  out << "\n";
  return out.str();
}

}  // namespace pw::plan
