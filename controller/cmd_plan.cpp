// SPDX-License-Identifier: GPL-3.0-or-later
// plan: observe, make the plan, print it; --out saves it for apply, --emit-playbooks writes the
// playbooks it would run.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <iostream>
#include <string>

#include "ansible/review.hpp"
#include "command_support.hpp"
#include "commands.hpp"
#include "files/atomic_write.hpp"
#include "guest/facts_json.hpp"
#include "journal/plan_key.hpp"
#include "plan/guest_requests.hpp"
#include "plan/model.hpp"
#include "plan/plan_seal.hpp"
#include "plan/render.hpp"

namespace pw::cli {
namespace {

// --emit-playbooks DIR: every playbook the plan can run, made as apply, rollback and the probe
// make them (plan::guest_requests, the runtime's playbook options), for review before `apply`.
int write_playbooks_for(const plan::Plan& plan, const ansible::PlaybookOptions& options, const std::string& dir) {
  auto books = ansible::review_playbooks(plan::guest_requests(plan), options);
  if (!books) return usage_error("plan", books.error());
  if (auto st = ansible::write_playbooks(*books, dir); !st) return usage_error("plan", st.error());
  spdlog::info("wrote {} playbook(s) to {}", books->size(), dir);
  return 0;
}

// --facts-out FILE: each guest's facts as this run read them (guest/facts_json.hpp), once per
// guest, with the reason where a guest could not be read.
Status write_facts(const std::vector<policy::StoragePath>& policies, const std::vector<plan::Observation>& observed,
                   const std::string& file) {
  boost::json::object guests;
  for (std::size_t i = 0; i < policies.size() && i < observed.size(); ++i) {
    const auto& host = policies[i].guest.host;
    if (guests.contains(host)) continue;
    const auto& o = observed[i];
    if (o.guest) {
      guests[host] = guest::to_json(*o.guest);
    } else if (o.guest_error) {
      guests[host] = boost::json::object{{"error", o.guest_error->to_string()}};
    }
  }
  return files::write_atomically(file, boost::json::serialize(guests) + "\n", files::Visibility::owner_only);
}

int run_plan(const Args& args, const GlobalOptions& globals) {
  auto s = open_session(args, globals);
  if (!s) return usage_error("plan", s.error());
  auto& engine = *s->rt->engine;
  auto observed = engine.observe(s->policies);
  if (auto file = args.value("facts-out")) {
    if (auto st = write_facts(s->policies, observed, *file); !st) return usage_error("plan", st.error());
  }
  auto plan = engine.make_plan(s->policies, std::move(observed));
  // Sealed with this controller's plan key: `apply` refuses the file if anything in it changes.
  auto key = journal::plan_key(*s->rt->state);
  if (!key) return usage_error("plan", key.error());
  auto document = plan::to_json(plan).as_object();
  plan::seal(document, *key);
  const auto json = boost::json::serialize(document);
  if (auto out = args.value("out")) {
    if (auto st = files::write_atomically(*out, json + "\n", files::Visibility::owner_only); !st)
      return usage_error("plan", st.error());
  }
  if (auto dir = args.value("emit-playbooks")) {
    if (int rc = write_playbooks_for(plan, s->rt->playbook_options, *dir); rc != 0) return rc;
  }
  if (args.value_or("output", "text") == "json") {
    std::cout << json << "\n";
  } else {
    std::cout << plan::render_plan(plan, {.colour = colour(args)});
  }
  for (const auto& p : plan.policies)
    if (p.state == plan::PolicyState::unobserved) return 6;  // could not observe: never "drift"
  if (plan.has_changes() || plan.has_blockers()) return 3;
  return 0;
}

}  // namespace

Command plan_command() {
  return {.name = "plan",
          .summary = "show what reconcile would change, as a diff; save it with --out",
          .usage =
              "plan [--out FILE] [--emit-playbooks DIR] [--facts-out FILE] [--policy NAME] [--output text|json] "
              "[PATH...]",
          .description =
              "Observes Proxmox and the guests and prints the plan. Exit 0: nothing to do; 3: changes or\n"
              "blocked policies. 'pathwarden apply FILE' applies exactly a saved plan.",
          .options = {{"out", "FILE", "save the plan (JSON) for 'pathwarden apply'"},
                      {"emit-playbooks", "DIR", "write the playbooks the plan would run, for review"},
                      {"facts-out", "FILE",
                       "write each guest's facts as read (JSON: fstab, mounts, interfaces, NFS connections, and "
                       "whether SSH or the guest agent read them), for support"},
                      kPolicy,
                      kExclude,
                      kSelector,
                      kNode,
                      kHost,
                      kOutput,
                      kNoColor},
          .run = run_plan};
}

}  // namespace pw::cli
