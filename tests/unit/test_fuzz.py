"""Bad input, generated (hypothesis): a spec or a command line is either accepted, or
refused with one line naming what to fix; never a traceback, never an internal error."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from virtbench import cli
from virtbench import spec as specmod
from virtbench.errors import SpecError
from virtbench.spec import EXPERIMENT_TYPES, InstanceOptions
from virtbench.spec import flags as spec_flags
from virtbench.store import Sample, Store
from virtbench.tables.flags import FLAG_FIELDS

HOSTILE = [
    "../../etc/passwd",
    "a;rm -rf /",
    "$(id)",
    "`id`",
    "x\ny",
    "tab\there",
    "vb-abc123-1",
    "",
    " ",
    "\x00",
    "é",
    "-1",
    "0",
    "1e999",
    "nan",
    "--runs",
    "crun:runsc",
    "docker:../x",
    "native,crun",
    "%s%n",
    "{name}",
    "'",
    '"',
    "\\",
    "a" * 300,
    "latest",
    "all",
]
RUNTIMES = [
    "native",
    "crun",
    "runc",
    "runsc",
    "docker",
    "docker:runsc",
    "podman",
    "lxc",
    "qemu",
    "qemu:q35:tcg",
    "firecracker",
    "cloud-hypervisor",
]
text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12))
scalar = st.one_of(
    st.booleans(), st.integers(min_value=-(2**66), max_value=2**66), st.floats(), text
)
value = st.recursive(
    scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(text, c, max_size=3), max_leaves=6
)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def experiment(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from([*EXPERIMENT_TYPES]) | text)
    model = EXPERIMENT_TYPES.get(kind)
    names = st.sampled_from(list(model.model_fields)) if model else text
    d = draw(st.dictionaries(names | text, value, max_size=4))
    if draw(st.integers(0, 9)):  # mostly a known type, so validation goes deep
        d["type"] = kind
    return d


@st.composite
def spec_data(draw: st.DrawFn) -> dict:
    d: dict = {"name": draw(text) if draw(st.booleans()) else "fuzz"}
    d["runtimes"] = draw(st.lists(st.sampled_from(RUNTIMES) | text, max_size=3))
    d["experiment"] = draw(st.lists(experiment(), max_size=2))
    if draw(st.booleans()):
        keys = st.sampled_from(list(InstanceOptions.model_fields)) | text
        d["instance"] = draw(st.dictionaries(keys, value, max_size=3))
    if draw(st.booleans()):
        opts = st.dictionaries(
            st.sampled_from(["cpus", "memory_mib", "guest", "kernel", "api", "runtime", "machine"])
            | text,
            value,
            max_size=2,
        )
        d["runtime"] = draw(st.dictionaries(st.sampled_from(RUNTIMES) | text, opts, max_size=2))
    if draw(st.booleans()):
        d.update(draw(st.dictionaries(text, value, max_size=2)))
    return d


def one_line(message: str) -> None:
    assert message.strip(), "an empty error"
    assert "\n" not in message and "\r" not in message, message
    assert "Traceback" not in message


@SETTINGS
@given(spec_data())
def test_any_spec_is_valid_or_one_line_error(data):
    try:
        parsed = specmod.parse(data, "fuzz.toml")
    except SpecError as exc:
        one_line(str(exc))
        assert str(exc).startswith("fuzz.toml")
        return
    # what a valid spec carries into names, labels and paths is plain
    assert re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", parsed.name)
    assert all(re.fullmatch(r"[a-z0-9-]+(:[a-z0-9-]+)*", r) for r in parsed.runtimes)


FLAGS = list(FLAG_FIELDS)


@SETTINGS
@given(
    st.sampled_from(specmod.catalog_names()),
    st.none() | st.lists(st.sampled_from(RUNTIMES) | text, max_size=3),
    # what typer hands over: numbers, strings, lists of strings (and, fuzzing deeper, more)
    st.dictionaries(
        st.sampled_from(FLAGS), scalar | st.lists(text, max_size=3) | value, max_size=3
    ),
)
def test_any_flags_on_any_catalog_spec_are_valid_or_one_line_error(name, rts, flags):
    _, raw, where = specmod.load(name)
    try:
        spec_flags.with_overrides(raw, where, rts, {f: flags.get(f) for f in FLAGS})
    except SpecError as exc:
        one_line(str(exc))


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\xff\xfe name", "not UTF-8 text"),
        (b"name = ", "fuzz.toml:"),
        (b"[[experiment]]\ntype = 'boot'\n", "name: Field required"),
    ],
)
def test_unreadable_or_broken_spec_files(tmp_path, content, says):
    path = tmp_path / "fuzz.toml"
    path.write_bytes(content)
    with pytest.raises(SpecError, match=says) as exc:
        specmod.load(str(path))
    one_line(str(exc.value))
    path.chmod(0)
    if os.geteuid() != 0:  # root reads anything
        with pytest.raises(SpecError, match="cannot read"):
            specmod.load(str(path))


class Started(BaseException):  # past main()'s catch-all of Exception
    """The command line was accepted and the run would start."""


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A store with one small run, so show, compare and export get past the run id."""
    d = tmp_path_factory.mktemp("results")
    st_ = Store(d)
    st_.create_run("abc123", "fuzz", ["virtbench"], {"runtimes": ["native", "crun"]})
    for rt in ("native", "crun"):
        for rep in range(3):
            st_.add_sample(
                "abc123",
                Sample("boot", "boot.spawn_to_exit", 1.0 + rep, "ms", "lower", rt, "hello", rep),
            )
    st_.finish_run("abc123", "completed")
    st_.close()
    return d


