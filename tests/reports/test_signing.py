"""Signing: round trip, idempotence, tamper detection, trust anchors, and the CLI around it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from probegate.cli import main
from probegate.errors import UsageError
from probegate.models.stored import parse_report_json
from probegate.reports import json_report
from probegate.reports.signing import (
    Check,
    generate_key_pair,
    sign_report,
    signed_bytes,
    signing_material_from_env,
    verify_report,
)
from tests.reports.inert import assert_terminal_inert
from tests.reports.samples import golden_report

SECRET = b"test-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def keys() -> tuple[bytes, bytes]:
    return generate_key_pair()


def _signed(keys: tuple[bytes, bytes]) -> dict[str, Any]:
    return sign_report(golden_report().to_dict(), secret=SECRET, private_key_pem=keys[0])


def test_round_trip_everything_ok(keys: tuple[bytes, bytes]) -> None:
    data = _signed(keys)
    assert set(data["signatures"]) == {"hmac_sha256", "ed25519"}
    assert set(data["signatures"]["ed25519"]) == {"signature", "public_key", "key_id"}
    result = verify_report(data, secret=SECRET, pinned_public_keys=[keys[1]])
    assert (result.schema, result.hmac_sha256, result.ed25519, result.trust_anchor) == (
        Check.OK,
        Check.OK,
        Check.OK,
        Check.PINNED,
    )
    assert result.ok
    assert result.key_id == data["signatures"]["ed25519"]["key_id"]


def test_signing_is_idempotent_and_ignores_old_signatures(keys: tuple[bytes, bytes]) -> None:
    once = _signed(keys)
    twice = sign_report(once, secret=SECRET, private_key_pem=keys[0])
    assert twice == once
    assert signed_bytes(once) == signed_bytes(golden_report().to_dict())
    unsigned = sign_report(once, secret=None, private_key_pem=None)
    assert "signatures" not in unsigned  # stale signatures never survive a re-sign


def test_signatures_cover_canonical_json_without_signatures(keys: tuple[bytes, bytes]) -> None:
    data = _signed(keys)
    reordered = json.loads(json.dumps(data, indent=4))  # layout and key order do not matter
    assert verify_report(reordered, secret=SECRET, pinned_public_keys=[keys[1]]).ok


@pytest.mark.slow
def test_every_changed_byte_is_caught(keys: tuple[bytes, bytes]) -> None:
    """Flip the lowest bit of each byte of the signed file: no variant verifies.

    Either the file is no longer a readable report (``verify`` exits 2) or a check fails.
    """
    report = golden_report().model_copy(update={"signatures": _signed(keys)["signatures"]})
    original = json_report.render(report)
    pinned = [keys[1]]
    assert verify_report(parse_report_json(original), secret=SECRET, pinned_public_keys=pinned).ok
    for i in range(len(original)):
        tampered = bytearray(original)
        tampered[i] ^= 0x01
        try:
            data = parse_report_json(bytes(tampered))
        except UsageError:
            continue
        result = verify_report(data, secret=SECRET, pinned_public_keys=pinned)
        assert not result.ok, f"byte {i} ({original[i : i + 1]!r}) changed undetected"


def test_wrong_secret_and_unpinned_key_fail(keys: tuple[bytes, bytes]) -> None:
    data = _signed(keys)
    _, other_public = generate_key_pair()
    result = verify_report(
        data, secret=b"another-secret-0000000", pinned_public_keys=[other_public]
    )
    assert result.hmac_sha256 is Check.FAIL
    assert result.ed25519 is Check.OK  # intact bytes ...
    assert result.trust_anchor is Check.UNANCHORED  # ... from a key nobody pinned
    assert not result.ok


def test_a_forger_re_signing_with_their_own_key_is_unanchored(keys: tuple[bytes, bytes]) -> None:
    data = _signed(keys)
    data["aivss"] = 100
    forger_private, _ = generate_key_pair()
    forged = sign_report(data, secret=None, private_key_pem=forger_private)
    result = verify_report(forged, secret=None, pinned_public_keys=[keys[1]])
    assert result.ed25519 is Check.OK and result.trust_anchor is Check.UNANCHORED
    assert not result.ok


def test_unsigned_report_is_skipped_and_unanchored() -> None:
    result = verify_report(golden_report().to_dict(), secret=None, pinned_public_keys=[])
    assert result.hmac_sha256 is Check.SKIPPED
    assert result.ed25519 is Check.SKIPPED
    assert result.trust_anchor is Check.UNANCHORED
    assert not result.ok


def test_a_secret_given_but_no_hmac_in_the_report_fails(keys: tuple[bytes, bytes]) -> None:
    data = sign_report(golden_report().to_dict(), secret=None, private_key_pem=keys[0])
    result = verify_report(data, secret=SECRET, pinned_public_keys=[keys[1]])
    assert result.hmac_sha256 is Check.FAIL and not result.ok


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s["ed25519"].update(signature="!!notbase64"),
        lambda s: s["ed25519"].update(public_key="garbage"),
        lambda s: s["ed25519"].update(key_id="0" * 64),
        lambda s: s.update(ed25519="a string"),
    ],
)
def test_malformed_signature_blocks_fail_without_crashing(
    keys: tuple[bytes, bytes], mutate: Any
) -> None:
    data = _signed(keys)
    mutate(data["signatures"])
    result = verify_report(data, secret=SECRET, pinned_public_keys=[keys[1]])
    assert result.ed25519 is Check.FAIL and not result.ok


def test_schema_failure_is_reported(keys: tuple[bytes, bytes]) -> None:
    data = _signed(keys)
    del data["findings"]
    data = sign_report(data, secret=SECRET, private_key_pem=keys[0])
    result = verify_report(data, secret=SECRET, pinned_public_keys=[keys[1]])
    assert result.schema is Check.FAIL and "findings" in result.notes["schema"]
    assert not result.ok


def test_no_default_material_and_short_secrets_are_refused(keys: tuple[bytes, bytes]) -> None:
    assert signing_material_from_env(None, environ={}) == (None, None)
    assert signing_material_from_env(None, environ={"PROBEGATE_SIGNING_SECRET": ""}) == (None, None)
    with pytest.raises(UsageError, match="shorter than 16 bytes"):
        signing_material_from_env(None, environ={"PROBEGATE_SIGNING_SECRET": "short"})
    with pytest.raises(UsageError):
        sign_report({}, secret=b"", private_key_pem=None)


def test_signing_material_from_env_reads_path_or_pem(
    keys: tuple[bytes, bytes], tmp_path: Path
) -> None:
    key_file = tmp_path / "k.key"
    key_file.write_bytes(keys[0])
    env = {"PROBEGATE_SIGNING_SECRET": SECRET.decode(), "PROBEGATE_SIGNING_KEY": str(key_file)}
    assert signing_material_from_env(None, environ=env) == (SECRET, keys[0])
    env["PROBEGATE_SIGNING_KEY"] = keys[0].decode()
    assert signing_material_from_env(None, environ=env)[1] == keys[0]
    assert signing_material_from_env(str(key_file), environ={}) == (None, keys[0])
    with pytest.raises(UsageError, match=r"missing\.key: signing key not found"):
        signing_material_from_env(str(tmp_path / "missing.key"), environ={})
    (tmp_path / "pub.key").write_bytes(keys[1])
    with pytest.raises(UsageError, match="not an unencrypted PKCS#8"):
        signing_material_from_env(str(tmp_path / "pub.key"), environ={})


# --- CLI ------------------------------------------------------------------------------------


def test_keys_generate_writes_a_private_0600_pair_and_refuses_to_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "--out-dir", str(tmp_path), "--name", "ci"]) == 0
    private, public = tmp_path / "ci.key", tmp_path / "ci.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert private.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert public.read_bytes().startswith(b"-----BEGIN PUBLIC KEY-----")
    assert "key id:" in capsys.readouterr().out
    before = private.read_bytes()
    assert main(["keys", "generate", "--out-dir", str(tmp_path), "--name", "ci"]) == 2
    assert private.read_bytes() == before
    assert main(["keys", "generate", "--out-dir", str(tmp_path), "--name", "../x"]) == 2


def _cli_files(tmp_path: Path, keys: tuple[bytes, bytes]) -> tuple[Path, Path]:
    report = golden_report().model_copy(update={"signatures": _signed(keys)["signatures"]})
    scan = tmp_path / "scan.json"
    scan.write_bytes(json_report.render(report))
    pub = tmp_path / "signer.pub"
    pub.write_bytes(keys[1])
    return scan, pub


def test_verify_cli_exit_codes(
    tmp_path: Path,
    keys: tuple[bytes, bytes],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scan, pub = _cli_files(tmp_path, keys)
    monkeypatch.delenv("PROBEGATE_SIGNING_SECRET", raising=False)
    assert main(["verify", str(scan), "--pubkey-file", str(pub), "--secret", SECRET.decode()]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "schema: OK",
        "HMAC-SHA256: OK",
        "Ed25519: OK",
        "trust anchor: PINNED",
    ]
    monkeypatch.setenv("PROBEGATE_SIGNING_SECRET", SECRET.decode())
    assert main(["verify", str(scan), "--pubkey-file", str(pub)]) == 0
    capsys.readouterr()

    assert main(["verify", str(scan)]) == 1  # no pinned key
    assert "trust anchor: UNANCHORED" in capsys.readouterr().out

    monkeypatch.setenv("PROBEGATE_SIGNING_SECRET", "wrong-secret-wrong-secret")
    assert main(["verify", str(scan), "--pubkey-file", str(pub)]) == 1
    assert "HMAC-SHA256: FAIL" in capsys.readouterr().out

    monkeypatch.delenv("PROBEGATE_SIGNING_SECRET")
    text = scan.read_text().replace('"aivss": 42', '"aivss": 43')
    scan.write_text(text)
    assert main(["verify", str(scan), "--pubkey-file", str(pub)]) == 1
    out = capsys.readouterr().out
    assert "Ed25519: FAIL" in out and "HMAC-SHA256: SKIPPED" in out


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"a": 1, "a": 2}', b'{"aivss": NaN}'],
)
def test_verify_cli_unreadable_file_is_exit_2_one_line(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert main(["verify", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert main(["verify", str(tmp_path / "missing.json")]) == 2


def test_verify_cli_bad_pubkey_file_is_exit_2(tmp_path: Path, keys: tuple[bytes, bytes]) -> None:
    scan, _ = _cli_files(tmp_path, keys)
    junk = tmp_path / "junk.pub"
    junk.write_bytes(b"not a key")
    assert main(["verify", str(scan), "--pubkey-file", str(junk)]) == 2
    assert main(["verify", str(scan), "--pubkey-file", str(tmp_path / "none.pub")]) == 2


def test_keys_generated_by_the_cli_sign_and_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "generate", "--out-dir", str(tmp_path)]) == 0
    private = (tmp_path / "probegate-signing.key").read_bytes()
    public = (tmp_path / "probegate-signing.pub").read_bytes()
    data = sign_report(golden_report().to_dict(), secret=None, private_key_pem=private)
    assert verify_report(data, secret=None, pinned_public_keys=[public]).ok
    assert os.access(tmp_path / "probegate-signing.pub", os.R_OK)


def test_an_hmac_only_report_is_anchored_by_the_secret_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The secret the verifier holds is proof of who signed: only its holders can make the
    HMAC. There is no default secret to fall back on."""
    monkeypatch.delenv("PROBEGATE_SIGNING_SECRET", raising=False)
    signed = sign_report(golden_report().to_dict(), secret=SECRET, private_key_pem=None)
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps(signed), encoding="utf-8")

    assert main(["verify", str(scan), "--secret", SECRET.decode()]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "schema: OK",
        "HMAC-SHA256: OK",
        "Ed25519: SKIPPED (report has no Ed25519 signature)",
        "trust anchor: PINNED (the HMAC secret given)",
    ]
    assert main(["verify", str(scan)]) == 1  # no secret: nothing anchors it
    assert "trust anchor: UNANCHORED" in capsys.readouterr().out
    assert main(["verify", str(scan), "--secret", "another-secret-of-length"]) == 1
    out = capsys.readouterr().out
    assert "HMAC-SHA256: FAIL" in out and "trust anchor: UNANCHORED" in out
    assert main(["verify", str(scan), "--secret", "short"]) == 2
    assert "shorter than 16 bytes" in capsys.readouterr().err

    tampered = {**signed, "aivss": signed["aivss"] + 1}
    scan.write_text(json.dumps(tampered), encoding="utf-8")
    assert main(["verify", str(scan), "--secret", SECRET.decode()]) == 1
    assert "HMAC-SHA256: FAIL" in capsys.readouterr().out


