// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// What a run did and found, per policy: the data behind the human summary, `--output json`
// (schema in docs: docs/json-report.md), the Prometheus textfile and the HTML page.
#include <boost/json/value.hpp>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "guest/facts_channel.hpp"
#include "verify/direction.hpp"
#include "verify/signals.hpp"
#include "verify/traffic_since.hpp"

namespace pw::report {

// Verdicts (contract, DESIGN.md) plus the two states of a policy that needed no verification.
// Typed everywhere inside; the contract's spelling (to_string) only in JSON, text and metrics.
// unobserved: the API or the guest did not answer, so nothing is known (never "drift": exit 6).
enum class Verdict {
  converged,
  drift,
  verified,
  wrong_path,
  inconclusive,
  precondition_failed,
  rolled_back,
  rollback_failed,
  unobserved
};
std::string_view to_string(Verdict v);
std::optional<Verdict> verdict_from(std::string_view text);
std::ostream& operator<<(std::ostream& out, Verdict v);
inline constexpr Verdict kVerdicts[] = {Verdict::converged,   Verdict::drift,           Verdict::verified,
                                        Verdict::wrong_path,  Verdict::inconclusive,    Verdict::precondition_failed,
                                        Verdict::rolled_back, Verdict::rollback_failed, Verdict::unobserved};

// Why a change was rolled back, by the layer that failed: the verification's verdict that sent
// it there (wrong-path, inconclusive, precondition-failed), a step that failed while applying
// (apply-failed: a Proxmox write, a reboot, the guest's fstab write), or an event: the run was
// interrupted and `recover` undid it, or another controller's change conflicted with it.
enum class RollbackCause { wrong_path, inconclusive, precondition_failed, apply_failed, interrupted, conflict };
std::string_view to_string(RollbackCause c);
inline constexpr RollbackCause kRollbackCauses[] = {RollbackCause::wrong_path,          RollbackCause::inconclusive,
                                                    RollbackCause::precondition_failed, RollbackCause::apply_failed,
                                                    RollbackCause::interrupted,         RollbackCause::conflict};
// How the views say it: "verification: wrong-path", "apply failed", "interrupted", "conflict".
std::string cause_label(RollbackCause c);
// The cause a verdict stands for; nullopt for verdicts that never send a change back.
std::optional<RollbackCause> rollback_cause_of(Verdict v);
std::ostream& operator<<(std::ostream& out, RollbackCause c);

// How a verdict reads at a glance, for every view that colours it: good (verified, converged),
// bad (a wrong or undone change), unknown (unobserved: nothing was judged, so neither good nor
// bad, and never the red of a failed change), attention (everything else).
enum class Tone { good, bad, unknown, attention };
Tone tone_of(Verdict v);

// Which command wrote a report; last_results is `pathwarden report`'s page of every policy's
// last stored result, from several runs.
enum class RunMode { reconcile, check, apply, verify, recover, last_results };
std::string_view to_string(RunMode m);
inline constexpr RunMode kRunModes[] = {RunMode::reconcile, RunMode::check,   RunMode::apply,
                                        RunMode::verify,    RunMode::recover, RunMode::last_results};

struct InterfaceBytes {
  std::string name;
  std::string mac;
  bool intended = false;
  std::uint64_t rx_bytes = 0;  // raw delta over the probe
  std::uint64_t tx_bytes = 0;
  std::int64_t net_bytes = 0;  // in the probe's direction, background subtracted
  std::optional<std::uint64_t> speed_mbps;
};

// The commit-latency figure (like pg_test_fsync's open_datasync): `cycles` 8 KiB writes on the
// mount, each with O_DSYNC, so each returns only once the NAS says the data is on stable storage
// (the export's sync/async, or ZFS's sync property, decides how soon it says so).
struct CommitFigure {
  int cycles = 0;
  std::uint64_t block_bytes = 8192;
  double seconds = 0;
  std::optional<double> minimum;     // the policy's min_commit_rate (commits per second)
  std::optional<std::string> error;  // the cycles could not run: why (no figure)

