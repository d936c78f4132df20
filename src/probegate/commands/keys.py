"""`probegate keys generate`: write an Ed25519 key pair for signing reports.

The private key is written with mode 0600 from the start (never created world-readable and then
narrowed), and nothing is ever overwritten: replacing a signing key by accident would make every
pinned verifier reject new reports, and overwriting a public key would silently re-pin.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from probegate.errors import UsageError
from probegate.reports.signing import generate_key_pair, key_id, load_public_key
from probegate.terminal import json_text

DEFAULT_NAME = "probegate-signing"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "keys",
        help="manage Ed25519 signing keys",
        description="Manage the Ed25519 keys that sign scan reports.",
    )
    actions = p.add_subparsers(dest="keys_action", metavar="ACTION")
    gen = actions.add_parser(
        "generate",
        help="write NAME.key (private, mode 0600) and NAME.pub",
        description=(
            "Write a new Ed25519 key pair: NAME.key (PKCS#8 PEM, mode 0600) for "
            "--signing-key / PROBEGATE_SIGNING_KEY, and NAME.pub (SubjectPublicKeyInfo PEM) "
            "for 'probegate verify --pubkey-file'. Existing files are never overwritten."
        ),
    )
    gen.add_argument("--out-dir", default=".", help="directory to write into (default: .)")
    gen.add_argument(
        "--name", default=DEFAULT_NAME, help=f"file name stem (default: {DEFAULT_NAME})"
    )


def run(args: argparse.Namespace) -> int:
    if args.keys_action != "generate":
        raise UsageError("usage: probegate keys generate [--out-dir DIR] [--name NAME]")
    return generate(Path(args.out_dir), args.name, as_json=bool(args.json))


def generate(out_dir: Path, name: str, *, as_json: bool = False) -> int:
    if not _NAME.match(name):
        raise UsageError(
            f"invalid key name {name!r}: use letters, digits, '.', '_' or '-' (no paths)"
        )
    private_path = out_dir / f"{name}.key"
    public_path = out_dir / f"{name}.pub"
    for path in (private_path, public_path):
        if path.exists():
            raise UsageError(f"{path} already exists; refusing to overwrite a key")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out_dir}: {exc.strerror}") from exc

    private_pem, public_pem = generate_key_pair()
    _write_new(private_path, private_pem, 0o600)
    try:
        _write_new(public_path, public_pem, 0o644)
    except UsageError:
        private_path.unlink(missing_ok=True)
        raise
    kid = key_id(load_public_key(public_pem))
    if as_json:
        keys = {"private_key": str(private_path), "public_key": str(public_path), "key_id": kid}
        print(json_text(json.dumps(keys, indent=2, sort_keys=True)))
        return 0
    print(f"private key: {private_path} (keep it secret; mode 0600)")
    print(f"public key:  {public_path} (pin it: probegate verify --pubkey-file {public_path})")
    print(f"key id:      {kid}")
    return 0


def _write_new(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` exclusively with ``mode``; an existing file is an error, not a target."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError as exc:
        raise UsageError(f"{path} already exists; refusing to overwrite a key") from exc
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)  # the umask may have narrowed the public key's mode
