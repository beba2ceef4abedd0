"""The papers' baselines as agents with the KG-Agent's interface, and the factory that picks one.

* :class:`BottomUpAgent` (ablation ``no_graph``): the Bottom-Up Agent that KG-Agent
  extends. No SA-KG invocation (stage 1), no skill edges, and so none of the
  graph-derived rewards (R_state, R_novel; resolved in :meth:`Config.effective`).
  Clusters, UCB and augmentation are as in the KG-Agent.
* :class:`RandomAgent` (ablation ``random``): one uniformly random atomic action per
  step over the same action space augmentation draws from (objects, background
  points, keys). It observes like the others (states and objects are stored, so its
  graph statistics are comparable) but learns nothing.

The other ablations (``no_similarity``, ``no_novelty``, ``no_state_reward``,
``no_vlm_rewards``) are the KG-Agent with settings switched off.
"""

from __future__ import annotations

import numpy as np

from kgagent.actions import Operation
from kgagent.brain.base import Brain
from kgagent.config import Config
from kgagent.perception.base import Segmenter, StateEncoder
from kgagent.perception.reader import TextReader
from kgagent.runlog import ExecutionRecord, StepRecord

from .augment import object_actions, residual_actions
from .executor import execute
from .loop import Agent
from .observation import Observation
from .protocols import MemoryAPI
from .screen import Screen


class BottomUpAgent(Agent):
    """The Bottom-Up Agent (ablation ``no_graph``): clusters and augmentation, no SA-KG."""

    sakg = False

    def invoke_sakg(self, screen: Screen, obs: Observation, rec: StepRecord) -> Observation | None:
        return obs  # no graph: straight to the clusters


class RandomAgent(Agent):
    """One random atomic action per step (ablation ``random``); learns nothing."""

    def step(self, screen: Screen) -> StepRecord:
        t0, usage0 = self._open(screen)
        obs = self.observer.observe(screen)
        rec = StepRecord(self.step_no, obs.state.id, "idle", state_created=obs.state.created)
        size = (obs.image.shape[1], obs.image.shape[0])
        ops = object_actions(obs.objects, self.rng, self.cfg.augment.rare_action_prob)
        ops += residual_actions(size, obs.objects, self.cfg, self.rng)
        op: Operation = ops[int(self.rng.integers(len(ops)))]
        ex = execute([op], screen, self.observer, self.cfg)
        hit_j, _ = self.observer.merge(screen.observe())
        self.episode.visited.add(hit_j.id)
        rec.executions.append(
            ExecutionRecord(
                path="random",
                from_state=obs.state.id,
                to_state=hit_j.id,
                operations=[op.to_dict()],
                grounding=[r.to_dict() for r in ex.ops],
                change=ex.change,
                new_state=hit_j.created,
                valid_transition=ex.ok and ex.change >= self.cfg.augment.min_change,
                actions=ex.actions,
                error=ex.error,
            )
        )
        return self._close(rec, t0, usage0, screen)


def make_agent(
    config: Config,
    memory: MemoryAPI,
    encoder: StateEncoder,
    segmenter: Segmenter,
    brain: Brain,
    rng: np.random.Generator,
    *,
    reader: TextReader | None = None,
) -> Agent:
    """The agent ``run.ablation`` names: the KG-Agent, the Bottom-Up Agent or the random agent.
    ``reader``: a text reader of the caller's own (else ``perception.reader``'s)."""
    cls = {"no_graph": BottomUpAgent, "random": RandomAgent}.get(config.run.ablation, Agent)
    return cls(config, memory, encoder, segmenter, brain, rng, reader=reader)
