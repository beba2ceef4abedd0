"""The engine adapter: transactions, and errors worded where they are raised."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.errors import MemoryStoreError, QueryError
from kgagent.memory import Memory
from kgagent.memory.engine import GraphDB, engine_name

COUNT = "MATCH (n:Note) RETURN count(*) AS n"


@pytest.fixture
def db(tmp_path: Path):
    g = GraphDB(tmp_path / "graph.db", engine_name(Config().memory.engine))
    g.execute("CREATE NODE TABLE Note(id STRING, PRIMARY KEY(id))")
    yield g
    g.close()


def test_transaction_commits_at_the_end_and_rolls_back_on_error(db: GraphDB) -> None:
    with db.transaction():
        db.execute("CREATE (:Note {id: 'kept'})")
    with pytest.raises(ValueError, match="boom"):
        with db.transaction():
            db.execute("CREATE (:Note {id: 'dropped'})")
            assert db.execute(COUNT) == [{"n": 2}]  # visible inside the transaction
            raise ValueError("boom")
    assert db.execute("MATCH (n:Note) RETURN n.id AS id") == [{"id": "kept"}]
    with db.transaction(read_only=True):
        assert db.execute(COUNT) == [{"n": 1}]


@pytest.mark.parametrize("when", ["after BEGIN", "after COMMIT"])
def test_an_interrupt_around_begin_or_commit_leaves_no_transaction_open(
    db: GraphDB, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Ctrl-C landing just after the engine ran BEGIN (or COMMIT), before the adapter
    knew: the next transaction starts (it failed with "already has an active
    transaction", as a notebook's "interrupt kernel" found)."""
    run = GraphDB._run
    word = when.split()[1]

    def interrupted(self, query, *args, **kw):
        res = run(self, query, *args, **kw)
        if query.strip().upper().startswith(word):
            raise KeyboardInterrupt
        return res

    monkeypatch.setattr(GraphDB, "_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with db.transaction():
            db.execute("CREATE (:Note {id: 'maybe'})")
    monkeypatch.setattr(GraphDB, "_run", run)
    assert not db.in_transaction
    with db.transaction():
        db.execute("CREATE (:Note {id: 'next'})")
    ids = {r["id"] for r in db.execute("MATCH (n:Note) RETURN n.id AS id")}
    assert ids == ({"next"} if word == "BEGIN" else {"maybe", "next"})


def test_query_errors_are_one_line(db: GraphDB) -> None:
    with pytest.raises(QueryError) as info:
        db.execute("MATCH (n:Nope) RETURN n")
    assert "Nope" in str(info.value) and "\n" not in str(info.value)


def test_an_unbound_parameter_is_refused_not_read_as_null(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "memory", Config()) as m:
        q = "MATCH (s:State {id: $state}) RETURN s.id AS id"
        with pytest.raises(
            QueryError,
            match=r"uses parameter\(s\) \$state; bind them in params \(\{'state': \.\.\.\}\)",
        ):
            m.cypher(q)
        assert m.cypher(q, {"state": "s-none"}) == []
        # '$x' inside a string is text, not a parameter.
        assert m.cypher("RETURN '$x' AS t") == [{"t": "$x"}]


HOLDER = textwrap.dedent(
    """
    import sys
    from kgagent.config import Config
    from kgagent.memory import Memory
    m = Memory.open(sys.argv[1], Config())
    print("ready", flush=True)
    sys.stdin.readline()
    m.close()
    """
)


def test_a_memory_held_by_another_process_is_refused_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    Memory.open(path, Config()).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready", holder.stderr.read()
        with pytest.raises(MemoryStoreError) as info:
            Memory.open(path, Config())  # read-write: both engines lock the file
        msg = str(info.value)
        # The writer's lock (kgagent/memory/lock.py) refuses it before either engine is asked.
        assert "\n" not in msg and "in use by another process" in msg
        assert f"(pid {holder.pid})" in msg and msg.endswith("and try again")
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0


def test_a_memory_open_twice_in_one_process_says_so(tmp_path: Path) -> None:
    """A notebook that opened a memory and lost the object: the refusal names this
    process, not "another process" with the user's own pid."""
    path = tmp_path / "memory"
    first = Memory.open(path, Config())
    try:
        with pytest.raises(MemoryStoreError) as info:
            Memory.open(path, Config())
        msg = str(info.value)
        assert "already open for writing in this process: close() the Memory" in msg
        assert "another process" not in msg
        with Memory.open(path, Config(), read_only=True) as reader:  # reading beside it is fine
            assert reader.stats().nodes == 0
    finally:
        first.close()
    Memory.open(path, Config()).close()
    lost = Memory.open(path, Config())  # a notebook's object, dropped without close()
    del lost
    gc.collect()
    Memory.open(path, Config()).close()  # its lock went with it


def test_an_unknown_engine_names_where_it_was_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KGAGENT_ENGINE", "neo4j")
    with pytest.raises(MemoryStoreError) as e:
        engine_name("ladybug")
    assert str(e.value) == (
        "KGAGENT_ENGINE (in the environment) = 'neo4j': must be one of ladybug, kuzu"
    )
    monkeypatch.delenv("KGAGENT_ENGINE")
    with pytest.raises(MemoryStoreError, match="^memory.engine = 'neo4j': must be one of"):
        engine_name("neo4j")


MADE_BY = textwrap.dedent(
    """
    import sys
    import numpy as np
    from kgagent.config import Config
    from kgagent.memory import EncoderSpec, Memory
    with Memory.open(sys.argv[1], Config(), encoder=EncoderSpec("test:v1", 16, (0.95, 0.88))) as m:
        for v in np.eye(16)[:3]:
            m.merge_or_create_state(v)
    """
)


@pytest.mark.parametrize("chosen_by", ["--set", "KGAGENT_ENGINE"])
def test_a_memory_of_the_other_engine_is_moved_by_running_the_advice_as_printed(
    tmp_path: Path, chosen_by: str
) -> None:
    """The refusal names the export and the import with their engines set; run as
    printed, they give a memory of this engine with the same states."""
    import os
    import re
    import shlex

    this = engine_name(Config().memory.engine)
    other = "kuzu" if this == "ladybug" else "ladybug"
    kgagent = Path(sys.executable).parent / "kgagent"
    if not kgagent.exists():
        pytest.skip(f"no kgagent script beside {sys.executable}")
    env = {k: v for k, v in os.environ.items() if k != "KGAGENT_ENGINE"}
    path = tmp_path / "a memory"
    subprocess.run(
        [sys.executable, "-c", MADE_BY, str(path)], env={**env, "KGAGENT_ENGINE": other}, check=True
    )
    if chosen_by == "--set":
        info = [
            str(kgagent),
            "memory",
            "info",
            "--memory",
            str(path),
            "--set",
            f"memory.engine={this}",
        ]
    else:
        env["KGAGENT_ENGINE"] = this
        info = [str(kgagent), "memory", "info", "--memory", str(path)]
    res = subprocess.run(info, env=env, capture_output=True, text=True)
    assert res.returncode == 1 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    advice = re.findall(r"`([^`]*)`", res.stderr.split(f"into a {this} memory", 1)[-1])
    assert len(advice) == 2, res.stderr
    for command in advice:
        words = shlex.split(command)
        run_env = dict(env)
        while "=" in words[0]:
            name, value = words.pop(0).split("=", 1)
            run_env[name] = value
        assert words[0] == "kgagent", command
        done = subprocess.run(
            [str(kgagent), *words[1:]], env=run_env, capture_output=True, text=True
        )
        assert done.returncode == 0, (command, done.stderr)
    with Memory.open(tmp_path / f"a memory-{this}", Config(), read_only=True) as m:
        assert m.manifest["engine"] == this
        assert m.cypher("MATCH (s:State) RETURN count(s) AS n")[0]["n"] == 3


def test_a_path_the_engine_cannot_take_is_one_line(tmp_path: Path) -> None:
    """A file name with bytes that are not UTF-8 (or any non-ASCII name under LC_ALL=C with
    PYTHONUTF8=0) reached the engine's binding and failed there, in a traceback."""
    import os

    odd = tmp_path / os.fsdecode(b"m\xe9moire") / "graph.db"
    with pytest.raises(MemoryStoreError, match=r"cannot be handed to the graph engine") as e:
        GraphDB(odd, engine_name(Config().memory.engine))
    assert "m\\udce9moire" in str(e.value) and "\n" not in str(e.value)
    assert not odd.parent.exists()
