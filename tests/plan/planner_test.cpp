// SPDX-License-Identifier: GPL-3.0-or-later
#include <algorithm>
#include <catch2/catch.hpp>

#include "fixtures.hpp"
#include "plan/render.hpp"

using namespace pw::plan;
using namespace pw::plan::testing;

namespace {

Plan one(PolicyPlan p, std::string id = "x") {
  Plan plan;
  plan.id = std::move(id);
  plan.policies.push_back(std::move(p));
  return plan;
}

}  // namespace

TEST_CASE("the seed's fix plans queues, restart-free hot-plug, channels, fstab and verification in order") {
  auto p = plan_policy(movies_policy(), seed_observation(), context());
  INFO(render_plan(one(p)));
  REQUIRE(p.state == PolicyState::changes);
  CHECK(kinds(p) == std::vector<std::string>{"set-nic", "set-channels", "change-fstab", "prove-path"});
  const auto* nic = find_step<SetNic>(p);
  REQUIRE(nic != nullptr);
  CHECK(nic->hotplug);  // running VM, default hotplug includes network
  CHECK(nic->from == "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1");
  CHECK(nic->to == "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8");  // MAC kept, key in print order
  CHECK(nic->digest == "0123456789abcdef0123456789abcdef01234567");
  const auto* fs = find_step<ChangeFstab>(p);
  REQUIRE(fs != nullptr);
  CHECK(fs->writes_file());
  CHECK(fs->new_content.find("198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0") !=
        std::string::npos);
  CHECK(fs->new_content.find("vers=3 on purpose") != std::string::npos);
  // Lines the policy does not own are kept byte for byte.
  CHECK(fs->new_content.starts_with(kFstab));
  REQUIRE(fs->activations.size() == 1);  // /mnt/tv is v4.2: another client, left alone
  CHECK(fs->activations[0].path == "/mnt/movies");
  REQUIRE(fs->inverse_activations.size() == 1);
  CHECK_FALSE(fs->inverse_activations[0].mount);  // it was not mounted before: the inverse unmounts
  const auto* v = find_step<ProvePath>(p);
  REQUIRE(v != nullptr);
  CHECK(v->intended_mac == kNet1Mac);
  CHECK(v->probe_file == "/mnt/movies/probe.bin");
  CHECK(v->probe_bytes == 64ull << 20);
  CHECK(p.warnings.empty());  // vers=3: no trunking
}

TEST_CASE("an NFSv4.2 move to the new address warns about trunking onto the old link") {
  auto p = plan_policy(movies_policy("[vers=4.2, _netdev]"), seed_observation(), context());
  REQUIRE(p.state == PolicyState::changes);
  REQUIRE(p.warnings.size() == 1);
  CHECK(p.warnings[0].find("192.0.2.2") != std::string::npos);
}

TEST_CASE("options that do not do what they seem are planned as written, with the plan saying what they do") {
  auto p = plan_policy(movies_policy("[vers=3, nconnect=8, async, soft, _netdev]"), seed_observation(), context());
  REQUIRE(p.state == PolicyState::changes);
  REQUIRE(p.warnings.size() == 2);
  CHECK_THAT(p.warnings[0], Catch::StartsWith("'async' changes nothing on a Linux client"));
  CHECK_THAT(p.warnings[1], Catch::StartsWith("'soft' on a read-write mount"));
  const auto* fs = find_step<ChangeFstab>(p);
  REQUIRE(fs != nullptr);
  CHECK(fs->new_content.find("vers=3,nconnect=8,async,soft,_netdev") != std::string::npos);
}

TEST_CASE("a converged guest plans nothing") {
  auto policy = movies_policy();
  auto o = converged_observation(policy);
  auto p = plan_policy(policy, o, context());
  INFO(render_plan(one(p)));
  CHECK(p.state == PolicyState::converged);
  CHECK(p.steps.empty());
  CHECK(p.blockers.empty());
}