OPTIONS = {
    "run": [
        "--runtimes",
        "--runs",
        "--warmups",
        "--benchmark-times",
        "--step",
        "--max",
        "--instances",
        "--instances-per-benchmark",
        "--workloads",
        "--worker",
        "--background",
        "--attackers",
        "--placements",
        "--target-cv",
        "--max-runs",
        "--resume",
    ],
    "show": ["--wide"],
    "compare": ["--runtimes", "--min-effect", "--alpha", "--metric", "--fail-on"],
    "export": ["--format", "--schema"],
    "list": [],
}
ARGS = {
    "run": ["quickstart", "boot", "isolation", "nope"],
    "show": ["abc123", "latest"],
    "compare": ["abc123", "latest"],
    "export": ["abc123"],
    "list": [],
}


@st.composite
def command_line(draw: st.DrawFn) -> list[str]:
    cmd = draw(st.sampled_from(list(OPTIONS)))
    args = st.sampled_from(ARGS[cmd]) | text if ARGS[cmd] else text
    argv = [cmd, *draw(st.lists(args, max_size=2))]
    for _ in range(draw(st.integers(0, 4))):
        argv.append(
            draw(
                st.sampled_from(OPTIONS[cmd]) | st.sampled_from(["--help", "-x"])
                if OPTIONS[cmd]
                else text
            )
        )
        if draw(st.integers(0, 4)):
            argv.append(draw(text | st.sampled_from(["3", "0", "-5", "1.5", "native,crun"])))
    return [a.replace("\x00", "") for a in argv]  # argv cannot carry NUL


@SETTINGS
@given(command_line())
def test_any_command_line_is_accepted_or_one_line_error(results, argv):
    """In-process through the console script's main(); a run that would start raises
    Started instead (nothing is started on the host)."""
    out, err = io.StringIO(), io.StringIO()
    env = {"VIRTBENCH_RESULTS": str(results), "COLUMNS": "200"}
    with (
        mock.patch("virtbench.run.runner.execute", side_effect=Started),
        mock.patch.object(cli.sys, "argv", ["virtbench", *argv]),
        mock.patch.dict(os.environ, env),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            cli.main()
        except Started:
            return
        except SystemExit as exc:
            code = exc.code
    said = err.getvalue()
    assert "internal error" not in said and "Traceback" not in said, (argv, said)
    if "error" in said:  # refused: exactly one line, and a failing exit code
        assert len(said.strip().splitlines()) == 1 and said.startswith("error: "), (argv, said)
        assert code in (1, 2), (argv, code)
    else:  # accepted: compare's verdicts exit 1 (worse) or 3 (too few samples)
        assert code in (0, None) or (argv[0] == "compare" and code in (1, 3)), (argv, code)
