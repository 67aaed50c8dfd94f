// plan: observe, make the plan, print it; --out saves it for apply, --emit-playbooks writes the
// playbooks it would run.
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <iostream>
#include <string>
#include <variant>
#include <vector>

#include "ansible/playbooks.hpp"
#include "command_support.hpp"
#include "commands.hpp"
#include "plan/model.hpp"
#include "plan/render.hpp"

namespace pw::cli {
namespace {

// --emit-playbooks DIR: the playbooks the plan would run, written for review.
// The body is the block moved verbatim out of run_plan; clang-format leaves it as it was.
// clang-format off
int write_playbooks_for(const plan::Plan& plan, const std::string& dir) {
  std::vector<ansible::FstabChange> changes;
  std::vector<ansible::FstabRestore> restores;
  std::vector<ansible::ChannelsRequest> channels;
  std::vector<ansible::ProbeRequest> probes;
  std::vector<std::string> hosts;
  for (const auto& p : plan.policies) {
    hosts.push_back(p.host);
    for (const auto& step : p.steps) {
      if (const auto* f = std::get_if<plan::ChangeFstab>(&step.action)) {
        changes.push_back({f->host, f->old_sha256, f->new_content, f->backup_path, f->activations});
        restores.push_back({f->host, f->backup_path, f->old_sha256, f->new_sha256, f->inverse_activations});
      } else if (const auto* c = std::get_if<plan::SetChannels>(&step.action)) {
        channels.push_back({c->host, c->interface, c->to});
      } else if (const auto* v = std::get_if<plan::VerifyPath>(&step.action)) {
        probes.push_back({v->host, v->probe_file, v->probe_bytes,
                          v->write ? ansible::ProbeDirection::write : ansible::ProbeDirection::read});
      }
    }
  }
  std::vector<ansible::Playbook> books;
  auto add = [&](Result<ansible::Playbook> b) {
    if (b) books.push_back(std::move(*b));
    else spdlog::error("{}", b.error().to_string());
  };
  if (!hosts.empty()) add(ansible::facts_playbook(hosts));
  if (!changes.empty()) add(ansible::apply_playbook(changes));
  if (!restores.empty()) add(ansible::rollback_playbook(restores));
  if (!channels.empty()) add(ansible::channels_playbook(channels));
  if (!probes.empty()) add(ansible::probe_playbook(probes));
  if (auto st = ansible::write_playbooks(books, dir); !st) return usage_error("plan", st.error());
  spdlog::info("wrote {} playbook(s) to {}", books.size(), dir);
  return 0;
}
// clang-format on

int run_plan(const Args& args, const GlobalOptions& globals) {
  auto s = open_session(args, globals);
  if (!s) return usage_error("plan", s.error());
  auto& engine = *s->rt->engine;
  auto observed = engine.observe(s->policies);
  auto plan = engine.make_plan(s->policies, observed);
  const auto json = boost::json::serialize(plan::to_json(plan));
  if (auto out = args.value("out")) {
    if (auto st = write_atomically(*out, json + "\n"); !st) return usage_error("plan", st.error());
  }
  if (auto dir = args.value("emit-playbooks")) {
    if (int rc = write_playbooks_for(plan, *dir); rc != 0) return rc;
  }
  if (args.value_or("output", "text") == "json") {
    std::cout << json << "\n";
  } else {
    std::cout << plan::render_plan(plan, {.colour = colour(args)});
  }
  if (plan.has_changes() || plan.has_blockers()) return 3;
  return 0;
}

}  // namespace

Command plan_command() {
  return {.name = "plan",
          .summary = "show what reconcile would change, as a diff; save it with --out",
          .usage = "plan [--out FILE] [--emit-playbooks DIR] [--policy NAME] [--output text|json] [PATH...]",
          .description =
              "Observes Proxmox and the guests and prints the plan. Exit 0: nothing to do; 3: changes or\n"
              "blocked policies. 'pathwarden apply FILE' applies exactly a saved plan.",
          .options = {{"out", "FILE", "save the plan (JSON) for 'pathwarden apply'"},
                      {"emit-playbooks", "DIR", "write the playbooks the plan would run, for review"},
                      kPolicy,
                      kOutput,
                      kNoColor},
          .run = run_plan};
}

}  // namespace pw::cli
