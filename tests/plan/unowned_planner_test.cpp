// SPDX-License-Identifier: GPL-3.0-or-later
// The planner on mounts pathwarden does not own (owner compose, systemd, autofs): converged,
// drift with the remedy, a precondition when nothing is mounted; and the sharing guard of an fstab
// policy whose nconnect change would re-make a mount Docker or autofs made.
#include <catch2/catch.hpp>

#include "../support/compose_volume.hpp"
#include "fixtures.hpp"

using namespace pw;
using namespace pw::plan;
using namespace pw::plan::testing;
using pw::testing::compose_volume;
using pw::testing::kComposeMountpoint;

namespace {

// The lab's Compose volume as the kernel shows it while a container uses it (tests/lab/README.md).
guest::MountInfo docker_mount(const std::string& options = "rw,relatime,vers=4.2,hard,proto=tcp,addr=198.51.100.2") {
  return nfs_mount(":/volume1/docker/pg14", kComposeMountpoint, options);
}

// The seed's guest with the lab's Compose volume configured with `o` and, when `mounted`, in use.
Observation compose_world(const std::string& o = "addr=198.51.100.2,rw,nfsvers=4.2", bool mounted = true) {
  auto obs = seed_observation();
  obs.guest->docker = std::vector<guest::DockerVolume>{compose_volume(o)};
  if (mounted) obs.guest->mounts.push_back(docker_mount());
  return obs;
}

}  // namespace

TEST_CASE("a Compose volume mounted as the policy says is converged; pathwarden only verifies it") {
  auto p = plan_policy(unowned_policy("compose"), compose_world(), context());
  CHECK(p.state == PolicyState::converged);
  CHECK(p.steps.empty());
  CHECK(p.blockers.empty());
  CHECK(p.remedy.empty());
  CHECK(has(p.notes, "Compose volume pg_pgdata is configured with driver_opts o: addr=198.51.100.2,rw,nfsvers=4.2"));
  CHECK(has(p.notes,
            "Compose volume pg_pgdata is mounted as the policy says (compose's mount; pathwarden only "
            "verifies it)"));
}

TEST_CASE("the NIC stays pathwarden's: its steps, then a verify at Docker's mount point, never an fstab step") {
  auto p =
      plan_policy(unowned_policy("compose", "[rw, nfsvers=4.2]", "198.51.100.2", true), compose_world(), context());
  REQUIRE(p.state == PolicyState::changes);
  CHECK(kinds(p) == std::vector<std::string>{"set-nic", "set-channels", "prove-path"});
  const auto* v = std::get_if<ProvePath>(&p.steps.back().action);
  REQUIRE(v != nullptr);
  CHECK(v->mount_point == kComposeMountpoint);
  CHECK(v->probe_file == std::string(kComposeMountpoint) + "/probe.bin");
  CHECK(v->server == "198.51.100.2");
}

TEST_CASE("driver_opts other than the policy's: drift, no steps, the remedy (exit 3)") {
  auto policy = unowned_policy("compose", "[rw, nfsvers=4.2, nconnect=4, _netdev]");
  auto p = plan_policy(policy, compose_world(), context());
  REQUIRE(p.state == PolicyState::drift);
  CHECK(p.steps.empty());
  CHECK(p.blockers.empty());
  REQUIRE_FALSE(p.notes.empty());
  // The live mount lacks nconnect too: both are said, the configuration first.
  CHECK(p.notes[0] ==
        "Compose volume pg_pgdata (compose's mount, /var/lib/docker/volumes/pg_pgdata/_data) differs from the "
        "policy: has no nconnect=4; mounted now: /var/lib/docker/volumes/pg_pgdata/_data has nconnect=1 instead of 4");
  REQUIRE(p.remedy.size() == 3);
  CHECK_THAT(p.remedy[0], Catch::Contains("o: \"addr=198.51.100.2,rw,nfsvers=4.2,nconnect=4\""));
  CHECK_THAT(p.remedy[1], Catch::Contains("docker volume rm pg_pgdata"));

  SECTION("the NIC's planned changes wait") {
    auto with_queues = unowned_policy("compose", "[rw, nfsvers=4.2, nconnect=4]", "198.51.100.2", true);
    auto q = plan_policy(with_queues, compose_world(), context());
    REQUIRE(q.state == PolicyState::drift);
    CHECK(q.steps.empty());
    CHECK(has(q.notes, "the NIC's planned changes wait until the mount is as the policy says"));
  }
  SECTION("unobserved wins: nothing is known, so neither drift nor a remedy") {
    auto o = compose_world();
    o.guest_error = Error{"unreachable: ssh timed out", "media-vm", {}};
    auto q = plan_policy(policy, o, context());
    CHECK(q.state == PolicyState::unobserved);
    CHECK(q.remedy.empty());
    CHECK(q.steps.empty());
  }
}

