"""A tokenizer for the Cypher dialect of Kùzu and LadybugDB, for checking queries.

It follows the engines' own lexer rules (``src/antlr4/Cypher.g4`` of both):

* comments: ``/* … */``, whose body never holds ``*/`` (``( ~[*] | '*' ~[/] )*``),
  and ``// …`` up to a line feed or the end (a lone carriage return does not end it);
* strings: ``'…'`` and ``"…"`` with the escapes ``\\\\ \\' \\" \\b \\f \\n \\r \\t
  \\xHH \\uHHHH \\UHHHHHHHH`` only (any other backslash makes the literal invalid);
* escaped names: one or more backtick groups, ``\\`a\\`\\`b\\``` is the name ``a`b``;
* parameters: ``$name``, ``$`name``` or ``$1``;
* words: a letter or ``_`` then letters, digits, marks, ``_`` and currency symbols
  (``a$b`` is one word).

Why it is written this way: a checker that reads the text differently from the
engine can be fooled, e.g. by a quote inside a comment. Where the two engines'
versions differ (Kùzu 0.11 takes no ``\\x`` escape), a literal one of them does
not take fails to parse there as a whole: nothing runs. Where the rules could
differ, this lexer errs towards *code*: text it cannot read as a whole comment,
string or name is read as code, so a keyword in it is still seen (the engine
refuses such text as a syntax error anyway). Its words are never longer than the
engine's, so a keyword cannot hide inside one.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

#: The engines' WHITESPACE rule (besides comments).
WHITESPACE = frozenset(
    " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\u1680\u180e\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\u00a0"
)
_ESCAPE = r"\\(?:[\\'\"bBfFnNrRtT]|[xX][0-9a-fA-F]{2}|[uU][0-9a-fA-F]{8}|[uU][0-9a-fA-F]{4})"
_BLOCK = re.compile(r"/\*(?:[^*]|\*[^/])*\*/", re.S)
_LINE = re.compile(r"//[^\n\r]*\r?(?:\n|\Z)")
_SINGLE = re.compile(rf"'(?:[^'\\]|{_ESCAPE})*'", re.S)
_DOUBLE = re.compile(rf'"(?:[^"\\]|{_ESCAPE})*"', re.S)
_BACKTICK = re.compile(r"(?:`[^`]*`)+", re.S)
_NUMBER = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE]-?[0-9]+)?")
_DIGITS = re.compile(r"[0-9]+")

_ASCII_DIGITS = frozenset("0123456789")
_START_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl"})
_PART_CATEGORIES = _START_CATEGORIES | {"Mn", "Mc", "Nd", "Pc"}


@dataclass(frozen=True)
class Token:
    """One token: ``kind`` is word, name (backticks), string, param, number, comment,
    space or op (any other single character)."""

    kind: str
    text: str
    start: int

    @property
    def value(self) -> str:
        """A word or name as the engine reads it (backticks removed); else the text."""
        if self.kind == "name":
            return "`".join(part[1:-1] for part in re.findall(r"`[^`]*`", self.text))
        if self.kind == "param":
            body = self.text[1:]
            return Token("name", body, 0).value if body.startswith("`") else body
        return self.text


def _is_start(c: str) -> bool:
    if c.isascii():
        return c.isalpha() or c == "_"
    cat = unicodedata.category(c)
    return cat == "Pc" or (cat in _START_CATEGORIES and c.isidentifier())


def _is_part(c: str) -> bool:
    if c.isascii():
        return c.isalnum() or c in "_$"
    cat = unicodedata.category(c)
    if cat in ("Sc", "Pc"):
        return True
    return cat in _PART_CATEGORIES and ("a" + c).isidentifier()


def tokens(text: str) -> Iterator[Token]:
    """Every token of ``text`` in order, comments and whitespace included."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in WHITESPACE:
            j = i + 1
            while j < n and text[j] in WHITESPACE:
                j += 1
            yield Token("space", text[i:j], i)
            i = j
            continue
        m = None
        kind = ""
        if c == "/" and text.startswith("/*", i):
            m, kind = _BLOCK.match(text, i), "comment"
        elif c == "/" and text.startswith("//", i):
            m, kind = _LINE.match(text, i), "comment"
        elif c == "'":
            m, kind = _SINGLE.match(text, i), "string"
        elif c == '"':
            m, kind = _DOUBLE.match(text, i), "string"
        elif c == "`":
            m, kind = _BACKTICK.match(text, i), "name"
        elif c == "$":
            j = i + 1
            if j < n and _is_start(text[j]):
                k = j + 1
                while k < n and _is_part(text[k]):
                    k += 1
                yield Token("param", text[i:k], i)
                i = k
                continue
            m = _BACKTICK.match(text, j) if text.startswith("`", j) else _DIGITS.match(text, j)
            if m:
                yield Token("param", text[i : m.end()], i)
                i = m.end()
                continue
        elif c in _ASCII_DIGITS or (c == "." and i + 1 < n and text[i + 1] in _ASCII_DIGITS):
            m, kind = _NUMBER.match(text, i), "number"
        elif _is_start(c):
            j = i + 1
            while j < n and _is_part(text[j]):
                j += 1
            yield Token("word", text[i:j], i)
            i = j
            continue
        if m:
            yield Token(kind, m.group(0), i)
            i = m.end()
        else:  # an operator, or text that is not a whole comment/string/name: read on as code
            yield Token("op", c, i)
            i += 1


def significant(text: str) -> list[Token]:
    """The tokens that mean something: no comments, no whitespace."""
    return [t for t in tokens(text) if t.kind not in ("comment", "space")]


def blank_strings_and_comments(text: str) -> str:
    """``text`` with each string literal replaced by ``''`` and each comment by a space."""
    out = []
    for t in tokens(text):
        if t.kind == "string":
            out.append("''")
        elif t.kind == "comment":
            out.append("\n" if t.text.endswith("\n") else " ")
        else:
            out.append(t.text)
    return "".join(out)
