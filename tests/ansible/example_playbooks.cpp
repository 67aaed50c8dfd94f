// pw_example_playbooks DIR: writes every generated playbook, filled with hostile example values,
// into DIR, for `ansible-playbook --syntax-check` and `ansible-lint` in the test suite.
#include <iostream>

#include "ansible/playbooks.hpp"
#include "example_requests.hpp"

int main(int argc, char** argv) {
  using namespace pw::ansible;
  if (argc != 2) {
    std::cerr << "usage: pw_example_playbooks DIR\n";
    return 2;
  }
  auto hosts = examples::hosts();
  auto changes = examples::fstab_changes();
  auto restores = examples::fstab_restores();
  auto probes = examples::probes();
  auto channels = examples::channels();
  pw::Result<Playbook> generated[] = {facts_playbook(hosts), apply_playbook(changes), rollback_playbook(restores),
                                      probe_playbook(probes), channels_playbook(channels)};
  std::vector<Playbook> playbooks;
  for (auto& p : generated) {
    if (!p) {
      std::cerr << "pw_example_playbooks: " << p.error().to_string() << "\n";
      return 1;
    }
    playbooks.push_back(std::move(*p));
  }
  if (auto s = write_playbooks(playbooks, argv[1]); !s) {
    std::cerr << "pw_example_playbooks: " << s.error().to_string() << "\n";
    return 1;
  }
  for (const auto& p : playbooks) std::cout << p.yaml_file() << "\n";
  return 0;
}
