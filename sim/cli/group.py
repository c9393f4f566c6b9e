"""The ``specsim`` command group and the one place bad input becomes one line and exit 2.

Every failure the user can fix prints exactly one line on stderr,
``specsim: error: SOURCE: FIELD: what is wrong``, and exits with status 2: a
``SpecsimError`` from the library, click's own usage errors (unknown option, bad option
value, missing argument: click would print usage, a hint and the error on four lines),
and an operating-system error on a named file (a full disk while writing). Library errors
name the library's parameters (``SpecsimError.param``); ``flag_for`` maps each to the flag
that sets it, so messages speak the command line's language. Commands added by other
modules need nothing: the group handles their errors too.
"""

from __future__ import annotations

import difflib
import errno
import importlib
import os
import sys
from typing import Any, NoReturn

import click

from sim import __version__
from sim.errors import SpecsimError
from sim.files import os_reason

#: Library parameters whose flag is not ``--`` + the name with hyphens.
PARAM_FLAGS: dict[str, str] = {
    "field": "--solve",
    "targets": "--target",
    "sets": "--set",
    "grids": "--grid",
    "fit_timing": "--fit",
    "trees": "--tree",
    "chains": "--chain",
    "concurrencies": "--concurrency",
    "phases": "--phase",
    "metrics": "--metric",
}


#: errno values of a write to stdout that cannot go on (no file name on the error).
_OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def flag_for(param: str) -> str:
    """The command-line flag that sets library parameter ``param``."""
    return PARAM_FLAGS.get(param, "--" + param.replace("_", "-"))


def cli_error(exc: SpecsimError) -> SpecsimError:
    """``exc`` with its parameter (if it has no other source) named by its flag."""
    if exc.source is None and exc.param is not None:
        return SpecsimError(exc.message, source=flag_for(exc.param), field=exc.field)
    return exc


