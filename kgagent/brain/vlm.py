"""The VLM brain: every role answered by a model behind an OpenAI-compatible endpoint.

One code path serves OpenAI, vLLM, Ollama and llama.cpp server: the ``openai``
SDK pointed at ``cfg.base_url``, screenshots sent as data URLs, and each role
forced to answer through exactly one function tool whose JSON schema
(:mod:`kgagent.brain.prompts`) is also what the reply is validated against.

Why the brain owns retries instead of the SDK: a reply can be well-formed HTTP
and still useless (no tool call, arguments that are not JSON, a cluster id that
does not exist). Those are retried the same way as timeouts, 429s and 5xx, and
when the retries are spent the role returns its "could not judge" value
(``Judgement(None, None)`` / ``None`` / ``[]``) and ``usage.failed_calls`` grows.
The agent loop treats that as "no" and keeps going: a flaky endpoint costs
reward signal, never the run. Only :class:`BudgetExceeded` escapes.

Per-step accounting: ``brain.drain_step_usage()`` (see
:meth:`kgagent.brain.base.Brain.drain_step_usage`) returns tokens, cost, calls
and requests since the previous drain; :attr:`VLMBrain.last_call` describes the
most recent role call.
"""

from __future__ import annotations

import base64
import email.utils
import io
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import openai
from PIL import Image

from kgagent.actions import Operation
from kgagent.brain import prompts
from kgagent.brain.base import (
    Brain,
    ClusterAssignment,
    ClusterView,
    Judgement,
    SkillText,
    SkillView,
    Transition,
    View,
)
from kgagent.config import BrainConfig
from kgagent.errors import BudgetExceeded

_logger = logging.getLogger(__name__)

#: HTTP statuses worth another try (the same set the openai SDK itself retries).
_RETRY_STATUSES = frozenset({408, 409, 429})


class InvalidReply(Exception):
    """A reply that arrived but cannot be used; it is retried like a transport error."""


@dataclass
class CallRecord:
    """What the most recent role call cost and how it ended."""

    role: str
    ok: bool
    attempts: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    error: str = ""


# ------------------------------------------------------------------ validation
def validate(schema: dict[str, Any], value: Any, path: str = "$") -> list[str]:
    """Errors of ``value`` against the subset of JSON Schema that :mod:`prompts` uses.

    Hand-written rather than a dependency: the schemas use only ``type`` (one or
    a list), ``properties``, ``required``, ``items`` and ``minLength``. Unknown
    extra keys are tolerated because small models often add a stray field and
    the answer is still usable.
    """
    types = schema.get("type")
    if types is not None:
        allowed = [types] if isinstance(types, str) else list(types)
        if not any(_is_type(value, t) for t in allowed):
            return [f"{path}: expected {'/'.join(allowed)}, got {type(value).__name__}"]
    errors: list[str] = []
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                errors.extend(validate(sub, value[key], f"{path}.{key}"))
    elif isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors.extend(validate(schema["items"], item, f"{path}[{i}]"))
    elif isinstance(value, str) and len(value.strip()) < schema.get("minLength", 0):
        errors.append(f"{path}: empty")
    return errors


def _is_type(value: Any, t: str) -> bool:
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return False


# ---------------------------------------------------------------------- images
def image_data_url(
    image: np.ndarray, max_side: int, fmt: str = "png", jpeg_quality: int = 85
) -> str:
    """A screenshot as a ``data:`` URL, downscaled so its longest side is ``max_side``.

    Downscaling is where most of the per-step cost is decided: image tokens grow
    with pixels, and a GUI screen stays legible at a few hundred pixels.
    """
    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        arr = np.clip(arr, 0, 255).astype(np.uint8)
    img = Image.fromarray(arr)
    if img.mode != "RGB":
        img = img.convert("RGB")
    w, h = img.size
    scale = max_side / max(w, h)
    if scale < 1.0:
        img = img.resize((max(1, round(w * scale)), max(1, round(h * scale))), Image.LANCZOS)
    buf = io.BytesIO()
    fmt = fmt.lower()
    if fmt in ("jpeg", "jpg"):
        img.save(buf, format="JPEG", quality=jpeg_quality)
        mime = "image/jpeg"
    else:
        img.save(buf, format="PNG", optimize=False)
        mime = "image/png"
    return f"data:{mime};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"


