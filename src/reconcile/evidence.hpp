// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// The verifier's inputs, made from what the guests report, and the report's view of its result.
// The probe loop (reconcile) and the audit (verify) build them here alike.
#include <cstdint>
#include <string_view>

#include "guest/facts.hpp"
#include "guest/port.hpp"
#include "plan/model.hpp"
#include "report/run_report.hpp"
#include "verify/nfs_evidence.hpp"
#include "verify/verifier.hpp"

namespace pw::reconcile {

// The guest's NFS evidence as the verifier reads it.
verify::NfsEvidence evidence_from(const guest::GuestFacts& facts, std::string_view mount_point,
                                  const net::MacAddress& intended_mac);

// One probe's measurement and the NFS state right after it.
// `host`: the hypervisor's tap counters read around the probe run (or why there are none).
verify::VerificationInput probe_input(const plan::ProvePath& v, const guest::ProbeOutcome& outcome,
                                      verify::HostTapSamples host);
// No probe: options, queues and connection addresses from one facts run.
verify::VerificationInput audit_input(const plan::ProvePath& v, const guest::GuestFacts& facts);

report::Verification verification_report(const verify::VerificationResult& result, const plan::ProvePath& v,
                                         std::uint64_t probe_bytes, int probes);
// The report's verdict for the verifier's.
report::Verdict verdict_of(verify::Verdict v);

// A converged policy's path as its facts show it (plan::PolicyPlan::passive) and as its traffic
// since the last run shows it (PolicyPlan::since_last): a path that no longer holds is
// `wrong-path` (what `pathwarden verify` says of the same state: exit 4, its own Prometheus series
// and history point), with the diagnosis and remedies; otherwise `rests_on` says what the verdict
// rests on, and a check that could not be made says so while the verdict stays converged ("could
// not observe" is never drift). The run's traffic mark goes with the report to be stored.
void judge_converged(const plan::PolicyPlan& p, report::PolicyReport& pr);

}  // namespace pw::reconcile