  std::optional<double> per_second() const {
    if (error || seconds <= 0 || cycles <= 0) return std::nullopt;
    return cycles / seconds;
  }
  bool below_minimum() const { return minimum && (!per_second() || *per_second() < *minimum); }
  std::string describe() const;  // "256 × 8 KiB O_DSYNC writes in 0.41 s: 624 commits/s (1.60 ms each)"
};

struct Verification {
  Verdict verdict = Verdict::inconclusive;  // verified | wrong-path | inconclusive | precondition-failed
  std::string summary;
  verify::ProbeDirection direction = verify::ProbeDirection::read;
  std::uint64_t probe_bytes = 0;
  std::vector<InterfaceBytes> interfaces;  // intended first
  std::optional<double> intended_share;
  std::optional<double> throughput;  // bytes per second
  std::optional<std::string> exactly_old_number;
  std::optional<std::string> diagnosis;
  std::vector<std::string> remedies;
  std::vector<std::string> failed_preconditions;
  int probes = 0;  // measurements taken (the adaptive probe may grow)
  // What the verdict rests on: each signal as read (guest counters, host taps, connection bytes,
  // connection → interface), the one that decided, and for wrong-path the NIC the host saw
  // carry the probe ("net0").
  std::vector<verify::SignalReading> signals;
  std::optional<verify::Signal> decided_by;
  std::optional<std::string> carried_by;
  // The NAS address compared with the guest's mount and connections, and the name the policy
  // gave when it gave one (resolved by the guest).
  std::string server_address;
  std::optional<std::string> server_name;
  std::optional<CommitFigure> commit;  // when the policy asks for it (spec.verify.commit_cycles)
  // The mount's connections as the kernel has them, beside the nconnect asked (format 3.6).
  std::optional<verify::EffectiveTransports> transports;

