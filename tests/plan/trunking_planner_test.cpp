// SPDX-License-Identifier: GPL-3.0-or-later
// spec.mount.trunking in the planner: move-transport (the NAS's NFS client moved to the policy's
// address, the NAS's other fstab entries pointed at it, nothing else re-made), refuse, and what
// blocks a move. The guest is the seed's: /mnt/tv mounted by hand from 192.0.2.2 with NFSv4.2.
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "plan/render.hpp"

using namespace pw::plan;
using namespace pw::plan::testing;

namespace {

constexpr const char* kWindow = "daily 00:00-24:00";

pw::policy::StoragePath moving(const std::string& trunking = "move-transport") {
  return movies_policy("[vers=4.2, _netdev]", true, kWindow, trunking);
}

std::string rendered(const PolicyPlan& p) {
  Plan plan;
  plan.id = "x";
  plan.policies.push_back(p);
  return render_plan(plan);
}

// The guest after the policy's mount was made: it names the new address, rides /mnt/tv's client.
Observation trunked(const std::string& tv_fstab_host = "192.0.2.2") {
  auto o = seed_observation("virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8");
  const auto policy = moving();
  std::string text = kFstab;
  if (tv_fstab_host != "192.0.2.2") text.replace(text.find("192.0.2.2:"), 9, tv_fstab_host);
  auto fstab = pw::guest::FstabFile::parse(text);
  REQUIRE(fstab.set_entry(desired_fstab_entry(policy), {policy.name, policy.mount.reason}).value());
  o.guest->fstab_content = fstab.print();
  o.guest->fstab = pw::guest::FstabFile::parse(o.guest->fstab_content);
  o.guest->interfaces[1] = interface("ens19", kNet1Mac, 8, 8);
  o.guest->mounts.push_back(nfs_mount("198.51.100.2:/srv/nas/movies", "/mnt/movies", "rw,vers=4.2,addr=192.0.2.2"));
  return o;
}

}  // namespace

TEST_CASE("move-transport: the mount is made, the NAS's client moved to its address, /mnt/tv's entry follows") {
  auto p = plan_policy(moving(), seed_observation(), context());
  INFO(rendered(p));
  REQUIRE(p.state == PolicyState::changes);
  CHECK(kinds(p) ==
        std::vector<std::string>{"set-nic", "set-channels", "change-fstab", "move-transport", "prove-path"});
  const auto* fs = find_step<ChangeFstab>(p);
  REQUIRE(fs != nullptr);
  CHECK(fs->moved_entries == std::vector<std::string>{"/mnt/tv"});
  CHECK(fs->entries() == std::vector<std::string>{"/mnt/movies", "/mnt/tv"});
  // The hand-written line keeps its tabs and options; only the server changes.
  CHECK(fs->new_content.find("198.51.100.2:/srv/nas/tv\t/mnt/tv\tnfs\tvers=4.2,_netdev\t0 0\n") != std::string::npos);
  CHECK(fs->new_content.find("192.0.2.2") == std::string::npos);
  REQUIRE(fs->activations.size() == 1);  // /mnt/tv is not re-made: it follows its client
  CHECK(fs->activations[0].path == "/mnt/movies");
  const auto* move = find_step<MoveTransport>(p);
  REQUIRE(move != nullptr);
  CHECK(move->from == "192.0.2.2");
  CHECK(move->to == "198.51.100.2");
  CHECK(move->mounted_as == "198.51.100.2");
  CHECK(move->mount_point == "/mnt/movies");
  CHECK(p.warnings.empty());  // the trunking the warning is about is what the plan handles
  CHECK(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
    return n.find("moves from 192.0.2.2 to 198.51.100.2 without a remount, and with it /mnt/tv") != std::string::npos;
  }));
  // Round trip through the plan file.
  auto back = step_from_json(step_to_json(p.steps[3]));
  REQUIRE(back);
  CHECK(std::get<MoveTransport>(back->action).mounted_as == "198.51.100.2");
  auto fs_back = step_from_json(step_to_json(p.steps[2]));
  REQUIRE(fs_back);
  CHECK(std::get<ChangeFstab>(fs_back->action).moved_entries == std::vector<std::string>{"/mnt/tv"});
}

