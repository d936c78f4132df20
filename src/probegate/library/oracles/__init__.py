"""The oracle kinds: one module each, listed once in :data:`KINDS`.

Adding a kind is one module (an :class:`~probegate.library.oracles.base.OracleModel` subclass
with its fields, its docs sentence and its ``decide``) and one line here. Everything else is
derived from this tuple: the discriminated union :data:`Oracle` that probe files are parsed
with (``library/probe.py``), the "Oracle kinds" section of docs/probes.md, the kinds named in
``probegate probes list --help``, and the judging, which calls each oracle's own ``decide``.
A kind may hold other oracles (a field typed ``tuple["Oracle", ...]``): the union is resolved
for every kind once it exists, and ``JudgeContext.decide`` judges the inner ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field

from probegate.library.oracles.all_of import AllOfOracle
from probegate.library.oracles.base import OracleModel
from probegate.library.oracles.canary_leak import CanaryLeakOracle
from probegate.library.oracles.judge import JudgeOracle
from probegate.library.oracles.no_action import NoActionOracle
from probegate.library.oracles.output_pattern import OutputPatternOracle
from probegate.library.oracles.tool_call import ToolCallOracle

KINDS: tuple[type[OracleModel], ...] = (
    CanaryLeakOracle,
    ToolCallOracle,
    OutputPatternOracle,
    NoActionOracle,
    JudgeOracle,
    AllOfOracle,
)


def oracle_union(kinds: tuple[type[OracleModel], ...]) -> Any:
    """The discriminated union of ``kinds``, also resolved inside kinds that nest oracles."""
    # Built at run time from the registry: a static type checker sees OracleModel (below).
    union = Annotated[Union[kinds], Field(discriminator="kind")]  # type: ignore[valid-type]  # noqa: UP007
    for kind in kinds:
        kind.model_rebuild(_types_namespace={"Oracle": union})
    return union


ORACLE_KINDS: dict[str, type[OracleModel]] = {kind.kind_name(): kind for kind in KINDS}

if TYPE_CHECKING:
    Oracle = OracleModel
else:
    Oracle = oracle_union(KINDS)
