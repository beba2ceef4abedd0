"""The agent: Algorithm 1 of the KG-Agent, its baselines, and the harness that runs them."""

from kgagent.agent.baselines import BottomUpAgent, RandomAgent, make_agent
from kgagent.agent.loop import Agent
from kgagent.agent.screen import Screen

__all__ = ["Agent", "BottomUpAgent", "RandomAgent", "Screen", "make_agent"]
