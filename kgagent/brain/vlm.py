"""The VLM brain: every role answered by a model behind an OpenAI-compatible endpoint.

One code path serves OpenAI, vLLM, Ollama, llama.cpp's server and LM Studio: the
``openai`` SDK pointed at ``cfg.base_url``, screenshots sent as data URLs, and
the answer asked for in the best form the endpoint accepts
(:mod:`kgagent.brain.client` negotiates: tools, JSON-schema ``response_format``,
or JSON in text).

Why a failed call degrades instead of returning "no": a role the endpoint could
not answer (retries spent, a refusal, a reply cut twice) is answered by the
offline brain's rule for that role (:mod:`kgagent.brain.offline`), and a note
says so (:meth:`Brain.take_notes`; the loop writes it into the step record). A
failed ``describe_skill`` therefore never means "meaningless", and a failed
``evaluate`` marks a skill only as the offline rule would. After
``breaker_failures`` failed calls in a row the endpoint is paused
(:mod:`kgagent.brain.breaker`), the user is told once, and the run goes on
offline until the cool-down ends and a probe succeeds.

No paid call where the answer is known: an execution that changed nothing
(Δ at most ``offline_min_change``, same state, nothing new), or only a text field's
echo of its keys (``Transition.echo``), gets the offline answer without a request
(``Usage.offline_calls``).

Prompts are bounded (:mod:`kgagent.brain.relevance`): ``choose_cluster`` and
``cluster_skills`` offer the nearest clusters only, under a character cap, and
``cluster_skills`` sends the skills in batches whose answers fit ``max_tokens``.

What a model answers is stored and shown in every later prompt, so the text of a reply
is cleaned before it is kept (:func:`_name`, :func:`_text`; :mod:`kgagent.brain.hygiene`):
no control or bidi characters, names and descriptions capped. A name that is empty
once cleaned is an invalid reply: asked again, then answered offline like any failure.

A failure that cannot fix itself (a refused key, no such model or URL, a model that
takes no images, a streaming-only server) on an endpoint that has not answered once in
this run ends the run with :class:`~kgagent.brain.endpoint.EndpointUnusable`: one line
that names the cause and what to check. So does a role call whose requests, like every
request of the run before, reached no server (connection refused, unknown host, no
route) once its retries are spent, unless ``brain.on_unreachable = "offline"``: then the
run plays on offline, and the user is told so once. Once the endpoint has answered, the same
failures degrade like any other. With ``brain.on_failure = "stop"`` every failed role call
ends the run that way (a benchmark whose answers must all come from the model).

The first Ctrl-C of a run (:meth:`VLMBrain.interrupt`) stops the requests: the one in
flight is abandoned, and the step's remaining role calls are answered offline, noted.

Accounting: :attr:`Brain.usage` holds running totals (tokens — exact or marked
estimated —, cost, calls, requests, retries and those after HTTP 429 with the seconds
waited, calls the run stopped during); the loop logs the difference per step, and
:attr:`VLMBrain.last_call` describes the most recent role call. Only
:class:`BudgetExceeded` and :class:`~kgagent.brain.endpoint.EndpointUnusable` escape.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np
import openai

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
from kgagent.brain.breaker import CircuitBreaker
from kgagent.brain.client import CallRecord, ChatClient, EndpointMemory
from kgagent.brain.endpoint import UNREACHED, EndpointUnusable, failure_text, setup_error
from kgagent.brain.hygiene import DESC_MAX, NAME_MAX, REASON_MAX, clean
from kgagent.brain.images import image_data_url
from kgagent.brain.offline import OfflineBrain
from kgagent.brain.relevance import (
    batch_size,
    centre,
    rank_clusters,
    skill_batches,
    within,
)
from kgagent.brain.reply import InvalidReply, validate
from kgagent.brain.settings import BrainSettings
from kgagent.config import BrainConfig
from kgagent.errors import BudgetExceeded

__all__ = ["CallRecord", "InvalidReply", "VLMBrain", "image_data_url", "validate"]

_logger = logging.getLogger(__name__)


class VLMBrain(Brain):
    """Every VLM role through one OpenAI-compatible chat-completions endpoint.

    ``VLMBrain(cfg)`` builds its own ``openai.OpenAI`` client (SDK retries off: the
    brain retries). ``client`` can be injected for tests; ``log`` hears what a user
    should know once (a refused mode, estimated tokens, a paused endpoint);
    ``sleep`` is the backoff clock, ``clock`` the circuit breaker's; ``endpoints``
    replaces the process's memory of what each endpoint accepts.
    """

    name = "vlm"
    #: every prompt that shows a screen lists the text read on it
    label_roles = frozenset({"describe_skill", "evaluate", "choose_cluster", "refine_skill"})

    def __init__(
        self,
        cfg: BrainConfig,
        *,
        client: openai.OpenAI | None = None,
        log: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        endpoints: EndpointMemory | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.settings = BrainSettings.of(cfg)
        self.offline = OfflineBrain(cfg)
        say = log or _logger.warning
        self.chat = ChatClient(
            cfg,
            self.settings,
            lambda: self.usage,
            client=client,
            endpoints=endpoints,
            sleep=sleep,
            log=say,
            note=self.note,
        )
        self._log = lambda line: say(self.chat.redact(line))
        s = self.settings
        self.breaker = CircuitBreaker(
            s.breaker_failures, s.breaker_cooldown_calls, s.breaker_cooldown_s, clock
        )
        self.last_call: CallRecord | None = None
        #: HTTP requests sent per role (retries and steps down included)
        self.requests_by_role: Counter[str] = Counter()
        self._told: set[str] = set()

    @property
    def client(self) -> openai.OpenAI:
        return self.chat.client

    def note(self, text: str) -> None:
        """A note for the step record, with the key taken out (it may quote a server)."""
        chat = self.__dict__.get("chat")
        super().note(chat.redact(text) if chat is not None else text)

    def interrupt(self) -> None:
        """No request from now on; the one in flight is abandoned (see :meth:`Brain.interrupt`)."""
        self.chat.interrupt()

    def describe(self) -> dict[str, Any]:
        return {"kind": self.name, "model": self.cfg.model, "endpoint": self.chat.shown_url}

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for a token count at this model's prices (:mod:`kgagent.brain.pricing`)."""
        return self.chat.cost(prompt_tokens, completion_tokens)

    # ------------------------------------------------------------------ roles
    def describe_skill(self, operations: list[Operation], tr: Transition) -> SkillText | None:
        if not self.offline.changed(tr):
            return self._known(lambda: self.offline.describe_skill(operations, tr))
        text = prompts.describe_skill_text(
            operations,
            tr.change,
            tr.new_in_episode,
            tr.new_in_graph,
            _labels(tr.before),
            _labels(tr.after),
        )

        def check(args: dict[str, Any]) -> SkillText | None:
            if not args["meaningful"]:
                return None
            name = _name(args["name"], "meaningful skill without a name")
            desc = _text(args["description"], DESC_MAX)
            if not desc:  # none, or nothing but control characters: the offline one
                offline = self.offline.describe_skill(operations, tr)
                desc = offline.description if offline is not None else ""
            return SkillText(name, desc)

        return self._ask(
            prompts.DESCRIBE_SKILL,
            text,
            _before_after(tr),
            check,
            lambda: self.offline.describe_skill(operations, tr),
        )

    def evaluate(self, skill: SkillView, tr: Transition) -> Judgement:
        if not self.offline.changed(tr) or tr.echo:
            return self._known(lambda: self.offline.evaluate(skill, tr))
        text = prompts.evaluate_text(
            skill.name,
            skill.description,
            skill.operations,
            tr.change,
            tr.new_in_episode,
            tr.new_in_graph,
            _labels(tr.before),
            _labels(tr.after),
        )

        def check(args: dict[str, Any]) -> Judgement:
            reason = _text(args["reason"], REASON_MAX)
            return Judgement(args["is_consistent"], args["is_progressive"], reason)

        return self._ask(
            prompts.EVALUATE,
            text,
            _before_after(tr),
            check,
            lambda: self.offline.evaluate(skill, tr),
        )

    def choose_cluster(self, view: View, clusters: list[ClusterView]) -> str | None:
        if not clusters:
            return None  # nothing to choose from: no call, no cost
        s = self.settings
        ranked = rank_clusters([view.feature], clusters)
        lines = within(
            [
                prompts.cluster_line(c.id, c.name, c.description, c.skill_names, s.prompt_members)
                for c in ranked
            ],
            s.prompt_clusters,
            s.prompt_max_chars,
        )
        offered = ranked[: len(lines)]
        text = prompts.choose_cluster_text(lines, len(clusters) - len(offered), _labels(view))
        ids = {c.id for c in offered}
        by_name: dict[str, list[str]] = {}
        for c in offered:
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

        return self._ask(
            prompts.CHOOSE_CLUSTER,
            text,
            [("Current screen:", view.image)],
            check,
            lambda: self.offline.choose_cluster(view, clusters),
        )

    def refine_skill(self, skill: SkillView, tr: Transition) -> SkillText | None:
        if not self.offline.changed(tr):
            return self._known(lambda: self.offline.refine_skill(skill, tr))
        text = prompts.refine_skill_text(
            skill.name,
            skill.description,
            skill.operations,
            skill.fitness,
            skill.executions,
            tr.change,
            tr.new_in_episode,
            tr.new_in_graph,
            _labels(tr.before),
            _labels(tr.after),
        )

        def check(args: dict[str, Any]) -> SkillText | None:
            name = _name(args["name"], "rewrite without a name")
            desc = _text(args["description"], DESC_MAX)
            if not desc:
                raise InvalidReply("rewrite without a description")
            if name == skill.name and desc == skill.description:
                return None  # nothing new: keep the skill as it is
            return SkillText(name, desc)

        return self._ask(
            prompts.REFINE_SKILL,
            text,
            _before_after(tr),
            check,
            lambda: self.offline.refine_skill(skill, tr),
        )

    def cluster_skills(
        self, skills: list[SkillView], clusters: list[ClusterView]
    ) -> list[ClusterAssignment]:
        """Assignments for the skills placed in this call, batch by batch.

        A skill the model left out, or beyond ``cluster_max_batches`` batches,
        stays unclustered until the next round. Assignments with
        ``cluster_id=None`` that share ``new_name`` form one new cluster; a new
        cluster opened by an earlier batch is offered to later ones (as
        ``new-cluster-N``) so that they can join it.
        """
        if not skills:
            return []
        s = self.settings
        size = batch_size(s.cluster_batch, self.cfg.max_output_tokens)
        out: list[ClusterAssignment] = []
        opened: dict[str, tuple[str, str, list[str], list[np.ndarray]]] = {}  # name → …
        for batch in skill_batches(skills, size, s.cluster_max_batches):
            pseudo = self._opened_views(opened, {c.id for c in clusters})
            result = self._cluster_batch(batch, clusters, pseudo)
            centres = {sk.id: centre(sk.source_features) for sk in batch}
            names = {sk.id: sk.name for sk in batch}
            for a in result:
                out.append(a)
                if a.cluster_id is None and a.new_name:
                    entry = opened.setdefault(a.new_name, (a.new_name, a.new_description, [], []))
                    entry[2].append(names.get(a.skill_id, a.skill_id))
                    if centres.get(a.skill_id) is not None:
                        entry[3].append(centres[a.skill_id])
        return out

    def _cluster_batch(
        self, batch: list[SkillView], clusters: list[ClusterView], pseudo: list[ClusterView]
    ) -> list[ClusterAssignment]:
        s = self.settings
        skill_lines = [
            prompts.skill_line(sk.id, sk.name, sk.description, sk.operations) for sk in batch
        ]
        room = max(0, s.prompt_max_chars - sum(len(x) + 1 for x in skill_lines))
        ranked = rank_clusters([centre(sk.source_features) for sk in batch], clusters + pseudo)
        lines = within(
            [
                prompts.cluster_line(c.id, c.name, c.description, c.skill_names, s.prompt_members)
                for c in ranked
            ],
            s.prompt_clusters,
            room,
        )
        offered = {c.id: c for c in ranked[: len(lines)]}
        new_ids = {c.id for c in pseudo}
        skill_ids = {sk.id for sk in batch}
        text = prompts.cluster_skills_text(skill_lines, lines)

        def check(args: dict[str, Any]) -> list[ClusterAssignment]:
            result: list[ClusterAssignment] = []
            seen: set[str] = set()
            for a in args["assignments"]:
                sid, cid = a["skill_id"], a["cluster_id"]
                if sid not in skill_ids:
                    raise InvalidReply(f"unknown skill id {sid!r}")
                if sid in seen:
                    raise InvalidReply(f"skill {sid!r} assigned twice")
                if cid is not None and cid not in offered:
                    raise InvalidReply(f"unknown cluster id {cid!r}")
                seen.add(sid)
                if cid in new_ids:  # a cluster this call opened in an earlier batch
                    c = offered[cid]
                    result.append(ClusterAssignment(sid, None, c.name, c.description))
                    continue
                new_name = _text(a["new_name"], NAME_MAX)
                if cid is None and not new_name:
                    raise InvalidReply(f"new cluster for {sid!r} has no name")
                new_desc = _text(a["new_description"], DESC_MAX)
                result.append(ClusterAssignment(sid, cid, new_name, new_desc))
            return result

        return self._ask(
            prompts.CLUSTER_SKILLS,
            text,
            [],
            check,
            lambda: self.offline.cluster_skills(batch, clusters),
        )

    @staticmethod
    def _opened_views(
        opened: dict[str, tuple[str, str, list[str], list[np.ndarray]]], taken: set[str]
    ) -> list[ClusterView]:
        views = []
        for i, (name, desc, members, feats) in enumerate(opened.values(), start=1):
            cid = f"new-cluster-{i}"
            while cid in taken:
                cid += "-"
            views.append(
                ClusterView(cid, name, desc, list(members), np.stack(feats) if feats else None)
            )
        return views

    # -------------------------------------------------------------- machinery
    def _known(self, answer: Callable[[], Any]) -> Any:
        """A role whose answer is known without asking (nothing changed): no request."""
        self.usage.calls += 1
        self.usage.offline_calls += 1
        return answer()

    def _ask(
        self,
        role: str,
        text: str,
        images: list[tuple[str, np.ndarray]],
        check: Callable[[dict[str, Any]], Any],
        fallback: Callable[[], Any],
    ) -> Any:
        """One role call through the breaker; the offline answer when it cannot be had."""
        self.usage.calls += 1
        if self.chat.stopping:
            self.usage.offline_calls += 1
            self.note(f"{role}: offline answer (the run is stopping: no new request)")
            return fallback()
        if not self.breaker.allow():
            self.usage.offline_calls += 1
            self.note(
                f"{role}: offline answer (endpoint paused after {self.breaker.consecutive} "
                f"failed calls; next probe {self.breaker.remaining()})"
            )
            return fallback()
        retries = 0 if self.breaker.struggling else self.cfg.max_retries
        before = self.usage.requests
        try:
            record, result = self.chat.call(role, text, images, check, retries=retries)
        except BudgetExceeded:
            self.usage.unanswered_calls += 1  # the run stops here
            raise
        finally:
            self.requests_by_role[role] += self.usage.requests - before
        self.last_call = record
        if record.rate_limited:
            self.note(
                f"{role}: rate limited (HTTP 429) {record.rate_limited} time(s); "
                f"{record.rate_limit_wait_s:.1f} s waited before retrying"
            )
        if record.stopped:  # not the endpoint's failure: no breaker, no failed call
            self.usage.offline_calls += 1
            self.note(f"{role}: offline answer ({record.error})")
            return fallback()
        if record.unfixable and not self.chat.answered:
            chat = self.chat
            self.usage.unanswered_calls += 1  # the run stops here
            raise setup_error(
                record.unfixable,
                record.error,
                url=chat.shown_url,
                model=self.cfg.model,
                key_env=self.cfg.api_key_env,
                key_set=chat.key_set,
                mode=record.mode,
            )
        if record.unfixable:
            record.error = failure_text(record.unfixable, record.error, record.mode)
        if record.unreached and self.cfg.on_failure != "stop":
            self._unreached(record)
        if record.ok:
            if self.breaker.success():
                self.note("endpoint answers again: back to the VLM")
                self._tell_once("recovered", "brain: the endpoint answers again; back to the VLM")
            return result
        self.usage.failed_calls += 1
        if self.cfg.on_failure == "stop":
            self.usage.unanswered_calls += 1  # the run stops here
            raise EndpointUnusable(
                f"the run stopped: {role} failed after {record.requests} request(s): "
                f"{record.error} (brain.on_failure=stop)"
            )
        self.usage.offline_calls += 1
        self.note(f"{role}: offline answer ({record.error})")
        kind = record.error.split(":", 1)[0]
        self._tell_once(
            f"failed:{kind}",
            f"brain: {role} failed after {record.requests} request(s): {record.error}; "
            "answered offline",
        )
        if self.breaker.failure():
            s = self.settings
            self.note(
                f"endpoint paused after {self.breaker.consecutive} failed calls in a row; "
                f"offline until a probe after {s.breaker_cooldown_calls} calls or "
                f"{s.breaker_cooldown_s:g} s"
            )
            self._tell_once(
                "paused",
                f"brain: {self.breaker.consecutive} role calls in a row failed (last: "
                f"{record.error}); the run continues with offline answers and probes "
                f"the endpoint again after {s.breaker_cooldown_calls} calls or "
                f"{s.breaker_cooldown_s:g} s (each step record's brain_notes say which "
                "answers were offline)",
            )
        return fallback()

    def _unreached(self, record: CallRecord) -> None:
        """No request of the run has reached a server (refused, unknown host, no route):
        the run stops in one line, unless ``brain.on_unreachable = "offline"``: then the user
        is told once, loudly, that no answer comes from the model."""
        error = f"{record.error}; {record.requests} request(s)"
        if self.cfg.on_unreachable == "stop":
            self.usage.unanswered_calls += 1  # the run stops here
            raise setup_error(
                UNREACHED,
                error,
                url=self.chat.shown_url,
                model=self.cfg.model,
                key_env=self.cfg.api_key_env,
                key_set=self.chat.key_set,
            )
        self._tell_once(
            "unreached",
            f"brain: WARNING: the VLM endpoint {self.chat.shown_url} could not be reached "
            f"({error}); as brain.on_unreachable=offline asks, the run plays on with offline "
            "answers: none comes from the model until the endpoint answers",
        )

    def _tell_once(self, what: str, line: str) -> None:
        if what not in self._told:
            self._told.add(what)
            self._log(line)


def _text(text: str, limit: int) -> str:
    """Free text of a reply as it may be stored: no control or bidi characters (an ESC
    sequence, a newline, a right-to-left override), one line, at most ``limit``.

    Prompts show names and descriptions as JSON strings, and a model may copy one with
    its quotes (``"open panel"``): a reply that is one whole JSON string is read as it.
    """
    s = text.strip()
    if len(s) >= 2 and s[0] == s[-1] == '"':
        try:
            inner = json.loads(s)
        except ValueError:
            inner = None
        if isinstance(inner, str):
            s = inner
    return clean(s, limit)


def _name(text: str, problem: str) -> str:
    """A skill's name from a reply, cleaned (:func:`_text`); a name that is empty once
    cleaned is an invalid reply (``problem`` says which): the call is asked again, and
    answered offline if no valid name comes."""
    name = _text(text, NAME_MAX)
    if not name:
        raise InvalidReply(problem)
    return name


def _labels(view: View) -> list[str]:
    """The text the agent read on a screen, when the loop passes it (``View.labels``)."""
    return [str(x) for x in (getattr(view, "labels", None) or ())]


def _before_after(tr: Transition) -> list[tuple[str, np.ndarray]]:
    return [("Before:", tr.before.image), ("After:", tr.after.image)]
