# SPDX-License-Identifier: GPL-3.0-or-later
# shellcheck shell=bash
# Sourced by the CLI shell tests: writes, in the current directory, a controller whose API is a
# closed loopback port (every run that reaches it ends "could not observe", exit 6) and whose
# guests are too. Nothing leaves this machine. The token file is 0600, as the settings require;
# the caller writes `token` first when it wants a secret of its own.
write_offline_controller() {
  [[ -f token ]] || printf 'x\n' > token
  chmod 600 token
  : > known_hosts
  printf '[guests]\nmedia-vm ansible_host=127.0.0.1 ansible_port=1\ndocker-vm ansible_host=127.0.0.1 ansible_port=1\n' \
    > hosts.ini
  cat > pathwarden.yaml <<'YAML'
apiVersion: pathwarden/v1
kind: Controller
spec:
  proxmox:
    url: https://127.0.0.1:1
    token_id: pathwarden@pve!ci
    token_secret_file: token
    insecure_skip_verify: true
    timeout: 5s
  ansible: {inventory: hosts.ini, known_hosts_file: known_hosts}
  state_dir: state
YAML
}
