"""Signing and verifying the JSON report (docs/signing.md).

Both signatures cover :func:`probegate.canonical.canonical_bytes` of the report *without* its
``signatures`` key, so re-signing a signed report reproduces the same bytes (Ed25519 is
deterministic) and a verifier rebuilds the signed input from the file alone.

Two different claims, kept apart on purpose:

- ``hmac_sha256`` proves the report was made by someone holding the shared secret;
- ``ed25519`` proves the bytes were not changed since a holder of the private key signed them,
  but the public key travels inside the report, so it proves *who* signed only when that key is
  pinned by the verifier (``trust anchor: PINNED``). An attacker can always re-sign a forged
  report with a fresh key of their own; that is what ``UNANCHORED`` says.

There is no default secret or key anywhere: signing material comes from the environment or a
file the user names, and an empty secret is refused rather than treated as one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from probegate.canonical import canonical_bytes, write_canonical
from probegate.errors import ReportError, UsageError
from probegate.files import MAX_INPUT_BYTES, read_bytes
from probegate.models.report import SCHEMA
from probegate.models.stored import report_from_data
from probegate.perf import gc_paused

SECRET_ENV = "PROBEGATE_SIGNING_SECRET"  # noqa: S105 - a variable name, not a secret
KEY_ENV = "PROBEGATE_SIGNING_KEY"
MIN_SECRET_BYTES = 16
_SOURCE = "the report"


class Check(StrEnum):
    """The status words ``probegate verify`` prints (a contract: docs/signing.md)."""

    OK = "OK"
    FAIL = "FAIL"
    SKIPPED = "SKIPPED"
    PINNED = "PINNED"
    UNANCHORED = "UNANCHORED"


@dataclass(frozen=True)
class Verification:
    """Per-check outcome of :func:`verify_report`, plus a reason per check that was not OK."""

    schema: Check
    hmac_sha256: Check
    ed25519: Check
    trust_anchor: Check
    key_id: str | None = None
    notes: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True only when nothing failed and the signing key is pinned (exit 0 of ``verify``)."""
        checks = (self.schema, self.hmac_sha256, self.ed25519)
        return Check.FAIL not in checks and self.trust_anchor is Check.PINNED

    def lines(self) -> list[str]:
        """The four lines ``probegate verify`` prints, each with its reason when not OK."""
        rows = [
            ("schema", self.schema),
            ("HMAC-SHA256", self.hmac_sha256),
            ("Ed25519", self.ed25519),
            ("trust anchor", self.trust_anchor),
        ]
        out = []
        for label, status in rows:
            note = self.notes.get(label)
            out.append(f"{label}: {status.value}" + (f" ({note})" if note else ""))
        return out


# --- keys -------------------------------------------------------------------------------------


def load_private_key(pem: bytes) -> Ed25519PrivateKey:
    """An unencrypted PKCS#8 PEM Ed25519 private key, or a :class:`UsageError` saying why not."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise UsageError(
            "signing key is not an unencrypted PKCS#8 PEM private key "
            f"(create one with 'probegate keys generate'): {_one_line(exc)}"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError("signing key is not an Ed25519 key (use 'probegate keys generate')")
    return key


def load_public_key(pem: bytes) -> Ed25519PublicKey:
    """A SubjectPublicKeyInfo PEM Ed25519 public key, or a :class:`UsageError`."""
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise UsageError(
            f"public key is not a SubjectPublicKeyInfo PEM key: {_one_line(exc)}"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError("public key is not an Ed25519 key")
    return key


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())[:300]


def public_key_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def key_id(key: Ed25519PublicKey) -> str:
    """SHA-256 of the key's DER SubjectPublicKeyInfo: the name a pinned key is known by."""
    der = key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return hashlib.sha256(der).hexdigest()


