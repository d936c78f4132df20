"""Load the probe library: every ``probes/*.yaml`` file, parsed once into :class:`Probe`.

A malformed file is a :class:`ProbeLibraryError` naming the file and the field, never a
traceback. ``probe_library_version`` pins the release and a digest of the files, so two reports
claim the same library only if they ran the same probes.
"""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pydantic import ValidationError

from probegate.errors import ProbeLibraryError
from probegate.files import MAX_YAML_BYTES, read_bytes, read_yaml
from probegate.library.probe import Probe
from probegate.validation import describe

LIBRARY_RELEASE = "2026.11"
PROBES_DIR = Path(__file__).parent / "probes"
ATLAS_FILE = Path(__file__).parent / "data" / "ATLAS.yaml"


@dataclass(frozen=True)
class Library:
    probes: tuple[Probe, ...]
    version: str

    def by_id(self) -> dict[str, Probe]:
        return {p.id: p for p in self.probes}

    def get(self, probe_id: str) -> Probe:
        try:
            return self.by_id()[probe_id]
        except KeyError:
            raise ProbeLibraryError(
                f"no probe with id {probe_id!r} (see 'probegate probes list')"
            ) from None

    def select(self, *, asi: Iterable[str] = (), patterns: Iterable[str] = ()) -> list[Probe]:
        asi_set = {a.strip().upper() for a in asi if a.strip()}
        globs = [g.strip() for g in patterns if g.strip()]
        chosen = []
        for probe in self.probes:
            if asi_set and probe.asi not in asi_set:
                continue
            if globs and not any(fnmatch.fnmatchcase(probe.id, g) for g in globs):
                continue
            chosen.append(probe)
        return chosen


def parse_probe_file(path: Path) -> Probe:
    """One YAML file -> one validated probe, or one clear error naming the file."""
    raw = read_yaml(path, what="probe file", error=ProbeLibraryError)
    if not isinstance(raw, dict):
        raise ProbeLibraryError(f"probe file {path}: expected a mapping of probe fields")
    try:
        return Probe.model_validate(raw)
    except re.error as exc:
        # The model's pattern validators compile regexes; re.error is not a ValueError, so
        # pydantic lets it through instead of reporting the field.
        raise ProbeLibraryError(
            f"probe file {path}: invalid regular expression {exc.pattern!r}: {exc.msg}"
        ) from exc
    except ValidationError as exc:
        problem = describe(exc, data=raw, top="(probe)")
        raise ProbeLibraryError(
            f"probe file {path}: {problem} ('probegate probes lint {path.parent}' lists every "
            "problem at once)"
        ) from None


def load_directory(directory: Path) -> Library:
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise ProbeLibraryError(f"no probe files in {directory}")
    digest = hashlib.sha256()
    probes: list[Probe] = []
    seen: dict[str, Path] = {}
    for path in files:
        data = read_bytes(
            path, what="probe file", error=ProbeLibraryError, max_bytes=MAX_YAML_BYTES
        )
        digest.update(path.name.encode() + b"\0" + data + b"\0")
        probe = parse_probe_file(path)
        if probe.id in seen:
            raise ProbeLibraryError(
                f"probe id {probe.id} is defined twice: {seen[probe.id]} and {path}"
            )
        if path.stem != probe.id:
            raise ProbeLibraryError(
                f"probe file {path}: file name must be the probe id ({probe.id}.yaml)"
            )
        seen[probe.id] = path
        probes.append(probe)
    probes.sort(key=lambda p: p.id)
    return Library(tuple(probes), f"{LIBRARY_RELEASE}+{digest.hexdigest()[:8]}")


@lru_cache(maxsize=1)
def load_library() -> Library:
    """The bundled library, loaded once per process."""
    return load_directory(PROBES_DIR)


def extend_library(library: Library, directories: Iterable[Path]) -> Library:
    """``library`` plus the probes of the user's own directories (``--probe-dir``).

    A custom probe may not reuse an id (a finding's fingerprint and SARIF rule are its id), and
    the version names each directory's digest, so a report says which custom probes it ran.
    """
    dirs = list(directories)
    if not dirs:
        return library
    probes = list(library.probes)
    versions = [library.version]
    known = {p.id for p in probes}
    for path in dirs:
        if not path.is_dir():
            raise ProbeLibraryError(f"probe directory {path} does not exist")
        extra = load_directory(path)
        for probe in extra.probes:
            if probe.id in known:
                raise ProbeLibraryError(
                    f"probe id {probe.id} in {path} is already in the library "
                    f"('probegate probes lint {path}' lists every problem)"
                )
            known.add(probe.id)
        probes.extend(extra.probes)
        versions.append("custom." + extra.version.split("+")[-1])
    return Library(tuple(sorted(probes, key=lambda p: p.id)), "+".join(versions))


@dataclass(frozen=True)
class AtlasData:
    """The bundled MITRE ATLAS release: its version and every technique id with its title."""

    version: str
    techniques: dict[str, str]


@lru_cache(maxsize=1)
def load_atlas() -> AtlasData:
    """Technique id -> title from the bundled ATLAS.yaml; sub-techniques read "Parent: Sub".

    Loaded only where titles are shown (docs, ``probes show``) and by the contract test that
    checks every probe's ids, never on the scan path.
    """
    raw = read_yaml(ATLAS_FILE, what="bundled MITRE ATLAS data", error=ProbeLibraryError)
    names: dict[str, str] = {}
    parents: dict[str, str] = {}
    for matrix in raw.get("matrices", []):
        for tech in matrix.get("techniques", []):
            names[str(tech["id"])] = str(tech["name"])
            if "subtechnique-of" in tech:
                parents[str(tech["id"])] = str(tech["subtechnique-of"])
    titles = {
        tid: f"{names[parents[tid]]}: {name}" if tid in parents and parents[tid] in names else name
        for tid, name in names.items()
    }
    return AtlasData(version=str(raw.get("version", "")), techniques=titles)
