"""Confine a process's file and network access with the kernel (Linux Landlock).

Why: a read-only ``kgagent query`` runs a user's Cypher in a child process
(:mod:`kgagent.memory.isolated`). Statements that reach files (``COPY … TO``,
``LOAD FROM``), other databases (``ATTACH``) or extensions are refused by the query
guard (:mod:`kgagent.memory.guard`) before anything runs, but that check reads the
query's text. The engines offer no switch that turns file access off (a read-only
database still writes ``COPY … TO`` files), so the child also asks the kernel to
refuse it: after the memory is open, :func:`confine` lets the process read files
beneath the folders it names and nothing else, write or create no file anywhere
(files already open, such as the pipe to the parent, stay usable), run no program,
and, where the kernel's Landlock has network rules (ABI 4, Linux 6.7), bind or
connect no TCP socket. A file statement that got past the guard then fails in the
engine with "Permission denied".

Landlock is in Linux since 5.13 and needs no privilege. Where the kernel lacks it
(an older kernel, another OS, Landlock left out of the kernel's security modules),
:func:`confine` returns ``None`` and the guard is the only line of defence; the
query's notes say so (docs/memory.md).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys
from collections.abc import Iterable
from pathlib import Path

# Landlock's system calls have the same numbers on every architecture (the unified table).
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_VERSION = 1 << 0  # landlock_create_ruleset flag: ask the ABI version
_PATH_BENEATH = 1  # rule type
_PR_SET_NO_NEW_PRIVS = 38

# File-system rights, by the ABI version that added them.
_EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1 = (1 << 13) - 1  # EXECUTE … MAKE_SYM
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
# Network rights (ABI 4).
_BIND_TCP, _CONNECT_TCP = 1 << 0, 1 << 1


def python_dirs() -> list[Path]:
    """The folders this Python imports code from: its installation, the absolute entries
    of ``sys.path`` and the folders of the modules loaded (an editable install's packages
    live outside ``sys.path``). Reading them after :func:`confine` lets a module be imported
    late; they hold code, not the user's data. Neither the working directory (``''`` in
    ``sys.path``) nor ``/`` is one of them."""
    found: list[Path] = [Path(sys.prefix), Path(sys.base_prefix)]
    found += [Path(p) for p in sys.path if p and os.path.isabs(p)]
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.isabs(file):
            found.append(Path(file).parent)
    root = Path("/")
    return [p for p in dict.fromkeys(found) if p != root and p.is_dir()]


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where there is none."""
    if platform.system() != "Linux":
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        v = int(libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION)))
    except (OSError, AttributeError):
        return 0
    return max(v, 0)


def _fs_rights(abi: int) -> int:
    rights = _ABI1
    if abi >= 2:
        rights |= _REFER
    if abi >= 3:
        rights |= _TRUNCATE
    if abi >= 5:
        rights |= _IOCTL_DEV
    return rights


def confine(readable: Iterable[Path]) -> int | None:
    """Let this process read files beneath ``readable`` only, write none, run none and,
    where the kernel can, open no TCP connection. Irreversible for the process. The
    Landlock ABI version used, or ``None`` where the kernel has no Landlock (nothing
    changed)."""
    abi = abi_version()
    if abi < 1:
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    fs = _fs_rights(abi)
    net = (_BIND_TCP | _CONNECT_TCP) if abi >= 4 else 0
    attr = struct.pack("=QQ", fs, net) if abi >= 4 else struct.pack("=Q", fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = int(libc.syscall(_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path in dict.fromkeys(Path(p).resolve() for p in readable):
            if not path.exists():
                continue
            rights = _READ_FILE | (_READ_DIR if path.is_dir() else 0)
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                if int(libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, rule, 0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if int(libc.syscall(_RESTRICT_SELF, ruleset, 0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi
