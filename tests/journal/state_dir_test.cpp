// SPDX-License-Identifier: GPL-3.0-or-later
#include "journal/state_dir.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "journal/journal.hpp"
#include "temp_dir.hpp"

using namespace pw::journal;

TEST_CASE("the state directory is created private") {
  pw::testing::TempDir tmp;
  ::umask(022);
  const auto root = tmp.path() / "var" / "lib" / "pathwarden";
  auto state = StateDir::open(root);
  REQUIRE(state);
  CHECK(state->warnings().empty());
  CHECK(pw::testing::mode_of(root) == 0700);
  CHECK(pw::testing::mode_of(state->journal_dir()) == 0700);
  CHECK(pw::testing::mode_of(state->lock_dir()) == 0700);
  CHECK(pw::testing::mode_of(state->result_dir()) == 0700);
  // Opening it again changes nothing.
  auto again = StateDir::open(root);
  REQUIRE(again);
  CHECK(again->warnings().empty());
}

TEST_CASE("looser permissions are repaired with a message, or refused") {
  pw::testing::TempDir tmp;
  const auto root = tmp.path() / "state";
  REQUIRE(StateDir::open(root));

  SECTION("readable by others: repaired and reported") {
    ::chmod(root.c_str(), 0755);
    ::chmod((root / "journal").c_str(), 0750);
    auto state = StateDir::open(root);
    REQUIRE(state);
    REQUIRE(state->warnings().size() == 2);
    CHECK(state->warnings()[0] == root.string() + ": permissions tightened from 0755 to 0700");
    CHECK(pw::testing::mode_of(root) == 0700);
    CHECK(pw::testing::mode_of(root / "journal") == 0700);
  }
  SECTION("readable by others, refused when asked to") {
    ::chmod(root.c_str(), 0755);
    auto state = StateDir::open(root, LoosePermissions::refuse);
    REQUIRE_FALSE(state);
    CHECK(state.error().where == root.string());
    CHECK(state.error().what == "has mode 0755; pathwarden keeps its state private (0700)");
    CHECK(state.error().hint == "chmod 700 " + root.string());
    CHECK(pw::testing::mode_of(root) == 0755);
  }
  SECTION("writable by others: refused even in repair mode") {
    ::chmod((root / "locks").c_str(), 0777);
    auto state = StateDir::open(root, LoosePermissions::repair);
    REQUIRE_FALSE(state);
    CHECK(state.error().where == (root / "locks").string());
    CHECK(state.error().what == "is writable by group or others (mode 0777), so its contents cannot be trusted");
    CHECK(state.error().hint.find("chmod 700") != std::string::npos);
  }
  SECTION("a symbolic link inside the state directory is refused") {
    std::filesystem::remove(root / "results");
    std::filesystem::create_directory_symlink(tmp.path(), root / "results");
    auto state = StateDir::open(root);
    REQUIRE_FALSE(state);
    CHECK(state.error().what.find("symbolic link") != std::string::npos);
  }
  SECTION("a file where a directory belongs") {
    std::filesystem::remove(root / "journal");
    std::ofstream(root / "journal") << "x";
    auto state = StateDir::open(root);
    REQUIRE_FALSE(state);
    CHECK(state.error().what == "is not a directory");
  }
}

TEST_CASE("journal files are 0600 and a loosened one is repaired or refused") {
  pw::testing::TempDir tmp;
  auto state = StateDir::open(tmp.path() / "state");
  REQUIRE(state);
  ManualClock clock(TimePoint{});
  {
    FileJournalStore store(*state);
    REQUIRE(Journal::start(store, clock, "r", "p"));
    CHECK(pw::testing::mode_of(store.path_of("r")) == 0600);
    ::chmod(store.path_of("r").c_str(), 0644);
  }
  SECTION("refused") {
    FileJournalStore store(state->journal_dir(), LoosePermissions::refuse);
    auto s = store.open("r");
    REQUIRE_FALSE(s);
    CHECK(s.error().what == "has mode 0644; pathwarden keeps its state private (0600)");
    CHECK(s.error().hint == "chmod 600 " + store.path_of("r").string());
  }
  SECTION("repaired") {
    FileJournalStore store(*state);
    REQUIRE(store.open("r"));
    CHECK(pw::testing::mode_of(store.path_of("r")) == 0600);
    REQUIRE(store.warnings().size() == 1);
  }
}

TEST_CASE("state owned by another user is refused") {
  pw::testing::TempDir tmp;
  const auto root = tmp.path() / "state";
  REQUIRE(StateDir::open(root));
  if (::geteuid() == 0) {
    // As root (as in CI): hand the directory to nobody.
    REQUIRE(::chown(root.c_str(), 65534, 65534) == 0);
    auto state = StateDir::open(root);
    REQUIRE_FALSE(state);
    CHECK(state.error().what == "is owned by uid 65534, but pathwarden runs as uid 0");
  } else {
    // As a user: the filesystem root belongs to root.
    auto fd = ::open("/", O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0);
    auto s = check_private(fd, "/", true, LoosePermissions::repair, nullptr);
    ::close(fd);
    REQUIRE_FALSE(s);
    CHECK(s.error().what.find("is owned by uid 0") != std::string::npos);
  }
}

TEST_CASE("keys become file names that cannot escape or hide") {
  CHECK(file_name_for("pve1/101") == "pve1%2F101");
  CHECK(file_name_for("..") == "%2E.");
  CHECK(file_name_for(".hidden") == "%2Ehidden");
  CHECK(file_name_for("movies-10g.v2") == "movies-10g.v2");
  CHECK(file_name_for("a b%") == "a%20b%25");
  for (std::string key : {"pve1/101", "..", "a b%", "ünï", "movies-10g"})
    CHECK(key_from_file_name(file_name_for(key)) == key);
}
