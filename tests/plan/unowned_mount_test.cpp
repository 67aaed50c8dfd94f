// SPDX-License-Identifier: GPL-3.0-or-later
// Mounts pathwarden does not own (plan/unowned_mount): where they are, how they differ from the
// policy, and the remedy in the owner's own words.
#include "plan/unowned_mount.hpp"

#include <catch2/catch.hpp>

#include "../support/compose_volume.hpp"
#include "fixtures.hpp"

using namespace pw;
using namespace pw::plan;
using namespace pw::plan::testing;
using pw::testing::compose_volume;
using pw::testing::kComposeMountpoint;

namespace {

guest::GuestFacts facts_with(std::vector<guest::DockerVolume> volumes) {
  guest::GuestFacts f = *seed_observation().guest;
  f.docker = std::move(volumes);
  return f;
}

// The differences of the lab's volume with driver_opts `o` (and `device`) against a compose
// policy with `options`, the policy's server as written and as the guest resolved it.
std::vector<std::string> differences(const std::string& o, const std::string& options = "[rw, nfsvers=4.2]",
                                     const std::string& device = ":/volume1/docker/pg14") {
  const auto p = unowned_policy("compose", options);
  auto located = locate_unowned_mount(p, p, facts_with({compose_volume(o, device)}));
  if (!located) FAIL(located.error().to_string());
  return located->differences;
}

using Strings = std::vector<std::string>;

}  // namespace

TEST_CASE("a Compose volume is located by its labels, at Docker's Mountpoint, with its driver_opts") {
  const auto p = unowned_policy("compose");
  auto located = locate_unowned_mount(p, p, facts_with({compose_volume()}));
  if (!located) FAIL(located.error().to_string());
  CHECK(located->path == kComposeMountpoint);
  CHECK(located->volume_name == "pg_pgdata");
  CHECK(located->configured == "driver_opts o: addr=198.51.100.2,rw,nfsvers=4.2, device: :/volume1/docker/pg14");
  CHECK(located->differences.empty());

  SECTION("a Compose file that sets name: on the volume") {
    auto named = compose_volume("addr=198.51.100.2,rw,nfsvers=4.2", ":/volume1/docker/pg14", "pgdata-prod");
    auto other_project = compose_volume("addr=192.0.2.2", ":/x", "other_pgdata", "other");
    auto found = locate_unowned_mount(p, p, facts_with({other_project, named}));
    if (!found) FAIL(found.error().to_string());
    CHECK(found->path == "/var/lib/docker/volumes/pgdata-prod/_data");
    CHECK(found->volume_name == "pgdata-prod");
    CHECK(found->differences.empty());
  }
}

TEST_CASE("a Compose volume that cannot be located says why") {
  const auto p = unowned_policy("compose");
  SECTION("no such volume") {
    auto r = locate_unowned_mount(p, p, facts_with({compose_volume("o", ":/x", "pg_other", "pg", "other")}));
    REQUIRE_FALSE(r);
    CHECK(r.error().what ==
          "guest media-vm has no volume 'pgdata' of Compose project 'pg' (docker volume ls --filter "
          "label=com.docker.compose.project=pg lists none); Compose creates it at the project's first 'docker "
          "compose up'");
    CHECK(r.error().where == "pg.yaml:9:14");  // spec.mount.compose
    CHECK_THAT(r.error().hint, Catch::Contains("docker compose ls"));
  }
  SECTION("Docker's volumes were not asked for") {
    auto f = facts_with({});
    f.docker.reset();
    auto r = locate_unowned_mount(p, p, f);
    REQUIRE_FALSE(r);
    CHECK(r.error().what == "Docker's volumes were not read in media-vm");
    CHECK(r.error().where == "pg.yaml:8:12");  // spec.mount.owner
  }
  SECTION("Docker did not answer: its error as it came") {
    auto f = facts_with({});
    f.docker = fail("Docker did not list its volumes: no docker command in the guest", "media-vm", "install Docker");
    auto r = locate_unowned_mount(p, p, f);
    REQUIRE_FALSE(r);
    CHECK(r.error().what == "Docker did not list its volumes: no docker command in the guest");
  }
  SECTION("an fstab policy is not located here") {
    auto r = locate_unowned_mount(movies_policy(), movies_policy(), facts_with({}));
    REQUIRE_FALSE(r);
    CHECK(r.error().what == "an fstab mount is pathwarden's own");
  }
}

