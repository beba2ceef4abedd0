"""Prompts and tool schemas for the VLM roles, written once for every vendor.

The published Bottom-Up Agent code wrote each tool schema twice, once per
vendor; here every role has exactly one JSON schema, sent as an OpenAI-style
function tool (the format vLLM, Ollama and llama.cpp server also accept) and
used again to validate what comes back.

The prompts know nothing about any particular program: the agent starts with
no name, rules or goal, so the model is told only what the agent measured.
"""

from __future__ import annotations

import json
from typing import Any

from kgagent.actions import Operation

# --------------------------------------------------------------------- schemas
DESCRIBE_SKILL = "describe_skill"
EVALUATE = "evaluate"
CHOOSE_CLUSTER = "choose_cluster"
REFINE_SKILL = "refine_skill"
CLUSTER_SKILLS = "cluster_skills"

SCHEMAS: dict[str, dict[str, Any]] = {
    DESCRIBE_SKILL: {
        "type": "object",
        "properties": {
            "meaningful": {
                "type": "boolean",
                "description": "true if the operations had a recognisable, reusable effect",
            },
            "name": {
                "type": "string",
                "description": "a short verb phrase naming the skill (empty if not meaningful)",
            },
            "description": {
                "type": "string",
                "description": "what the skill does and when it applies, in one or two sentences",
            },
        },
        "required": ["meaningful", "name", "description"],
        "additionalProperties": False,
    },
    EVALUATE: {
        "type": "object",
        "properties": {
            "is_consistent": {
                "type": "boolean",
                "description": "the observed change matches what the skill description predicts",
            },
            "is_progressive": {
                "type": "boolean",
                "description": "the execution moved the program forward",
            },
            "reason": {"type": "string", "description": "one short sentence"},
        },
        "required": ["is_consistent", "is_progressive", "reason"],
        "additionalProperties": False,
    },
    CHOOSE_CLUSTER: {
        "type": "object",
        "properties": {
            "cluster_id": {
                "type": ["string", "null"],
                "description": "the id of the best-fitting cluster, or null if none fits",
            },
            "reason": {"type": "string", "description": "one short sentence"},
        },
        "required": ["cluster_id"],
        "additionalProperties": False,
    },
    REFINE_SKILL: {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "description": {"type": "string", "minLength": 1},
        },
        "required": ["name", "description"],
        "additionalProperties": False,
    },
    CLUSTER_SKILLS: {
        "type": "object",
        "properties": {
            "assignments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "skill_id": {"type": "string", "minLength": 1},
                        "cluster_id": {
                            "type": ["string", "null"],
                            "description": "an existing cluster id, or null to open a new one",
                        },
                        "new_name": {
                            "type": "string",
                            "description": "name of the new cluster (or a better name for "
                            "the existing one; empty keeps it)",
                        },
                        "new_description": {"type": "string"},
                    },
                    "required": ["skill_id", "cluster_id", "new_name", "new_description"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["assignments"],
        "additionalProperties": False,
    },
}

_TOOL_DESCRIPTIONS = {
    DESCRIBE_SKILL: "Name and describe a newly discovered skill, or declare it meaningless.",
    EVALUATE: "Judge one execution of a skill from the screens before and after it.",
    CHOOSE_CLUSTER: "Pick the action cluster that best fits the current screen.",
    REFINE_SKILL: "Rewrite a skill's name and description so they predict its effect.",
    CLUSTER_SKILLS: "Group new skills into existing action clusters or open new ones.",
}


