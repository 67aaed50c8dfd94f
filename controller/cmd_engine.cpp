// plan, apply, reconcile, verify, recover, status: the commands that drive the engine.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ansible/review.hpp"
#include "plan/guest_requests.hpp"
#include "commands.hpp"
#include "plan/render.hpp"
#include "progress.hpp"
#include "report/run_report.hpp"
#include "runtime.hpp"

namespace pw::cli {
namespace {

const OptionSpec kOutput{"output", "FMT", "text (default) or json"};
const OptionSpec kPolicy{"policy", "NAME", "only this policy (repeatable)", true};
const OptionSpec kReportFile{"report-file", "FILE", "also write the JSON report to FILE"};
const OptionSpec kPrometheus{"prometheus", "FILE", "write a node_exporter textfile (atomically) to FILE"};
const OptionSpec kNoColor{"no-color", "", "never colour the output"};

bool colour(const Args& args) {
  return !args.flag("no-color") && args.value_or("output", "text") == "text" && isatty(STDOUT_FILENO) != 0 &&
         std::getenv("NO_COLOR") == nullptr;
}

Status write_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail("cannot write " + tmp, path);
    out << content;
    out.flush();
    if (!out) return fail("cannot write " + tmp, path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail("cannot rename " + tmp + " to " + path, path);
  return {};
}

std::optional<double> unix_time(const std::string& rfc3339) {
  std::tm tm{};
  std::istringstream in(rfc3339);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%S");
  if (in.fail()) return std::nullopt;
  return static_cast<double>(timegm(&tm));
}

int emit(const report::RunReport& rep, const Args& args, Runtime& rt) {
  const bool json_output = args.value_or("output", "text") == "json";
  // Built only when asked for: for 10,000 policies the JSON document weighs more than the run.
  const auto json_text = json_output || args.value("report-file") ? boost::json::serialize(report::to_json(rep))
                                                                  : std::string();
  if (json_output) {
    std::cout << json_text << "\n";
  } else {
    std::cout << report::render_text(rep, colour(args));
  }
  if (auto file = args.value("report-file")) {
    if (auto st = write_atomically(*file, json_text + "\n"); !st) spdlog::error("{}", st.error().to_string());
  }
  if (auto file = args.value("prometheus")) {
    std::map<std::string, double> last_success;
    if (auto all = rt.results->all()) {
      for (const auto& r : *all) {
        if (r.last_verified_at) {
          if (auto t = unix_time(*r.last_verified_at)) last_success[r.policy] = *t;
        }
      }
    }
    if (auto st = write_atomically(*file, report::render_prometheus(rep, last_success)); !st) {
      spdlog::error("{}", st.error().to_string());
    }
  }
  return report::exit_code(rep);
}

reconcile::EngineOptions engine_options(const std::filesystem::path& policies_root) {
  reconcile::EngineOptions o;
  if (auto rev = policy_revision(policies_root)) {
    o.policies_revision = rev->commit;
    o.policies_dirty = rev->dirty;
  }
  return o;
}

// Commands that need the policies, Proxmox and the guests.
struct Session {
  std::vector<policy::StoragePath> policies;
  std::unique_ptr<Runtime> rt;
};

Result<Session> open_session(const Args& args, const GlobalOptions& globals) {
  Session s;
  std::filesystem::path root;
  auto policies = load_policies(args, globals, &root);
  if (!policies) return std::unexpected(policies.error());
  s.policies = std::move(*policies);
  auto rt = make_runtime(globals, {}, engine_options(root), progress_sink(args.value_or("output", "text") == "text"));
  if (!rt) return std::unexpected(rt.error());
  s.rt = std::move(*rt);
  return s;
}

int usage_error(const std::string& command, const Error& e) {
  std::cerr << "pathwarden " << command << ": " << e.to_string() << "\n";
  return 1;
}

// Every playbook the plan can run, made as apply, rollback and the probe make them (the same
// translation and playbook options), for review before `apply`.
Status write_review_playbooks(const plan::Plan& plan, const ansible::PlaybookOptions& options, const std::string& dir) {
  auto books = ansible::review_playbooks(plan::guest_requests(plan), options);
  if (!books) return std::unexpected(books.error());
  if (auto st = ansible::write_playbooks(*books, dir); !st) return st;
  spdlog::info("wrote {} playbook(s) to {}", books->size(), dir);
  return {};
}

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
    if (auto st = write_review_playbooks(plan, s->rt->playbook_options, *dir); !st) return usage_error("plan", st.error());
  }
  if (args.value_or("output", "text") == "json") {
    std::cout << json << "\n";
  } else {
    std::cout << plan::render_plan(plan, {.colour = colour(args)});
  }
  if (plan.has_changes() || plan.has_blockers()) return 3;
  return 0;
}

