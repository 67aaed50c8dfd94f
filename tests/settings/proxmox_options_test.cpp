// SPDX-License-Identifier: GPL-3.0-or-later
#include "settings/proxmox_options.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace pw::settings;

namespace {

ControllerSettings token_settings() {
  ControllerSettings s;
  s.proxmox.url = "https://pve1.example.org:8006";
  s.proxmox.token_id = "pw@pve!ci";
  s.proxmox.ca_file = "/etc/pathwarden/ca.pem";
  s.proxmox.fingerprint = "AB:CD";
  s.proxmox.max_in_flight = 4;
  s.proxmox.timeout = std::chrono::milliseconds(1500);
  return s;
}

}  // namespace

TEST_CASE("the token secret comes from its file, every other field as written") {
  const fs::path file = fs::temp_directory_path() / ("pw-settings-token-" + std::to_string(getpid()));
  std::ofstream(file) << "s3cret\n";
  auto s = token_settings();
  s.proxmox.token_secret_file = file.string();
  // Readable by every user, as an umask of 022 makes it: refused with the chmod that fixes it.
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read,
                  fs::perm_options::replace);
  auto loose = proxmox_client_options(s);
  REQUIRE_FALSE(loose);
  CHECK(loose.error().what == "the secret file is readable by every user (mode 0644)");
  CHECK(loose.error().hint.starts_with("chmod o-r "));
  CHECK(loose.error().to_string().find("s3cret") == std::string::npos);
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read,
                  fs::perm_options::replace);
  auto o = proxmox_client_options(s);
  fs::remove(file);
  REQUIRE(o.has_value());
  CHECK(o->url == "https://pve1.example.org:8006");
  CHECK(o->token_id == "pw@pve!ci");
  CHECK(o->token_secret.reveal() == "s3cret");
  CHECK(o->password.empty());
  CHECK(o->ca_file == "/etc/pathwarden/ca.pem");
  CHECK(o->fingerprint == "AB:CD");
  CHECK_FALSE(o->insecure_skip_verify);
  CHECK(o->max_in_flight == 4);
  CHECK(o->timeout == std::chrono::milliseconds(1500));
}

TEST_CASE("ticket authentication takes the password from the environment") {
  ControllerSettings s;
  s.proxmox.url = "https://h:8006";
  s.proxmox.user = "pathwarden@pve";
  s.proxmox.password_env = "PW_SETTINGS_TEST_PASSWORD";
  ::setenv("PW_SETTINGS_TEST_PASSWORD", "hunter2", 1);
  auto o = proxmox_client_options(s);
  ::unsetenv("PW_SETTINGS_TEST_PASSWORD");
  REQUIRE(o.has_value());
  CHECK(o->user == "pathwarden@pve");
  CHECK(o->password.reveal() == "hunter2");
  CHECK(o->token_secret.empty());
}

TEST_CASE("a missing secret is an error naming where it was looked for") {
  auto s = token_settings();
  s.proxmox.token_secret_env = "PW_SETTINGS_TEST_UNSET";
  ::unsetenv("PW_SETTINGS_TEST_UNSET");
  auto o = proxmox_client_options(s);
  REQUIRE_FALSE(o.has_value());
  CHECK(o.error().to_string().find("PW_SETTINGS_TEST_UNSET") != std::string::npos);
}
