# SPDX-License-Identifier: GPL-3.0-or-later
"""Starts tests/pvesim for a Python test and stops it again (run with Debian's /usr/bin/python3).
The C++ tests' counterpart is tests/support/pvesim_process.hpp."""
import json
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.request


class Pvesim:
    """pvesim on a free loopback port with the given state; use as a context manager."""

    def __init__(self, binary, state, args=()):
        self.dir = tempfile.mkdtemp(prefix="pvesim-py-")
        self.state_file = os.path.join(self.dir, "state.json")
        with open(self.state_file, "w") as f:
            json.dump(state, f)
        ready = os.path.join(self.dir, "ready.json")
        cmd = [binary, "--port", "0", "--ready-file", ready, "--state", self.state_file,
               "--auth-failure-delay-ms", "0", "--task-duration-ms", "20", "--boot-delay-ms", "100"] + list(args)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
        # Bounded only so that a broken start fails the test instead of hanging it.
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if self.proc.poll() is not None:
                raise RuntimeError("pvesim exited with %s during start-up" % self.proc.returncode)
            if time.monotonic() > deadline:
                raise RuntimeError("pvesim did not become ready")
            time.sleep(0.02)
        with open(ready) as f:
            info = json.load(f)
        self.url = info["url"]
        self.port = info["port"]
        self.fingerprint = info["fingerprint"]
        self.ca_file = info["ca_file"]
        self.host = "127.0.0.1:%d" % self.port  # proxmoxer/Ansible form of api_host

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        code = self.stop()
        if exc_type is None and code != 0:
            raise AssertionError("pvesim exited with %s (see its stderr above)" % code)

    def stop(self):
        """SIGTERM, wait; returns pvesim's exit status (0 = clean)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        return self.proc.returncode

    def admin(self, method, path, body=None):
        """Calls pvesim's admin API (/pvesim/...) and returns its data."""
        return self._call(method, path, body, {})

    def api_get(self, path, token):
        """GET on the Proxmox API (path below /api2/json) with an API token 'user@realm!name=secret'."""
        return self._call("GET", "/api2/json" + path, None, {"Authorization": "PVEAPIToken=" + token})

    def _call(self, method, path, body, headers):
        ctx = ssl.create_default_context(cafile=self.ca_file)
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers=dict(headers, **{"Content-Type": "application/json"}))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                             urllib.request.HTTPSHandler(context=ctx))
        with opener.open(req, timeout=30) as resp:
            return json.load(resp)["data"]

    def request_count(self, key):
        return self.admin("GET", "/pvesim/stats")["requests"].get(key, 0)

    def guest(self, vmid):
        for g in self.admin("GET", "/pvesim/state")["guests"]:
            if g["vmid"] == vmid:
                return g
        raise KeyError(vmid)


def local_env():
    """The environment for clients talking to pvesim: never through a proxy."""
    env = dict(os.environ)
    for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        env.pop(k, None)
    env["no_proxy"] = env["NO_PROXY"] = "127.0.0.1,localhost"
    return env
