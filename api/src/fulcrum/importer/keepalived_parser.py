"""keepalived.conf text to a tree of directives, each with its file and line.

keepalived's syntax: whitespace-separated words, `{` ... `}` blocks (the brace may open on the
next line), comments from `#` or `!`, double-quoted words. `include PATTERN` is resolved only
against the files the user uploaded with the import; nothing is read from this machine's disk.
Lines keepalived pre-processes (`@host` conditionals, `$NAME=value` parameters) are kept as
directives of their own so the mapper reports them.
"""

from __future__ import annotations

import fnmatch
import posixpath
from dataclasses import dataclass, field

from fulcrum.importer import limits
from fulcrum.importer.limits import ImportRejected
from fulcrum.importer.report import Origin, Report

MAIN = "keepalived.conf"


@dataclass
class Directive:
    keyword: str
    args: list[str]
    origin: Origin
    block: list[Directive] | None = None  # None: a plain statement, not a block

    def children(self) -> list[Directive]:
        return self.block or []


@dataclass
class _Reader:
    includes: dict[str, str]
    report: Report
    files: list[str] = field(default_factory=list)  # in reading order, for the report
    total_chars: int = 0
    reads: int = 0
    directives: int = 0


def parse(main: str, includes: dict[str, str], report: Report) -> tuple[list[Directive], list[str]]:
    """The top-level directives (includes spliced in place) and the files read, in order."""
    limits.check_text("text", MAIN, main)
    if len(includes) > limits.MAX_INCLUDES:
        raise ImportRejected(
            "includes", f"{len(includes)} include files; at most {limits.MAX_INCLUDES} are read"
        )
    for name, text in includes.items():
        limits.check_text("includes", f"include {name[:64]!r}", text)
    reader = _Reader(includes, report)
    return _read_file(reader, MAIN, main, stack=()), reader.files


def _read_file(reader: _Reader, name: str, text: str, stack: tuple[str, ...]) -> list[Directive]:
    if name in stack:
        chain = " → ".join((*stack, name))
        raise ImportRejected("includes", f"include loop: {chain}")
    if len(stack) >= limits.MAX_INCLUDE_DEPTH:
        raise ImportRejected(
            "includes", f"includes nest deeper than {limits.MAX_INCLUDE_DEPTH} files: {' → '.join(stack)}"
        )
    reader.reads += 1
    if reader.reads > limits.MAX_FILE_READS:
        raise ImportRejected("includes", f"the includes read more than {limits.MAX_FILE_READS} files")
    reader.total_chars += len(text)
    if reader.total_chars > limits.MAX_TOTAL_CHARS:
        raise ImportRejected(
            "includes", f"the includes expand to more than {limits.MAX_TOTAL_CHARS} characters"
        )
    if name not in reader.files:
        reader.files.append(name)
    tokens = _tokens(name, text)
    directives, end = _block(reader, tokens, 0, name, depth=0, stack=(*stack, name))
    if end < len(tokens):
        token = tokens[end]
        raise ImportRejected(
            "text", f"{name} line {token.origin.line}: '}}' closes a block that was never opened"
        )
    return directives


@dataclass(frozen=True)
class _Token:
    word: str  # "" marks the end of a line
    origin: Origin


def _tokens(name: str, text: str) -> list[_Token]:
    tokens: list[_Token] = []
    for number, line in enumerate(text.splitlines(), start=1):
        origin = Origin(name, number, line.strip())
        for word in _words(line):
            tokens.append(_Token(word, origin))
        tokens.append(_Token("", origin))
    return tokens


def _words(line: str) -> list[str]:
    words: list[str] = []
    current = ""
    quoted = False
    for char in line:
        if quoted:
            if char == '"':
                quoted = False
                words.append(current)
                current = ""
            else:
                current += char
        elif char == '"':
            quoted = True
        elif char in "#!" and not current:
            break
        elif char in "{}":
            if current:
                words.append(current)
                current = ""
            words.append(char)
        elif char.isspace():
            if current:
                words.append(current)
                current = ""
        else:
            current += char
    if current:
        words.append(current)
    return words


def _block(
    reader: _Reader, tokens: list[_Token], index: int, name: str, depth: int, stack: tuple[str, ...]
) -> tuple[list[Directive], int]:
    """Directives from `index` to the matching '}' (or the end); returns them and the '}' index."""
    if depth > limits.MAX_BLOCK_DEPTH:
        raise ImportRejected(
            "text",
            f"{name} line {tokens[index - 1].origin.line}: blocks nest deeper than {limits.MAX_BLOCK_DEPTH}",
        )
    directives: list[Directive] = []
    words: list[str] = []
    origin: Origin | None = None
    while index < len(tokens):
        token = tokens[index]
        if token.word == "{":
            if words:
                statement = _statement(reader, words, origin or token.origin)
            elif directives and directives[-1].block is None:
                statement = directives.pop()  # the brace opened on the line after its keyword
            else:
                raise ImportRejected(
                    "text", f"{name} line {token.origin.line}: '{{' without a keyword before it"
                )
            statement.block, index = _block(reader, tokens, index + 1, name, depth + 1, stack)
            if index >= len(tokens):
                raise ImportRejected(
                    "text",
                    f"{name} line {statement.origin.line}: the block of {statement.keyword!r} "
                    "is never closed",
                )
            directives.append(statement)
            words, origin = [], None
        elif token.word == "}":
            if words:
                directives.extend(_complete(reader, _statement(reader, words, origin or token.origin), stack))
            return directives, index
        elif token.word == "":
            if words:
                directives.extend(_complete(reader, _statement(reader, words, origin or token.origin), stack))
            words, origin = [], None
        else:
            origin = origin or token.origin
            words.append(token.word)
        index += 1
    return directives, index


def _statement(reader: _Reader, words: list[str], origin: Origin) -> Directive:
    reader.directives += 1
    if reader.directives > limits.MAX_DIRECTIVES:
        raise ImportRejected("text", f"more than {limits.MAX_DIRECTIVES} directives")
    return Directive(words[0], words[1:], origin)


def _complete(reader: _Reader, statement: Directive, stack: tuple[str, ...]) -> list[Directive]:
    """A finished statement; an `include` is replaced by the directives of the files it names."""
    if statement.keyword != "include":
        return [statement]
    if len(statement.args) != 1:
        reader.report.skipped(statement.origin, "include takes one file name or pattern")
        return []
    matches = _matching(reader.includes, statement.args[0])
    if not matches:
        reader.report.skipped(
            statement.origin,
            f"no uploaded file matches {statement.args[0]!r}; includes are read only from the files uploaded "
            "with the import",
        )
        return []
    reader.report.imported(statement.origin, "included " + ", ".join(matches))
    spliced: list[Directive] = []
    for match in matches:
        spliced += _read_file(reader, match, reader.includes[match], stack)
    return spliced


def _matching(includes: dict[str, str], pattern: str) -> list[str]:
    """Uploaded names that the pattern matches, as a path or by its last component (the upload
    usually has the file's base name, the include its full path on the old machine)."""
    base = posixpath.basename(pattern)
    return sorted(
        name
        for name in includes
        if fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(posixpath.basename(name), base)
    )


def walk(directives: list[Directive]) -> list[Directive]:
    """Every directive, depth first."""
    out: list[Directive] = []
    for directive in directives:
        out.append(directive)
        out += walk(directive.children())
    return out
