# SPDX-License-Identifier: GPL-3.0-or-later
"""The checkout's directories, computed once from this file's place (tests/pwtest/)."""
import os

TESTS = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
ROOT = os.path.dirname(TESTS)
LAB = os.path.join(TESTS, "lab")  # the QEMU lab's entry points and data (lab, vm-hook, initramfs/, guest/)