def tool_spec(name: str) -> dict[str, Any]:
    """The ``tools=[...]`` entry for one role (OpenAI function-tool format)."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": _TOOL_DESCRIPTIONS[name],
            "parameters": SCHEMAS[name],
        },
    }


def forced_choice(name: str) -> dict[str, Any]:
    """``tool_choice`` that forces the model to call the named function."""
    return {"type": "function", "function": {"name": name}}


# --------------------------------------------------------------------- prompts
SYSTEM = (
    "You help an agent that learns to operate unfamiliar software from screenshots "
    "alone. It knows nothing about the program in advance: no name, no rules, no goal. "
    "It acts with the mouse and keyboard and builds reusable skills from what it "
    "observes. Judge only from what is visible on the screenshots and from the "
    "measurements you are given. Always answer by calling the requested function."
)

_ROLE = {
    DESCRIBE_SKILL: (
        "A short sequence of operations was just executed. The first image is the screen "
        "before, the second the screen after. Decide whether the operations had a "
        "recognisable, reusable effect (a new screen or panel, a changed value, a selection, "
        "an opened menu...). If they did, give the skill a short name (a verb phrase) and "
        "describe what it does and on which kind of screen it applies. If the change is "
        "trivial, accidental or invisible, set meaningful to false."
    ),
    EVALUATE: (
        "A known skill was just executed. The first image is the screen before, the second "
        "the screen after. is_consistent: does the observed change match what the skill's "
        "description predicts? is_progressive: did the execution move the program forward "
        "(reach a new stage or screen, advance a process, make an option available), as "
        "opposed to doing nothing, undoing itself, or returning to a screen already seen?"
    ),
    CHOOSE_CLUSTER: (
        "The image is the current screen. Below are clusters of functionally equivalent "
        "skills the agent has learned. Pick the cluster whose skills are most useful on "
        "this screen, by its id exactly as written. Answer null if none applies."
    ),
    REFINE_SKILL: (
        "A skill's name and description should let the agent predict its effect. The first "
        "image is the screen before its latest execution, the second the screen after. "
        "Rewrite the name and description so they state precisely what the skill does and "
        "when it applies. Keep them short; do not invent effects that were not observed."
    ),
    CLUSTER_SKILLS: (
        "Group the new skills into action clusters: skills that serve the same function "
        "belong together, even if they act on different objects. Assign each new skill to "
        "an existing cluster by its id exactly as written, or use cluster_id null to open a "
        "new cluster and give it a name and description. New skills that should share one "
        "new cluster must use the same new_name. Assign every new skill exactly once."
    ),
}


def system_prompt() -> str:
    return SYSTEM


def operations_text(operations: list[Operation]) -> str:
    """Operations as the agent writes them in logs ("click obj-3 ; key enter")."""
    return " ; ".join(op.describe() for op in operations) or "(no operations)"


def _measured(change: float, new_in_episode: bool, new_in_graph: bool) -> str:
    seen = (
        "a screen never seen before"
        if new_in_graph
        else (
            "a screen not seen earlier in this episode"
            if new_in_episode
            else "a screen already seen"
        )
    )
    return f"Measured: {change:.1%} of the pixels changed; the result is {seen}."


def describe_skill_text(
    operations: list[Operation], change: float, new_in_episode: bool, new_in_graph: bool
) -> str:
    return "\n".join(
        [
            _ROLE[DESCRIBE_SKILL],
            f"Operations: {operations_text(operations)}",
            _measured(change, new_in_episode, new_in_graph),
        ]
    )


def evaluate_text(
    name: str,
    description: str,
    operations: list[Operation],
    change: float,
    new_in_episode: bool,
    new_in_graph: bool,
) -> str:
    return "\n".join(
        [
            _ROLE[EVALUATE],
            f"Skill: {name}",
            f"Description: {description}",
            f"Operations: {operations_text(operations)}",
            _measured(change, new_in_episode, new_in_graph),
        ]
    )


def choose_cluster_text(clusters: list[tuple[str, str, str, list[str]]]) -> str:
    """``clusters``: (id, name, description, skill names)."""
    lines = [_ROLE[CHOOSE_CLUSTER], "Clusters:"]
    for cid, name, desc, skills in clusters:
        lines.append(f"- id={cid!r} name={name!r}: {desc} (skills: {', '.join(skills) or '-'})")
    return "\n".join(lines)


def refine_skill_text(
    name: str,
    description: str,
    operations: list[Operation],
    fitness: float,
    executions: int,
    change: float,
    new_in_episode: bool,
    new_in_graph: bool,
) -> str:
    return "\n".join(
        [
            _ROLE[REFINE_SKILL],
            f"Current name: {name}",
            f"Current description: {description}",
            f"Operations: {operations_text(operations)}",
            f"Fitness so far: {fitness:.2f} over {executions} executions.",
            _measured(change, new_in_episode, new_in_graph),
        ]
    )


def cluster_skills_text(
    skills: list[tuple[str, str, str, list[Operation]]],
    clusters: list[tuple[str, str, str, list[str]]],
) -> str:
    """``skills``: (id, name, description, operations); ``clusters`` as above."""
    lines = [_ROLE[CLUSTER_SKILLS], "New skills:"]
    for sid, name, desc, ops in skills:
        lines.append(f"- id={sid!r} name={name!r}: {desc} (operations: {operations_text(ops)})")
    lines.append("Existing clusters:" if clusters else "Existing clusters: none yet.")
    for cid, name, desc, members in clusters:
        lines.append(f"- id={cid!r} name={name!r}: {desc} (skills: {', '.join(members) or '-'})")
    return "\n".join(lines)


def all_prompt_text() -> str:
    """Every fixed string sent to a model, for tests that check it stays generic."""
    return "\n".join([SYSTEM, *_ROLE.values(), *_TOOL_DESCRIPTIONS.values(), json.dumps(SCHEMAS)])
