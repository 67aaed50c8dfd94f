// status: the last result per policy, from the state directory only.
#include <boost/json.hpp>
#include <iostream>

#include "command_support.hpp"
#include "commands.hpp"

namespace pw::cli {
namespace {

int run_status(const Args& args, const GlobalOptions& globals) {
  auto rt = make_runtime(globals, {.proxmox = false, .guests = false}, {}, {});
  if (!rt) return usage_error("status", rt.error());
  auto all = (*rt)->results->all();
  if (!all) return usage_error("status", all.error());
  if (args.value_or("output", "text") == "json") {
    boost::json::array a;
    for (const auto& r : *all) a.push_back(r.to_json());
    std::cout << boost::json::serialize(a) << "\n";
    return 0;
  }
  if (all->empty()) std::cout << "no results yet: run 'pathwarden reconcile' or 'pathwarden verify'\n";
  for (const auto& r : *all) {
    std::cout << r.policy << ": " << r.verdict << " at " << r.finished_at << " (run " << r.run_id << ")";
    if (r.last_verified_at) std::cout << ", last verified " << *r.last_verified_at;
    std::cout << "\n";
    // What a converged (or passively found wrong-path) result rests on: the traffic since the run before.
    if (const auto* rests = r.details.if_contains("rests_on"); rests != nullptr && rests->is_string()) {
      std::cout << "  rests on: " << std::string_view(rests->get_string()) << "\n";
    }
  }
  return 0;
}

}  // namespace

Command status_command() {
  return {.name = "status",
          .summary = "last result per policy",
          .usage = "status [--output text|json]",
          .description = "Reads the state directory only; contacts nothing.",
          .options = {kOutput},
          .run = run_status};
}

}  // namespace pw::cli
