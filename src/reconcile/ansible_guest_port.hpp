#pragma once
// GuestPort over generated playbooks: one ansible-playbook run per call, for all guests of it.
#include <chrono>
#include <filesystem>
#include <memory>
#include <vector>

#include "ansible/playbooks.hpp"
#include "ansible/runner.hpp"
#include "reconcile/guest_port.hpp"

namespace pw::reconcile {

struct AnsibleGuestPortOptions {
  std::vector<std::filesystem::path> inventories;
  int forks = 16;
  std::chrono::seconds run_timeout{600};
  ansible::PlaybookOptions playbook;
};

std::unique_ptr<GuestPort> make_ansible_guest_port(std::unique_ptr<ansible::PlaybookRunner> runner,
                                                   AnsibleGuestPortOptions options);

}  // namespace pw::reconcile