TEST_CASE("a mount as the policy says whose handles the NAS no longer knows is re-made, its file unchanged") {
  auto policy = movies_policy();
  auto o = converged_observation(policy);
  auto& movies = o.guest->mounts.back();
  SECTION("stale: one re-make, proven after") {
    movies.answer = pw::guest::MountAnswer::stale;
    auto p = plan_policy(policy, o, context());
    INFO(render_plan(one(p)));
    REQUIRE(p.state == PolicyState::changes);
    CHECK(kinds(p) == std::vector<std::string>{"change-fstab", "prove-path"});
    const auto* fs = find_step<ChangeFstab>(p);
    REQUIRE(fs != nullptr);
    CHECK_FALSE(fs->writes_file());
    REQUIRE(fs->activations.size() == 1);
    CHECK(fs->activations[0].path == "/mnt/movies");
    CHECK_THAT(p.steps[0].summary,
               Catch::Contains("re-make the mount /mnt/movies (/mnt/movies has stale file handles"));
  }
  SECTION("a NAS that did not answer, or another error, is not a reason to touch the mount") {
    movies.answer = GENERATE(pw::guest::MountAnswer::no_answer, pw::guest::MountAnswer::error,
                             pw::guest::MountAnswer::answers, pw::guest::MountAnswer::unknown);
    auto p = plan_policy(policy, o, context());
    CHECK(p.state == PolicyState::converged);
    CHECK(p.steps.empty());
  }
}

TEST_CASE("a trunked mount (addr= of the old address) is not converged") {
  auto policy = movies_policy("[vers=4.2, _netdev]");
  // The device column says the new address; addr= tells the truth.
  auto o = converged_observation(policy, "rw,vers=4.2,addr=192.0.2.2");
  auto p = plan_policy(policy, o, context());
  REQUIRE(p.state == PolicyState::changes);
  const auto* fs = find_step<ChangeFstab>(p);
  REQUIRE(fs != nullptr);
  CHECK_FALSE(fs->writes_file());
  REQUIRE(fs->inverse_activations.size() == 1);
  CHECK(fs->inverse_activations[0].mount);
}

