"""What a memory's manifest records, against what this open brings: the engine, the
encoder, the kgagent that last wrote it, and the thresholds θ_merge and θ_simi.

Functions of the manifest's record, the config (and ``KGAGENT_ENGINE``) and the offered
encoder: each answers whether they agree or, where they do not, the one line that says
why and what to set. :class:`~kgagent.memory.lifecycle.Lifecycle` asks them before anything on disk
is written. See docs/memory.md (engines, encoders).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import kgagent
from kgagent.config import Config
from kgagent.memory.core import EncoderSpec
from kgagent.memory.files import MANIFEST

#: (θ_merge, θ_simi) shown for a memory that has no encoder yet, so no states to
#: compare: a placeholder for ``info``, not a knob (``memory.theta_*`` and the
#: encoder's own defaults decide once there is an encoder).
NO_ENCODER_THRESHOLDS = (0.95, 0.88)


def encoder_dict(encoder: EncoderSpec | None) -> dict[str, Any] | None:
    """An encoder as the manifest records it."""
    if encoder is None:
        return None
    recorded: dict[str, Any] = {
        "identity": encoder.identity,
        "dim": encoder.dim,
        "thresholds": list(encoder.thresholds),
    }
    if encoder.weights:
        recorded["weights"] = encoder.weights
    return recorded


def same_encoder(recorded: dict[str, Any], encoder: EncoderSpec) -> bool:
    """Whether ``encoder`` makes the features the manifest's encoder made (its identity or
    one that earlier versions gave the same weights, and the same dimension)."""
    names = (encoder.identity, *encoder.aliases)
    return recorded["identity"] in names and int(recorded["dim"]) == encoder.dim


def encoder_fix(recorded: dict[str, Any], offered: EncoderSpec, clip_model: str) -> str:
    """How to offer the features of the encoder the manifest records, in a few words
    (``clip_model``: the configured ``perception.clip_model``)."""
    if recorded["identity"] == offered.identity:  # one encoder, two widths: not the settings
        return (
            f"{MANIFEST} records {recorded['dim']}-d for {offered.identity}, which gives "
            f"{offered.dim}-d: the manifest was edited or damaged; restore it from backups/ or "
            "an export"
        )
    kind, _, rest = str(recorded["identity"]).partition(":")
    model, _, tag = rest.partition(":")
    weights = recorded.get("weights")
    if kind == "pixel":
        if offered.identity.startswith("pixel:"):  # the same encoder, another version
            return (
                f"{offered.identity} is another version of the pixel encoder than "
                f"{recorded['identity']}, and no setting gives that one: use the kgagent it "
                "was built with"
            )
        return "set perception.encoder=pixel"
    if kind != "clip" or tag == "in-memory":
        return "use the encoder it was built with"
    from_file = tag.startswith(("sha256-", "visual-sha256-"))
    if from_file and weights and weights == offered.weights and clip_model == model:
        return f"{weights} has changed since (its weights hash differently): restore that file"
    use = "" if offered.identity.startswith("clip:") else "perception.encoder=clip and "
    if clip_model != model:
        use += f"perception.clip_model={model} and "
    if not from_file:
        return f"set {use}perception.clip_weights={tag}"
    if weights:
        return f"set {use}perception.clip_weights={weights}"
    return f"set {use}perception.clip_weights to the file it was built with"


def _version_key(version: str) -> tuple[int, ...] | None:
    """``"1.2.3"`` as (1, 2, 3), each part's leading digits (``"0rc1"`` → 0); None when
    the text is no version."""
    parts = []
    for part in version.split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            return None
        parts.append(int(digits.group()))
    return tuple(parts)


def newer_writer(recorded: Any) -> str | None:
    """``recorded`` (the manifest's ``kgagent_version``) when it is newer than this kgagent."""
    if not isinstance(recorded, str):
        return None
    theirs, ours = _version_key(recorded), _version_key(kgagent.__version__)
    return recorded if theirs and ours and theirs > ours else None


def built_from(recorded: dict[str, Any]) -> str:
    """`` from <file>`` when the manifest names the weights file its encoder was loaded from."""
    weights = recorded.get("weights")
    if not weights or str(recorded["identity"]).endswith(f":{weights}"):
        return ""  # none recorded, or a pretrained tag that the identity already names
    return f" from {weights}"


def thetas(config: Config, encoder: dict[str, Any] | None) -> tuple[float, float]:
    """(θ_merge, θ_simi): ``memory.theta_*`` of the config, else the encoder's defaults."""
    default = tuple(encoder["thresholds"]) if encoder else NO_ENCODER_THRESHOLDS
    m = config.memory
    merge = m.theta_merge if m.theta_merge is not None else float(default[0])
    simi = m.theta_simi if m.theta_simi is not None else float(default[1])
    return merge, simi


def theta_clash(config: Config, encoder: dict[str, Any] | None) -> str | None:
    """Why θ_simi is not below θ_merge, naming the fields and where each value comes
    from; None when it is, or when there is no encoder yet (no state to compare)."""
    merge, simi = thetas(config, encoder)
    if encoder is None or simi < merge:
        return None
    m, enc = config.memory, encoder["identity"]
    if m.theta_simi is None:  # θ_merge set below the encoder's θ_simi
        return (
            f"memory.theta_merge = {merge} must be above memory.theta_simi, which is {simi} "
            f"(the default of encoder {enc}; memory.theta_simi is not set): set "
            f"memory.theta_simi below {merge} too, or memory.theta_merge above {simi}"
        )
    if m.theta_merge is None:  # θ_simi set above the encoder's θ_merge
        return (
            f"memory.theta_simi = {simi} must be below memory.theta_merge, which is {merge} "
            f"(the default of encoder {enc}; memory.theta_merge is not set): set "
            f"memory.theta_merge above {simi} too, or memory.theta_simi below {merge}"
        )
    return f"memory.theta_simi = {simi} must be below memory.theta_merge = {merge}"


def engine_mismatch(path: Path, written: str, wanted: str) -> str:
    """The one line for a memory of the other engine: how to open it as it is, and the
    two commands, runnable as printed, that copy it into a memory of ``wanted``."""
    env = bool(os.environ.get("KGAGENT_ENGINE"))
    how = (
        f"KGAGENT_ENGINE={os.environ['KGAGENT_ENGINE']} in the environment chooses the "
        f"engine (over memory.engine): set it to {written} or unset it"
        if env
        else f"set memory.engine={written} (or KGAGENT_ENGINE={written})"
    )

    def run(engine: str, args: str) -> str:
        # The variable chooses over --set: where it is set, the commands set it too.
        if env:
            return f"KGAGENT_ENGINE={engine} kgagent memory {args}"
        return f"kgagent memory {args} --set memory.engine={engine}"

    archive = shlex.quote(f"{path}.tar.gz")
    export = run(written, f"export {archive} --memory {shlex.quote(str(path))}")
    imported = run(wanted, f"import {archive} --memory {shlex.quote(f'{path}-{wanted}')}")
    return (
        f"this memory was written by the {written} engine, not {wanted}; {how}, or copy it "
        f"into a {wanted} memory: `{export}`, then `{imported}`"
    )
