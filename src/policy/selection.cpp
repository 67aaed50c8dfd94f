// SPDX-License-Identifier: GPL-3.0-or-later
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

// Each name or glob must name something: an exact name that is no policy's gets a did-you-mean.
// An exclusion glob may match nothing: a timer's `--exclude 'lab-*'` deployed to every site
// must not fail the sites without lab policies. An excluded exact name is still checked (a typo).
Status names_something(const std::vector<StoragePath>& all, const std::vector<std::string>& patterns,
                       std::string_view prefix) {
  std::vector<std::string_view> names;
  for (const auto& p : all) names.push_back(p.name);
  for (const auto& pattern : patterns) {
    if (prefix == "!" && is_glob(pattern)) continue;
    if (std::none_of(all.begin(), all.end(), [&](const StoragePath& p) { return name_matches(pattern, p.name); })) {
      const std::string shown = std::string(prefix) + pattern;
      return fail(is_glob(pattern) ? "no policy matches '" + shown + "'"
                                   : "no policy named '" + shown + "'" + did_you_mean(pattern, names),
                  {}, "'pathwarden validate --list' lists the policies");
    }
  }
  return {};
}

}  // namespace

Selection Selection::from(const std::vector<std::string>& policy, std::vector<std::string> selectors,
                          std::vector<std::string> nodes, std::vector<std::string> hosts,
                          const std::vector<std::string>& exclude) {
  Selection s;
  for (const auto& p : policy) {
    if (p.size() > 1 && p.front() == '!')
      s.excluded.push_back(p.substr(1));
    else
      s.names.push_back(p);
  }
  s.excluded.insert(s.excluded.end(), exclude.begin(), exclude.end());
  s.selectors = std::move(selectors);
  s.nodes = std::move(nodes);
  s.hosts = std::move(hosts);
  return s;
}

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
  if (auto st = names_something(all, selection.names, ""); !st) return std::unexpected(st.error());
  if (auto st = names_something(all, selection.excluded, "!"); !st) return std::unexpected(st.error());
  std::vector<StoragePath> out;
  for (auto& p : all) {
    const bool named =
        selection.names.empty() || std::any_of(selection.names.begin(), selection.names.end(),
                                               [&](const std::string& n) { return name_matches(n, p.name); });
    const bool labelled = std::all_of(labels.begin(), labels.end(), [&](const auto& kv) {
      auto it = p.labels.find(kv.first);
      return it != p.labels.end() && it->second == kv.second;
    });
    const bool excluded = std::any_of(selection.excluded.begin(), selection.excluded.end(),
                                      [&](const std::string& n) { return name_matches(n, p.name); });
    if (named && !excluded && labelled && any_of(selection.nodes, p.guest.node) &&
        any_of(selection.hosts, p.guest.host)) {
      out.push_back(std::move(p));
    }
  }
  if (out.empty()) {
    std::string what;
    if (!selection.names.empty()) what += " --policy " + join(selection.names);
    if (!selection.selectors.empty()) what += " --selector " + join(selection.selectors);
    if (!selection.nodes.empty()) what += " --node " + join(selection.nodes);
    if (!selection.hosts.empty()) what += " --host " + join(selection.hosts);
    if (!selection.excluded.empty()) what += " --exclude " + join(selection.excluded);
    return fail("no policy is selected by" + what, {},
                "each option narrows the others; 'pathwarden validate --list' lists the policies");
  }
  return out;
}

}  // namespace pw::policy
