// SPDX-License-Identifier: GPL-3.0-or-later
// The engine on mounts pathwarden does not own (owner: compose) and on the commit-latency figure:
// drift is reported with its remedy and nothing is written; Docker not answering is unobserved;
// commits slower than the policy's minimum make a proven path inconclusive.
#include <catch2/catch.hpp>

#include "../plan/fixtures.hpp"
#include "../support/compose_volume.hpp"
#include "seed_world.hpp"

using namespace pw;
using namespace pw::testing;

namespace {

// The seed world with the lab's Compose volume configured with `o`, in use by a container.
void add_compose_volume(SeedWorld& w, const std::string& o, int nconnect = 1) {
  w.guest().docker_volumes = std::vector<guest::DockerVolume>{compose_volume(o)};
  w.guest().mounts.push_back({":/volume1/docker/pg14", kComposeMountpoint, "4.2", kNewLink, nconnect});
}

std::vector<policy::StoragePath> compose_policy(const std::string& options, bool queues = false) {
  return {plan::testing::unowned_policy("compose", options, kNewLink, queues)};
}

}  // namespace

TEST_CASE("a Compose volume configured otherwise: drift with the remedy, exit 3, nothing written") {
  SeedWorld w;
  add_compose_volume(w, "addr=198.51.100.2,rw,nfsvers=4.2");
  const auto vm_before = w.vm().current;
  auto engine = w.engine();
  for (bool check_only : {true, false}) {
    INFO(check_only);
    auto rep = engine.reconcile(compose_policy("[rw, nfsvers=4.2, nconnect=4]", true), check_only);
    INFO(report::render_text(rep));
    REQUIRE(rep.policies.size() == 1);
    const auto& p = rep.policies[0];
    CHECK(p.verdict == report::Verdict::drift);
    CHECK(report::exit_code(rep) == 3);
    CHECK(p.changes.empty());
    CHECK(p.planned.empty());  // the NIC's steps wait for the mount
    REQUIRE(p.remedy.size() == 3);
    CHECK_THAT(p.remedy[1], Catch::Contains("docker volume rm pg_pgdata"));
    CHECK_THAT(report::render_text(rep), Catch::Contains("remedy 1: in project pg's Compose file"));
  }
  // The audit (`verify`) proves the path as it is, and names the same remedy for the drift.
  auto audit = engine.audit(compose_policy("[rw, nfsvers=4.2, nconnect=4]"), false);
  INFO(report::render_text(audit));
  REQUIRE(audit.policies.size() == 1);
  CHECK(audit.policies[0].remedy ==
        engine.reconcile(compose_policy("[rw, nfsvers=4.2, nconnect=4]"), true).policies[0].remedy);
  CHECK_FALSE(audit.policies[0].warnings.empty());
  CHECK(w.pve.writes == 0);
  CHECK(w.vm().current == vm_before);
  CHECK(w.guest().fstab == kSeedFstab);
}

TEST_CASE("a Compose volume as the policy says: converged; with queues to set, proven at Docker's mount point") {
  SeedWorld w;
  add_compose_volume(w, "addr=198.51.100.2,rw,nfsvers=4.2,nconnect=4", 4);
  auto engine = w.engine();
  auto converged = engine.reconcile(compose_policy("[rw, nfsvers=4.2, nconnect=4]"), false);
  INFO(report::render_text(converged));
  CHECK(converged.policies[0].verdict == report::Verdict::converged);
  CHECK(report::exit_code(converged) == 0);

  auto rep = engine.reconcile(compose_policy("[rw, nfsvers=4.2, nconnect=4]", true), false);
  INFO(report::render_text(rep));
  const auto& p = rep.policies[0];
  CHECK(p.verdict == report::Verdict::verified);
  CHECK(report::exit_code(rep) == 2);
  CHECK(w.vm().current.at("net1") == std::string(kNet1) + ",queues=8");
  CHECK(w.guest().fstab == kSeedFstab);  // never an fstab entry for Docker's mount
  for (const auto& c : p.changes) CHECK(c.action != "change-fstab");
}

