"""One typed configuration object with the papers' defaults.

Every threshold and constant of kgagent lives here, grouped in sections. A TOML
file overrides any field (``[memory] theta_merge = 0.97``), and the CLI
overrides a field with ``--set section.field=value``. Nothing else in kgagent
holds a tunable number: modules receive the ``Config`` (or one of its sections)
as an argument.

Each field is declared with :func:`~kgagent.config_fields.param`: its default,
where the default comes from (``paper: <where>`` in the KG-Agent paper, or
``ours``), one line of why, and the values it allows, which
:meth:`Config.validate` enforces. docs/config.md is generated from these
declarations (``python -m kgagent.config_doc``).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import IO, Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from kgagent.config_brain import BrainConfig  # noqa: F401 - part of this module's API
from kgagent.config_checks import ORDERED
from kgagent.config_fields import (
    FieldSpec,
    closest,
    coerce,
    in_code,
    parse_override,
    refusal,
    show,
    spec_of,
    toml_value,
)
from kgagent.config_sections import (  # noqa: F401 - the sections are part of this module's API
    ABLATIONS,
    AugmentConfig,
    DesktopConfig,
    GymConfig,
    InvocationConfig,
    LibraryConfig,
    MemoryConfig,
    PerceptionConfig,
    RewardConfig,
    RunConfig,
)
from kgagent.errors import ConfigError, KGAgentError

#: The largest config file read; a config is a few kilobytes.
MAX_CONFIG_BYTES = 1 << 20


#: Settings an environment variable overrides whatever the config says (the memory's
#: folder: ``--memory`` wins over both; cli/common.py, kgagent/memory/engine.py).
ENVIRONMENT_WINS = {"memory.engine": "KGAGENT_ENGINE", "memory.path": "KGAGENT_MEMORY"}


@dataclass(frozen=True)
class FieldOrigin:
    """One field of an effective config, its value and where the value came from."""

    name: str  # section.field
    value: Any
    #: ``default (<the field's source>)``, ``file PATH``, ``--set`` (``--set (last of 2)``
    #: when given twice: the last wins), or ``run.ablation = NAME`` for a switch it set
    source: str


@dataclass
class Config:
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    perception: PerceptionConfig = field(default_factory=PerceptionConfig)
    invocation: InvocationConfig = field(default_factory=InvocationConfig)
    augment: AugmentConfig = field(default_factory=AugmentConfig)
    rewards: RewardConfig = field(default_factory=RewardConfig)
    library: LibraryConfig = field(default_factory=LibraryConfig)
    brain: BrainConfig = field(default_factory=BrainConfig)
    desktop: DesktopConfig = field(default_factory=DesktopConfig)
    gym: GymConfig = field(default_factory=GymConfig)
    run: RunConfig = field(default_factory=RunConfig)

    def __setattr__(self, name: str, value: Any) -> None:
        """A section is replaced only by one of its own type (``cfg.memory = {...}`` is
        refused in one line), and a name that is no section is refused."""
        known = self.__dataclass_fields__
        if name not in known:
            raise ConfigError(f"{name!r} is not a config section; sections: {', '.join(known)}")
        kind = type(getattr(self, name, None)) if hasattr(self, name) else None
        if kind is not None and not isinstance(value, kind):
            raise ConfigError(
                f"config.{name} must be a {kind.__name__}, not {type(value).__name__}: set its "
                f"fields instead (cfg.{name}.FIELD = value)"
            )
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(
        cls, path: str | os.PathLike | None = None, overrides: list[str] | None = None
    ) -> Config:
        """Defaults, then a TOML file, then ``section.field=value`` overrides; validated."""
        return cls.load_traced(path, overrides)[0]

    @classmethod
    def load_traced(
        cls, path: str | os.PathLike | None = None, overrides: list[str] | None = None
    ) -> tuple[Config, dict[str, list[str]]]:
        """:meth:`load`, and who set each field that was set (``"file"``, ``"--set"``), in
        order: the last one wins. :meth:`explain` turns it into each value's source."""
        cfg = cls()
        trace: dict[str, list[str]] = {}
        if path is not None:
            text = read_config_text(Path(path))
            try:
                data = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise ConfigError(f"config file {path} is not valid TOML: {e}") from None
            for name in cfg.update(data):
                trace.setdefault(name, []).append("file")
        for item in overrides or []:
            trace.setdefault(cfg.set_dotted(item), []).append("--set")
        cfg.validate()
        return cfg, trace

    @classmethod
    def explain(
        cls, path: str | os.PathLike | None = None, overrides: list[str] | None = None
    ) -> tuple[Config, list[FieldOrigin]]:
        """The config a run given ``path`` and ``overrides`` plays with (its :meth:`effective`
        config), and each field's value with where it came from (``kgagent config``)."""
        cfg, trace = cls.load_traced(path, overrides)
        eff = cfg.effective()
        out = []
        for spec in cls.specs():
            section, key = spec.name.split(".")
            value = getattr(getattr(eff, section), key)
            given = trace.get(spec.name, [])
            sets = given.count("--set")
            if value != getattr(getattr(cfg, section), key):
                source = f"run.ablation = {cfg.run.ablation}"
            elif not given:
                source = f"default ({spec.source})" if spec.source else "default"
            elif not sets:
                source = f"file {path}"
            else:
                notes = [f"last of {sets}"] if sets > 1 else []
                notes += ["over the file"] if "file" in given else []
                source = "--set" + (f" ({'; '.join(notes)})" if notes else "")
            out.append(FieldOrigin(spec.name, value, source))
        for i, o in enumerate(out):
            var = ENVIRONMENT_WINS.get(o.name)
            if var and os.environ.get(var):
                try:
                    eff.set_dotted(f"{o.name}={os.environ[var]}")
                except ConfigError as e:
                    raise ConfigError(f"{var} (in the environment): {e}") from None
                section, key = o.name.split(".")
                value = getattr(getattr(eff, section), key)
                out[i] = FieldOrigin(o.name, value, f"${var} (the environment wins over {o.name})")
        return eff, out

    def to_toml(self, notes: dict[str, str] | None = None) -> str:
        """Every field as a config file that :meth:`load` reads back to this config;
        ``notes``: a comment after a field's line (``{"memory.alpha": "--set"}``)."""
        notes = notes or {}
        out: list[str] = []
        for sf in fields(self):
            section = getattr(self, sf.name)
            out.append(f"[{sf.name}]")
            for f in fields(section):
                line = f"{f.name} = {toml_value(getattr(section, f.name))}"
                note = " ".join(notes.get(f"{sf.name}.{f.name}", "").split())
                note = "".join(c if c.isprintable() else "?" for c in note)  # TOML comment
                out.append(f"{line}  # {note}" if note else line)
            out.append("")
        return "\n".join(out)

    def update(self, data: dict[str, Any]) -> list[str]:
        """Set the fields of a parsed TOML config; returns their names (``section.field``)."""
        done = []
        for section_name, values in data.items():
            section = self._section(section_name)
            if not isinstance(values, dict):
                raise ConfigError(f"config section [{section_name}] must be a table")
            for key, value in values.items():
                setattr(section, key, coerce(value, self.spec(section_name, key)))
                done.append(f"{section_name}.{key}")
        return done

    def set_dotted(self, item: str) -> str:
        """``section.field=value``: the value is read as TOML (``0.9``, ``true``, ``[1, 2]``);
        text that is not TOML, and any value of a text field, is taken as it is. Returns
        the field's name (``section.field``)."""
        if "=" not in item or "." not in item.split("=", 1)[0]:
            raise ConfigError(f"override {item!r} must look like section.field=value")
        dotted, raw = item.split("=", 1)
        section_name, key = (part.strip() for part in dotted.split(".", 1))
        spec = self.spec(section_name, key)
        setattr(self._section(section_name), key, coerce(parse_override(raw.strip(), spec), spec))
        return f"{section_name}.{key}"

    def _section(self, name: str, key: str | None = None) -> Any:
        """The section ``name``; an unknown one is refused with the closest known one (and
        ``key`` in it, when it has that field: ``memry.alpha``, did you mean memory.alpha?)."""
        names = [f.name for f in fields(self)]
        if name not in names:
            close = closest(name, names)
            if close and key and key in type(getattr(self, close)).__dataclass_fields__:
                close = f"{close}.{key}"
            hint = f"did you mean {close}? " if close else ""
            raise ConfigError(f"unknown config section {name!r}; {hint}known: {', '.join(names)}")
        return getattr(self, name)

    def spec(self, section_name: str, key: str) -> FieldSpec:
        """The declaration of ``section.key``: type, allowed values, source and why. An
        unknown field is refused with the closest one, in its section or another."""
        section = self._section(section_name, key)
        names = [f.name for f in fields(section)]
        if key not in names:
            close = closest(key, names)
            guess = f"{section_name}.{close}" if close else None
            if guess is None:  # a field of another section (memory.max_objects)
                others = [s.name for s in self.specs() if not s.name.startswith(f"{section_name}.")]
                hit = closest(key, [n.split(".")[1] for n in others])
                guess = next((n for n in others if n.split(".")[1] == hit), None)
            hint = f"did you mean {guess}? " if guess else ""
            raise ConfigError(
                f"unknown config field {section_name}.{key}; {hint}known: {', '.join(names)}"
            )
        return spec_of(type(section), section_name, key)

    @classmethod
    def specs(cls) -> list[FieldSpec]:
        """Every field of every section, in order (docs/config.md is rendered from them)."""
        out = []
        for sf in fields(cls):
            section = sf.default_factory  # type: ignore[misc]
            out.extend(spec_of(section, sf.name, f.name) for f in fields(section))
        return out

    def validate(self) -> None:
        """Every field against its type and ``allowed`` range, then the rules that join fields.

        The one place where a value is refused: each refusal is one line naming the
        field, the value and what is allowed (a :class:`ConfigError`). A value set in code
        in a form the field's type accepts (a ``Path`` for a string, ``np.int64(10)`` for
        an int, a list for a tuple) is stored back in that type, so a validated config
        writes and compares like one read from TOML.
        """
        for sf in fields(self):
            section = getattr(self, sf.name)
            for f in fields(section):
                spec = spec_of(type(section), sf.name, f.name)
                value = getattr(section, f.name)
                typed = in_code(value, spec.kind)  # a Path, np.int64(10), a list set in code
                if typed is not value:
                    setattr(section, f.name, typed)
                why = refusal(spec, typed)
                if why:
                    raise ConfigError(why)
        for low, high, strict, why in ORDERED:
            a, b = (getattr(getattr(self, n.split(".")[0]), n.split(".")[1]) for n in (low, high))
            if a is not None and b is not None and (a >= b if strict else a > b):
                raise ConfigError(
                    f"{low} = {show(a)} must be {'below' if strict else 'at most'} {high} "
                    f"= {show(b)} ({why})"
                )
        if self.desktop.launch and self.desktop.region:
            raise ConfigError(
                "desktop.launch and desktop.region exclude each other: a launched program is "
                "bound to its own window"
            )

    def raise_change_floors(self, idle_change: float) -> dict[str, tuple[float, float]]:
        """Lift the three "nothing changed" floors above a measured idle Δ; never lower them.

        Each of ``augment.min_change``, ``brain.offline_min_change`` and
        ``rewards.screen_novelty_change`` becomes at least ``desktop.noise_margin``
        × ``idle_change``. Returns {field: (old, new)} for the fields it raised.
        """
        floor = self.desktop.noise_margin * float(idle_change)
        raised: dict[str, tuple[float, float]] = {}
        for section, name in (
            ("augment", "min_change"),
            ("brain", "offline_min_change"),
            ("rewards", "screen_novelty_change"),
        ):
            old = getattr(getattr(self, section), name)
            if floor > old:
                setattr(getattr(self, section), name, floor)
                raised[f"{section}.{name}"] = (old, floor)
        return raised

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def effective(self) -> Config:
        """A copy with ``run.ablation`` resolved into the switches it stands for.

        The one place where an ablation becomes settings; the runner writes the result
        into the step log's header, so a log states what the agent really ran with.
        Idempotent. Which *policy* runs (``random``, ``no_graph``: the Bottom-Up Agent)
        is chosen by :func:`kgagent.agent.make_agent` from the same name.
        """
        cfg = Config(**{f.name: dataclasses.replace(getattr(self, f.name)) for f in fields(self)})
        a, r = cfg.run.ablation, cfg.rewards
        if a == "no_novelty":
            r.use_novelty = False
        elif a == "no_state_reward":
            r.use_state = False
        elif a == "no_vlm_rewards":
            r.use_progress = r.use_semantic = False
        elif a == "no_graph":
            # The Bottom-Up Agent has no SA-KG, hence none of its rewards (Eq. 10-11).
            r.use_state = r.use_novelty = False
        elif a == "no_similarity":
            cfg.memory.similarity_edges = False
        return cfg


for _section in fields(Config):  # each section knows its name, for its refusals (Section)
    _section.default_factory.SECTION = _section.name  # type: ignore[misc,union-attr]


def read_config_text(path: Path) -> str:
    """The text of a config file, or one clear :class:`ConfigError`."""
    try:
        with path.open("rb") as fh:
            return read_text_limited(fh, f"config file {path}", MAX_CONFIG_BYTES, ConfigError)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None


def read_text_limited(
    fh: IO[Any], what: str, limit: int, error: type[KGAgentError] = ConfigError
) -> str:
    """At most ``limit`` bytes of UTF-8 text from ``fh`` (a config file, a query, stdin).

    Text a user hands kgagent is small: more than ``limit`` (``/dev/zero``, a wrong
    file) or bytes that are not UTF-8 are refused in one line, never read forever.
    """
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise error(f"{what} is larger than {limit:,} bytes; is it the right file?")
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} is not UTF-8 text (byte {e.start} is {data[e.start]:#04x})") from None
