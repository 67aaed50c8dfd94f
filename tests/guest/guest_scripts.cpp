// SPDX-License-Identifier: GPL-3.0-or-later
// pw_guest_scripts DIR: writes every guest script as it runs (put together from
// src/guest/scripts/*.sh by the functions the playbooks use) into DIR/NAME.sh, for
// shellcheck-scripts. The argument lines ("set -- ...") the playbooks put in front are not
// part of them.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string_view>
#include <utility>

#include "guest/change_script.hpp"
#include "guest/docker_volumes.hpp"
#include "guest/ethtool.hpp"
#include "guest/facts.hpp"
#include "guest/probe_report.hpp"
#include "guest/transport_move.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: pw_guest_scripts DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const std::pair<const char*, std::string_view> scripts[] = {
      {"facts", pw::guest::guest_report_script()},
      {"probe", pw::guest::probe_script()},
      {"apply", pw::guest::apply_script()},
      {"rollback", pw::guest::rollback_script()},
      {"channels", pw::guest::set_channels_script()},
      {"docker_volumes", pw::guest::docker_volumes_script()},
      {"transport", pw::guest::transport_move_script()},
  };
  for (const auto& [name, text] : scripts) {
    std::ofstream out(dir / (std::string(name) + ".sh"), std::ios::binary);
    out << "#!/bin/sh\n" << text;
    if (!out) {
      std::cerr << "pw_guest_scripts: cannot write " << name << ".sh\n";
      return 1;
    }
  }
  return 0;
}