TEST_CASE("driver_opts compared with the policy") {
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.2").empty());
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.2", "[rw, nfsvers=4.2, nconnect=4]") ==
        Strings{"has no nconnect=4"});
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.2,nconnect=2", "[rw, nfsvers=4.2, nconnect=4]") ==
        Strings{"has nconnect=2 instead of nconnect=4"});
  CHECK(differences("addr=192.0.2.2,rw,nfsvers=4.2") == Strings{"addr is 192.0.2.2 instead of 198.51.100.2"});
  CHECK(differences("rw,nfsvers=4.2") == Strings{"addr is not set instead of 198.51.100.2"});
  // vers and nfsvers are one option; another value is not the same version.
  CHECK(differences("addr=198.51.100.2,rw,vers=4.2").empty());
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.1") == Strings{"has nfsvers=4.1 instead of nfsvers=4.2"});
  CHECK(differences("addr=198.51.100.2,ro,nfsvers=4.2") == Strings{"has no rw", "is read-only (ro)"});
  CHECK(differences("addr=198.51.100.2,ro,nfsvers=4.2", "[ro, nfsvers=4.2]").empty());
  // fstab's own options mean nothing to Docker's mount(2): never asked of driver_opts.
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.2", "[rw, nfsvers=4.2, _netdev, nofail, x-systemd.automount]")
            .empty());
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.2", "[rw, nfsvers=4.2]", ":/volume1/other") ==
        Strings{"driver_opts device is ':/volume1/other', not ':/volume1/docker/pg14'"});
  CHECK(differences("addr=198.51.100.2,rw,nfsvers=4.2", "[rw, nfsvers=4.2]", "198.51.100.2:/volume1/docker/pg14")
            .empty());

  SECTION("type and driver") {
    const auto p = unowned_policy("compose");
    auto v = compose_volume();
    v.options["type"] = "cifs";
    v.driver = "rexray/efs";
    auto located = locate_unowned_mount(p, p, facts_with({v}));
    REQUIRE(located);
    CHECK(located->differences ==
          Strings{"uses the volume driver 'rexray/efs', not local", "driver_opts type is 'cifs', not nfs"});
    v = compose_volume();
    v.options["type"] = "nfs4";
    CHECK(locate_unowned_mount(p, p, facts_with({v}))->differences.empty());
    v.options.erase("type");
    CHECK(locate_unowned_mount(p, p, facts_with({v}))->differences == Strings{"driver_opts type is '', not nfs"});
  }
}

TEST_CASE("a NAS given by name: addr= may hold the name or the address the guest resolves it to") {
  const auto written = unowned_policy("compose", "[rw, nfsvers=4.2]", "nas-10g.example");
  auto resolved = written;
  resolved.mount.server = "198.51.100.2";
  for (const char* addr : {"nas-10g.example", "198.51.100.2"}) {
    INFO(addr);
    auto located = locate_unowned_mount(written, resolved,
                                        facts_with({compose_volume(std::string("addr=") + addr + ",rw,nfsvers=4.2")}));
    REQUIRE(located);
    CHECK(located->differences.empty());
  }
  auto other = locate_unowned_mount(written, resolved, facts_with({compose_volume("addr=192.0.2.2,rw,nfsvers=4.2")}));
  REQUIRE(other);
  CHECK(other->differences == Strings{"addr is 192.0.2.2 instead of nas-10g.example"});
  CHECK(compose_o_option(written) == "addr=nas-10g.example,rw,nfsvers=4.2");
}

