# SPDX-License-Identifier: GPL-3.0-or-later
"""pwtest: the one package the script tests (Debian's /usr/bin/python3) share.

CTest puts its parent directory, tests/, on PYTHONPATH for every test (pw_test() in
tests/CMakeLists.txt), so a test imports it as it is: `from pwtest.script import check, test_main`.
To run one by hand: `PYTHONPATH=tests /usr/bin/python3 tests/ops/ansible_role_test.py ...`. Only the
scripts run outside CTest (tests/lab/lab, tests/lab/vm-hook, tests/bench/run,
tests/bench/verify_cost.py) put tests/ on sys.path themselves, in one line at their top.

  script             Failure, check(), test_main(), case_main(): the shape of a test script
  paths              the checkout's directories (ROOT, TESTS, LAB)
  policies           StoragePath policies: one builder, the seed's fix
  pvesim_process     tests/pvesim as a child process on loopback (Pvesim), local_env()
  offline_controller a controller set-up on pvesim whose one guest is unreachable
  role_run           playbooks/pathwarden.yml run with real ansible-playbook
  cli_world          the real binary against pvesim and the light guests (tests/reliability)
  journal_pause      the journal's test hook that pauses pathwarden after given records
  fleet              a benchmark fleet of N VMs for pvesim (tests/bench)
  lab                the QEMU lab (tests/lab): images, VMs, pvesim with vm-hook, scenarios
"""
