"""A ground-truth judge behind a local OpenAI-compatible endpoint (benchmarks only).

Why: the papers' results come from GPT-4o as the judge of progress, so they cannot
say what the SA-KG buys on its own. This server answers ``evaluate`` from the
environment's own progress signal, and every other role by the offline brain's
rules, so a benchmark can run the agent with a judge that is right about
progress and compare methods under it.

The agent does not know: it talks to this server through the normal VLM path
(``brain.kind = "vlm"``, ``brain.base_url`` = this server), and its requests carry
only screenshots and text. The ground truth reaches the server through the
harness, never through the agent:

* :class:`TruthRecorder` wraps the harness's :class:`~kgagent.envs.base.Env`. Every
  screenshot the environment hands out (``reset``, ``step``, ``observe``) is kept
  with the environment's progress signal at that moment (the last ``keep``).
* The server runs in the harness's process and reads the recorder: an image in a
  request is matched to a recorded screenshot by its exact data URL, encoded the
  way the brain encodes it (:func:`kgagent.brain.images.encode_image` with the
  brain's image settings; lazily, newest first, over the last ``keep`` distinct
  screenshots). ``evaluate`` answers
  ``is_progressive`` = the progress signal grew between the before- and the
  after-screen (:func:`progress_signal`: floors or score on the card game, turns
  or techs on the civ game, a new achievement on Crafter, the reward sum on other
  Gymnasium games). An image that matches nothing (never expected) is a *miss*:
  counted, and judged by the offline rule instead.

Every other role is answered by :class:`~kgagent.brain.offline.OfflineBrain`'s
rules applied to what the request shows: the measured Δ and novelty stated in the
prompt, and features the server computes from the images with the weight-free
pixel encoder (so ``choose_cluster`` and ``cluster_skills`` use the states where
the server has seen each skill used, by name). ``is_consistent`` is the offline
rule too. Replies carry no ``usage`` (the client estimates it; a local server costs
nothing).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import threading
from collections import Counter, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

from kgagent.actions import Action
from kgagent.brain.base import ClusterView, SkillView, Transition, View
from kgagent.brain.images import encode_fitted, fit_image
from kgagent.brain.offline import OfflineBrain
from kgagent.config import BrainConfig
from kgagent.envs.base import Env, GroundTruth
from kgagent.perception.encoders import PixelEncoder


def progress_signal(gt: GroundTruth) -> tuple[float, ...]:
    """What "the program moved forward" means for an environment; compared element-wise.

    Built-in games: progression (floors cleared / turns) and score (score / techs).
    Crafter (``extra["achievements"]``): the number of achievements unlocked, only
    (its reward also moves with health). Other Gymnasium games
    (``extra["env_steps"]``: progression counts steps there): the reward sum.
    """
    extra = gt.extra or {}
    if "achievements" in extra:
        return (float(len(extra["achievements"])),)
    if "env_steps" in extra:
        return (float(gt.score),)
    return (float(gt.progression), float(gt.score))


def progressed(before: tuple[float, ...], after: tuple[float, ...]) -> bool:
    return any(a > b for a, b in zip(after, before))


@dataclass
class _Frame:
    image: np.ndarray  # a copy of the screenshot; fitted and encoded only when asked for
    signal: tuple[float, ...]
    url_hash: str | None = None


class TruthRecorder(Env):
    """The harness's environment, with each screenshot's progress signal kept for the judge."""

    def __init__(self, env: Env, brain: BrainConfig, keep: int = 48) -> None:
        self.env = env
        self._side = brain.image_max_side
        self._fmt = (brain.image_format, brain.jpeg_quality)
        self._frames: deque[_Frame] = deque(maxlen=keep)
        self._last: tuple[np.ndarray, tuple[float, ...]] | None = None
        self._lock = threading.Lock()

    # the Env interface, forwarded
    @property
    def name(self) -> str:  # type: ignore[override]
        return self.env.name

    @property
    def live(self) -> bool:  # type: ignore[override]
        return self.env.live

    @property
    def restarts(self) -> bool:  # type: ignore[override]
        return self.env.restarts

    @property
    def size(self) -> tuple[int, int]:
        return self.env.size

    def reset(self, seed: int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        obs, info = self.env.reset(seed=seed)
        self._record(obs)
        return obs, info

    def step(self, action: Action) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        out = self.env.step(action)
        self._record(out[0])
        return out

    def observe(self) -> np.ndarray:
        obs = self.env.observe()
        self._record(obs)
        return obs

    def ground_truth(self) -> GroundTruth:
        return self.env.ground_truth()

    def tolerate_motion(self, still: Any) -> None:
        self.env.tolerate_motion(still)

    def end_info(self) -> dict[str, Any]:
        return self.env.end_info()

    def close(self) -> None:
        self.env.close()

    # the judge's side
    def _record(self, obs: np.ndarray) -> None:
        signal = progress_signal(self.env.ground_truth())
        last = self._last
        if last is not None and last[1] == signal and np.array_equal(last[0], obs):
            return  # the same screen with the same truth: nothing new to keep
        frame = _Frame(np.array(obs, copy=True), signal)
        self._last = (frame.image, signal)
        with self._lock:
            self._frames.append(frame)

    def signal_of(self, url: str) -> tuple[float, ...] | None:
        """The progress signal recorded with the screenshot sent as ``url`` (newest match)."""
        want = _hash(url)
        with self._lock:
            frames = list(self._frames)
        for f in reversed(frames):
            if f.url_hash is None:
                f.url_hash = _hash(encode_fitted(fit_image(f.image, self._side), *self._fmt)[0])
            if f.url_hash == want:
                return f.signal
        return None


def _hash(url: str) -> str:
    return hashlib.sha1(url.encode("ascii", "replace")).hexdigest()


# ------------------------------------------------------------------ request text
_MEASURED = re.compile(r"Measured: ([\d.]+)% of the pixels changed; the result is (.*?)\.")
_JSON_STR = r'"(?:[^"\\]|\\.)*"'  # names and descriptions are quoted as JSON strings
_LINE = re.compile(
    rf"^- id='([^']*)' name=({_JSON_STR}): .*?\((?:skills|operations): (.*)\)$", re.M
)


def measured(text: str) -> tuple[float, bool, bool]:
    """(Δ, new in episode, new in graph) from the prompt's "Measured:" sentence."""
    m = _MEASURED.search(text)
    if not m:
        return 0.0, False, False
    seen = m.group(2)
    new_graph = "never seen" in seen
    return float(m.group(1)) / 100.0, new_graph or "not seen earlier" in seen, new_graph


def field(text: str, label: str) -> str:
    """A ``Label: value`` line's value; a JSON-quoted one (a name) unquoted."""
    m = re.search(rf"^{label}: (.*)$", text, re.M)
    value = m.group(1).strip() if m else ""
    return json.loads(value) if re.fullmatch(_JSON_STR, value) else value


def listed(text: str, start: str, end: str | None = None) -> list[tuple[str, str, list[str]]]:
    """(id, name, member names) of the ``- id=...`` lines between two headings."""
    i = text.find(start)
    if i < 0:
        return []
    j = text.find(end, i) if end else -1
    part = text[i : j if j >= 0 else len(text)]
    out = []
    for cid, name, members in _LINE.findall(part):
        names = [json.loads(m) for m in re.findall(_JSON_STR, members)]
        out.append((cid, json.loads(name), names))
    return out


def _safe(text: str, limit: int) -> str:
    """Text for a name the prompts can list and this parser can read back."""
    s = re.sub(r"[,'\"]", "", " ".join(text.split()))
    return s[:limit]


# ---------------------------------------------------------------------- the judge
class GroundTruthJudge:
    """Answers one role from a request's text and images (see the module docstring)."""

    def __init__(self, truth: TruthRecorder, brain: BrainConfig) -> None:
        self.truth = truth
        self.offline = OfflineBrain(brain)
        self.encoder = PixelEncoder()
        self.sources: dict[str, list[np.ndarray]] = {}  # skill name → features ran from
        self.effects: dict[str, list[np.ndarray]] = {}  # skill name → feature changes
        self.requests: Counter[str] = Counter()
        self.misses = 0
        self.judged = 0
        self.progressive = 0
        self._lock = threading.Lock()

    def answer(self, role: str, text: str, urls: list[str]) -> dict[str, Any]:
        with self._lock:
            self.requests[role] += 1
            return getattr(self, f"_{role}")(text, urls)

    # helpers
    def _view(self, url: str) -> View:
        raw = base64.b64decode(url.split(",", 1)[1])
        img = np.asarray(Image.open(io.BytesIO(raw)).convert("RGB"))
        return View(img, self.encoder.encode([img])[0].astype(np.float64), _hash(url)[:12])

    def _transition(self, text: str, urls: list[str]) -> Transition:
        change, new_ep, new_graph = measured(text)
        return Transition(self._view(urls[0]), self._view(urls[1]), change, new_ep, new_graph)

    def _learn(self, name: str, tr: Transition) -> None:
        self.sources.setdefault(name, []).append(tr.before.feature)
        if self.offline.changed(tr):
            self.effects.setdefault(name, []).append(tr.after.feature - tr.before.feature)

    def _clusters(self, text: str, start: str) -> list[ClusterView]:
        views = []
        for cid, name, members in listed(text, start):
            feats = [f for m in members for f in self.sources.get(m, [])]
            views.append(ClusterView(cid, name, "", members, np.stack(feats) if feats else None))
        return views

    # roles
    def _describe_skill(self, text: str, urls: list[str]) -> dict[str, Any]:
        tr = self._transition(text, urls)
        if not self.offline.changed(tr):
            return {"meaningful": False, "name": "", "description": ""}
        ops = field(text, "Operations")
        where = "new screen" if tr.new_in_graph else "known screen"
        tag = hashlib.sha1(f"{ops}|{tr.after.state_id}".encode()).hexdigest()[:6]
        name = f"{_safe(ops, 30)} -> {where} #{tag}"
        self._learn(name, tr)
        return {
            "meaningful": True,
            "name": name,
            "description": f"{ops}: changes {tr.change:.1%} of the screen and leads to a {where}.",
        }

    def _evaluate(self, text: str, urls: list[str]) -> dict[str, Any]:
        tr = self._transition(text, urls)
        name = field(text, "Skill")
        skill = SkillView(name, name, "", [], past_effects=list(self.effects.get(name, [])))
        offline = self.offline.evaluate(skill, tr)
        before, after = self.truth.signal_of(urls[0]), self.truth.signal_of(urls[1])
        self.judged += 1
        if before is None or after is None:
            self.misses += 1
            progressive, why = bool(offline.progressive), "no ground truth for a screen"
        else:
            progressive, why = progressed(before, after), f"signal {before} -> {after}"
        self.progressive += progressive
        self._learn(name, tr)
        return {
            "is_consistent": bool(offline.consistent),
            "is_progressive": progressive,
            "reason": why,
        }

    def _choose_cluster(self, text: str, urls: list[str]) -> dict[str, Any]:
        view = self._view(urls[0])
        return {"cluster_id": self.offline.choose_cluster(view, self._clusters(text, "Clusters:"))}

    def _refine_skill(self, text: str, urls: list[str]) -> dict[str, Any]:
        tr = self._transition(text, urls)
        ops = field(text, "Operations")
        where = "new screen" if tr.new_in_graph else "known screen"
        return {
            "name": field(text, "Current name"),
            "description": f"{ops}: changes about {tr.change:.0%} of the screen; leads to a {where}.",
        }

    def _cluster_skills(self, text: str, urls: list[str]) -> dict[str, Any]:
        skills = []
        for sid, name, _ops in listed(text, "New skills:", "Existing clusters"):
            feats = self.sources.get(name, [])
            skills.append(
                SkillView(sid, name, "", [], source_features=np.stack(feats) if feats else None)
            )
        clusters = self._clusters(text, "Existing clusters")
        out = self.offline.cluster_skills(skills, clusters)
        return {
            "assignments": [
                {
                    "skill_id": a.skill_id,
                    "cluster_id": a.cluster_id,
                    "new_name": _safe(a.new_name, 60),
                    "new_description": a.new_description,
                }
                for a in out
            ]
        }