TEST_CASE("Docker not answering is 'unobserved' (exit 6), never drift") {
  SeedWorld w;
  add_compose_volume(w, "addr=198.51.100.2,rw,nfsvers=4.2");
  w.guest().docker_volumes = fail("Docker did not list its volumes: Cannot connect to the Docker daemon", "media-vm",
                                  "check 'systemctl status docker' in the guest");
  auto engine = w.engine();
  auto rep = engine.reconcile(compose_policy("[rw, nfsvers=4.2, nconnect=4]", true), false);
  INFO(report::render_text(rep));
  const auto& p = rep.policies[0];
  CHECK(p.verdict == report::Verdict::unobserved);
  CHECK(report::exit_code(rep) == 6);
  CHECK(p.remedy.empty());
  REQUIRE_FALSE(p.errors.empty());
  CHECK_THAT(p.errors[0], Catch::Contains("Cannot connect to the Docker daemon"));
  CHECK(w.pve.writes == 0);

  SECTION("an fstab policy on the same guest is planned as usual") {
    auto both = movies_policy("[vers=3, nconnect=8, _netdev]");
    both.push_back(compose_policy("[rw, nfsvers=4.2]")[0]);
    auto r2 = engine.reconcile(both, true);
    INFO(report::render_text(r2));
    CHECK(r2.policies[0].verdict == report::Verdict::drift);  // check mode: changes to make
    CHECK(r2.policies[1].verdict == report::Verdict::unobserved);
  }
}

TEST_CASE("the commit-latency figure: below the policy's minimum, a proven path is inconclusive") {
  SeedWorld w;
  auto policies = movies_policy("[vers=3, nconnect=8, _netdev]");
  policies[0].verify.commit_cycles = 256;
  policies[0].verify.min_commit_rate = 1000;
  auto engine = w.engine();

  SECTION("fast enough: verified, the figure in the report") {
    w.guest().commit = guest::CommitRun{256, 0.128, {}};
    auto rep = engine.reconcile(policies, false);
    INFO(report::render_text(rep));
    const auto& p = rep.policies[0];
    CHECK(p.verdict == report::Verdict::verified);
    REQUIRE(p.verification);
    REQUIRE(p.verification->commit);
    CHECK(p.verification->commit->per_second() == Approx(2000));
    CHECK_FALSE(p.verification->commit->below_minimum());
  }
  SECTION("too slow: inconclusive, and the change is undone") {
    w.guest().commit = guest::CommitRun{256, 1.0, {}};
    auto rep = engine.reconcile(policies, false);
    INFO(report::render_text(rep));
    const auto& p = rep.policies[0];
    REQUIRE(p.verification);
    CHECK(p.verification->verdict == report::Verdict::inconclusive);
    CHECK_THAT(p.verification->summary,
               Catch::EndsWith("; but commits are too slow: 256 × 8 KiB O_DSYNC writes in 1.00 s: 256 commits/s "
                               "(3.91 ms each), below the policy's minimum of 1000"));
    CHECK(p.verdict == report::Verdict::rolled_back);
    CHECK(w.guest().fstab == kSeedFstab);
  }
  SECTION("no figure (dd refused) where one is required: inconclusive") {
    w.guest().commit =
        guest::CommitRun{0, 0, "dd: failed to open '/mnt/movies/probe.bin.pathwarden-commit': File exists"};
    auto rep = engine.reconcile(policies, false);
    INFO(report::render_text(rep));
    REQUIRE(rep.policies[0].verification);
    CHECK(rep.policies[0].verification->verdict == report::Verdict::inconclusive);
    CHECK_THAT(rep.policies[0].verification->summary, Catch::Contains("commit latency not measured: dd: failed"));
  }
  SECTION("a figure without a minimum never decides") {
    policies[0].verify.min_commit_rate.reset();
    w.guest().commit = guest::CommitRun{256, 10.0, {}};
    auto rep = engine.reconcile(policies, false);
    INFO(report::render_text(rep));
    CHECK(rep.policies[0].verdict == report::Verdict::verified);
    REQUIRE(rep.policies[0].verification->commit);
    CHECK(rep.policies[0].verification->commit->per_second() == Approx(25.6));
  }
}
