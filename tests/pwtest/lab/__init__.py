# SPDX-License-Identifier: GPL-3.0-or-later
"""The pathwarden lab (tests/lab): a QEMU guest and a kernel-NFS NAS VM on a switch network namespace."""
