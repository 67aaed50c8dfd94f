#include "policy/selection.hpp"

#include <fnmatch.h>

#include <algorithm>
#include <string_view>

#include "diagnostics/suggest.hpp"

namespace pw::policy {
namespace {

bool is_glob(const std::string& s) {
  return s.find_first_of("*?[") != std::string::npos;
}

bool name_matches(const std::string& pattern, const std::string& name) {
  return is_glob(pattern) ? fnmatch(pattern.c_str(), name.c_str(), 0) == 0 : pattern == name;
}

bool any_of(const std::vector<std::string>& wanted, const std::string& value) {
  return wanted.empty() || std::find(wanted.begin(), wanted.end(), value) != wanted.end();
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

Result<std::vector<StoragePath>> select_policies(std::vector<StoragePath> all, const Selection& selection) {
  if (selection.empty()) return all;
  std::vector<std::pair<std::string, std::string>> labels;
  for (const auto& s : selection.selectors) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return fail("--selector '" + s + "' is not key=value", {}, "e.g. --selector site=basement");
    }
    labels.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  // Each --policy must name something: an exact name that is no policy's gets a did-you-mean.
  std::vector<std::string_view> names;
  for (const auto& p : all) names.push_back(p.name);
  for (const auto& pattern : selection.names) {
    if (std::none_of(all.begin(), all.end(), [&](const StoragePath& p) { return name_matches(pattern, p.name); })) {
      return fail(is_glob(pattern) ? "no policy matches '" + pattern + "'"
                                   : "no policy named '" + pattern + "'" + did_you_mean(pattern, names),
                  {}, "pathwarden validate lists the policies");
    }
  }
  std::vector<StoragePath> out;
  for (auto& p : all) {
    const bool named =
        selection.names.empty() || std::any_of(selection.names.begin(), selection.names.end(),
                                               [&](const std::string& n) { return name_matches(n, p.name); });
    const bool labelled = std::all_of(labels.begin(), labels.end(), [&](const auto& kv) {
      auto it = p.labels.find(kv.first);
      return it != p.labels.end() && it->second == kv.second;
    });
    if (named && labelled && any_of(selection.nodes, p.guest.node) && any_of(selection.hosts, p.guest.host)) {
      out.push_back(std::move(p));
    }
  }
  if (out.empty()) {
    std::string what;
    if (!selection.names.empty()) what += " --policy " + join(selection.names);
    if (!selection.selectors.empty()) what += " --selector " + join(selection.selectors);
    if (!selection.nodes.empty()) what += " --node " + join(selection.nodes);
    if (!selection.hosts.empty()) what += " --host " + join(selection.hosts);
    return fail("no policy is selected by" + what, {},
                "each option narrows the others; pathwarden validate lists the policies");
  }
  return out;
}

}  // namespace pw::policy