TEST_CASE("systemd and autofs mounts are where the policy says; a systemd mount from fstab is fstab's") {
  const auto facts = facts_with({});
  for (const char* owner : {"systemd", "autofs"}) {
    INFO(owner);
    const auto p = unowned_policy(owner);
    auto located = locate_unowned_mount(p, p, facts);
    REQUIRE(located);
    CHECK(located->path == "/mnt/pg");
    CHECK(located->configured.empty());
    CHECK(located->differences.empty());
  }
  auto with_entry = facts;
  with_entry.fstab =
      guest::FstabFile::parse(std::string(kFstab) + "198.51.100.2:/volume1/docker/pg14 /mnt/pg nfs nfsvers=4.2 0 0\n");
  const auto p = unowned_policy("systemd");
  auto r = locate_unowned_mount(p, p, with_entry);
  REQUIRE_FALSE(r);
  CHECK(r.error().what ==
        "/mnt/pg has an fstab entry: its .mount unit is made from fstab by systemd-fstab-generator, so the entry is "
        "what to manage");
  CHECK(r.error().hint == "use owner: fstab (the default) for this mount");
}

TEST_CASE("the o: option a Compose volume needs: addr first, fstab's own options left out") {
  CHECK(compose_o_option(unowned_policy("compose", "[rw, nfsvers=4.2, nconnect=4, _netdev, nofail]")) ==
        "addr=198.51.100.2,rw,nfsvers=4.2,nconnect=4");
  CHECK(compose_o_option(unowned_policy("compose", "[vers=3, x-systemd.mount-timeout=30]")) ==
        "addr=198.51.100.2,vers=3");
}

TEST_CASE("systemd's unit name for a mount point is what systemd-escape --path --suffix=mount prints") {
  // Each expected name as systemd 252's systemd-escape prints it.
  const std::vector<std::pair<std::string, std::string>> cases{
      {"/", "-.mount"},
      {"/mnt/pg", "mnt-pg.mount"},
      {"/mnt/nas-movies", "mnt-nas\\x2dmovies.mount"},
      {"/mnt/my movies", "mnt-my\\x20movies.mount"},
      {"/mnt/film\xc3\xa9", "mnt-film\\xc3\\xa9.mount"},
      {"/mnt/movies/", "mnt-movies.mount"},
      {"/mnt/movies//", "mnt-movies.mount"},
      {"/.hidden/x", "\\x2ehidden-x.mount"},
      {"/mnt/.snap", "mnt-.snap.mount"},
      {"/mnt/x:y_z.w", "mnt-x:y_z.w.mount"},
      {"/srv/100%", "srv-100\\x25.mount"},
      {"/mnt//a", "mnt-a.mount"},
      {"/mnt/./a", "mnt-a.mount"},
      {"//mnt", "mnt.mount"},
      {"/mnt/a/.", "mnt-a.mount"},
  };
  for (const auto& [path, unit] : cases) {
    INFO(path);
    CHECK(systemd_mount_unit(path) == unit);
  }
}

TEST_CASE("who else made a mount, as /proc/mounts tells") {
  const auto docker = nfs_mount(":/volume1/docker/pg14", kComposeMountpoint, "rw,vers=4.2,addr=198.51.100.2");
  const auto direct = nfs_mount("198.51.100.2:/volume1/a", "/mnt/auto", "rw,vers=3,addr=198.51.100.2");
  const auto indirect = nfs_mount("198.51.100.2:/volume1/b", "/mnt/nas/b", "rw,vers=3,addr=198.51.100.2");
  const auto own = nfs_mount("198.51.100.2:/volume1/movies", "/mnt/nasty", "rw,vers=3,addr=198.51.100.2");
  const std::vector<guest::MountInfo> mounts{
      autofs_trigger("/mnt/auto"), direct, autofs_trigger("/mnt/nas"), indirect, own, docker};
  CHECK(other_owner_of(mounts, docker) == "Docker");
  CHECK(other_owner_of(mounts, direct) == "autofs");    // a direct map's trigger at the same path
  CHECK(other_owner_of(mounts, indirect) == "autofs");  // an indirect map's at the directory above
  CHECK(other_owner_of(mounts, own).empty());           // /mnt/nasty is not under /mnt/nas
  CHECK(other_owner_of({own}, own).empty());
}