TEST_CASE("disruptive steps need permission and the window") {
  SECTION("restart not allowed") {
    auto p = plan_policy(movies_policy("[vers=3, nconnect=8, _netdev]", false), seed_observation(), context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    REQUIRE(p.blockers.size() == 1);
    CHECK(p.blockers[0].find("spec.restart.allowed at movies.yaml:") != std::string::npos);
    CHECK(p.steps.empty());
  }
  SECTION("outside the window") {
    auto p = plan_policy(movies_policy("[vers=3]", true, "Sun 04:00-05:00"), seed_observation(), context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK(p.blockers[0].find("outside the restart window 'Sun 04:00-05:00' (it is Sun 03:00 UTC)") !=
          std::string::npos);
  }
  SECTION("a window in a named zone is read in that zone") {
    // 03:00 UTC on a November Sunday is 04:00 in Berlin (CET, UTC+1) and 22:00 Saturday in New York.
    auto berlin =
        plan_policy(movies_policy("[vers=3]", true, "Sun 04:00-05:00 Europe/Berlin"), seed_observation(), context());
    CHECK(berlin.state == PolicyState::changes);
    const auto* set = find_step<SetNic>(berlin);
    REQUIRE(set != nullptr);
    CHECK(set->restart_window == "Sun 04:00-05:00 Europe/Berlin");  // apply checks it again
    auto ny =
        plan_policy(movies_policy("[vers=3]", true, "Sun 04:00-05:00 America/New_York"), seed_observation(), context());
    REQUIRE(ny.state == PolicyState::precondition_failed);
    CHECK(ny.blockers[0].find("(it is Sat 22:00 America/New_York)") != std::string::npos);
  }
}

TEST_CASE("hotplug is a list as pve-common's split_list reads it: ',', ';' or whitespace") {
  for (const char* value : {"disk;network", "disk, network", ",network,", "usb network", "1"}) {
    INFO(value);
    auto o = seed_observation();
    o.vm->config.entries.push_back({"hotplug", value});
    auto p = plan_policy(movies_policy(), o, context());
    REQUIRE(find_step<SetNic>(p) != nullptr);
    CHECK(find_step<SetNic>(p)->hotplug);  // re-plugged at the write: no reboot planned
    CHECK(kinds(p) == std::vector<std::string>{"set-nic", "set-channels", "change-fstab", "prove-path"});
  }
  auto off = seed_observation();
  off.vm->config.entries.push_back({"hotplug", "disk;usb"});
  CHECK_FALSE(find_step<SetNic>(plan_policy(movies_policy(), off, context()))->hotplug);
}

TEST_CASE("queues=0 is one queue: a policy asking 1 leaves such a NIC alone") {
  auto text = std::string("apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: one}\nspec:\n") +
              "  guest: {node: pve1, vmid: 101, host: media-vm}\n  nic: {device: net1, queues: 1}\n"
              "  mount: {server: 198.51.100.2, export: /srv/nas/movies, path: /mnt/movies, options: [vers=3]}\n"
              "  verify: {probe_file: probe.bin}\n  restart: {allowed: true}\n";
  auto loaded = pw::policy::load_text(text, "one.yaml");
  REQUIRE(loaded.ok());
  auto p = plan_policy(loaded.paths[0], seed_observation("virtio=BC:24:11:00:00:02,bridge=vmbr1,queues=0"), context());
  CHECK(find_step<SetNic>(p) == nullptr);
  CHECK(find_step<RestartVm>(p) == nullptr);
}

TEST_CASE("hot-plug off: the queues change waits for a restart through the API") {
  auto o = seed_observation();
  o.vm->config.entries.push_back({"hotplug", "disk,usb"});
  auto p = plan_policy(movies_policy(), o, context());
  REQUIRE(p.state == PolicyState::changes);
  CHECK(kinds(p) == std::vector<std::string>{"set-nic", "restart-vm", "set-channels", "change-fstab", "prove-path"});
  CHECK_FALSE(find_step<SetNic>(p)->hotplug);
}

TEST_CASE("pending changes") {
  SECTION("our queues value already pending: only the restart is planned") {
    auto o = seed_observation();
    o.vm->pending.items = {{"net1", "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1",
                            "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8", 0}};
    auto p = plan_policy(movies_policy(), o, context());
    REQUIRE(p.state == PolicyState::changes);
    CHECK(kinds(p) == std::vector<std::string>{"restart-vm", "set-channels", "change-fstab", "prove-path"});
  }
  SECTION("someone else's pending change blocks") {
    auto o = seed_observation();
    o.vm->pending.items = {{"net1", "virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1",
                            "virtio=BC:24:11:00:00:02,bridge=vmbr2,firewall=1", 0}};
    auto p = plan_policy(movies_policy(), o, context());
    CHECK(p.state == PolicyState::precondition_failed);
  }
  SECTION("a restart would apply other pending keys: blocked") {
    auto o = seed_observation();
    o.vm->config.entries.push_back({"hotplug", "0"});
    o.vm->pending.items = {{"memory", "2048", "4096", 0}};
    auto p = plan_policy(movies_policy(), o, context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK(p.blockers[0].find("memory") != std::string::npos);
  }
}

TEST_CASE("preconditions") {
  SECTION("locked VM") {
    auto o = seed_observation();
    o.vm->status.lock = "backup";
    CHECK(plan_policy(movies_policy(), o, context()).blockers.at(0).find("locked (backup)") != std::string::npos);
  }
  SECTION("stopped VM") {
    auto o = seed_observation();
    o.vm->status.status = "stopped";
    CHECK(plan_policy(movies_policy(), o, context()).state == PolicyState::precondition_failed);
  }
  SECTION("no guest interface with the NIC's MAC") {
    auto o = seed_observation();
    o.guest->interfaces.pop_back();
    auto p = plan_policy(movies_policy(), o, context());
    REQUIRE(p.state == PolicyState::precondition_failed);
    CHECK(p.blockers.at(0).find("bc:24:11:00:00:02") != std::string::npos);
  }
  SECTION("non-virtio NIC cannot take queues") {
    auto p = plan_policy(movies_policy(), seed_observation("e1000=BC:24:11:00:00:02,bridge=vmbr1"), context());
    REQUIRE(p.state == PolicyState::precondition_failed);
  }
  SECTION("unreachable guest") {
    auto o = seed_observation();
    o.guest.reset();
    o.guest_error = pw::Error{"unreachable: ssh timed out", "media-vm", {}};
    auto p = plan_policy(movies_policy(), o, context());
    REQUIRE(p.state == PolicyState::unobserved);  // could not observe: never drift, never planned
    CHECK(p.steps.empty());
    CHECK(p.blockers.at(0).find("could not observe guest media-vm") != std::string::npos);
    CHECK(p.blockers.at(0).find("ssh timed out") != std::string::npos);
  }
}

TEST_CASE("changing nconnect re-makes every mount sharing the NFS client, the policy's first") {
  auto o = seed_observation("virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8");
  o.guest->interfaces[1] = interface("ens19", kNet1Mac, 8, 8);
  o.guest->mounts.push_back(
      nfs_mount("198.51.100.2:/srv/nas/music", "/mnt/music", "rw,vers=3,addr=198.51.100.2,mountaddr=198.51.100.2"));
  auto p = plan_policy(movies_policy(), o, context());
  const auto* fs = find_step<ChangeFstab>(p);
  REQUIRE(fs != nullptr);
  REQUIRE(fs->activations.size() == 2);
  CHECK(fs->activations[0].path == "/mnt/movies");
  CHECK(fs->activations[1].path == "/mnt/music");
  CHECK(fs->activations[1].options == std::vector<std::string>{"vers=3"});
}

TEST_CASE("queues already right but the guest runs fewer channels: only ethtool") {
  auto o = seed_observation("virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8");
  o.guest->interfaces[1] = interface("ens19", kNet1Mac, 2, 8);
  auto p = plan_policy(movies_policy(), o, context());
  const auto* ch = find_step<SetChannels>(p);
  REQUIRE(ch != nullptr);
  CHECK(ch->from == 2);
  CHECK(ch->to == 8);
  CHECK(find_step<SetNic>(p) == nullptr);
}

TEST_CASE("channels the guest agent's read access could not see: noted when the NIC stays, a change blocked") {
  // The NIC already has queues=8: the guest's channels are unknown, so they are said unchecked,
  // never planned from a guess (a step 1 -> 8 would be a change no one observed the need for).
  auto o = seed_observation("virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8");
  o.guest->interfaces[1] = interface("ens19", kNet1Mac, 0, 0);
  o.guest->interfaces[1].queues_unknown = true;
  o.guest->interfaces[1].channels.reset();
  auto kept = plan_policy(movies_policy(), o, context());
  CHECK(find_step<SetChannels>(kept) == nullptr);
  CHECK(kept.blockers.empty());
  CHECK(std::ranges::any_of(kept.notes, [](const std::string& n) {
    return n.find("ens19's channels in guest media-vm are unknown") != std::string::npos &&
           n.find("not checked against queues=8") != std::string::npos;
  }));
  // The NIC changes: its channels step needs the count it starts from.
  auto o2 = seed_observation();
  o2.guest->interfaces[1].queues_unknown = true;
  auto changed = plan_policy(movies_policy(), o2, context());
  REQUIRE_FALSE(changed.blockers.empty());
  CHECK(changed.blockers.front().find("spec.observe.agent_access: exec") != std::string::npos);
  CHECK(find_step<SetChannels>(changed) == nullptr);
}

TEST_CASE("how the guest was read travels with its plan; a fallback to SSH is said in a note") {
  auto o = seed_observation();
  o.guest->agent_unused = "not-running: QEMU guest agent is not running";
  auto p = plan_policy(movies_policy(), o, context());
  CHECK(p.observed_via == pw::guest::FactsChannel::ansible);
  CHECK(p.agent_unused == "not-running: QEMU guest agent is not running");
  CHECK(std::ranges::count(p.notes,
                           "read over SSH, not through the guest agent: not-running: QEMU guest agent is "
                           "not running") == 1);
  auto through = seed_observation();
  through.guest->channel = pw::guest::FactsChannel::agent;
  auto q = plan_policy(movies_policy(), through, context());
  CHECK(q.observed_via == pw::guest::FactsChannel::agent);
  CHECK(std::ranges::none_of(q.notes, [](const std::string& n) { return n.starts_with("read over SSH"); }));
}

TEST_CASE("the rendered plan shows the diff") {
  auto p = plan_policy(movies_policy(), seed_observation(), context());
  Plan plan = one(p, "abc");
  const auto text = render_plan(plan);
  CHECK(text.find("- net1: virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1") != std::string::npos);
  CHECK(text.find("+ net1: virtio=BC:24:11:00:00:02,bridge=vmbr1,firewall=1,queues=8") != std::string::npos);
  CHECK(text.find("+ 198.51.100.2:/srv/nas/movies /mnt/movies nfs vers=3,nconnect=8,_netdev 0 0") != std::string::npos);
  CHECK(text.find("\033[") == std::string::npos);
  CHECK(render_plan(plan, {.colour = true}).find("\033[") != std::string::npos);
  CHECK(text.find("1 to change, 0 blocked, 0 converged") != std::string::npos);
}
