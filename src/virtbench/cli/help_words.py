"""Help that names a value as people write it: `--runs N`, `--results DIR`, `RUN...`, a
range as "at least 0", rather than the Python types Typer shows (`<int>`, `<list[str]>`,
`x>=0`, `{A [B]}...`). Typer has no setting for it: its help methods are replaced here,
once, when the CLI is imported."""

from __future__ import annotations

from typing import Any

from typer import core
from typer._click import _textwrap

# Typer's type labels -> the word a person writes
WORDS = {"int": "N", "float": "NUMBER", "str": "TEXT", "list[str]": "TEXT", "path": "PATH"}


def value_word(label: str) -> str:
    """A value's name in help from Typer's label ("<int range>" -> "N", "<a|b>" -> "a|b")."""
    bare = label.strip("<>").removesuffix(" range")
    if "|" in bare:
        return bare
    return WORDS.get(bare, bare.upper())


def range_words(low: Any, high: Any) -> str | None:
    """A number's range as people say it ("at least 0", "1 to 100"); None: unbounded."""
    if low is not None and high is not None:
        return f"{low} to {high}"
    if low is not None:
        return f"at least {low}"
    if high is not None:
        return f"at most {high}"
    return None


def _option_type(self: core.TyperOption, ctx: Any) -> str | None:
    if self.metavar is not None:
        return self.metavar
    word = value_word(self.display_type(ctx))
    return f"{word}..." if self.nargs != 1 else word


def _option_range(self: core.TyperOption) -> str | None:
    if self.count and self.min == 0 and self.max is None:
        return None
    return range_words(self.min, self.max)


def _argument_name(self: core.TyperArgument) -> str:
    """An argument in help: its metavar as written ("A [B]"), else its name in capitals,
    "..." where it takes several (RUN...)."""
    if self.metavar is not None:
        return self.metavar
    name = (self.name or "").upper()
    return f"{name}..." if self.nargs != 1 else name


def _argument_usage(self: core.TyperArgument) -> str:
    """click's own: RUN, [SPEC], RUN...; a metavar ("A [B]") as it is written."""
    name = _argument_name(self)
    return name if self.required or self.metavar is not None else f"[{name}]"


def _whole_words(init: Any) -> Any:
    def wrapped(self: Any, *args: Any, **kw: Any) -> None:
        kw.setdefault("break_on_hyphens", False)  # never "--target-|cv"
        init(self, *args, **kw)

    return wrapped


def install() -> None:
    # Typer has no setting for these words: its methods (and its click's) are replaced
    wrap, opt, arg = _textwrap.TextWrapper, core.TyperOption, core.TyperArgument
    wrap.__init__ = _whole_words(wrap.__init__)  # type: ignore[method-assign]  # no setting
    opt.display_type_rich = _option_type  # type: ignore[method-assign]  # no setting
    core.TyperOption._get_number_range_help_str = _option_range  # type: ignore[method-assign]  # no setting
    arg.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign]  # no setting
    core.TyperArgument._get_number_range_help_str = (  # type: ignore[method-assign]  # no setting
        lambda self: range_words(self.min, self.max)
    )
    core.TyperArgument._usage_display_name = _argument_usage  # type: ignore[method-assign]  # no setting
    core.TyperArgument._rich_display_name = _argument_name  # type: ignore[method-assign]  # no setting