TEST_CASE("the remedy in the owner's words, then the proof") {
  SECTION("compose: driver_opts, then the volume removed and the project started again") {
    const auto p = unowned_policy("compose", "[rw, nfsvers=4.2, nconnect=4, _netdev]");
    UnownedMount m{kComposeMountpoint, "pg_pgdata", {}, {"has no nconnect=4"}};
    const auto r = unowned_remedy(p, m);
    REQUIRE(r.size() == 3);
    CHECK(r[0] ==
          "in project pg's Compose file, under volumes: pgdata: set driver: local and driver_opts: {type: nfs, o: "
          "\"addr=198.51.100.2,rw,nfsvers=4.2,nconnect=4\", device: \":/volume1/docker/pg14\"}");
    CHECK_THAT(r[1], Catch::StartsWith("in the project's directory: docker compose down && docker volume rm pg_pgdata "
                                       "&& docker compose up -d (Compose v1: docker-compose)."));
    // Compose v1's refusal as measured in the lab (tests/lab/README.md, "Docker Compose findings").
    CHECK_THAT(r[1], Catch::Contains("'Configuration for volume pgdata specifies \"o\" driver_opt ..., but a volume "
                                     "with the same name uses a different \"o\" driver_opt'"));
    CHECK_THAT(r[1], Catch::EndsWith("the data stays on the NAS"));
    CHECK(r[2] == "then prove it: pathwarden verify --probe --policy pg");
    // Docker's own name for the volume when the Compose file sets name:.
    m.volume_name = "pgdata-prod";
    CHECK_THAT(unowned_remedy(p, m)[1], Catch::Contains("docker volume rm pgdata-prod && "));
  }
  SECTION("systemd: the unit's What=, Type= and Options=, then a restart") {
    const auto p = unowned_policy("systemd", "[nfsvers=4.2, nconnect=4, _netdev]");
    const auto r = unowned_remedy(p, {"/mnt/pg", {}, {}, {}});
    REQUIRE(r.size() == 3);
    CHECK(r[0] ==
          "in the unit mnt-pg.mount ('systemctl cat mnt-pg.mount' shows its file) set What=198.51.100.2:/volume1/"
          "docker/pg14, Type=nfs and Options=nfsvers=4.2,nconnect=4");
    CHECK_THAT(r[1], Catch::StartsWith("systemctl daemon-reload && systemctl restart mnt-pg.mount"));
    CHECK(r[2] == "then prove it: pathwarden verify --probe --policy pg");
    const auto v6 = unowned_policy("systemd", "[nfsvers=4.2]", "2001:db8::2");
    CHECK_THAT(unowned_remedy(v6, {"/mnt/pg", {}, {}, {}})[0],
               Catch::Contains("What=[2001:db8::2]:/volume1/docker/pg14,"));
  }
  SECTION("autofs: the map entry, then a reload") {
    const auto p = unowned_policy("autofs", "[nfsvers=4.2, nconnect=4, _netdev]");
    const auto r = unowned_remedy(p, {"/mnt/pg", {}, {}, {}});
    REQUIRE(r.size() == 3);
    CHECK_THAT(r[0], Catch::StartsWith("in the autofs map that holds /mnt/pg "));
    CHECK_THAT(r[0], Catch::EndsWith(
                         "set the entry to: -fstype=nfs,nfsvers=4.2,nconnect=4 198.51.100.2:/volume1/docker/pg14"));
    CHECK(r[1] ==
          "systemctl reload autofs, then umount /mnt/pg (or wait for its timeout): autofs uses the new options at the "
          "next mount");
    CHECK(r[2] == "then prove it: pathwarden verify --probe --policy pg");
  }
}
