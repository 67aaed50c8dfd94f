// SPDX-License-Identifier: GPL-3.0-or-later
// spec.mount.owner, spec.mount.compose and the commit-latency fields (issue 16): what is taken,
// what is refused, and that every refusal points at the line and column it comes from.
#include <catch2/catch.hpp>

#include "policy/loader.hpp"
#include "policy/model.hpp"

using namespace pw::policy;

namespace {

// The mount section's lines start at line 8 (four spaces in, so a key is at column 5); the
// verify section follows them: "  verify:" then "    probe_file: probe.bin", then `verify`.
std::string policy_text(const std::string& mount, const std::string& verify = "") {
  return "apiVersion: pathwarden/v1\nkind: StoragePath\nmetadata: {name: pg}\nspec:\n"
         "  guest: {node: pve1, vmid: 101, host: db-vm}\n  nic: {device: net1}\n  mount:\n" +
         mount + "  verify:\n    probe_file: probe.bin\n" + verify;
}

const std::string kCompose =
    "    owner: compose\n    compose: {project: pg, volume: pgdata}\n    server: 198.51.100.2\n"
    "    export: /volume1/docker/pg14\n    options: [nfsvers=4.2, nconnect=4]\n";
const std::string kFstab = "    server: 198.51.100.2\n    export: /volume1/movies\n    path: /mnt/movies\n";

// The only diagnostic of a policy text, as "file:line:col: message".
std::string only_error(const std::string& text) {
  auto r = load_text(text, "pg.yaml");
  REQUIRE(r.diagnostics.size() == 1);
  return r.diagnostics[0].to_string();
}

StoragePath loaded(const std::string& text) {
  auto r = load_text(text, "pg.yaml");
  INFO((r.diagnostics.empty() ? std::string() : r.diagnostics[0].to_string()));
  REQUIRE(r.ok());
  REQUIRE(r.paths.size() == 1);
  return r.paths[0];
}

}  // namespace

TEST_CASE("owner: compose names the volume; its path is Docker's, found at observation") {
  const auto p = loaded(policy_text(kCompose));
  CHECK(p.mount.owner == MountOwner::compose);
  CHECK_FALSE(p.mount.owned());
  REQUIRE(p.mount.compose);
  CHECK(*p.mount.compose == ComposeVolume{"pg", "pgdata"});
  CHECK(p.mount.compose->docker_name() == "pg_pgdata");
  CHECK(p.mount.path.empty());
  CHECK(p.mount.display() == "Compose volume pg_pgdata");
  CHECK(p.position_of("spec.mount.owner").to_string() == "pg.yaml:8:12");
  CHECK(p.position_of("spec.mount.compose").to_string() == "pg.yaml:9:14");
  CHECK(p.mount.options_string() == "nfsvers=4.2,nconnect=4");
}

TEST_CASE("every owner is read by its name; the default is fstab; a typo gets a suggestion") {
  CHECK(loaded(policy_text(kFstab)).mount.owner == MountOwner::fstab);
  CHECK(loaded(policy_text(kFstab)).mount.owned());
  CHECK(loaded(policy_text("    owner: fstab\n" + kFstab)).mount.owner == MountOwner::fstab);
  const auto systemd = loaded(policy_text("    owner: systemd\n" + kFstab));
  CHECK(systemd.mount.owner == MountOwner::systemd);
  CHECK(systemd.mount.path == "/mnt/movies");
  CHECK(systemd.mount.display() == "/mnt/movies");
  CHECK(loaded(policy_text("    owner: autofs\n" + kFstab)).mount.owner == MountOwner::autofs);
  for (auto owner : {MountOwner::fstab, MountOwner::compose, MountOwner::systemd, MountOwner::autofs}) {
    CHECK(kMountOwners[static_cast<std::size_t>(owner)] == to_string(owner));
  }
  CHECK(only_error(policy_text("    owner: compse\n" + kFstab)) ==
        "pg.yaml:8:12: 'spec.mount.owner' is 'compse'; use fstab (pathwarden writes the entry), compose, systemd or "
        "autofs (pathwarden only observes and proves), did you mean 'compose'?");
}

TEST_CASE("a Compose volume's path is refused: it is Docker's Mountpoint") {
  CHECK(only_error(policy_text(kCompose + "    path: /var/lib/docker/volumes/pg_pgdata/_data\n")) ==
        "pg.yaml:13:11: a Compose volume's path is Docker's (the Mountpoint 'docker volume inspect' shows, where it "
        "mounts the share while a container uses it); leave out spec.mount.path");
}