def one_line(text: str) -> str:
    """``text`` on one line: newlines and other control characters escaped."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


#: Longest error line (bytes of UTF-8, the "specsim: error: " prefix included): a path or a
#: value quoted in full could make it megabytes long.
MAX_ERROR_LINE = 4096

#: Longest source (file path, option) and field kept whole in an error line; longer ones
#: keep their start and end around an ellipsis (a path's file name stays readable).
MAX_PART = 400


def abbreviate(text: str, limit: int) -> str:
    """``text`` if at most ``limit`` characters, else its start and end around ``...``."""
    if len(text) <= limit:
        return text
    head = (limit - 3) // 3
    return text[:head] + "..." + text[len(text) - (limit - 3 - head) :]


def error_line(exc: SpecsimError) -> str:
    """The one line bad input gets: ``specsim: error: SOURCE: FIELD: message``, control
    characters escaped, a long source or field shortened in the middle and the whole at
    most ``MAX_ERROR_LINE`` bytes."""
    exc = cli_error(exc)
    where = exc.source if exc.source else exc.param
    parts = [abbreviate(one_line(p), MAX_PART) for p in (where, exc.field) if p]
    line = "specsim: error: " + ": ".join([*parts, one_line(exc.message)])
    if len(line.encode("utf-8")) > MAX_ERROR_LINE:
        line = abbreviate(line, MAX_ERROR_LINE // 4)  # 4 bytes at most a character
    return line


def echo_error(exc: SpecsimError) -> None:
    """The one line on stderr that bad input gets."""
    click.echo(error_line(exc), err=True)


def _command_name(ctx: click.Context | None) -> str:
    if ctx is None:
        return "specsim"
    path = ctx.command_path.split()
    return " ".join(path[1:]) or "specsim"


def usage_error(exc: click.UsageError) -> SpecsimError:
    """click's usage error as one SpecsimError: the command, the option, what is wrong."""
    command = _command_name(exc.ctx)
    if isinstance(exc, click.NoSuchOption):
        close = exc.possibilities or difflib.get_close_matches(
            exc.option_name, _option_names(exc.ctx), n=3
        )
        hint = f"; did you mean {' or '.join(sorted(close))}?" if close else ""
        return SpecsimError(f"no such option{hint}", source=command, field=exc.option_name)
    if isinstance(exc, click.BadParameter) and exc.param is not None:
        name = _param_name(exc.param)
        if isinstance(exc, click.MissingParameter):
            what = "argument" if isinstance(exc.param, click.Argument) else "option"
            return SpecsimError(f"required {what} is missing", source=command, field=name)
        return SpecsimError(exc.message.rstrip("."), source=command, field=name)
    message = exc.format_message().rstrip(".")
    if message.startswith("No such command"):
        names = sorted(exc.ctx.command.list_commands(exc.ctx)) if exc.ctx else []  # type: ignore[attr-defined]
        word = message.split("'")[1] if "'" in message else ""
        close = difflib.get_close_matches(word, names, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return SpecsimError(f"no such command{hint} (commands: {', '.join(names)})", field=word)
    return SpecsimError(message, source=command)


def _param_name(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return max(param.opts, key=len)
    return (param.human_readable_name or param.name or "argument").upper()


def _option_names(ctx: click.Context | None) -> list[str]:
    if ctx is None:
        return []
    return [o for p in ctx.command.params if isinstance(p, click.Option) for o in p.opts]


def _os_error(exc: OSError) -> SpecsimError:
    where = exc.filename if exc.filename is not None else "specsim"
    return SpecsimError(os_reason(exc), source=str(where))


def _silence_stdout() -> None:
    """Point file descriptor 1 at /dev/null so that the interpreter's own flush at exit
    finds nothing to fail on (a closed pipe or a full device would print a second error)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a file (a test runner's buffer): nothing will flush at exit


def _output_failed(exc: OSError) -> NoReturn:
    """stdout could not be written: a reader that stopped reading (EPIPE) is the
    conventional quiet exit 1, as ``head`` leaves ``yes``; anything else (a full disk, a
    device that refuses) is one line and exit 2."""
    _silence_stdout()
    if exc.errno == errno.EPIPE:
        sys.exit(1)
    echo_error(SpecsimError(f"cannot write: {os_reason(exc)}", source="standard output"))
    sys.exit(2)


def _out_of_resources(exc: BaseException) -> NoReturn:
    """Memory or recursion depth ran out: one line (what ran out, what to do), exit 2."""
    what = (
        "out of memory"
        if isinstance(exc, MemoryError)
        else "input nested too deeply (recursion limit)"
    )
    echo_error(
        SpecsimError(
            f"{what}; give a smaller input (fewer requests, replications or grid points)",
            source="specsim",
        )
    )
    sys.exit(2)


class SpecsimGroup(click.Group):
    """A click group that turns every fixable failure into one line and exit status 2, and
    imports a command's module only when the command is asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy: dict[str, tuple[str, str, str]] = {}

    def register_lazy(self, commands: dict[str, tuple[str, str, str]]) -> None:
        """``commands``: name -> (module, attribute, first paragraph of its help)."""
        self._lazy.update(commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self._lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self._lazy:
            module, attribute, _ = self._lazy[cmd_name]
            command = getattr(importlib.import_module(module), attribute)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def _help_line(self, cmd_name: str, limit: int) -> str:
        """The command's help line as click would print it, without importing it."""
        if cmd_name in self.commands:
            return self.commands[cmd_name].get_short_help_str(limit)
        # a stand-in with the same help: click's own shortening, without the import
        return click.Command(cmd_name, help=self._lazy[cmd_name][2]).get_short_help_str(limit)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        with formatter.section("Commands"):
            formatter.write_dl([(name, self._help_line(name, limit)) for name in names])

    def main(
        self,
        args: Any = None,
        prog_name: Any = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **kw: Any,
    ) -> Any:
        try:
            rv = super().main(
                args, prog_name or "specsim", complete_var, standalone_mode=False, **kw
            )
        except click.UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError" and exc.ctx is not None:
                click.echo(exc.ctx.get_help())  # `specsim` alone: the help, as asked
                sys.exit(0)
            echo_error(usage_error(exc))
            sys.exit(2)
        except click.ClickException as exc:
            echo_error(SpecsimError(exc.format_message(), source=_command_name(None)))
            sys.exit(2)
        except click.Abort:
            click.echo("specsim: interrupted", err=True)
            sys.exit(130)
        except OSError as exc:  # help or version text to a stdout that cannot take it
            if exc.filename is not None:
                raise
            _output_failed(exc)
        try:
            sys.stdout.flush()  # a full or closed stdout is found here, not at exit
        except OSError as exc:
            _output_failed(exc)
        except ValueError:
            pass  # stdout closed by the caller
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SpecsimError as exc:
            echo_error(exc)
            sys.exit(2)
        except KeyboardInterrupt:
            click.echo("specsim: interrupted", err=True)
            sys.exit(130)
        except (MemoryError, RecursionError) as exc:
            _out_of_resources(exc)
        except OSError as exc:
            if exc.filename is None and exc.errno in _OUTPUT_ERRNOS:
                _output_failed(exc)  # stdout: a closed pipe, a full disk
            if exc.filename is None:
                raise
            echo_error(_os_error(exc))
            sys.exit(2)


@click.group(cls=SpecsimGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="specsim")
def main() -> None:
    """Simulate EAGLE-style speculative decoding: throughput, its spread, and what it takes."""