  // An interface's bytes in the probe's direction (rx for a read, tx for a write).
  std::uint64_t probe_bytes_of(const InterfaceBytes& i) const {
    return direction == verify::ProbeDirection::read ? i.rx_bytes : i.tx_bytes;
  }
  const char* counter_name() const { return direction == verify::ProbeDirection::read ? "rx" : "tx"; }
};

// One change a run made (and did not undo), or would make (planned): the plan step's kind ("set-nic", "restart-vm",
// "set-channels", "change-fstab"), what it changed ("VM 101 net1", "media-vm /mnt/movies"), the
// value before and after where the step has one (a netN string, a channel count, the fstab line
// of the mount), and the one line people read. Reports of format 1 (changes as strings) are read
// back with only `text`.
struct Change {
  std::string action;
  std::string target;
  std::optional<std::string> before;
  std::optional<std::string> after;
  std::string text;
  bool disruptive = false;  // interrupts the guest's path or the guest (a NIC re-plug, a reboot, a re-mount)
};

struct PolicyReport {
  std::string policy;
  std::string source;
  std::string node;
  int vmid = 0;
  std::string host;
  std::string nas;  // the NAS as the policy names it (its spec.mount.server)
  // Every path through the engine sets it; the default is the honest one for a policy that
  // never got to act.
  Verdict verdict = Verdict::precondition_failed;
  std::optional<RollbackCause> cause;    // for rolled-back: why
  std::vector<Change> planned;           // steps of the plan (format 2 and older: the text only)
  std::vector<Change> changes;           // steps applied (and not undone)
  std::vector<std::string> rolled_back;  // inverses run
  std::optional<Verification> verification;
  std::vector<std::string> restored_checks;  // after a rollback: what was found restored
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
  std::vector<std::string> notes;
  // drift of a mount pathwarden does not own (Docker, systemd, autofs): what to change by hand.
  std::vector<std::string> remedy;
  // Converged (or wrong-path found without a change): what the verdict rests on, in a sentence
  // ("12.4 GB of NFS traffic on net1 since the last run (...), none elsewhere; ..." or "no NFS
  // traffic since the last run (...): address check only"). Format 3.1.
  std::optional<std::string> rests_on;
  // How the guest was read (spec.observe: over SSH, or through the QEMU guest agent), and why not
  // the agent when the settings prefer it and SSH was used. Absent: the guest was not read.
  // Format 3.5.
  std::optional<guest::FactsChannel> observed_via;
  std::optional<std::string> agent_unused;
  // The counters this run read of the path, kept with the stored result for the next run to
  // difference (reconcile/traffic_marks.hpp); not part of the JSON report.
  std::optional<verify::TrafficMark> traffic_mark;
};

struct RunReport {
  std::string run_id;
  std::string plan_id;
  RunMode mode = RunMode::reconcile;
  std::string started_at;
  std::string finished_at;
  std::string policies_revision;
  bool policies_dirty = false;
  bool journal_left = false;  // a journal needs `pathwarden recover`
  // The signal (SIGTERM 15, SIGINT 2) that stopped the run at a safe point; 0: it ran to its end.
  int stopped_by_signal = 0;
  std::vector<PolicyReport> policies;
};

// The exit codes (contract, DESIGN.md): one table, which exit_code() decides by and the help
// texts and the man page print. A run's code is the first row, in this order, that one of its
// policies (or the run) meets: a journal left for recover needs attention before anything else.
enum class ExitReason {
  rollback_failed,  // 5
  stopped,          // 128 + N
  failed,           // 4
  unobserved,       // 6
  output_failed,    // 7
  drift,            // 3
  applied,          // 2
  nothing_to_do,    // 0
};
struct ExitCodeRow {
  ExitReason reason;
  int code;  // for `stopped`: 128, plus the signal's number
  std::string_view meaning;
};
inline constexpr ExitCodeRow kExitCodes[] = {
    {ExitReason::rollback_failed, 5, "a rollback failed, or a journal waits for 'pathwarden recover'"},
    {ExitReason::stopped, 128,
     "128 + N: stopped by signal N (130 SIGINT, 143 SIGTERM) at a safe point, what it had begun rolled back"},
    {ExitReason::failed, 4,
     "a change failed verification and was rolled back (or kept inconclusive by the policy), or a path is wrong"},
    {ExitReason::unobserved, 6, "a guest or the Proxmox API did not answer: not observed (never drift)"},
    {ExitReason::output_failed, 7,
     "the run stands, but an output it was asked for (--report-file, --prometheus) "
     "could not be written"},
    {ExitReason::drift, 3,
     "drift found (plan, --check), or a change blocked by a precondition (a closed restart window, a stale saved "
     "plan)"},
    {ExitReason::applied, 2, "changes applied and verified"},
    {ExitReason::nothing_to_do, 0, "nothing to do, or every policy converged or verified"},
};
// The row a policy's verdict meets (`changed`: the run applied a change of it).
ExitReason exit_reason(Verdict v, bool changed);
// `outputs_failed`: a --report-file or --prometheus file the run was asked for was not written.
int exit_code(const RunReport& report, bool outputs_failed = false);
// The table in code order for the help texts and the man page, 1 (bad usage) included: "0",
// "1", ..., "128+N" with the meanings.
struct ExitCodeLine {
  std::string code;
  std::string_view meaning;
};
std::vector<ExitCodeLine> exit_code_list();
// "  0     nothing to do, ..." lines for a help text, the last without its newline.
std::string exit_code_lines(std::string_view indent);

// "SIGTERM", "SIGINT", "SIGHUP" (the signals a run stops for), else "signal N"; and back (0 if none).
std::string signal_name(int signal);
int signal_number(std::string_view name);

// The JSON report's format (docs/json-report.md, src/report/report.schema.json), versioned as
// diagnostics/format_version.hpp says. Format 1 is the report that spelt its version only as
// "schema": "pathwarden-report/v1" (changes as strings); 2.0 made changes structured; 3.0 made
// planned structured too (a check's fstab diff is data, not a sentence); 3.1 added each policy's
// "rests_on"; 3.2 names the proof step's action "prove-path" (was "verify": only in planned[],
// never a change); 3.3 the rollback cause "apply-failed" (a step that failed while applying, which
// 3.2 called precondition-failed); 3.4 each change's "disruptive", as the plan has it. Reports of
// 1 and 2 are still read, their strings as the changes' text; 3.5 each policy's "observed_via"
// and "agent_unused".
inline constexpr int kFormatMajor = 3;
inline constexpr int kFormatMinor = 6;
std::string format_version();  // "3.0"

boost::json::value to_json(const RunReport& report);
boost::json::value to_json(const Change& change);

// `diff`: each change and planned step followed by its before and after as "-" / "+" lines
// (reconcile --diff, as `terraform plan` shows them inline).
std::string render_text(const RunReport& report, bool colour = false, bool diff = false);

// What every series of one textfile carries, so that the textfiles of several runs on one host
// (shards: each a disjoint set of policies) never repeat a series, which node_exporter refuses.
struct MetricsLabels {
  std::string shard;   // names this run's textfile among the host's
  std::string commit;  // the binary's git commit (pathwarden_build_info)
};

// What the result store remembers of a policy across runs, for the series a run that did not
// probe still writes (a converged run keeps the last probe's figures present, so a dashboard or
// an alert on them never sees the series vanish).
// The key under which a stored result (journal::PolicyResult::details) keeps the last probe's
// `verification`, carried by the runs that probe nothing.
inline constexpr std::string_view kLastProbeKey = "last_probe";
struct StoredFigures {
  std::optional<double> last_success;   // Unix time of the last verified or converged result
  std::optional<double> last_verified;  // Unix time of the last result a probe proved (verified)
  std::optional<Verification> last_probe;
};

// node_exporter textfile collector format: only the report's policies are written (another
// shard's policies are that shard's to report). Every policy series carries `node` and `vmid`,
// to join with prometheus-pve-exporter's series.
std::string render_prometheus(const RunReport& report, const std::map<std::string, StoredFigures>& stored,
                              const MetricsLabels& labels);

// Seconds since the epoch of an RFC 3339 UTC time as the reports write it; nullopt if unreadable.
std::optional<double> unix_seconds(std::string_view rfc3339);

std::string human_bytes(std::uint64_t bytes);
// "42 s", "3 min 5 s", "2 h 3 min", "4 d 2 h".
std::string human_duration(double seconds);
// How long before `now` (Unix seconds) an RFC 3339 time was: "3 h 2 min ago", "just now"; empty
// when the time cannot be read.
std::string time_ago(std::string_view rfc3339, double now);

// What to do about an unobserved policy, whose report carries no diagnosis: nothing was judged.
std::vector<std::string> unobserved_remedies(const PolicyReport& p);
std::string human_rate(double bytes_per_second);

}  // namespace pw::report