TEST_CASE("compose and owner go together") {
  SECTION("compose without owner: compose") {
    CHECK(only_error(policy_text("    compose: {project: pg, volume: pgdata}\n" + kFstab)) ==
          "pg.yaml:8:14: 'spec.mount.compose' names a Compose volume, but spec.mount.owner is fstab; add owner: "
          "compose");
  }
  SECTION("compose with another owner") {
    CHECK(only_error(policy_text("    owner: systemd\n    compose: {project: pg, volume: pgdata}\n" + kFstab)) ==
          "pg.yaml:9:14: 'spec.mount.compose' names a Compose volume, but spec.mount.owner is systemd; add owner: "
          "compose");
  }
  SECTION("owner: compose without compose") {
    CHECK(only_error(policy_text("    owner: compose\n    server: 198.51.100.2\n    export: /volume1/docker/pg14\n")) ==
          "pg.yaml:8:12: owner: compose needs 'spec.mount.compose: {project: NAME, volume: NAME}' (the Compose "
          "project and the volume's key under 'volumes:')");
  }
  SECTION("a compose mapping without its volume, or with an unknown key") {
    CHECK(only_error(policy_text("    owner: compose\n    compose: {project: pg}\n    server: 198.51.100.2\n"
                                 "    export: /e\n")) ==
          "pg.yaml:9:14: 'spec.mount.compose' is missing the required key 'volume'");
    auto r = load_text(policy_text("    owner: compose\n    compose: {project: pg, volume: pgdata, projet: x}\n"
                                   "    server: 198.51.100.2\n    export: /e\n"),
                       "pg.yaml");
    REQUIRE(r.diagnostics.size() == 1);
    CHECK_THAT(r.diagnostics[0].to_string(),
               Catch::StartsWith("pg.yaml:9:44: unknown key 'projet' in 'spec.mount.compose'"));
  }
}

TEST_CASE("Compose project and volume names follow Compose's rules") {
  auto with = [](const std::string& project, const std::string& volume) {
    return policy_text("    owner: compose\n    compose: {project: " + project + ", volume: " + volume +
                       "}\n    server: 198.51.100.2\n    export: /e\n");
  };
  CHECK(loaded(with("my-project_1", "Pg.Data_2")).mount.compose == ComposeVolume{"my-project_1", "Pg.Data_2"});
  CHECK(loaded(with("1pg", "9")).mount.compose == ComposeVolume{"1pg", "9"});
  // Line 9 is "    compose: {project: NAME, volume: NAME}": the project's value at column 24.
  CHECK(only_error(with("PG", "pgdata")) ==
        "pg.yaml:9:24: 'spec.mount.compose.project' is 'PG', which is not a Compose project name (letters, digits, "
        "'-' and '_', starting with a letter or digit, lower case: docker compose ls shows it)");
  CHECK_THAT(only_error(with("_pg", "pgdata")),
             Catch::StartsWith("pg.yaml:9:24: 'spec.mount.compose.project' is '_pg'"));
  CHECK_THAT(only_error(with("p.g", "pgdata")),
             Catch::StartsWith("pg.yaml:9:24: 'spec.mount.compose.project' is 'p.g'"));
  CHECK_THAT(only_error(with("''", "pgdata")), Catch::StartsWith("pg.yaml:9:24: 'spec.mount.compose.project' is ''"));
  // Volume keys also take upper case and '.', and the message says so (one closing parenthesis).
  CHECK(only_error(with("pg", "-data")) ==
        "pg.yaml:9:36: 'spec.mount.compose.volume' is '-data', which is not a Compose volume name (letters, digits, "
        "'-', '_' and '.', starting with a letter or digit)");
  CHECK_THAT(only_error(with("pg", "'pg data'")), Catch::StartsWith("pg.yaml:9:36: 'spec.mount.compose.volume'"));
}

TEST_CASE("an fstab policy on a Docker volume's mount point is refused; the other owners may name such a path") {
  CHECK(only_error(policy_text(
            "    server: 198.51.100.2\n    export: /e\n    path: /var/lib/docker/volumes/pg_pgdata/_data\n")) ==
        "pg.yaml:10:11: 'spec.mount.path' is '/var/lib/docker/volumes/pg_pgdata/_data', a Docker volume's mount "
        "point: Docker mounts it itself from the volume's driver_opts, and an fstab entry there would compete with "
        "Docker's mount; name the volume instead: owner: compose, compose: {project: NAME, volume: NAME}");
  // Rootless Docker keeps its volumes under the user's data root.
  CHECK_THAT(only_error(policy_text("    owner: fstab\n    server: 198.51.100.2\n    export: /e\n"
                                    "    path: /home/ops/.local/share/docker/volumes/pg_pgdata/_data\n")),
             Catch::StartsWith("pg.yaml:11:11: 'spec.mount.path' is '/home/ops/.local/share/docker/volumes/"));
  CHECK(loaded(policy_text("    owner: systemd\n    server: 198.51.100.2\n    export: /e\n"
                           "    path: /var/lib/docker/volumes/pg_pgdata/_data\n"))
            .mount.path == "/var/lib/docker/volumes/pg_pgdata/_data");
}

