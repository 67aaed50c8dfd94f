// SPDX-License-Identifier: GPL-3.0-or-later
// `docker volume inspect` as the facts playbook reads it, and finding a Compose volume by its labels.
#include "guest/docker_volumes.hpp"

#include <catch2/catch.hpp>

using namespace pw::guest;

namespace {

// `docker volume inspect pg_pgdata` of the lab's Compose project (tests/lab/README.md, "Scenarios":
// project pg, volume pgdata, driver_opts {type: nfs, o: addr=198.51.100.2,rw,nfsvers=4.2, device:
// ":/volume1/docker/pg14"}) in Docker 20.10's layout: keys sorted, four-space indent.
constexpr const char* kLabInspect = R"([
    {
        "CreatedAt": "2026-11-30T02:10:41Z",
        "Driver": "local",
        "Labels": {
            "com.docker.compose.project": "pg",
            "com.docker.compose.version": "1.29.2",
            "com.docker.compose.volume": "pgdata"
        },
        "Mountpoint": "/var/lib/docker/volumes/pg_pgdata/_data",
        "Name": "pg_pgdata",
        "Options": {
            "device": ":/volume1/docker/pg14",
            "o": "addr=198.51.100.2,rw,nfsvers=4.2",
            "type": "nfs"
        },
        "Scope": "local"
    }
]
)";

// A Compose file that sets `name: pgdata-prod` on the volume: Docker's name is no longer
// PROJECT_VOLUME, Compose's labels still are what the file says. A plain `docker volume create`
// (no labels, Options null) sits beside it.
constexpr const char* kNamedAndPlain = R"([
  {"CreatedAt": "2026-11-30T02:10:41Z", "Driver": "local",
   "Labels": {"com.docker.compose.project": "pg", "com.docker.compose.volume": "pgdata"},
   "Mountpoint": "/var/lib/docker/volumes/pgdata-prod/_data", "Name": "pgdata-prod",
   "Options": {"device": ":/volume1/docker/pg14", "o": "addr=nas-10g.example,nfsvers=4.2", "type": "nfs"},
   "Scope": "local"},
  {"CreatedAt": "2026-11-30T02:11:00Z", "Driver": "local", "Labels": null,
   "Mountpoint": "/var/lib/docker/volumes/scratch/_data", "Name": "scratch", "Options": null, "Scope": "local"},
  {"Driver": "local", "Labels": {"com.docker.compose.project": "other", "com.docker.compose.volume": "pgdata"},
   "Mountpoint": "/var/lib/docker/volumes/other_pgdata/_data", "Name": "other_pgdata", "Options": {}}
])";

}  // namespace

TEST_CASE("the lab's volume: name, driver, mount point, driver_opts and Compose's labels") {
  auto volumes = parse_docker_volume_inspect(kLabInspect, "db-vm: docker volume inspect");
  if (!volumes) FAIL(volumes.error().to_string());
  REQUIRE(volumes->size() == 1);
  const auto& v = volumes->front();
  CHECK(v.name == "pg_pgdata");
  CHECK(v.driver == "local");
  CHECK(v.mountpoint == "/var/lib/docker/volumes/pg_pgdata/_data");
  CHECK(v.options == std::map<std::string, std::string>{{"device", ":/volume1/docker/pg14"},
                                                        {"o", "addr=198.51.100.2,rw,nfsvers=4.2"},
                                                        {"type", "nfs"}});
  REQUIRE(v.option("o") != nullptr);
  CHECK(*v.option("o") == "addr=198.51.100.2,rw,nfsvers=4.2");
  CHECK(v.option("nconnect") == nullptr);
  CHECK(v.compose_project == "pg");
  CHECK(v.compose_volume == "pgdata");
  CHECK(find_compose_volume(*volumes, "pg", "pgdata") == &v);
}

TEST_CASE("a Compose volume is found by its labels, also when the file sets name:") {
  auto volumes = parse_docker_volume_inspect(kNamedAndPlain, "db-vm");
  if (!volumes) FAIL(volumes.error().to_string());
  REQUIRE(volumes->size() == 3);
  const auto* named = find_compose_volume(*volumes, "pg", "pgdata");
  REQUIRE(named != nullptr);
  CHECK(named->name == "pgdata-prod");  // not pg_pgdata
  CHECK(named->mountpoint == "/var/lib/docker/volumes/pgdata-prod/_data");
  // The same volume key in another project is that project's.
  REQUIRE(find_compose_volume(*volumes, "other", "pgdata") != nullptr);
  CHECK(find_compose_volume(*volumes, "other", "pgdata")->name == "other_pgdata");
  CHECK(find_compose_volume(*volumes, "pg", "pg_pgdata") == nullptr);
  CHECK(find_compose_volume(*volumes, "pg_pgdata", "") == nullptr);
  // null Labels and Options read as none.
  CHECK((*volumes)[1].options.empty());
  CHECK((*volumes)[1].compose_project.empty());
  CHECK((*volumes)[2].options.empty());
}