int run_apply(const Args& args, const GlobalOptions& globals) {
  if (args.positional().size() != 1) {
    return usage_error("apply", Error{"give exactly one plan FILE", {}, "write one with 'pathwarden plan --out FILE'"});
  }
  std::ifstream in(args.positional()[0]);
  if (!in) return usage_error("apply", Error{"cannot read the plan file", args.positional()[0], {}});
  std::stringstream text;
  text << in.rdbuf();
  boost::system::error_code ec;
  auto json = boost::json::parse(text.str(), ec);
  if (ec) return usage_error("apply", Error{"not JSON: " + ec.message(), args.positional()[0], {}});
  auto plan = plan::plan_from_json(json);
  if (!plan) return usage_error("apply", plan.error().with_where(args.positional()[0]));
  auto rt = make_runtime(globals, {}, {}, progress_sink(args.value_or("output", "text") == "text"));
  if (!rt) return usage_error("apply", rt.error());
  return emit((*rt)->engine->apply(*plan), args, **rt);
}

int run_reconcile(const Args& args, const GlobalOptions& globals) {
  auto s = open_session(args, globals);
  if (!s) return usage_error("reconcile", s.error());
  return emit(s->rt->engine->reconcile(s->policies, args.flag("check")), args, *s->rt);
}

int run_verify(const Args& args, const GlobalOptions& globals) {
  auto s = open_session(args, globals);
  if (!s) return usage_error("verify", s.error());
  return emit(s->rt->engine->verify(s->policies, args.flag("probe")), args, *s->rt);
}

int run_recover(const Args& args, const GlobalOptions& globals) {
  auto rt = make_runtime(globals, {}, {}, progress_sink(args.value_or("output", "text") == "text"));
  if (!rt) return usage_error("recover", rt.error());
  return emit((*rt)->engine->recover(), args, **rt);
}

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
  }
  return 0;
}

}  // namespace

Command plan_command() {
  return {.name = "plan",
          .summary = "show what reconcile would change, as a diff; save it with --out",
          .usage = "plan [--out FILE] [--emit-playbooks DIR] [--policy NAME] [--output text|json] [PATH...]",
          .description = "Observes Proxmox and the guests and prints the plan. Exit 0: nothing to do; 3: changes or\n"
                         "blocked policies. 'pathwarden apply FILE' applies exactly a saved plan.",
          .options = {{"out", "FILE", "save the plan (JSON) for 'pathwarden apply'"},
                      {"emit-playbooks", "DIR", "write the playbooks the plan would run, for review"},
                      kPolicy, kOutput, kNoColor},
          .run = run_plan};
}

Command apply_command() {
  return {.name = "apply",
          .summary = "apply a saved plan exactly; refuses when reality moved since it was made",
          .usage = "apply [--output text|json] [--report-file FILE] [--prometheus FILE] PLAN_FILE",
          .description = "Checks the Proxmox digests and fstab hashes the plan was made from, then applies it,\n"
                         "verifies with byte counters and rolls back what cannot be proven. Exit codes as reconcile.",
          .options = {kOutput, kReportFile, kPrometheus, kNoColor},
          .run = run_apply};
}

Command reconcile_command() {
  return {.name = "reconcile",
          .summary = "observe, plan, apply, verify by byte counters, roll back on mismatch",
          .usage = "reconcile [--check] [--policy NAME] [--output text|json] [--prometheus FILE] [PATH...]",
          .description = "Exit codes: 0 nothing to do or all verified; 2 changes applied and verified; 3 drift found\n"
                         "(--check) or blocked; 4 a change failed verification and was rolled back; 5 a rollback\n"
                         "failed or a journal needs 'pathwarden recover'; 1 bad usage or bad policy.",
          .options = {{"check", "", "only report drift; change nothing (exit 3 on drift)"},
                      kPolicy, kOutput, kReportFile, kPrometheus, kNoColor},
          .run = run_reconcile};
}

Command verify_command() {
  return {.name = "verify",
          .summary = "audit without changes: options, queues, connection addresses; --probe for counters",
          .usage = "verify [--probe] [--policy NAME] [--output text|json] [PATH...]",
          .description = "Without --probe no probe traffic is sent: the audit can find a path wrong but never prove\n"
                         "it right (the verdict is then inconclusive).",
          .options = {{"probe", "", "read the probe file and compare byte counters"},
                      kPolicy, kOutput, kReportFile, kPrometheus, kNoColor},
          .run = run_verify};
}

Command recover_command() {
  return {.name = "recover",
          .summary = "finish or undo runs that were interrupted (crash, kill, power loss)",
          .usage = "recover [--output text|json]",
          .description = "Reads the journals in the state directory. A run whose verification had passed is\n"
                         "finished; any other is undone step by step and the old state checked.",
          .options = {kOutput, kReportFile, kNoColor},
          .run = run_recover};
}

Command status_command() {
  return {.name = "status",
          .summary = "last result per policy",
          .usage = "status [--output text|json]",
          .description = "Reads the state directory only; contacts nothing.",
          .options = {kOutput},
          .run = run_status};
}

}  // namespace pw::cli