def generate_key_pair() -> tuple[bytes, bytes]:
    """A fresh Ed25519 pair as (PKCS#8 PEM private key, SubjectPublicKeyInfo PEM public key)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return private, public_key_pem(key.public_key()).encode("ascii")


def signing_material_from_env(
    signing_key_path: str | None,
    environ: Mapping[str, str] | None = None,
) -> tuple[bytes | None, bytes | None]:
    """(secret, private key PEM) for :func:`sign_report`, from flags and the environment.

    The secret comes from ``PROBEGATE_SIGNING_SECRET``; the key from ``signing_key_path``
    (``--signing-key``) or else ``PROBEGATE_SIGNING_KEY``, which may hold a path or the PEM
    text itself (CI secrets are easier to pass as text). An empty variable counts as unset,
    because an unset GitHub secret expands to the empty string. A key that cannot be read or
    is not an Ed25519 PKCS#8 key is a :class:`UsageError` (exit 2), never silently skipped.
    """
    env = os.environ if environ is None else environ
    secret_text = env.get(SECRET_ENV, "")
    secret: bytes | None = None
    if secret_text:
        secret = secret_text.encode("utf-8")
        _check_secret(secret)

    key_pem: bytes | None = None
    source = signing_key_path or env.get(KEY_ENV, "")
    if source:
        if signing_key_path is None and source.lstrip().startswith("-----BEGIN"):
            key_pem = source.encode("ascii", errors="replace")
            where = f"${KEY_ENV}"
        else:
            where = source
            key_pem = read_bytes(Path(source), what="signing key", max_bytes=MAX_INPUT_BYTES)
        try:
            load_private_key(key_pem)
        except UsageError as exc:
            raise UsageError(f"{where}: {exc.message}") from exc
    return secret, key_pem


def signing_material(
    sign: bool | None, signing_key_path: str | None
) -> tuple[bytes | None, bytes | None]:
    """(secret, private key PEM) under ``--sign``/``--no-sign``/``--signing-key``, the same
    for every command that writes a report: ``--no-sign`` signs nothing; by default a report is
    signed when material is present; ``--sign`` without any is a :class:`UsageError` (exit 2),
    said before any work, never an unsigned report."""
    if sign is False:
        return None, None
    secret, key_pem = signing_material_from_env(signing_key_path)
    if sign and secret is None and key_pem is None:
        raise UsageError(
            f"--sign needs {SECRET_ENV} and/or a key (--signing-key or {KEY_ENV}); "
            "'probegate keys generate' writes one"
        )
    return secret, key_pem


def _check_secret(secret: bytes) -> None:
    if len(secret) < MIN_SECRET_BYTES:
        raise UsageError(
            f"the signing secret is shorter than {MIN_SECRET_BYTES} bytes; "
            f"set {SECRET_ENV} to a long random value (e.g. 'openssl rand -hex 32')"
        )


# --- signing ----------------------------------------------------------------------------------


def signed_bytes(data: Mapping[str, Any]) -> bytes:
    """The exact bytes both signatures cover: canonical JSON without ``signatures``."""
    return canonical_bytes({k: v for k, v in data.items() if k != "signatures"})


def sign_report(
    data: Mapping[str, Any],
    *,
    secret: bytes | None,
    private_key_pem: bytes | None,
) -> dict[str, Any]:
    """A copy of ``data`` (a report's JSON form) with fresh ``signatures``.

    Any old ``signatures`` are dropped first, so the result never carries a signature over
    different content; with neither a secret nor a key the copy is simply unsigned.
    Idempotent: signing the result again with the same material gives the same dict.
    """
    out = {k: v for k, v in data.items() if k != "signatures"}
    signatures = _signatures(canonical_bytes(out), secret, private_key_pem)
    if signatures:
        out["signatures"] = signatures
    return out


def report_signatures(
    fields: Mapping[str, Any], *, secret: bytes | None, private_key_pem: bytes | None
) -> dict[str, Any] | None:
    """The ``signatures`` :func:`sign_report` gives a report, from its ``to_fields()``: the
    signed bytes are written a piece at a time, into an HMAC as they come or into one buffer
    when Ed25519 signs (it reads the message twice), so the report's JSON values are never all
    held (a 10,000-finding merge signed with both: 198 MB at the peak when its ``to_dict()``
    was signed, 158 MB so)."""
    unsigned = {k: v for k, v in fields.items() if k != "signatures"}
    if private_key_pem is None and secret is not None:  # an HMAC reads the bytes as they come
        _check_secret(secret)
        mac = hmac.new(secret, digestmod=hashlib.sha256)
        with gc_paused():  # millions of acyclic objects made and dropped
            write_canonical(unsigned, mac.update)
        return {"hmac_sha256": mac.hexdigest()}
    payload = bytearray()
    with gc_paused():
        write_canonical(unsigned, payload.extend)
    return _signatures(payload, secret, private_key_pem) or None


def _signatures(
    payload: bytes | bytearray, secret: bytes | None, private_key_pem: bytes | None
) -> dict[str, Any]:
    signatures: dict[str, Any] = {}
    if secret is not None:
        _check_secret(secret)
        signatures["hmac_sha256"] = hmac.new(secret, payload, hashlib.sha256).hexdigest()
    if private_key_pem is not None:
        key = load_private_key(private_key_pem)
        public = key.public_key()
        signatures["ed25519"] = {
            "key_id": key_id(public),
            "public_key": public_key_pem(public),
            "signature": base64.b64encode(key.sign(payload)).decode("ascii"),
        }
    return signatures


# --- verifying --------------------------------------------------------------------------------


def verify_report(
    data: Mapping[str, Any],
    *,
    secret: bytes | None,
    pinned_public_keys: Sequence[bytes],
) -> Verification:
    """Check a parsed report: schema, HMAC (when a secret is given), Ed25519, trust anchor.

    ``pinned_public_keys`` are PEM public keys the verifier trusts (``--pubkey-file``); an
    invalid one is a :class:`UsageError`. The trust anchor is a pinned key that made a valid
    Ed25519 signature. Only when no key is pinned, a report signed with an HMAC alone is
    anchored by the verifier's own ``secret`` when the HMAC matches it: a shared secret proves
    the report came from one of its holders (and there is no built-in default one to accept).
    A pinned key says which key must have signed, so then nothing else anchors a report: an
    HMAC that matches does not stand in for a stripped or foreign Ed25519 signature
    (docs/signing.md). A secret shorter than the signing
    minimum is a :class:`UsageError`. The report itself is never trusted: a missing or
    malformed signature block is a FAIL, not an exception.
    """
    pinned_ids = {key_id(load_public_key(pem)) for pem in pinned_public_keys}
    notes: dict[str, str] = {}

    schema = Check.OK
    try:
        # The one stored-report reader decides what a valid report is, for every command.
        report = report_from_data(dict(data), source=_SOURCE)
        if report.schema_ != SCHEMA:
            notes["schema"] = f"an {report.schema_} report, read as {SCHEMA}"
    except ReportError as exc:
        schema = Check.FAIL
        notes["schema"] = exc.message.removeprefix(f"{_SOURCE}: ")

    signatures = data.get("signatures")
    if signatures is not None and not isinstance(signatures, Mapping):
        signatures = {}
        notes["Ed25519"] = "signatures is not an object"
    signatures = signatures or {}
    unknown = sorted(set(signatures) - {"hmac_sha256", "ed25519"})
    if unknown:
        schema = Check.FAIL
        notes["schema"] = f"unknown signature kind(s): {', '.join(map(str, unknown))}"
    try:
        payload = signed_bytes(data)
    except (TypeError, ValueError) as exc:  # NaN or a non-JSON value: nothing can match
        payload = b""
        notes["schema"] = f"not canonical JSON: {exc}"
        schema = Check.FAIL

    hmac_status = _check_hmac(signatures.get("hmac_sha256"), secret, payload, notes)
    ed_status, signer_id = _check_ed25519(signatures.get("ed25519"), payload, notes)

    if ed_status is Check.OK and signer_id in pinned_ids:
        anchor = Check.PINNED
    elif hmac_status is Check.OK and ed_status is Check.SKIPPED and not pinned_ids:
        # An HMAC-only report, no key pinned: the verifier's own secret is the anchor, as
        # only its holders could have made the HMAC. A pinned key must have signed, whatever
        # else verifies: stripping the Ed25519 block must not turn a key check into a
        # secret check.
        anchor = Check.PINNED
        notes["trust anchor"] = "the HMAC secret given"
    else:
        anchor = Check.UNANCHORED
        if not pinned_ids:
            notes["trust anchor"] = "no pinned public key given (--pubkey-file)"
        elif ed_status is Check.OK:
            notes["trust anchor"] = f"signing key {signer_id} is not a pinned key"
        elif ed_status is Check.SKIPPED:
            notes["trust anchor"] = "a key is pinned and the report has no Ed25519 signature"
        else:
            notes["trust anchor"] = "no valid Ed25519 signature to anchor"
    return Verification(
        schema=schema,
        hmac_sha256=hmac_status,
        ed25519=ed_status,
        trust_anchor=anchor,
        key_id=signer_id,
        notes=notes,
    )


def _check_hmac(value: Any, secret: bytes | None, payload: bytes, notes: dict[str, str]) -> Check:
    label = "HMAC-SHA256"
    if secret is None:
        if value is not None:
            notes[label] = f"report has an HMAC but no secret was given (${SECRET_ENV})"
        return Check.SKIPPED
    if not secret:
        notes[label] = "empty secret"
        return Check.FAIL
    _check_secret(secret)  # a short secret is guessable: never proof of who signed
    if not isinstance(value, str):
        notes[label] = "report has no HMAC signature"
        return Check.FAIL
    expected = hmac.new(secret, payload, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected.encode(), value.encode("utf-8", "replace")):
        notes[label] = "signature does not match (content changed or wrong secret)"
        return Check.FAIL
    return Check.OK


def _check_ed25519(value: Any, payload: bytes, notes: dict[str, str]) -> tuple[Check, str | None]:
    label = "Ed25519"
    if value is None:
        notes.setdefault(label, "report has no Ed25519 signature")
        return Check.SKIPPED, None
    if not isinstance(value, Mapping):
        notes[label] = "ed25519 signature is not an object"
        return Check.FAIL, None
    signature, pem = value.get("signature"), value.get("public_key")
    if not isinstance(signature, str) or not isinstance(pem, str):
        notes[label] = "signature or public_key missing"
        return Check.FAIL, None
    try:
        public = load_public_key(pem.encode("ascii"))
        raw = base64.b64decode(signature, validate=True)
    except (UsageError, UnicodeEncodeError, binascii.Error) as exc:
        notes[label] = f"malformed signature block: {exc}"
        return Check.FAIL, None
    signer_id = key_id(public)
    # Only the canonical spelling is accepted, so no byte of the block can change unnoticed
    # (PEM and base64 decoders tolerate variants that would otherwise verify the same).
    if set(value) != {"key_id", "public_key", "signature"}:
        notes[label] = "unexpected fields in the ed25519 block"
        return Check.FAIL, signer_id
    if pem != public_key_pem(public) or signature != base64.b64encode(raw).decode("ascii"):
        notes[label] = "public_key or signature is not in canonical form"
        return Check.FAIL, signer_id
    if value.get("key_id") != signer_id:
        notes[label] = "key_id does not match the embedded public key"
        return Check.FAIL, signer_id
    try:
        public.verify(raw, payload)
    except InvalidSignature:
        notes[label] = "signature does not match the content"
        return Check.FAIL, signer_id
    return Check.OK, signer_id
