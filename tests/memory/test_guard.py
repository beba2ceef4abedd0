"""The query guard: a tokenizer that reads Cypher as the engines do, and what it refuses.

The differential tests ask the engine itself: where the tokenizer says "this is a
whole comment / string", the engine must parse it as one, and where it says "this
is code", the engine must not read a comment or string there.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kgagent.config import Config
from kgagent.errors import QueryError
from kgagent.memory import queries
from kgagent.memory.cypher_lexer import significant, tokens
from kgagent.memory.engine import GraphDB, engine_name
from kgagent.memory.guard import classify, params_of


def kinds(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in significant(text)]


def test_comments_strings_and_names_follow_the_engine_rules() -> None:
    assert kinds("/* ' */ COPY") == [("word", "COPY")]
    assert kinds("// it's\nCOPY") == [("word", "COPY")]
    assert kinds("'a\\'b' x") == [("string", "'a\\'b'"), ("word", "x")]
    assert kinds('"a\\"b" x') == [("string", '"a\\"b"'), ("word", "x")]
    assert kinds("`a``b` x") == [("name", "`a``b`"), ("word", "x")]
    assert significant("`a``b`")[0].value == "a`b"
    # Not a whole comment for the engine either: '*' then '*' is a pair, '/' follows.
    assert [t.kind for t in tokens("/* a **/")][:2] == ["op", "op"]
    # A lone carriage return does not end a line comment: read on as code.
    assert ("word", "COPY") in kinds("// x\rCOPY")
    # An invalid escape makes the literal invalid: its inside is read as code.
    assert ("word", "COPY") in kinds("'\\q COPY'")
    # Words: currency symbols continue one ('a$b'), '$' starts a parameter.
    assert kinds("a$b $p $`q` $1") == [
        ("word", "a$b"),
        ("param", "$p"),
        ("param", "$`q`"),
        ("param", "$1"),
    ]
    assert kinds("1COPY") == [("number", "1"), ("word", "COPY")]


@pytest.mark.parametrize(
    "text, writes, files",
    [
        ("MATCH (s:State) RETURN s.id", None, None),
        ("MATCH (s:State) SET s.visits = 1", "SET", None),
        ("MATCH (s) DETACH DELETE s", "DETACH DELETE", None),
        ("COPY (MATCH (s) RETURN s) TO 'f.csv'", None, "COPY"),
        ("COPY State FROM 'f.csv'", "COPY", "COPY"),
        ("COPY State FROM $rows", "COPY", "COPY"),
        ("LOAD FROM 'f' RETURN *", None, "LOAD"),
        ("load extension 'x.so'", None, "LOAD"),
        ("CALL threads = 2", None, "CALL threads = … (a setting)"),
        ("CALL `file_search_path`='/'", None, "CALL file_search_path = … (a setting)"),
        ("CALL read_parquet('x') RETURN *", None, "CALL read_parquet"),
        ("CALL show_tables() RETURN *", None, None),
        ("CALL create_fts_index('S', 'i', ['id'])", "CALL create_fts_index", None),
        ("CHECKPOINT", "CHECKPOINT", "CHECKPOINT"),
        ("DETACH db", None, "DETACH"),
        ("RETURN s.load, n.copy", None, None),
        ("RETURN 'COPY' AS x // LOAD", None, None),
        ("BEGIN TRANSACTION", "BEGIN", None),
    ],
)
def test_classify(text: str, writes: str | None, files: str | None) -> None:
    v = classify(text)
    assert (v.writes, v.files) == (writes, files)


def test_a_keyword_given_as_a_name_is_refused_with_the_backticks_that_pass() -> None:
    """Not reserved words, and still refused as names (a later `set` reads as the clause);
    the refusal says how to write the name instead."""
    from kgagent.errors import ReadOnlyViolation
    from kgagent.memory.guard import FileAccessRefused, check

    with pytest.raises(
        FileAccessRefused, match=r"if load is a name, write it in backticks \(`load`\)$"
    ):
        check("MATCH (s:State) RETURN s.visits AS load", write=False, allow_files=False)
    with pytest.raises(ReadOnlyViolation, match=r"\(SET\); pass --write to allow it; if set is"):
        check("MATCH (k) WITH k.status AS set RETURN set", write=False, allow_files=False)
    assert check("MATCH (k) WITH k.status AS `set` RETURN `set`", write=False, allow_files=False)
    with pytest.raises(ReadOnlyViolation, match=r"\(SET\); pass --write to allow it$"):
        check("MATCH (k) SET k.x = 1", write=False, allow_files=False)  # no name: no hint


@pytest.mark.parametrize(
    "text, word",
    [
        ("MERGE (s:State {id: 's-1'})", "MERGE"),
        ("MATCH (a:State), (b:State) MERGE (a)-[:SIMILAR {weight: 0.9}]->(b)", "MERGE"),
        ("CREATE (s:State {id: 's-1'})", "CREATE"),
        ("MATCH (s:State) DELETE s", "DELETE"),
        ("MATCH (s:State) REMOVE s.thumbnail", "REMOVE"),
        ("DROP TABLE State", "DROP"),
    ],
)
def test_a_write_without_write_is_refused_with_the_pass_write_line(text: str, word: str) -> None:
    """Each clause that writes the graph is refused without ``write`` in the guard's own
    words, and allowed with it."""
    from kgagent.errors import ReadOnlyViolation
    from kgagent.memory.guard import check

    with pytest.raises(ReadOnlyViolation) as info:
        check(text, write=False, allow_files=False)
    assert str(info.value) == f"this query writes ({word}); pass --write to allow it"
    assert check(text, write=True, allow_files=False).writes == word


def test_params_skip_strings_comments_and_names() -> None:
    assert params_of("RETURN $a, '$b', /* $c */ a$d, $`e f`, $a") == ["a", "e f"]


#: The clauses the memory's own queries write with, read off their text (strings and
#: comments blanked) without the guard's tokenizer: ``COPY <table> FROM`` is a bulk load.
_WRITE_CLAUSE = re.compile(
    r"\b(CREATE|MERGE|SET|DETACH\s+DELETE|DELETE|REMOVE|DROP|BEGIN|COMMIT|ROLLBACK|COPY(?=\s+\w+\s+FROM\b))\b",
    re.IGNORECASE,
)


def test_every_named_query_is_classified_as_before() -> None:
    """The memory's own queries: reads stay reads, writes are writes named by their first
    write clause; only the bulk loads reach 'files'."""
    every = queries.load_all()
    for q in every.values():
        v = classify(q.text)
        clause = _WRITE_CLAUSE.search(queries.strip_strings(q.text))
        if clause is None:
            assert v.writes is None, q.name
            assert not q.mutates, q.name
        else:
            assert v.writes == " ".join(clause.group(1).upper().split()), q.name
            assert q.mutates, q.name
        if q.name.startswith("archive_load_"):
            assert v.files == "COPY"
            assert v.writes == "COPY", q.name
        else:
            assert v.files is None, q.name
    # the oracle itself tells the two apart
    for name in ("state_get", "view_states", "archive_export_state"):
        assert every[name].writes is None, name
    for name, word in (("skill_update", "SET"), ("cluster_add_member", "MERGE")):
        assert every[name].writes == word, name


@pytest.fixture(scope="module")
def engine_db(tmp_path_factory) -> GraphDB:
    db = GraphDB(tmp_path_factory.mktemp("guard") / "graph.db", engine_name(Config().memory.engine))
    yield db
    db.close()


def parses(db: GraphDB, query: str) -> bool:
    try:
        db.execute(query)
        return True
    except QueryError:
        return False


FRAGMENTS = [
    "/* ' */",
    "/* a **/",
    "/***/",
    "/* a * / b */",
    "/**/",
    "// x\n",
    "// x\r\n",
    "// x\r",
    "'a\\'b'",
    "'a''b'",
    "'\\q'",
    "'\\x41'",
    "'\\u0041'",
    "'\\U00000041'",
    '"a\\"b"',
    '"it\'s"',
    "'\\\\'",
    "'a\nb'",
]


@pytest.mark.parametrize("frag", FRAGMENTS)
def test_the_engine_agrees_with_the_tokenizer(engine_db: GraphDB, frag: str) -> None:
    """In context: where the engine parses the fragment as one comment (or one
    string), so does the tokenizer; where the tokenizer reads code, the engine
    refuses the query. (The converse may differ by engine version: Kùzu 0.11 does
    not take ``\\x41``, so there the literal fails to parse as a whole.)"""
    as_comment = f"RETURN 1 {frag} AS x"
    hidden = [t.text for t in significant(as_comment)] == ["RETURN", "1", "AS", "x"]
    if parses(engine_db, as_comment):
        assert hidden, frag
    as_string = f"RETURN {frag} AS x"
    one_string = [t.kind for t in significant(as_string)] == ["word", "string", "word", "word"]
    if not hidden and parses(engine_db, as_string):
        assert one_string, frag


def test_keyword_behind_fragment_is_seen_when_the_engine_would_run_it(tmp_path: Path) -> None:
    """For every fragment, a statement after it is found by the guard unless the
    fragment swallows it for the engine too (checked by running it on a scratch db)."""
    db = GraphDB(tmp_path / "graph.db", engine_name(Config().memory.engine))
    try:
        for frag in FRAGMENTS:
            text = f"{frag} CALL threads=2"
            if classify(text).files:
                continue
            # The guard saw no statement: the engine must not run one either.
            assert not parses(db, text), frag
    finally:
        db.close()
