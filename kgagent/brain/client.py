"""One role call to an OpenAI-compatible endpoint: negotiate, request, read, retry, account.

Servers differ in what they accept. The client asks for an answer in the best
way the endpoint supports and steps down when the server says it cannot:

1. ``tools`` — one function tool, forced with ``tool_choice`` (OpenAI; vLLM's
   guided decoding; Ollama and llama.cpp's server for models with tool templates);
2. ``json_schema`` — ``response_format={"type": "json_schema", ...}`` (vLLM,
   Ollama, llama.cpp, LM Studio), with the JSON shape also stated in the prompt;
3. ``text`` — no constraint at all: the prompt states the shape and the first
   JSON object in the reply text is read.

A step down happens when the server refuses a request with 400/415/422 (or a 5xx
that names tools, Jinja, grammars or ``response_format``: llama.cpp without
``--jinja``), or answers a tools request without the tool call. What worked is
remembered per endpoint (base URL + model) for the rest of the process
(:class:`EndpointMemory`), so the refusal is paid once. Request parameters that
some models reject (``max_tokens`` → ``max_completion_tokens``, ``temperature``)
are adapted the same way.

With ``brain.mode`` fixed, there is nowhere to step down to: a server that refuses
that mode by name (llama.cpp without ``--jinja``, an Ollama model without tools)
ends the call as a failure that asking again cannot fix (``endpoint.MODE``).

A refusal (``message.refusal``) ends the call; a reply cut at ``max_tokens``
(``finish_reason == "length"``) is asked again once with twice the tokens, and the
raised limit is remembered for the endpoint like a mode (said once); cut again, at
the raised limit, the call gives up (the limit is raised once, not without end). Timeouts, connection errors, 408/409/429/5xx and unusable replies are
retried up to ``max_retries`` times with exponential backoff (a ``Retry-After`` header
replaces the delay, capped); the retries, and those after HTTP 429 with the seconds
waited, are counted in :class:`~kgagent.brain.base.Usage`. Every reply is billed to
:class:`~kgagent.brain.base.Usage`, exact from ``usage`` or estimated and marked
(:mod:`kgagent.brain.pricing`). Errors keep the server's own message, on one line,
with the key taken out (:class:`~kgagent.brain.endpoint.Redactor`).

Failures that asking again cannot fix (a refused key, no such model or path, a model
that takes no images, a streaming-only server) are neither retried nor negotiated: the
record names their kind (``CallRecord.unfixable``) and the brain decides whether they
end the run. So it does for a call whose requests, like every request of the run before
them, reached no server (``CallRecord.unreached``: connection refused, unknown host, no
route); those are retried first, as a server may still be starting. A reply that is not a chat completion (an HTML page, an empty body) is
said to be one, and not billed.

When the run is stopping (:meth:`ChatClient.interrupt`, from the first Ctrl-C), no new
request, retry or backoff wait starts, and the request or wait in progress is abandoned:
``interrupt`` raises :class:`RequestAbandoned` in the thread that waits, which ``call``
catches.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import openai

from kgagent.brain import pricing, prompts
from kgagent.brain.base import Usage
from kgagent.brain.callrecord import CallRecord
from kgagent.brain.endpoint import (
    MODE,
    NOT_API,
    Redactor,
    connection_cause,
    endpoint_url,
    not_reached,
    shown_url,
    unfixable,
    url_secrets,
)
from kgagent.brain.images import encode_image
from kgagent.brain.reply import (
    InvalidReply,
    NoToolCall,
    Refused,
    Truncated,
    arguments,
    one_line,
    server_message,
    spent_thinking,
    validate,
)
from kgagent.brain.response import NotACompletion, completion, retry_after
from kgagent.brain.settings import MODES, BrainSettings
from kgagent.errors import BudgetExceeded

#: HTTP statuses worth another try (the same set the openai SDK itself retries).
RETRY_STATUSES = frozenset({408, 409, 429})
#: statuses with which a server refuses the *form* of a request
FORM_STATUSES = frozenset({400, 415, 422})
#: words in a 5xx message that blame the request's form, not the server's state
FORM_WORDS = ("tool", "jinja", "response_format", "json_schema", "grammar", "function")
#: how far a cut reply's max_tokens is doubled, times the configured, while the model
#: spends it thinking (ours: 8192 at the default 512; a reply cut otherwise: once)
RAISE_CAP = 16


class RequestAbandoned(KeyboardInterrupt):
    """Raised by :meth:`ChatClient.interrupt` inside the request or wait it cuts short.

    A ``KeyboardInterrupt`` so that no library on the way swallows it as an error, and
    so that, should it ever pass the client, the run still stops as on Ctrl-C.
    """


#: why a call that the stop cut short answered nothing
STOPPING = "the run is stopping"


class EndpointMemory:
    """Per endpoint (base URL + model): the answer mode and request parameters that worked.

    One process may build many brains for one endpoint (rounds, benchmark grids); a
    refusal learnt by the first is not paid again by the next. Inject a fresh one to
    start from nothing (tests do).
    """

    def __init__(self) -> None:
        self.modes: dict[tuple[str, str], str] = {}
        self.params: dict[tuple[str, str], dict[str, Any]] = {}
        self.told: set[tuple[tuple[str, str], str]] = set()

    def first_tell(self, key: tuple[str, str], what: str) -> bool:
        """True the first time ``what`` is said about this endpoint in this process."""
        if (key, what) in self.told:
            return False
        self.told.add((key, what))
        return True


#: the process's endpoint memory (see :class:`EndpointMemory`)
ENDPOINTS = EndpointMemory()


class ChatClient:
    """Role calls against one endpoint (see the module docstring).

    ``usage`` returns the brain's running totals (updated in place); ``log`` hears the
    few things a user should know once (a mode the server refused, estimated
    tokens, an unknown price); ``note`` hears them too, for the step record.
    """

    def __init__(
        self,
        cfg: Any,
        settings: BrainSettings,
        usage: Callable[[], Usage],
        *,
        client: openai.OpenAI | None = None,
        endpoints: EndpointMemory | None = None,
        sleep: Callable[[float], None] = time.sleep,
        log: Callable[[str], None] = lambda s: None,
        note: Callable[[str], None] = lambda s: None,
    ) -> None:
        self.cfg = cfg
        self.settings = settings
        self._usage = usage
        #: where requests go, and where that came from (brain.base_url, $OPENAI_BASE_URL…)
        self.base_url, self.url_source = endpoint_url(cfg)
        #: the URL as messages and logs show it: a password in it masked
        self.shown_url = shown_url(self.base_url)
        secret = os.environ.get(cfg.api_key_env) or ""
        self.key_set = bool(secret)
        #: takes the key and the URL's password out of any text about the endpoint
        #: (messages, notes, errors)
        self.redact = Redactor(secret, *url_secrets(self.base_url))
        self.client = client or openai.OpenAI(
            base_url=self.base_url,
            api_key=secret or "none",
            timeout=cfg.timeout_s,
            max_retries=0,
        )
        self.endpoints = endpoints if endpoints is not None else ENDPOINTS
        self.key = (self.base_url, cfg.model)
        self._sleep = sleep
        self._log = lambda line: log(self.redact(line))
        self._note = lambda line: note(self.redact(line))
        #: the endpoint has sent a chat completion in this run (its key, model and URL work)
        self.answered = False
        #: a request of this run got further than a refused connection, an unknown host or
        #: no route (a reply of any kind, a timeout): a server lives at the URL
        self.reached = False
        #: the run is stopping: no new request (see :meth:`interrupt`)
        self.stopping = False
        self._waiting: int | None = None  # the thread inside a request or backoff wait
        self._what = "request in flight"  # which of the two, for the note
        self.price_in, self.price_out, self.price_source = pricing.price_for(
            cfg.model,
            self.base_url,
            settings.prices,
            settings.price_in_per_mtok,
            settings.price_out_per_mtok,
        )
        if "no price known" in self.price_source:
            self._tell(
                "price",
                f"brain: no price known for model {cfg.model!r}; costing it at "
                f"{pricing.UNKNOWN_REMOTE}'s list price (add brain.prices = "
                f'["{cfg.model}=IN/OUT"] to correct it)',
            )
        if self.key_set and urlsplit(self.base_url).username:
            self._tell(
                "basic auth",
                f"brain: {self.shown_url} names a user: requests carry it as HTTP basic auth in "
                f"the Authorization header, which then cannot carry the key in "
                f"${cfg.api_key_env}: the key is not sent (a server that wants the key needs a "
                "URL without the user and password)",
            )
        self._dearest = 0.0  # the dearest single request so far (budget look-ahead)

    # ------------------------------------------------------------------ the call
    @property
    def mode(self) -> str:
        """The mode the next call starts in."""
        if self.settings.mode != "auto":
            return self.settings.mode
        return self.endpoints.modes.get(self.key, MODES[0])

    def call(
        self,
        role: str,
        text: str,
        images: list[tuple[str, np.ndarray]],
        check: Callable[[dict[str, Any]], Any],
        *,
        retries: int,
    ) -> tuple[CallRecord, Any]:
        """One role call; ``(record, result)`` with ``record.ok`` False when it failed."""
        record = CallRecord(role=role, mode=self.mode)
        result = None
        try:
            result = self._tries(record, text, images, check, retries)
        except RequestAbandoned:
            self._waiting = None
            record.ok, record.stopped = False, True
            record.error = f"{STOPPING}: the {self._what} was abandoned"
        record.attempts = max(record.attempts, 1)
        record.error = self.redact(record.error) if record.error else ""
        return record, result

    def interrupt(self) -> None:
        """The run is stopping: start no request, retry or wait from now on.

        Called from the signal handler of the first Ctrl-C, which runs in the main
        thread: when that thread is inside a request or a backoff wait of this client,
        :class:`RequestAbandoned` is raised there, and :meth:`call` ends the call.
        """
        self.stopping = True
        if self._waiting is not None and self._waiting == threading.get_ident():
            raise RequestAbandoned

    def _cut_short(self, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)``, which :meth:`interrupt` may abandon (see there); ``what``
        it is, for the note."""
        self._what = what
        try:
            self._waiting = threading.get_ident()
            if self.stopping:  # the stop came just before
                raise RequestAbandoned
            return fn(*args, **kw)
        finally:
            self._waiting = None

    def _tries(
        self,
        record: CallRecord,
        text: str,
        images: list[tuple[str, np.ndarray]],
        check: Callable[[dict[str, Any]], Any],
        retries: int,
    ) -> Any:
        """The requests of one call, until one answers; the result, or None."""
        cfg, role = self.cfg, record.role
        params = self.endpoints.params.setdefault(self.key, {})
        encoded = [
            (label, *encode_image(img, cfg.image_max_side, cfg.image_format, cfg.jpeg_quality))
            for label, img in images
        ]
        raised_limits = params.setdefault("max_tokens", {})  # configured → raised
        max_tokens = raised_limits.get(cfg.max_output_tokens, cfg.max_output_tokens)
        raised = max_tokens != cfg.max_output_tokens  # by this call or before
        cap = (cfg.max_output_tokens or 0) * RAISE_CAP  # while a model thinks
        unreached = False  # the last request reached no server
        while record.attempts <= retries:
            if self.stopping:
                record.stopped, record.error = True, STOPPING
                return None
            limited = False
            request = self._request(role, record.mode, text, encoded, max_tokens, params)
            sizes = [size for _, _, size in encoded]
            self._check_budget(request, sizes)
            record.requests += 1
            self._usage().requests += 1
            delay: float | None = None
            unreached = False
            try:
                raw = self._cut_short(
                    "request in flight",
                    self.client.chat.completions.with_raw_response.create,
                    **request,
                )
                response = completion(raw)
            except openai.APIStatusError as e:
                self.reached = True
                said = server_message(e)
                msg = f"HTTP {e.status_code}: {said}"
                record.error = msg
                if self._adapt_params(e, request, params):
                    continue
                kind = unfixable(e.status_code, said, e.body)
                if kind:
                    record.unfixable = kind
                    break  # asking again, or otherwise, will not help
                if self._form_refused(e):
                    if self._step_down(record, msg, sure=self._names_mode(e)):
                        continue
                    if self._fixed_mode_refused(record, e):
                        record.unfixable = MODE
                        break
                if e.status_code not in RETRY_STATUSES and e.status_code < 500:
                    break  # 400/422... once negotiation has nothing left: asking again will not help
                limited = e.status_code == 429
                after = retry_after(e)
                if after is not None:
                    delay = min(after, cfg.retry_after_cap_s)
            except openai.APITimeoutError:
                self.reached = True  # a slow server, not a missing one
                record.error = f"timed out after {cfg.timeout_s:g} s"
            except openai.APIConnectionError as e:
                record.error = one_line(f"connection error: {connection_cause(e)}")
                unreached = not_reached(e)
                self.reached = self.reached or not unreached
            except NotACompletion as e:
                self.reached = True
                record.error = str(e)
                if not self.answered:  # something else lives at the URL: asking again is vain
                    record.error, record.unfixable = e.what, NOT_API
                    break
            except Exception as e:  # noqa: BLE001 - a brain never crashes the loop
                self.reached = True
                record.error = one_line(f"{type(e).__name__}: {e}")
            else:
                self.answered = self.reached = True
                self._account(response, request, sizes, record)
                try:
                    try:
                        args = arguments(
                            response,
                            role,
                            record.mode,
                            cfg.content_json_fallback,
                            prompts.SCHEMAS[role],
                        )
                    except NoToolCall as e:
                        if e.found is None:
                            raise
                        args = e.found  # JSON in the text: usable if it has the right shape
                        if validate(prompts.SCHEMAS[role], args):
                            raise
                    problems = validate(prompts.SCHEMAS[role], args)
                    if problems:
                        raise InvalidReply("; ".join(problems[:3]))
                    result = check(args)
                except Refused as e:
                    record.error = str(e)
                    break
                except Truncated:
                    record.error = f"reply cut at max_tokens ({max_tokens})"
                    thinking = spent_thinking(response)  # raised again while it thinks
                    if max_tokens is None or (raised and not thinking) or max_tokens >= cap:
                        break
                    max_tokens = self._raise_limit(max_tokens, raised_limits, thinking)
                    raised = True
                    continue
                except NoToolCall as e:
                    record.error = str(e)
                    if self._step_down(record, "the reply had no tool call", sure=True):
                        continue
                except InvalidReply as e:
                    record.error = one_line(e)
                except (KeyError, TypeError, AttributeError, ValueError) as e:
                    record.error = one_line(f"unusable reply: {type(e).__name__}: {e}")
                else:
                    record.ok, record.error = True, ""
                    self._remember(record.mode)
                    return result
            record.attempts += 1
            if record.attempts <= retries and not self.stopping:
                wait = delay if delay is not None else cfg.backoff_s * 2 ** (record.attempts - 1)
                self._count_retry(record, wait, limited)
                self._cut_short("wait before a retry", self._sleep, wait)
        record.unreached = unreached and not self.reached
        return None

    def _count_retry(self, record: CallRecord, wait: float, limited: bool) -> None:
        """A retry is coming after ``wait`` s; ``limited``: the server said HTTP 429."""
        u = self._usage()
        record.retries += 1
        u.retries += 1
        if limited:
            record.rate_limited += 1
            record.rate_limit_wait_s += wait
            u.rate_limited += 1
            u.rate_limit_wait_s += wait

    def _raise_limit(self, cut: int, raised: dict[int | None, int], thinking: bool) -> int:
        """Twice ``cut`` tokens, remembered for the endpoint's later calls (said once)."""
        raised[self.cfg.max_output_tokens] = more = cut * 2
        why = ", spent thinking" if thinking else ""
        line = f"replies were cut at {cut} tokens{why}; using {more} (set brain.max_output_tokens)"
        self._note(line)
        self._tell(f"max_tokens:{more}", f"brain: {line}")
        return more

    # ------------------------------------------------------------- negotiation
    def _form_refused(self, e: openai.APIStatusError) -> bool:
        if e.status_code in FORM_STATUSES:
            return True
        text = server_message(e).lower()
        return e.status_code >= 500 and any(w in text for w in FORM_WORDS)

    def _fixed_mode_refused(self, record: CallRecord, e: openai.APIStatusError) -> bool:
        """The server refuses, by name, the mode that ``brain.mode`` fixes: every call
        would be refused alike."""
        return self.settings.mode != "auto" and record.mode != "text" and self._names_mode(e)

    @staticmethod
    def _names_mode(e: openai.APIStatusError) -> bool:
        """The refusal names the mode (tools, response_format...), not something else."""
        text = server_message(e).lower()
        return any(w in text for w in FORM_WORDS)

    def _step_down(self, record: CallRecord, why: str, *, sure: bool) -> bool:
        """Use the next answer mode; False when there is none (or the mode is fixed).

        ``sure``: the server said or showed that it cannot do the current mode, so
        the endpoint starts in the next one from now on; a refusal that names
        nothing (a bare 400) is remembered only if a lower mode then works.
        """
        if self.settings.mode != "auto" or record.mode == MODES[-1]:
            return False
        old, record.mode = record.mode, MODES[MODES.index(record.mode) + 1]
        if sure and MODES.index(self.endpoints.modes.get(self.key, MODES[0])) < MODES.index(
            record.mode
        ):
            self.endpoints.modes[self.key] = record.mode
        line = (
            f"brain: {self.key[1]} at {self.shown_url} refused {old} ({why}); trying {record.mode}"
        )
        self._note(line.removeprefix("brain: "))
        self._tell(f"step:{old}", line)
        return True

    def _remember(self, mode: str) -> None:
        if self.settings.mode != "auto":
            return
        self.endpoints.modes[self.key] = mode
        if mode != MODES[0]:
            self._tell(f"mode:{mode}", f"brain: {self.key[1]} answers in {mode} mode")

    def _adapt_params(
        self, e: openai.APIStatusError, request: dict[str, Any], params: dict[str, Any]
    ) -> bool:
        """A 400 that names a parameter some models reject: change it and ask again."""
        if e.status_code != 400:
            return False
        text = server_message(e).lower()
        if "max_tokens" in request and "max_tokens" in text and "max_completion_tokens" in text:
            params["max_tokens_key"] = "max_completion_tokens"
            return True
        if "temperature" in request and "temperature" in text and params.get("temperature", True):
            params["temperature"] = False
            return True
        return False

    def _tell(self, what: str, line: str) -> None:
        if self.endpoints.first_tell(self.key, what):
            self._log(line)

    # ---------------------------------------------------------------- requests
    def _request(
        self,
        role: str,
        mode: str,
        text: str,
        encoded: list[tuple[str, str, tuple[int, int]]],
        max_tokens: int | None,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        cfg = self.cfg
        body = text if mode == "tools" else f"{text}\n{prompts.shape_text(role)}"
        content: list[dict[str, Any]] = [{"type": "text", "text": body}]
        for label, url, _size in encoded:
            part: dict[str, Any] = {"url": url}
            if cfg.image_detail:
                part["detail"] = cfg.image_detail
            content.append({"type": "text", "text": label})
            content.append({"type": "image_url", "image_url": part})
        kw: dict[str, Any] = {
            "model": cfg.model,
            "messages": [
                {"role": "system", "content": prompts.system_prompt(mode)},
                {"role": "user", "content": content},
            ],
        }
        if mode == "tools":
            kw["tools"] = [prompts.tool_spec(role)]
            kw["tool_choice"] = prompts.forced_choice(role)
        elif mode == "json_schema":
            kw["response_format"] = prompts.response_format(role)
        if cfg.temperature is not None and params.get("temperature", True):
            kw["temperature"] = cfg.temperature
        if max_tokens is not None:
            kw[params.get("max_tokens_key", "max_tokens")] = max_tokens
        return kw

    # -------------------------------------------------------------- accounting
    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """USD for a token count at this model's prices."""
        return (prompt_tokens * self.price_in + completion_tokens * self.price_out) / 1e6

    def _account(
        self,
        response: Any,
        request: dict[str, Any],
        sizes: list[tuple[int, int]],
        record: CallRecord,
    ) -> None:
        """Bill a reply: its ``usage`` when it has one, else an estimate, marked."""
        usage = getattr(response, "usage", None)
        pt = getattr(usage, "prompt_tokens", None)
        ct = getattr(usage, "completion_tokens", None)
        estimated = not isinstance(pt, int) or not isinstance(ct, int)
        if not estimated:  # and output a server counts only in its total
            ct = pricing.billed_completion(usage, pt, ct)
        else:
            choices = getattr(response, "choices", None) or []
            message = choices[0].message if choices else None
            pt = pricing.prompt_tokens(request, sizes)
            ct = pricing.completion_tokens(message)
            self._tell(
                "estimated",
                f"brain: {self.key[1]} at {self.shown_url} sends no token usage; tokens are "
                "estimated (4 characters per token, OpenAI's image rule) and marked so",
            )
        u = self._usage()
        u.prompt_tokens += pt
        u.completion_tokens += ct
        if estimated:
            u.estimated_tokens += pt + ct
            record.estimated = True
        else:
            thought = pricing.reasoning_tokens(usage, ct)
            u.reasoning_tokens += thought
            record.reasoning_tokens += thought
        # Totals are priced from total tokens, so they equal tokens × prices exactly.
        u.cost_usd = self.cost(u.prompt_tokens, u.completion_tokens)
        record.prompt_tokens += pt
        record.completion_tokens += ct
        record.cost_usd = self.cost(record.prompt_tokens, record.completion_tokens)
        self._dearest = max(self._dearest, self.cost(pt, ct))

    def _check_budget(self, request: dict[str, Any], sizes: list[tuple[int, int]]) -> None:
        """Refuse a request that would take spending past ``budget_usd``.

        The next request is assumed to cost as much as the dearest one so far, or
        as much as its own estimated prompt if that is more (the first request of
        a run has nothing to compare with), so a run stops before the cap.
        """
        cap = self.cfg.budget_usd
        if cap is None:
            return
        spent = self._usage().cost_usd
        ahead = max(self._dearest, self.cost(pricing.prompt_tokens(request, sizes), 0))
        if spent >= cap or spent + ahead > cap:
            raise BudgetExceeded(
                f"VLM budget of ${cap:.4f} reached (spent ${spent:.4f}, next call "
                f"~${ahead:.4f}); raise brain.budget_usd to continue"
            )