# ----------------------------------------------------------------------- server
_ROLE_IN_TEXT = re.compile(r"Answer \((\w+)\) with one JSON object")


class JudgeServer:
    """``judge`` behind ``POST /v1/chat/completions`` on 127.0.0.1 (a free port), in a thread."""

    def __init__(self, judge: GroundTruthJudge) -> None:
        self.judge = judge
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("content-length", 0))
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                    status, payload = server.reply(self.path, body)
                except Exception as e:  # noqa: BLE001 - a bad request is a 400, never a crash
                    status, payload = 400, {"error": {"message": f"{type(e).__name__}: {e}"}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def start(self) -> JudgeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/") != "/v1/chat/completions":
            return 404, {"error": {"message": f"no route {path}"}}
        text, urls = "", []
        for m in body.get("messages", []):
            c = m.get("content")
            for part in [{"type": "text", "text": c}] if isinstance(c, str) else c or []:
                if part.get("type") == "text":
                    text += part["text"] + "\n"
                elif part.get("type") == "image_url":
                    urls.append(part["image_url"]["url"])
        if "tools" in body:
            role = body["tool_choice"]["function"]["name"]
        elif "response_format" in body:
            role = body["response_format"]["json_schema"]["name"]
        else:
            m = _ROLE_IN_TEXT.search(text)
            if not m:
                return 400, {"error": {"message": "no role named in the request"}}
            role = m.group(1)
        args = self.judge.answer(role, text, urls)
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if "tools" in body:
            message["tool_calls"] = [
                {
                    "id": "call_0",
                    "type": "function",
                    "function": {"name": role, "arguments": json.dumps(args)},
                }
            ]
        else:
            message["content"] = json.dumps(args)
        return 200, {
            "id": "judge",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "judge"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tools" in body else "stop",
                }
            ],
        }