def _retry_after(exc: BaseException) -> float | None:
    """Seconds a server asked us to wait (``retry-after-ms`` or ``retry-after``)."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _extract_arguments(response: Any, tool: str, content_fallback: bool) -> dict[str, Any]:
    """The forced tool call's arguments as a dict, or :class:`InvalidReply`."""
    choices = getattr(response, "choices", None)
    if not choices:
        raise InvalidReply("reply has no choices")
    message = choices[0].message
    for call in getattr(message, "tool_calls", None) or []:
        fn = getattr(call, "function", None)
        if fn is None or fn.name != tool:
            continue
        raw = fn.arguments
        if isinstance(raw, dict):
            return raw
        try:
            args = json.loads(raw or "")
        except (TypeError, ValueError) as e:
            raise InvalidReply(f"tool arguments are not JSON: {e}") from None
        if not isinstance(args, dict):
            raise InvalidReply("tool arguments are not a JSON object")
        return args
    content = getattr(message, "content", None) or ""
    if content_fallback and "{" in content and "}" in content:
        # Models served without tool support sometimes answer with the JSON as text.
        try:
            args = json.loads(content[content.index("{") : content.rindex("}") + 1])
        except ValueError:
            args = None
        if isinstance(args, dict):
            return args
    raise InvalidReply(f"no {tool} tool call in the reply")


# ----------------------------------------------------------------------- brain
class VLMBrain(Brain):
    """Every VLM role through one OpenAI-compatible chat-completions endpoint.

    ``VLMBrain(cfg)`` builds its own ``openai.OpenAI`` client (SDK retries off:
    the brain retries, so that unusable replies and transport errors share one
    budget of ``cfg.max_retries``). ``client`` can be injected for tests;
    ``log`` receives one line per failed role call; ``sleep`` is the backoff
    clock.
    """

    name = "vlm"

    def __init__(
        self,
        cfg: BrainConfig,
        *,
        client: openai.OpenAI | None = None,
        log: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.client = client or openai.OpenAI(
            base_url=cfg.base_url,
            api_key=os.environ.get(cfg.api_key_env) or "none",
            timeout=cfg.timeout_s,
            max_retries=0,
        )
        self._log = log or _logger.warning
        self._sleep = sleep
        self._max_request_cost = 0.0
        self.last_call: CallRecord | None = None

    # ------------------------------------------------------------------ roles
    def describe_skill(self, operations: list[Operation], tr: Transition) -> SkillText | None:
        text = prompts.describe_skill_text(
            operations, tr.change, tr.new_in_episode, tr.new_in_graph
        )

        def check(args: dict[str, Any]) -> SkillText | None:
            if not args["meaningful"]:
                return None
            if not args["name"].strip():
                raise InvalidReply("meaningful skill without a name")
            return SkillText(args["name"].strip(), args["description"].strip())

        return self._call(prompts.DESCRIBE_SKILL, text, _before_after(tr), check)

    def evaluate(self, skill: SkillView, tr: Transition) -> Judgement:
        text = prompts.evaluate_text(
            skill.name,
            skill.description,
            skill.operations,
            tr.change,
            tr.new_in_episode,
            tr.new_in_graph,
        )

        def check(args: dict[str, Any]) -> Judgement:
            return Judgement(args["is_consistent"], args["is_progressive"], args["reason"])

        result = self._call(prompts.EVALUATE, text, _before_after(tr), check)
        return result if result is not None else Judgement(None, None, "no judgement")

    def choose_cluster(self, view: View, clusters: list[ClusterView]) -> str | None:
        if not clusters:
            return None  # nothing to choose from: no call, no cost
        text = prompts.choose_cluster_text(
            [(c.id, c.name, c.description, c.skill_names) for c in clusters]
        )
        ids = {c.id for c in clusters}
        by_name: dict[str, list[str]] = {}
        for c in clusters:
            by_name.setdefault(c.name, []).append(c.id)

        def check(args: dict[str, Any]) -> str | None:
            cid = args["cluster_id"]
            if cid is None or cid in ids:
                return cid
            if cid.strip().lower() in ("null", "none", ""):
                return None  # a "null" written as a string
            if len(by_name.get(cid, [])) == 1:  # the model quoted the name, not the id
                return by_name[cid][0]
            raise InvalidReply(f"unknown cluster id {cid!r}")

        return self._call(prompts.CHOOSE_CLUSTER, text, [("Current screen:", view.image)], check)

    def refine_skill(self, skill: SkillView, tr: Transition) -> SkillText | None:
        text = prompts.refine_skill_text(
            skill.name,
            skill.description,
            skill.operations,
            skill.fitness,
            skill.executions,
            tr.change,
            tr.new_in_episode,
            tr.new_in_graph,
        )

        def check(args: dict[str, Any]) -> SkillText | None:
            name, desc = args["name"].strip(), args["description"].strip()
            if name == skill.name and desc == skill.description:
                return None  # nothing new: keep the skill as it is
            return SkillText(name, desc)

        return self._call(prompts.REFINE_SKILL, text, _before_after(tr), check)

    def cluster_skills(
        self, skills: list[SkillView], clusters: list[ClusterView]
    ) -> list[ClusterAssignment]:
        """Assignments for the skills the model placed; ``[]`` if the call failed.

        A skill the model left out simply stays unclustered until the next round.
        Assignments with ``cluster_id=None`` that share ``new_name`` form one new cluster.
        """
        if not skills:
            return []
        text = prompts.cluster_skills_text(
            [(s.id, s.name, s.description, s.operations) for s in skills],
            [(c.id, c.name, c.description, c.skill_names) for c in clusters],
        )
        skill_ids = {s.id for s in skills}
        cluster_ids = {c.id for c in clusters}

        def check(args: dict[str, Any]) -> list[ClusterAssignment]:
            out: list[ClusterAssignment] = []
            seen: set[str] = set()
            for a in args["assignments"]:
                sid, cid = a["skill_id"], a["cluster_id"]
                if sid not in skill_ids:
                    raise InvalidReply(f"unknown skill id {sid!r}")
                if sid in seen:
                    raise InvalidReply(f"skill {sid!r} assigned twice")
                if cid is not None and cid not in cluster_ids:
                    raise InvalidReply(f"unknown cluster id {cid!r}")
                if cid is None and not a["new_name"].strip():
                    raise InvalidReply(f"new cluster for {sid!r} has no name")
                seen.add(sid)
                out.append(
                    ClusterAssignment(sid, cid, a["new_name"].strip(), a["new_description"].strip())
                )
            return out

        result = self._call(prompts.CLUSTER_SKILLS, text, [], check)
        return result if result is not None else []

    # -------------------------------------------------------------- machinery
    def _call(
        self,
        tool: str,
        text: str,
        images: list[tuple[str, np.ndarray]],
        check: Callable[[dict[str, Any]], Any],
    ) -> Any:
        """One role call: request, validate, retry; ``None`` when it failed."""
        cfg = self.cfg
        self.usage.calls += 1
        record = CallRecord(role=tool, ok=False, attempts=0)
        self.last_call = record
        messages = self._messages(text, images)
        error = ""
        for attempt in range(cfg.max_retries + 1):
            self._check_budget()
            record.attempts += 1
            self.usage.requests += 1
            delay = cfg.backoff_s * (2**attempt)
            try:
                response = self.client.chat.completions.create(**self._request(tool, messages))
            except openai.APIStatusError as e:
                error = f"HTTP {e.status_code}"
                if e.status_code not in _RETRY_STATUSES and e.status_code < 500:
                    break  # 400/401/404...: asking again will not help
                after = _retry_after(e)
                if after is not None:
                    delay = min(after, cfg.retry_after_cap_s)
            except openai.APITimeoutError:
                error = f"timed out after {cfg.timeout_s:g} s"
            except openai.APIConnectionError as e:
                error = f"connection error: {e}"
            except Exception as e:  # noqa: BLE001 - a brain never crashes the loop
                error = f"{type(e).__name__}: {e}"
            else:
                self._account(response, record)
                try:
                    args = _extract_arguments(response, tool, cfg.content_json_fallback)
                    problems = validate(prompts.SCHEMAS[tool], args)
                    if problems:
                        raise InvalidReply("; ".join(problems[:3]))
                    result = check(args)
                except InvalidReply as e:
                    error = str(e)
                except (KeyError, TypeError, AttributeError, ValueError) as e:
                    error = f"unusable reply: {type(e).__name__}: {e}"
                else:
                    record.ok = True
                    return result
            if attempt < cfg.max_retries:
                self._sleep(delay)
        record.error = error
        self.usage.failed_calls += 1
        self._log(f"brain: {tool} failed after {record.attempts} attempt(s): {error}")
        return None

    def _messages(self, text: str, images: list[tuple[str, np.ndarray]]) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for label, image in images:
            url = image_data_url(
                image, self.cfg.image_max_side, self.cfg.image_format, self.cfg.jpeg_quality
            )
            part: dict[str, Any] = {"url": url}
            if self.cfg.image_detail:
                part["detail"] = self.cfg.image_detail
            content.append({"type": "text", "text": label})
            content.append({"type": "image_url", "image_url": part})
        return [
            {"role": "system", "content": prompts.system_prompt()},
            {"role": "user", "content": content},
        ]

    def _request(self, tool: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        kw: dict[str, Any] = {
            "model": self.cfg.model,
            "messages": messages,
            "tools": [prompts.tool_spec(tool)],
            "tool_choice": prompts.forced_choice(tool),
        }
        if self.cfg.temperature is not None:
            kw["temperature"] = self.cfg.temperature
        if self.cfg.max_output_tokens is not None:
            kw["max_tokens"] = self.cfg.max_output_tokens
        return kw

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for a token count at the configured per-million-token prices."""
        return (
            prompt_tokens * self.cfg.price_in_per_mtok
            + completion_tokens * self.cfg.price_out_per_mtok
        ) / 1e6

    def _account(self, response: Any, record: CallRecord) -> None:
        """Add a reply's ``usage`` to the totals; a reply without one counts as free."""
        usage = getattr(response, "usage", None)
        pt = int(getattr(usage, "prompt_tokens", 0) or 0)
        ct = int(getattr(usage, "completion_tokens", 0) or 0)
        u = self.usage
        u.prompt_tokens += pt
        u.completion_tokens += ct
        # Totals are priced from total tokens, so they equal tokens × prices exactly.
        u.cost_usd = self.cost(u.prompt_tokens, u.completion_tokens)
        record.prompt_tokens += pt
        record.completion_tokens += ct
        record.cost_usd = self.cost(record.prompt_tokens, record.completion_tokens)
        self._max_request_cost = max(self._max_request_cost, self.cost(pt, ct))

    def _check_budget(self) -> None:
        """Refuse a request that would take spending past ``cfg.budget_usd``.

        The next request is assumed to cost as much as the dearest one so far
        (prompts of one run are alike in size, images dominate), so a run stops
        before the cap rather than after it.
        """
        cap = self.cfg.budget_usd
        if cap is None:
            return
        spent = self.usage.cost_usd
        if spent >= cap or spent + self._max_request_cost > cap:
            raise BudgetExceeded(
                f"VLM budget of ${cap:.4f} reached (spent ${spent:.4f}, next call "
                f"~${self._max_request_cost:.4f}); raise brain.budget_usd to continue"
            )


def _before_after(tr: Transition) -> list[tuple[str, np.ndarray]]:
    return [("Before:", tr.before.image), ("After:", tr.after.image)]
