"""Proof that profwin wrote a snapshot: a signed sidecar next to each pickle.

Unpickling runs code chosen by whoever wrote the file, so a reader must know who that was. When
the ``memory`` profiler dumps ``X.pickle`` it writes ``X.pickle.sig.json`` holding the file's
SHA-256 and an HMAC-SHA256 of that digest under a secret key kept in this user's state
directory (created on first use, mode 0600). A SHA-256 alone would prove nothing, since anyone
can write one next to a file they crafted; the HMAC can only come from a process that could read
the key, i.e. profwin running as this user on this machine (or on machines sharing the key file).

The key file is ``$PROFWIN_SNAPSHOT_KEY_FILE`` if set, else
``$XDG_STATE_HOME/profwin/snapshot.key`` (``~/.local/state/profwin/snapshot.key``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from profwin.plugin import ConfigError, ProfwinError, checked
from profwin.plugin.files import open_input, parse_json, read_input, write_atomic

__all__ = ["MAX_SIDECAR_BYTES", "SIDECAR_SUFFIX", "UntrustedSnapshotError", "key_file", "sidecar_path", "sign", "verify"]

SIDECAR_SUFFIX = ".sig.json"
_FORMAT = "profwin.memory-snapshot-signature"
SIGNATURE_VERSION = 1
"""The signature's version (under ``"version"``; a signature without one is version 1)."""
_KEY_BYTES = 32
MAX_SIDECAR_BYTES = 64 << 10
"""Largest signature sidecar read (64 KiB; profwin writes well under 1 KiB)."""


class UntrustedSnapshotError(ProfwinError, RuntimeError):
    """A snapshot cannot be shown to come from profwin on this machine; the message says why."""


def key_file() -> Path:
    """Where this user's signing key lives (see the module docstring)."""
    explicit = os.environ.get("PROFWIN_SNAPSHOT_KEY_FILE", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return Path(state) / "profwin" / "snapshot.key"


def _read_key(path: Path) -> bytes | None:
    """The key in ``path``, or ``None`` when there is none or it is not a key: at most one byte
    more than a key is read, and only from a regular file (``/dev/zero`` is not a key file)."""
    if not os.path.lexists(path):
        return None
    try:
        key = read_input(path, limit=_KEY_BYTES, what="snapshot key file")
    except ConfigError:
        return None
    return key if len(key) == _KEY_BYTES else None


def _load_or_create_key() -> bytes:
    path = key_file()
    key = _read_key(path)
    if key is not None:
        return key
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        # O_EXCL: when several ranks start at once, exactly one creates the key, the rest read it.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = _read_key(path)
        if key is None:
            raise RuntimeError(f"profwin: the snapshot key file {path} is not a {_KEY_BYTES}-byte key") from None
        return key
    key = secrets.token_bytes(_KEY_BYTES)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def _key_id(key: bytes) -> str:
    return hashlib.sha256(b"profwin key id:" + key).hexdigest()[:16]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open_input(path, what="memory snapshot") as f:  # a FIFO or a device fails at once
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@checked
def sidecar_path(snapshot: Path) -> Path:
    """``X.pickle`` -> ``X.pickle.sig.json``."""
    if not snapshot.name:
        raise ConfigError(f"must name a file (got {str(snapshot)!r})", path="snapshot")
    return snapshot.with_name(snapshot.name + SIDECAR_SUFFIX)


def sign(snapshot: Path, *, final_name: str, details: dict[str, Any]) -> Path:
    """Write the sidecar for ``snapshot`` (whose final name is ``final_name``); return its path.

    Called on the temporary file before it is renamed, so a snapshot never appears without
    its signature being computable from the same bytes.
    """
    key = _load_or_create_key()
    digest = _sha256(snapshot)
    record = {
        "format": _FORMAT,
        "version": SIGNATURE_VERSION,
        "file": final_name,
        "sha256": digest,
        "hmac_sha256": hmac.new(key, digest.encode(), hashlib.sha256).hexdigest(),
        "key_id": _key_id(key),
        **details,
    }
    return write_atomic(sidecar_path(snapshot.with_name(final_name)), json.dumps(record, indent=1).encode())


@checked
def verify(snapshot: Path) -> dict[str, Any]:
    """Return the sidecar record if profwin on this machine wrote ``snapshot`` unchanged.

    Raises :class:`UntrustedSnapshotError` naming the reason otherwise.
    """
    sidecar = sidecar_path(snapshot)
    advice = (
        "memory snapshots are pickles, and unpickling a file runs code chosen by whoever wrote it; "
        "pass trust=True (CLI: --trust) only if you know where this file came from"
    )
    try:
        if not os.path.lexists(sidecar):
            raise FileNotFoundError(sidecar)
        record = parse_json(
            read_input(sidecar, limit=MAX_SIDECAR_BYTES, what="snapshot signature", pipes=False), source=sidecar.name
        )
    except FileNotFoundError:
        raise UntrustedSnapshotError(
            f"{snapshot} has no profwin signature ({sidecar.name} is missing), so profwin did not write it; {advice}"
        ) from None
    except (OSError, ValueError) as exc:
        raise UntrustedSnapshotError(f"{sidecar} is not a readable profwin signature ({exc}); {advice}") from None
    if not isinstance(record, dict) or record.get("format") != _FORMAT:
        raise UntrustedSnapshotError(f"{sidecar} is not a profwin snapshot signature; {advice}")
    version = record.get("version", 1)
    if type(version) is not int or not 1 <= version <= SIGNATURE_VERSION:
        newer = (
            " (written by a newer profwin-memory: pip install -U profwin-memory)" if type(version) is int and version > 1 else ""
        )
        raise UntrustedSnapshotError(
            f"{sidecar} is a snapshot signature of version {version!r}; this profwin-memory reads version "
            f"{SIGNATURE_VERSION}{newer}; {advice}"
        )
    key = _read_key(key_file())
    if key is None:
        raise UntrustedSnapshotError(
            f"no profwin snapshot key at {key_file()} on this machine, so the signature of {snapshot.name} "
            f"cannot be checked (it was signed with key {record.get('key_id')}; set PROFWIN_SNAPSHOT_KEY_FILE "
            f"to that key's file); {advice}"
        )
    if record.get("key_id") != _key_id(key):
        raise UntrustedSnapshotError(
            f"{snapshot.name} was signed with key {record.get('key_id')}, not this machine's key {_key_id(key)} "
            f"({key_file()}): another user or machine wrote it; {advice}"
        )
    digest = _sha256(snapshot)
    signed = str(record.get("sha256"))
    if digest != signed:
        raise UntrustedSnapshotError(
            f"{snapshot.name} changed after profwin wrote it (sha256 {digest[:16]}…, signed {signed[:16]}…); {advice}"
        )
    expected = hmac.new(key, digest.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, str(record.get("hmac_sha256", ""))):
        raise UntrustedSnapshotError(f"the signature in {sidecar.name} does not match this machine's key; {advice}")
    return record