def test_a_pinned_key_requires_its_own_signature_whatever_else_verifies(
    tmp_path: Path,
    keys: tuple[bytes, bytes],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--pubkey-file`` says which key must have signed: a report whose Ed25519 block was
    stripped, or signed by another key, is unanchored even when its HMAC matches the secret
    given (docs/signing.md, "Which check anchors a report")."""
    monkeypatch.delenv("PROBEGATE_SIGNING_SECRET", raising=False)
    scan, pub = _cli_files(tmp_path, keys)
    signed = json.loads(scan.read_text())
    stripped = dict(signed, signatures={"hmac_sha256": signed["signatures"]["hmac_sha256"]})
    scan.write_text(json.dumps(stripped), encoding="utf-8")
    argv = ["verify", str(scan), "--pubkey-file", str(pub), "--secret", SECRET.decode()]
    assert main(argv) == 1
    assert capsys.readouterr().out.splitlines() == [
        "schema: OK",
        "HMAC-SHA256: OK",
        "Ed25519: SKIPPED (report has no Ed25519 signature)",
        "trust anchor: UNANCHORED (a key is pinned and the report has no Ed25519 signature)",
    ]
    # Re-signed by another key, with the right HMAC: the pinned key still did not sign it.
    other = generate_key_pair()
    forged = sign_report(golden_report().to_dict(), secret=SECRET, private_key_pem=other[0])
    scan.write_text(json.dumps(forged), encoding="utf-8")
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "HMAC-SHA256: OK" in out and "Ed25519: OK" in out
    assert "trust anchor: UNANCHORED (signing key " in out and "is not a pinned key)" in out
    # Without a pinned key, the HMAC-only report is anchored by the secret, as before.
    scan.write_text(json.dumps(stripped), encoding="utf-8")
    assert main(["verify", str(scan), "--secret", SECRET.decode()]) == 0
    capsys.readouterr()


def test_verify_prints_what_the_report_holds_inert(
    tmp_path: Path, keys: tuple[bytes, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    # Notes quote the file: a signature kind's name, the embedded key's PEM.
    scan, _ = _cli_files(tmp_path, keys)
    data = json.loads(scan.read_text())
    data["signatures"]["\x1b[2J\u202e\n::error::forged"] = "x"
    data["signatures"]["ed25519"]["public_key"] = "\x1b]0;title\x07\n::warning::pem"
    scan.write_text(json.dumps(data))
    assert main(["verify", str(scan)]) == 1
    out = capsys.readouterr().out
    assert_terminal_inert(out)
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "schema",
        "HMAC-SHA256",
        "Ed25519",
        "trust anchor",
    ]
    assert "unknown signature kind(s): ::error::forged" in lines[0]
