"""The built-in shell's `sh -c SCRIPT` → simple commands joined by `;`, `&&`, `||` and newlines.

Containers without a process still answer `kubectl exec … -- sh -c '…'` the way scripts in
tests use it: a list of simple commands, `exit [N]`, and the exit status of the last command run.
Anything a real shell would expand or redirect (pipes, redirections, `$…`, command substitution,
control flow) is refused with exit 2 and a message naming it, rather than run differently.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

UNSUPPORTED_EXIT = 2
_OPERATORS = (";", "&&", "||")
_PUNCTUATION = ";&|<>()\n"
_KEYWORDS = {"if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac",
             "function", "select", "{", "}", "!"}


class Unsupported(Exception):
    """A construct the built-in shell does not run; its text is the stderr line."""


def parse(script: str) -> list[tuple[str | None, list[str]]]:
    """(operator joining it to the previous command, argv) pairs; raises Unsupported."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = [piece for token in lexer for piece in _split_operators(token)]
    except ValueError as exc:  # an unterminated quote
        raise Unsupported(f"sh: syntax error: {exc}") from None
    commands: list[tuple[str | None, list[str]]] = []
    operator: str | None = None
    argv: list[str] = []
    for token in tokens:
        if token == "\n":  # ends a command; blank lines and a newline after `&&`/`||` join nothing
            if argv:
                commands.append((operator, argv))
                operator, argv = ";", []
            continue
        if token in _OPERATORS:
            if not argv:
                raise Unsupported(f"sh: syntax error: unexpected {token!r}")
            commands.append((operator, argv))
            operator, argv = token, []
            continue
        if token[0] in _PUNCTUATION:
            raise Unsupported(f"sh: {token!r} is not supported by the twin's built-in shell")
        if not argv and token in _KEYWORDS:
            raise Unsupported(f"sh: {token!r} is not supported by the twin's built-in shell")
        if "$" in token or "`" in token:
            raise Unsupported(f"sh: expansion in {token!r} is not supported by the twin's built-in shell")
        argv.append(token)
    if argv:
        commands.append((operator, argv))
    elif operator in ("&&", "||"):
        raise Unsupported("sh: syntax error: unexpected end of file")
    return commands


def _split_operators(token: str) -> list[str]:
    """shlex joins neighbouring punctuation (`;\n`, `&&;`); split such a run into operators."""
    if not token or token.strip(_PUNCTUATION):
        return [token]
    pieces: list[str] = []
    while token:
        size = 2 if token[:2] in ("&&", "||") else 1
        if size == 1 and token[0] not in ";\n":
            return [*pieces, token]  # an operator the shell does not run (`|`, `>`, `&`, …)
        pieces.append(token[:size])
        token = token[size:]
    return pieces


def run(script: str, run_command: Callable[[list[str]], tuple[bytes, bytes, int]]) -> tuple[bytes, bytes, int]:
    """Runs the script's commands in order; `exit [N]` stops it (N defaults to the last status)."""
    out, err, status, _ = run_lines(script, run_command)
    return out, err, status


def run_lines(script: str, run_command: Callable[[list[str]], tuple[bytes, bytes, int]],
              status: int = 0) -> tuple[bytes, bytes, int, bool]:
    """`run`, continuing from a previous `status` (what an interactive shell carries from line to
    line); the last value says whether the shell has ended (`exit`, or an error that ends it)."""
    try:
        commands = parse(script)
    except Unsupported as exc:
        return b"", (str(exc) + "\n").encode(), UNSUPPORTED_EXIT, False
    out, err = b"", b""
    for operator, argv in commands:
        if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
            continue
        if argv[0] == "exit":
            if len(argv) > 2:
                return out, err + b"sh: exit: too many arguments\n", 1, True
            if len(argv) == 2:
                if not argv[1].isdigit():
                    return out, err + f"sh: exit: Illegal number: {argv[1]}\n".encode(), UNSUPPORTED_EXIT, True
                status = int(argv[1]) % 256
            return out, err, status, True
        o, e, status = run_command(argv)
        out, err = out + o, err + e
    return out, err, status, False