TEST_CASE("driver_opts right but the volume still mounted the old way: drift on the live mount") {
  // The Compose file was fixed, the volume not yet re-made: Docker keeps the old mount.
  auto o = compose_world("addr=198.51.100.2,rw,nfsvers=4.2,nconnect=4");
  auto p = plan_policy(unowned_policy("compose", "[rw, nfsvers=4.2, nconnect=4]"), o, context());
  REQUIRE(p.state == PolicyState::drift);
  CHECK(p.notes[0] ==
        "Compose volume pg_pgdata (compose's mount, /var/lib/docker/volumes/pg_pgdata/_data) differs from the "
        "policy: mounted now: /var/lib/docker/volumes/pg_pgdata/_data has nconnect=1 instead of 4");
  // Mounted through the other address: the policy's address is what counts.
  auto other = compose_world();
  other.guest->mounts.back() = docker_mount("rw,vers=4.2,addr=192.0.2.2");
  auto q = plan_policy(unowned_policy("compose"), other, context());
  REQUIRE(q.state == PolicyState::drift);
  CHECK_THAT(q.notes[0], Catch::EndsWith("uses server address 192.0.2.2 instead of 198.51.100.2"));
}

TEST_CASE("a Compose volume as the policy says but stale: drift whose remedy makes the mount anew, no edit") {
  auto obs = compose_world();
  obs.guest->mounts.back().answer = guest::MountAnswer::stale;
  auto p = plan_policy(unowned_policy("compose"), obs, context());
  REQUIRE(p.state == PolicyState::drift);
  CHECK(p.steps.empty());
  REQUIRE_FALSE(p.notes.empty());
  CHECK_THAT(p.notes[0],
             Catch::Contains("mounted now: /var/lib/docker/volumes/pg_pgdata/_data has stale file handles"));
  REQUIRE(p.remedy.size() == 3);
  CHECK_THAT(p.remedy[0], Catch::StartsWith("in project pg's directory: docker compose down && docker compose up -d"));
  CHECK_FALSE(has(p.remedy, "docker volume rm"));
  CHECK_FALSE(has(p.remedy, "driver_opts"));
  CHECK_THAT(p.remedy[2], Catch::Contains("pathwarden verify --probe --policy"));

  SECTION("stale and configured otherwise: the configuration's remedy (it makes the mount anew too)") {
    auto other = compose_world("addr=198.51.100.2,rw,nfsvers=4.1");
    other.guest->mounts.back().answer = guest::MountAnswer::stale;
    auto q = plan_policy(unowned_policy("compose"), other, context());
    REQUIRE(q.state == PolicyState::drift);
    CHECK(has(q.remedy, "docker volume rm pg_pgdata"));
  }
  SECTION("systemd and autofs name their own way") {
    auto w = seed_observation();
    auto m = nfs_mount("198.51.100.2:/volume1/docker/pg14", "/mnt/pg", "rw,vers=4.2,addr=198.51.100.2");
    m.answer = guest::MountAnswer::stale;
    const bool autofs = GENERATE(false, true);
    if (autofs) w.guest->mounts.push_back(autofs_trigger("/mnt/pg", "/etc/auto.direct"));
    w.guest->mounts.push_back(m);
    auto r = plan_policy(unowned_policy(autofs ? "autofs" : "systemd"), w, context());
    INFO((r.blockers.empty() ? std::string() : r.blockers[0]));
    REQUIRE(r.state == PolicyState::drift);
    CHECK(r.remedy.at(0) == (autofs ? "umount -l /mnt/pg: autofs mounts it anew at the next access"
                                    : "systemctl restart mnt-pg.mount (unmounts and mounts anew)"));
  }
}

