#pragma once
// What a run did and found, per policy: the data behind the human summary, `--output json`
// (schema in docs: README "JSON report"), the Prometheus textfile and the HTML page.
#include <boost/json/value.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pw::report {

// Verdicts (contract, DESIGN.md) plus the two states of a policy that needed no verification.
// The engine speaks Verdict; the report's fields hold the contract's spelling (to_string).
enum class Verdict { converged, drift, verified, wrong_path, inconclusive, precondition_failed, rolled_back, rollback_failed };
std::string_view to_string(Verdict v);
std::optional<Verdict> verdict_from(std::string_view text);

namespace verdict {
inline constexpr const char* converged = "converged";  // nothing to do
inline constexpr const char* drift = "drift";          // check mode: changes would be made
inline constexpr const char* verified = "verified";
inline constexpr const char* wrong_path = "wrong-path";
inline constexpr const char* inconclusive = "inconclusive";
inline constexpr const char* precondition_failed = "precondition-failed";
inline constexpr const char* rolled_back = "rolled-back";
inline constexpr const char* rollback_failed = "rollback-failed";
}  // namespace verdict

struct InterfaceBytes {
  std::string name;
  std::string mac;
  bool intended = false;
  std::uint64_t rx_bytes = 0;  // raw delta over the probe
  std::uint64_t tx_bytes = 0;
  std::int64_t net_bytes = 0;  // in the probe's direction, background subtracted
  std::optional<std::uint64_t> speed_mbps;
};

struct Verification {
  std::string verdict;  // verified | wrong-path | inconclusive | precondition-failed
  std::string summary;
  std::string direction = "read";
  std::uint64_t probe_bytes = 0;
  std::vector<InterfaceBytes> interfaces;  // intended first
  std::optional<double> intended_share;
  std::optional<double> throughput;  // bytes per second
  std::optional<std::string> exactly_old_number;
  std::optional<std::string> diagnosis;
  std::vector<std::string> remedies;
  std::vector<std::string> failed_preconditions;
  int probes = 0;  // measurements taken (the adaptive probe may grow)
};

struct PolicyReport {
  std::string policy;
  std::string source;
  std::string node;
  int vmid = 0;
  std::string host;
  std::string verdict;
  std::string cause;                     // for rolled-back: the verification verdict that caused it
  std::vector<std::string> planned;      // steps of the plan
  std::vector<std::string> changes;      // steps applied (and not undone)
  std::vector<std::string> rolled_back;  // inverses run
  std::optional<Verification> verification;
  std::vector<std::string> restored_checks;  // after a rollback: what was found restored
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
  std::vector<std::string> notes;
};

struct RunReport {
  std::string run_id;
  std::string plan_id;
  std::string mode;  // reconcile | check | apply | verify | recover
  std::string started_at;
  std::string finished_at;
  std::string policies_revision;
  bool policies_dirty = false;
  bool journal_left = false;  // a journal needs `pathwarden recover`
  std::vector<PolicyReport> policies;
};

// Exit codes (contract, DESIGN.md): 0 nothing to do or all verified; 2 changes applied and
// verified; 3 drift found in check mode, or drift that could not be acted on
// (precondition-failed); 4 a change failed verification and was rolled back (or left, when the
// policy keeps inconclusive changes); 5 rollback failed or a journal needs `pathwarden recover`.
int exit_code(const RunReport& report);

boost::json::value to_json(const RunReport& report);

std::string render_text(const RunReport& report, bool colour = false);

// node_exporter textfile collector format. last_success holds, per policy, the Unix time of its
// last verified (or converged) result, carried across runs by the result store.
std::string render_prometheus(const RunReport& report, const std::map<std::string, double>& last_success);

std::string human_bytes(std::uint64_t bytes);
std::string human_rate(double bytes_per_second);

}  // namespace pw::report