TEST_CASE("no volumes at all is an empty list") {
  auto none = parse_docker_volume_inspect("[]\n", "db-vm");
  REQUIRE(none);
  CHECK(none->empty());
  CHECK(find_compose_volume(*none, "pg", "pgdata") == nullptr);
}

TEST_CASE("what is not an inspect array is an error saying so, never a crash") {
  for (const char* text : {"", "not json", "[{\"Name\": \"pg_pgdata\"", "{\"Name\": \"pg_pgdata\"}", "null",
                           "Error response from daemon: get pg_pgdata: no such volume\n[]"}) {
    INFO(text);
    auto r = parse_docker_volume_inspect(text, "db-vm: docker volume inspect");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().what, Catch::StartsWith("'docker volume inspect' printed no JSON array"));
    CHECK(r.error().where == "db-vm: docker volume inspect");
    CHECK(r.error().hint == "run it by hand in the guest to see what Docker says");
  }
  // A parse error says where JSON stopped making sense.
  CHECK(parse_docker_volume_inspect("[{", "x").error().what.size() >
        std::string_view("'docker volume inspect' printed no JSON array").size());
}

TEST_CASE("entries of the wrong shape: non-objects skipped, a volume without a Name refused") {
  auto mixed = parse_docker_volume_inspect(
      R"([1, "x", null, {"Name": "v", "Driver": 7, "Options": {"o": "addr=1.2.3.4", "n": 5}, "Labels": []}])", "g");
  REQUIRE(mixed);
  REQUIRE(mixed->size() == 1);
  CHECK(mixed->front().name == "v");
  CHECK(mixed->front().driver.empty());  // not a string: not taken
  CHECK(mixed->front().options == std::map<std::string, std::string>{{"o", "addr=1.2.3.4"}});
  auto nameless = parse_docker_volume_inspect(R"([{"Driver": "local"}])", "db-vm");
  REQUIRE_FALSE(nameless);
  CHECK(nameless.error().what == "a volume without a Name in 'docker volume inspect'");
  CHECK(nameless.error().where == "db-vm");
}

TEST_CASE("the facts script: exit 3 without docker, Compose's volumes only, '[]' when there are none") {
  const std::string script(docker_volumes_script());
  CHECK(script.find("command -v docker") != std::string::npos);
  CHECK(script.find("exit 3") != std::string::npos);
  CHECK(script.find("--filter label=com.docker.compose.project") != std::string::npos);
  CHECK(script.find("echo '[]'") != std::string::npos);
  CHECK(script.find("docker volume inspect $ids") != std::string::npos);
}

TEST_CASE("the volumes' statfs answers, read as root, reach the live mounts the facts user could not ask") {
  const std::string out = std::string(kNamedAndPlain) +
                          "\n@@pathwarden statfs\n"
                          "ok /mnt/movies\n"
                          "stale /var/lib/docker/volumes/pgdata-prod/_data\n";
  auto volumes = docker_volumes_answer(0, out, "", "", "db-vm");
  if (!volumes) FAIL(volumes.error().to_string());
  REQUIRE(volumes->size() == 3);
  CHECK((*volumes)[0].answer == MountAnswer::stale);
  CHECK((*volumes)[1].answer == MountAnswer::unknown);  // not mounted: no line

  auto mounts = parse_proc_mounts(
      ":/volume1/docker/pg14 /var/lib/docker/volumes/pgdata-prod/_data nfs4 rw,vers=4.2,addr=198.51.100.2 0 0\n"
      "198.51.100.2:/movies /mnt/movies nfs4 rw,vers=4.2 0 0\n");
  REQUIRE(mounts);
  // The SSH user's own read: permission denied under /var/lib/docker, the share it may enter fine.
  REQUIRE(
      apply_statfs_answers("error /var/lib/docker/volumes/pgdata-prod/_data stat: Permission denied\n"
                           "ok /mnt/movies\n",
                           *mounts, "db-vm"));
  take_volume_answers(*volumes, *mounts);
  CHECK((*mounts)[0].answer == MountAnswer::stale);
  CHECK((*mounts)[0].answer_error.empty());
  CHECK((*mounts)[1].answer == MountAnswer::answers);

  SECTION("a bad answers part is an error, never a crash; an older script without it is read as before") {
    CHECK_FALSE(docker_volumes_answer(0, std::string(kLabInspect) + "@@pathwarden statfs\nmaybe /x\n", "", "", "h"));
    auto old = docker_volumes_answer(0, kLabInspect, "", "", "h");
    REQUIRE(old);
    CHECK(old->front().answer == MountAnswer::unknown);
  }
}