TEST_CASE("a Compose volume no container uses is a precondition: start the project, never drift") {
  auto p = plan_policy(unowned_policy("compose"), compose_world("addr=198.51.100.2,rw,nfsvers=4.2", false), context());
  REQUIRE(p.state == PolicyState::precondition_failed);
  CHECK(p.remedy.empty());
  CHECK(p.steps.empty());
  REQUIRE(p.blockers.size() == 1);
  CHECK(p.blockers[0] ==
        "Compose volume pg_pgdata is not mounted now: Docker mounts a volume only while a container uses it; start "
        "the project (docker compose up -d), then run again");
  // With queues to set: still nothing is planned, the NIC's steps included.
  auto q = plan_policy(unowned_policy("compose", "[rw, nfsvers=4.2]", "198.51.100.2", true),
                       compose_world("addr=198.51.100.2,rw,nfsvers=4.2", false), context());
  CHECK(q.state == PolicyState::precondition_failed);
  CHECK(q.steps.empty());
}

TEST_CASE("a Compose volume that is not there, or Docker's volumes not read: a precondition with the reason") {
  auto missing = compose_world();
  missing.guest->docker = std::vector<guest::DockerVolume>{};
  auto p = plan_policy(unowned_policy("compose"), missing, context());
  REQUIRE(p.state == PolicyState::precondition_failed);
  CHECK_THAT(p.blockers.at(0),
             Catch::StartsWith("pg.yaml:9:14: guest media-vm has no volume 'pgdata' of Compose project 'pg'"));
  auto unread = compose_world();
  unread.guest->docker.reset();
  auto q = plan_policy(unowned_policy("compose"), unread, context());
  REQUIRE(q.state == PolicyState::precondition_failed);
  CHECK_THAT(q.blockers.at(0), Catch::Contains("Docker's volumes were not read in media-vm"));
}

