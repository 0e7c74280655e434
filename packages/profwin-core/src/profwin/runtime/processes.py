"""The processes that serve a URL on this machine, with their environments (Linux ``/proc``).

What a backend reads when an engine cannot say how it was started: an SGLang server without
profwin's plugin does not tell whether it runs SGLang's v2 profiler (``SGLANG_PROFILE_V2=1``),
nor a vLLM server which folder its launch config writes traces to, but when it runs on this
machine its launcher's environment and command line say so. Only what the kernel shows to this
user is read: another user's process, another machine, a container in another PID namespace or a
system without ``/proc`` answer ``None`` (not known), never a guess.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Mapping
from types import MappingProxyType
from urllib.parse import urlsplit

from attrs import field, frozen

from profwin.arguments import checked

__all__ = ["LocalProcess", "serving_processes"]

_PROC = "/proc"
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column
_MAX_ENVIRON = 1 << 20  # a process's environment as /proc shows it, read at most this far
_MAX_CMDLINE = 1 << 16


def _frozen_env(value: Mapping[str, str] | None) -> Mapping[str, str] | None:
    return None if value is None else MappingProxyType(dict(value))


@checked
@frozen
class LocalProcess:
    """One process on this machine.

    Attributes:
        pid: its process id.
        parent: its parent's process id (``None`` when unknown).
        title: its command line as ``/proc/PID/cmdline`` holds it (a process that retitled
            itself, as SGLang's schedulers do, shows its title).
        environ: the environment it was started with, or ``None`` when it cannot be read. A
            retitled process's environment is unreliable (the title may overwrite it): read its
            parent's.
        cwd: its working directory (what a relative path on its command line means), or ``None``
            when it cannot be read.
    """

    pid: int
    parent: int | None
    title: tuple[str, ...]
    environ: Mapping[str, str] | None = field(converter=_frozen_env, hash=False)
    cwd: str | None = None


def _is_local(host: str) -> bool:
    """Whether ``host`` names this machine: a loopback address, or one a socket can bind here."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    for family, _, _, _, address in infos:
        host_ip = str(address[0])
        ip = ipaddress.ip_address(host_ip.split("%", 1)[0])
        if ip.is_loopback or ip.is_unspecified:
            return True
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((host_ip, 0))
            return True
    return False


def _listening_inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            with open(f"{_PROC}/net/{table}", encoding="ascii", errors="replace") as lines:
                next(lines, None)  # the header
                for line in lines:
                    cols = line.split()
                    if len(cols) > 9 and cols[3] == _LISTEN and int(cols[1].rpartition(":")[2], 16) == port:
                        inodes.add(cols[9])
        except (OSError, ValueError):
            continue
    return inodes


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir(_PROC) if name.isdigit()]
    except OSError:
        return []


def _owner(inodes: set[str], pids: list[int]) -> int | None:
    """The process holding one of the listening sockets ``inodes`` (its lowest pid: the launcher
    of a server whose workers inherited the socket)."""
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in sorted(pids):
        try:
            fds = os.listdir(f"{_PROC}/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"{_PROC}/{pid}/fd/{fd}") in wanted:
                    return pid
    return None


def _parent(pid: int) -> int | None:
    try:
        with open(f"{_PROC}/{pid}/stat", "rb") as stat:
            text = stat.read(4096)
        return int(text[text.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _read(path: str, limit: int) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(limit)
    except OSError:
        return None


def _process(pid: int) -> LocalProcess | None:
    cmdline = _read(f"{_PROC}/{pid}/cmdline", _MAX_CMDLINE)
    if cmdline is None:
        return None
    raw = _read(f"{_PROC}/{pid}/environ", _MAX_ENVIRON)
    environ = None
    if raw is not None:
        pairs = (entry.decode(errors="replace").partition("=") for entry in raw.split(b"\0") if b"=" in entry)
        environ = {key: value for key, _, value in pairs}
    title = tuple(part.decode(errors="replace") for part in cmdline.rstrip(b"\0").split(b"\0"))
    try:
        cwd: str | None = os.readlink(f"{_PROC}/{pid}/cwd")
    except OSError:
        cwd = None
    return LocalProcess(pid, _parent(pid), title, environ, cwd)


@checked
def serving_processes(url: str) -> list[LocalProcess] | None:
    """The process listening on ``url``'s port on this machine, then its descendants (in pid
    order); ``None`` when ``url`` is not served on this machine or ``/proc`` does not show who
    serves it. Reads ``/proc`` only: nothing is sent to the server."""
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if not parts.hostname or not _is_local(parts.hostname):
        return None
    inodes = _listening_inodes(port)
    pids = _pids()
    owner = _owner(inodes, pids) if inodes else None
    if owner is None:
        return None
    children: dict[int, list[int]] = {}
    for pid in pids:
        parent = _parent(pid)
        if parent is not None:
            children.setdefault(parent, []).append(pid)
    found: list[LocalProcess] = []
    todo = [owner]
    while todo and len(found) < 4096:
        pid = todo.pop(0)
        process = _process(pid)
        if process is not None:
            found.append(process)
        todo.extend(sorted(children.get(pid, ())))
    return found or None