TEST_CASE("is_docker_volume_path: Docker's data root and any DATA_ROOT/volumes/NAME/_data") {
  CHECK(is_docker_volume_path("/var/lib/docker/volumes/pg_pgdata/_data"));
  CHECK(is_docker_volume_path("/var/lib/docker/volumes/pg_pgdata/_data/sub"));
  CHECK(is_docker_volume_path("/var/lib/docker/overlay2/x/merged"));
  CHECK(is_docker_volume_path("/srv/docker/volumes/pg_pgdata/_data"));
  CHECK(is_docker_volume_path("/home/ops/.local/share/docker/volumes/v/_data"));
  CHECK_FALSE(is_docker_volume_path("/var/lib/docker"));
  CHECK_FALSE(is_docker_volume_path("/var/lib/dockerd/volumes/x/_data"));
  CHECK_FALSE(is_docker_volume_path("/srv/docker/volumes/pg_pgdata"));
  CHECK_FALSE(is_docker_volume_path("/srv/docker/volumes/pg_pgdata/_database"));
  CHECK_FALSE(is_docker_volume_path("/srv/mydocker/volumes/pg_pgdata/_data"));
  CHECK_FALSE(is_docker_volume_path("/mnt/docker"));
  CHECK_FALSE(is_docker_volume_path("/mnt/movies"));
}

TEST_CASE("commit_cycles and min_commit_rate") {
  SECTION("neither: no figure") {
    const auto p = loaded(policy_text(kFstab));
    CHECK(p.verify.commit_cycles == 0);
    CHECK_FALSE(p.verify.min_commit_rate);
  }
  SECTION("min_commit_rate alone gives the default number of cycles") {
    const auto p = loaded(policy_text(kFstab, "    min_commit_rate: 500\n"));
    CHECK(p.verify.commit_cycles == 256);
    CHECK(p.verify.min_commit_rate == Approx(500));
  }
  SECTION("commit_cycles alone: a figure, no minimum") {
    const auto p = loaded(policy_text(kFstab, "    commit_cycles: 100\n"));
    CHECK(p.verify.commit_cycles == 100);
    CHECK_FALSE(p.verify.min_commit_rate);
  }
  SECTION("both, in either order: the cycles as written") {
    for (const char* v :
         {"    commit_cycles: 64\n    min_commit_rate: 0.5\n", "    min_commit_rate: 0.5\n    commit_cycles: 64\n"}) {
      const auto p = loaded(policy_text(kFstab, v));
      CHECK(p.verify.commit_cycles == 64);
      CHECK(p.verify.min_commit_rate == Approx(0.5));
    }
  }
  SECTION("bounds") {
    CHECK(loaded(policy_text(kFstab, "    commit_cycles: 10000\n")).verify.commit_cycles == 10000);
    CHECK(loaded(policy_text(kFstab, "    commit_cycles: 1\n")).verify.commit_cycles == 1);
    CHECK(only_error(policy_text(kFstab, "    commit_cycles: 10001\n")) ==
          "pg.yaml:13:20: 'spec.verify.commit_cycles' is 10001; it must be between 1 and 10000");
    CHECK(only_error(policy_text(kFstab, "    commit_cycles: 0\n")) ==
          "pg.yaml:13:20: 'spec.verify.commit_cycles' is 0; it must be between 1 and 10000");
    CHECK(only_error(policy_text(kFstab, "    min_commit_rate: 0\n")) ==
          "pg.yaml:13:22: 'spec.verify.min_commit_rate' is 0; give the commits per second the path must reach (e.g. "
          "1000)");
    CHECK_THAT(only_error(policy_text(kFstab, "    min_commit_rate: -3\n")), Catch::StartsWith("pg.yaml:13:22: "));
    CHECK_THAT(only_error(policy_text(kFstab, "    min_commit_rate: fast\n")),
               Catch::StartsWith("pg.yaml:13:22: 'spec.verify.min_commit_rate' must be a number"));
  }
}

TEST_CASE("a commit-latency figure on a read-only mount is refused where it was asked for") {
  const std::string ro = kFstab + "    options: [vers=3, ro]\n";
  const std::string message =
      "a commit-latency figure writes on the mount, but the mount is read-only ('ro' in spec.mount.options); leave "
      "out commit_cycles and min_commit_rate";
  CHECK(only_error(policy_text(ro, "    commit_cycles: 16\n")) == "pg.yaml:14:20: " + message);
  CHECK(only_error(policy_text(ro, "    min_commit_rate: 100\n")) == "pg.yaml:14:22: " + message);
  CHECK(only_error(policy_text(ro, "    min_commit_rate: 100\n    commit_cycles: 16\n")) ==
        "pg.yaml:15:20: " + message);
  // Options written as one string count the same.
  CHECK(only_error(policy_text(kFstab + "    options: vers=3,ro\n", "    commit_cycles: 16\n")) ==
        "pg.yaml:14:20: " + message);
  CHECK(loaded(policy_text(ro)).mount.option("ro") != nullptr);  // a read-only mount without the figure is fine
}