TEST_CASE("systemd and autofs mounts: converged, drift with their remedy, or what to start") {
  const auto live = nfs_mount("198.51.100.2:/volume1/docker/pg14", "/mnt/pg", "rw,vers=4.2,addr=198.51.100.2");
  SECTION("systemd: mounted as the policy says") {
    auto o = seed_observation();
    o.guest->mounts.push_back(live);
    CHECK(plan_policy(unowned_policy("systemd"), o, context()).state == PolicyState::converged);
  }
  SECTION("systemd: mounted otherwise") {
    auto o = seed_observation();
    o.guest->mounts.push_back(live);
    auto p = plan_policy(unowned_policy("systemd", "[rw, nfsvers=4.2, nconnect=4]"), o, context());
    REQUIRE(p.state == PolicyState::drift);
    CHECK(p.notes[0] ==
          "/mnt/pg (systemd's mount, /mnt/pg) differs from the policy: mounted now: /mnt/pg has "
          "nconnect=1 instead of 4");
    REQUIRE(p.remedy.size() == 3);
    CHECK_THAT(p.remedy[0], Catch::StartsWith("in the unit mnt-pg.mount "));
  }
  SECTION("systemd: not mounted") {
    auto p = plan_policy(unowned_policy("systemd"), seed_observation(), context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK(p.blockers.at(0) == "/mnt/pg is not mounted now: systemctl start mnt-pg.mount, then run again");
  }
  SECTION("autofs: only the trigger, not yet the NFS mount") {
    auto o = seed_observation();
    o.guest->mounts.push_back(autofs_trigger("/mnt/pg", "/etc/auto.direct"));
    auto p = plan_policy(unowned_policy("autofs"), o, context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK(p.blockers.at(0) ==
          "/mnt/pg is not mounted now: autofs mounts it on first access (ls /mnt/pg), then run again");
    o.guest->mounts.push_back(live);  // after an access: the NFS mount on top of the trigger
    CHECK(plan_policy(unowned_policy("autofs"), o, context()).state == PolicyState::converged);
    auto drift = plan_policy(unowned_policy("autofs", "[vers=3]"), o, context());
    REQUIRE(drift.state == PolicyState::drift);
    CHECK_THAT(drift.remedy.at(0), Catch::EndsWith("-fstype=nfs,vers=3 198.51.100.2:/volume1/docker/pg14"));
  }
}

TEST_CASE("sharing guard: an nconnect change never re-makes a mount Docker or autofs made") {
  // movies (vers=3, nconnect=8) through 198.51.100.2; another vers=3 mount of that address shares
  // its NFS client, so nconnect changes only if both come down.
  auto world = [](guest::MountInfo other, bool with_trigger = false) {
    auto o = seed_observation("virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8");
    o.guest->interfaces[1] = interface("ens19", kNet1Mac, 8, 8);
    if (with_trigger) o.guest->mounts.push_back(autofs_trigger("/mnt/nas"));
    o.guest->mounts.push_back(std::move(other));
    return o;
  };
  const std::string v3 = "rw,vers=3,addr=198.51.100.2";
  SECTION("a Compose volume's mount") {
    auto p = plan_policy(movies_policy(), world(nfs_mount(":/volume1/docker/pg14", kComposeMountpoint, v3)), context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK(p.steps.empty());
    CHECK(p.remedy.empty());
    REQUIRE(p.blockers.size() == 1);
    CHECK(p.blockers[0] ==
          "/var/lib/docker/volumes/pg_pgdata/_data shares /mnt/movies's NFS client (same server address and NFS "
          "version), so nconnect changes only when both are mounted anew, but Docker made it and pathwarden does not "
          "unmount what it does not own; stop what uses it first, or give this mount its own client (another address "
          "of the NAS, or another NFS version)");
  }
  SECTION("an autofs mount, of an indirect map") {
    auto p =
        plan_policy(movies_policy(), world(nfs_mount("198.51.100.2:/volume1/b", "/mnt/nas/b", v3), true), context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK_THAT(p.blockers.at(0), Catch::StartsWith("/mnt/nas/b shares /mnt/movies's NFS client"));
    CHECK_THAT(p.blockers.at(0), Catch::Contains("but autofs made it"));
  }
  SECTION("no block when the shared client already has the policy's nconnect") {
    auto p = plan_policy(movies_policy(),
                         world(nfs_mount(":/volume1/docker/pg14", kComposeMountpoint, v3 + ",nconnect=8")), context());
    CHECK(p.state == PolicyState::changes);
    CHECK(p.blockers.empty());
  }
  SECTION("no block for another NFS version: another client") {
    auto p = plan_policy(movies_policy(),
                         world(nfs_mount(":/volume1/docker/pg14", kComposeMountpoint, "rw,vers=4.2,addr=198.51.100.2")),
                         context());
    CHECK(p.state == PolicyState::changes);
  }
  SECTION("no block when the policy does not name nconnect: its mount joins the client as it is") {
    auto p = plan_policy(movies_policy("[vers=3, _netdev]"),
                         world(nfs_mount(":/volume1/docker/pg14", kComposeMountpoint, v3 + ",nconnect=4")), context());
    CHECK(p.state == PolicyState::changes);
    CHECK(p.blockers.empty());
  }
}
