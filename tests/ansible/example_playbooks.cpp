// SPDX-License-Identifier: GPL-3.0-or-later
// pw_example_playbooks DIR: writes every generated playbook, filled with hostile example values,
// into DIR, for `ansible-playbook --syntax-check` and `ansible-lint` in the test suite.
// pw_example_playbooks --reference DIR: writes the playbooks of the seed policy's plan
// (reference_plan.hpp) as `plan --emit-playbooks` does: playbooks/generated/ is its output.
#include <cstring>
#include <iostream>

#include "ansible/playbooks.hpp"
#include "ansible/review.hpp"
#include "example_requests.hpp"
#include "plan/guest_requests.hpp"
#include "reference_plan.hpp"

namespace {

pw::Result<std::vector<pw::ansible::Playbook>> hostile_examples() {
  using namespace pw::ansible;
  auto hosts = examples::hosts();
  auto changes = examples::fstab_changes();
  auto restores = examples::fstab_restores();
  auto probes = examples::probes();
  auto channels = examples::channels();
  pw::Result<Playbook> generated[] = {facts_playbook(hosts), apply_playbook(changes), rollback_playbook(restores),
                                      probe_playbook(probes), channels_playbook(channels)};
  std::vector<Playbook> playbooks;
  for (auto& p : generated) {
    if (!p) return std::unexpected(p.error());
    playbooks.push_back(std::move(*p));
  }
  return playbooks;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pw::ansible;
  const bool reference = argc == 3 && std::strcmp(argv[1], "--reference") == 0;
  if (argc != 2 && !reference) {
    std::cerr << "usage: pw_example_playbooks [--reference] DIR\n";
    return 2;
  }
  const char* dir = argv[argc - 1];
  auto playbooks = reference ? review_playbooks(pw::plan::guest_requests(reference::movies_plan()), PlaybookOptions{})
                             : hostile_examples();
  if (!playbooks) {
    std::cerr << "pw_example_playbooks: " << playbooks.error().to_string() << "\n";
    return 1;
  }
  if (auto s = write_playbooks(*playbooks, dir); !s) {
    std::cerr << "pw_example_playbooks: " << s.error().to_string() << "\n";
    return 1;
  }
  for (const auto& p : *playbooks) std::cout << p.yaml_file() << "\n";
  return 0;
}