TEST_CASE("move-transport on a trunked mount that is otherwise as the policy says: a lines write and the move") {
  auto p = plan_policy(moving(), trunked(), context());
  INFO(rendered(p));
  REQUIRE(p.state == PolicyState::changes);
  CHECK(kinds(p) == std::vector<std::string>{"change-fstab", "move-transport", "prove-path"});
  const auto* fs = find_step<ChangeFstab>(p);
  REQUIRE(fs != nullptr);
  CHECK(fs->activations.empty());  // nothing re-made: re-making it would only trunk again
  CHECK(fs->moved_entries == std::vector<std::string>{"/mnt/tv"});

  // /mnt/tv's entry already names the new address: the move alone.
  auto only_move = plan_policy(moving(), trunked("198.51.100.2"), context());
  INFO(rendered(only_move));
  CHECK(kinds(only_move) == std::vector<std::string>{"move-transport", "prove-path"});
}

TEST_CASE("after the move the policy is converged: no client of the NAS is left at the old address") {
  auto o = trunked("198.51.100.2");
  for (auto& m : o.guest->mounts) {  // the main transport moved: every mount's addr= says so
    auto r = pw::guest::parse_proc_mounts(m.device + " " + m.mount_point + " nfs4 rw,vers=4.2,addr=198.51.100.2 0 0\n");
    m = r.value().front();
  }
  auto p = plan_policy(moving(), o, context());
  INFO(rendered(p));
  CHECK(p.state == PolicyState::converged);
}

TEST_CASE("trunking: refuse blocks a change that trunks, naming the choices") {
  auto p = plan_policy(moving("refuse"), seed_observation(), context());
  REQUIRE(p.state == PolicyState::precondition_failed);
  REQUIRE(p.blockers.size() == 1);
  CHECK_THAT(p.blockers[0], Catch::Contains("already reaches this NAS through 192.0.2.2"));
  CHECK_THAT(p.blockers[0], Catch::Contains("trunking: move-transport"));
  auto seen = plan_policy(moving("refuse"), trunked(), context());
  REQUIRE(seen.state == PolicyState::precondition_failed);
  CHECK_THAT(seen.blockers.at(0), Catch::Contains("names 198.51.100.2 but rides 192.0.2.2"));
}

TEST_CASE("what keeps the client from moving is a blocker, not a surprise at apply") {
  SECTION("another policy keeps /mnt/tv at the old address") {
    auto o = seed_observation();
    auto fstab = o.guest->fstab;
    REQUIRE(fstab.set_entry({"192.0.2.2:/srv/nas/tv", "/mnt/tv", "nfs", {"vers=4.2"}}, {"tv", "the old link"}));
    o.guest->fstab_content = fstab.print();
    o.guest->fstab = pw::guest::FstabFile::parse(o.guest->fstab_content);
    auto p = plan_policy(moving(), o, context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK_THAT(p.blockers.at(0), Catch::Contains("policy 'tv' keeps /mnt/tv on 192.0.2.2"));
  }
  SECTION("a kernel without sunrpc's sysfs") {
    auto o = seed_observation();
    o.guest->transport_move = pw::guest::TransportMoveSupport::absent;
    auto p = plan_policy(moving(), o, context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK_THAT(p.blockers.at(0), Catch::Contains("Linux 5.14"));
  }
  SECTION("a Docker volume of the NAS at the old address would bring the trap back after a reboot") {
    auto o = seed_observation();
    o.guest->mounts.push_back(
        nfs_mount("192.0.2.2:/srv/nas/pg", "/var/lib/docker/volumes/pg_pgdata/_data", "rw,vers=4.2,addr=192.0.2.2"));
    auto p = plan_policy(moving(), o, context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK_THAT(p.blockers.at(0), Catch::Contains("is Docker's mount of this NAS at 192.0.2.2"));
  }
  SECTION("NFSv3 and v4.0 mounts of the old address have clients of their own: left alone") {
    auto o = seed_observation();
    o.guest->mounts.push_back(nfs_mount("192.0.2.2:/srv/nas/old", "/mnt/old", "rw,vers=3,addr=192.0.2.2"));
    auto p = plan_policy(moving(), o, context());
    INFO(rendered(p));
    REQUIRE(p.state == PolicyState::changes);
    CHECK(find_step<ChangeFstab>(p)->moved_entries == std::vector<std::string>{"/mnt/tv"});
  }
}
