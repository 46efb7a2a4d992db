"""Every input ends in a result or a clear error: never a traceback, a hang, a
stale answer or a silent skip (issue 10, one test class per kind of input).

Most cases start from the slot-pool fixture, whose step has one SYNC001
finding: valid input must keep that finding (exit 1), bad input must be named
as skipped while the finding elsewhere survives.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import BUGGY, check_json, copy_project

from syncscan.cli import main
from syncscan.index import facts as facts_module
from syncscan.index.build import summarise
from syncscan.index.facts import FactsTable, scan
from syncscan.index.ir import Call, iter_calls
from syncscan.project import Config, discover

STEP_ANCHOR = "        n = len(batch.token_ids)\n"


def in_step(project: Path, *lines: str) -> None:
    """Add statements to the fixture's step function (Runner.execute_model)."""
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    assert STEP_ANCHOR in text
    added = "".join(f"        {line}\n" for line in lines)
    runner.write_text(text.replace(STEP_ANCHOR, STEP_ANCHOR + added, 1), encoding="utf-8")


def on_step_path(project: Path, name: str) -> Path:
    """Make the step import and call `engine.<name>.helper`; returns that file's path."""
    runner = project / "engine" / "runner.py"
    text = runner.read_text(encoding="utf-8")
    text = text.replace("import torch\n", f"import torch\nimport engine.{name}\n", 1)
    runner.write_text(text, encoding="utf-8")
    in_step(project, f"engine.{name}.helper(n)")
    return project / "engine" / f"{name}.py"


def skipped(data: dict) -> dict[str, str]:
    return {d["path"]: d["message"] for d in data["diagnostics"] if d["path"]}


def assert_finding_kept(code: int, data: dict) -> None:
    assert code == 1, data
    assert [f["code"] for f in data["findings"]] == ["SYNC001"]
    assert data["findings"][0]["function"] == "engine.runner.Runner.execute_model"


# ---------------------------------------------------------------- 1. internal errors
def _crash(*_args: object, **_kwargs: object) -> None:
    raise RuntimeError("boom\nsecond line")


class TestInternalError:
    """A crash exits 2 with one line naming the file, whatever --exit-zero says."""

    @pytest.mark.parametrize("extra", [[], ["--exit-zero"]], ids=["plain", "exit-zero"])
    def test_one_line_naming_the_file_and_exit_2(
        self, extra, tmp_path, monkeypatch, capsys
    ) -> None:
        project = copy_project(BUGGY, tmp_path / "p")
        monkeypatch.setattr("syncscan.index.build._Builder.module_body", _crash)
        code = main(["check", "--no-cache", "--jobs", "1", *extra, str(project)])
        out, err = capsys.readouterr()
        assert code == 2
        assert "Traceback" not in err
        (line,) = [x for x in err.splitlines() if "internal error" in x]
        assert "while processing engine/" in line
        assert line.endswith("RuntimeError: boom second line")

    @pytest.mark.parametrize("fmt", ["json", "sarif"])
    def test_machine_readable_formats_say_the_run_failed(
        self, fmt, tmp_path, monkeypatch, capsys
    ) -> None:
        project = copy_project(BUGGY, tmp_path / "p")
        monkeypatch.setattr("syncscan.index.build._Builder.module_body", _crash)
        code = main(["check", "--no-cache", "--jobs", "1", "--format", fmt, str(project)])
        out, _ = capsys.readouterr()
        assert code == 2
        data = json.loads(out)
        if fmt == "json":
            assert "findings" not in data  # never read as "no findings"
            assert data["error"]["kind"] == "internal"
            assert data["error"]["path"].startswith("engine/")
        else:
            (invocation,) = data["runs"][0]["invocations"]
            assert invocation["executionSuccessful"] is False
            assert invocation["exitCode"] == 2
            assert "RuntimeError" in invocation["toolExecutionNotifications"][0]["message"]["text"]

    @pytest.mark.parametrize("how", ["-v", "env"])
    def test_traceback_only_when_asked(self, how, tmp_path, monkeypatch, capsys) -> None:
        project = copy_project(BUGGY, tmp_path / "p")
        monkeypatch.setattr("syncscan.index.build._Builder.module_body", _crash)
        args = ["check", "--no-cache", "--jobs", "1", str(project)]
        if how == "-v":
            args.insert(1, "-v")
        else:
            monkeypatch.setenv("SYNCSCAN_TRACEBACK", "1")
        assert main(args) == 2
        assert "Traceback (most recent call last)" in capsys.readouterr().err


# ---------------------------------------------------------------- 2. decoding
@pytest.mark.parametrize("jobs", ["1", "2"], ids=["serial", "prefetch"])
@pytest.mark.parametrize("cookie", ["undefined", "punycode", "rot13", "uu"])
def test_unusable_coding_cookie_is_a_skipped_file(cookie, jobs, tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    on_step_path(project, "cookie").write_text(
        f"# coding: {cookie}\ndef helper(n):\n    return n\n", encoding="ascii"
    )
    code, data, _ = check_json(capsys, "--jobs", jobs, project)
    assert_finding_kept(code, data)
    # A step-path file: the skip makes the result incomplete, and says why.
    message = skipped(data)["engine/cookie.py"]
    assert message.startswith("the step path needs this file, which was skipped")
    assert "(cannot decode: " in message


# ---------------------------------------------------------------- 3. not regular files
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
@pytest.mark.parametrize("where", ["off_path", "step_path"])
def test_fifo_named_py_is_skipped_not_read(where, tmp_path) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    fifo = on_step_path(project, "pipe") if where == "step_path" else project / "engine" / "x.py"
    os.mkfifo(fifo)
    run = subprocess.run(
        [sys.executable, "-m", "syncscan", "check", "--no-cache", "--format", "json", str(project)],
        capture_output=True,
        text=True,
        timeout=120,  # reading the FIFO used to block forever
    )
    data = json.loads(run.stdout)
    assert_finding_kept(run.returncode, data)
    rel = fifo.relative_to(project).as_posix()
    assert "not a regular file (a FIFO)" in skipped(data)[rel]


# ---------------------------------------------------------------- 4. linear text scan
@pytest.mark.parametrize(
    "text",
    [
        '"""\n' + "class A(\n" * 20_000 + '"""\n',  # unclosed headers: was 22-60 s
        "x = 1; " + "class A(B): pass; " * 10_000 + "\n",  # one long line of non-headers
        "\n" + " " * 200_000 + "class A(B):\n    pass\n" * 2,  # a long indentation
    ],
    ids=["unclosed-headers", "long-line", "long-indent"],
)
def test_text_scan_is_linear(text: str) -> None:
    started = time.perf_counter()
    scan(text.encode())
    assert time.perf_counter() - started < 2.0


def test_character_columns_of_a_long_non_ascii_line_are_linear() -> None:
    """Columns count characters; on one 600 KB line they are counted once, not per node."""
    from syncscan.index.build import _Source

    line = "x = ['é', " + ", ".join(["a()"] * 150_000) + "]\n"
    source = _Source(line)
    started = time.perf_counter()
    columns = [source.column(1, byte) for byte in range(12, 600_000, 3)]
    assert time.perf_counter() - started < 2.0
    assert columns[0] == 12  # the two-byte é counts once
    assert source.column(1, 3) == 4


def test_character_columns_count_wide_characters_once() -> None:
    """Characters of two, three and four bytes, anywhere in a line, each count one."""
    from syncscan.index.build import _Source

    lines = ["é = f(中, '😀') + ß", "x = 1", "   y = g('é中😀ß', z)  # ü"]
    source = _Source("\n".join(lines) + "\n")
    for number, line in enumerate(lines, start=1):
        for index in range(len(line) + 1):
            assert source.column(number, len(line[:index].encode())) == index + 1, (line, index)


def test_text_scan_still_finds_headers() -> None:
    found = scan(b"class A(Base,\n        Mixin):\n    def f(self): pass\nasync  def g(): pass\n")
    assert found.classes == (("A", "Base,\n        Mixin"),)
    assert found.defs == {"f", "g"}
    assert scan(b"x = 'class B(C):'\n").classes == ()


# ---------------------------------------------------------------- 5. deep valid code
DEEP_STATEMENTS = {
    "method-chain-250": "y = n" + ".abs()" * 250,
    "binary-600": "y = " + " + ".join(["n"] * 600),
    "attributes-600": "y = n" + ".a" * 600,
    "subscripts-600": "y = n" + "[0]" * 600,
    "unary-600": "y = " + "-" * 600 + "n",
    "not-600": "y = " + "not " * 600 + "n",
    "conditional-400": "y = " + "n if n else " * 400 + "n",
}


@pytest.mark.parametrize("statement", DEEP_STATEMENTS.values(), ids=DEEP_STATEMENTS)
def test_deep_expression_in_step_keeps_the_file(statement: str, tmp_path, capsys) -> None:
    compile(statement, "<deep>", "exec")  # CPython accepts it
    project = copy_project(BUGGY, tmp_path / "p")
    in_step(project, statement)
    code, data, _ = check_json(capsys, project)
    assert_finding_kept(code, data)
    assert "engine/runner.py" not in skipped(data)


def test_long_elif_chain_in_step_keeps_the_file(tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    chain = ["if n == 0:", "    y = 0"]
    for i in range(1, 1500):
        chain += [f"elif n == {i}:", f"    y = {i}"]
    in_step(project, *chain)
    code, data, _ = check_json(capsys, project)
    assert_finding_kept(code, data)


def test_flattened_expression_keeps_its_calls_in_order() -> None:
    source = "def f(t):\n    t" + ".abs()" * 300 + ".synchronize(non_blocking=False)\n"
    summary = summarise(source, "m", "m.py", False)
    calls = [c for stmt in summary.functions["f"].body for c in iter_calls(stmt.value)]
    assert len(calls) == 301
    assert [c.func.attr for c in calls[-2:]] == ["abs", "synchronize"]
    assert all(isinstance(c, Call) for c in calls)
    assert dict(calls[-1].kwargs)["non_blocking"].value is False


# ---------------------------------------------------------------- 6. cache poisoning
def test_deep_source_never_poisons_the_cache(tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    in_step(project, "y = " + "-" * 300 + "n")
    base = ["check", "--format", "json", "--jobs", "1", str(project)]
    for select in ([], ["--select", "SYNC001"], ["--select", "SYNC"]):  # new key: no reuse
        code = main([*base, *select])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        assert_finding_kept(code, json.loads(out))


# ---------------------------------------------------------------- 7. damaged cache
def _deep(n: int) -> str:
    return "[" * n + "]" * n


def _summary_of(cache: Path, module_path: str) -> Path:
    for entry in (cache / "summaries").rglob("*.json"):
        if json.loads(entry.read_text())["summary"]["path"].endswith(module_path):
            return entry
    raise AssertionError(f"no summary of {module_path}")


def _edit_step(edit: Callable[[list], None]) -> Callable[[Path], None]:
    """Damage the step's cached function (its fields decode only on first use)."""

    def damage(path: Path) -> None:
        data = json.loads(path.read_text())
        edit(data["summary"]["classes"]["Runner"][4]["execute_model"])
        path.write_text(json.dumps(data))

    return damage


def _step_field(index: int, value: object) -> Callable[[Path], None]:
    """One field of the step's cached function replaced by `value`."""
    return _edit_step(lambda function: function.__setitem__(index, value))


def _edit_body(edit: Callable[[list], None]) -> Callable[[Path], None]:
    """Damage the step's cached body (its IR's JSON text, summary.py)."""

    def body(function: list) -> None:
        statements = json.loads(function[4])
        edit(statements)
        function[4] = json.dumps(statements)

    return _edit_step(body)


def _body_tag(tag: int) -> Callable[[Path], None]:
    """The step's first statement with IR tag `tag`."""
    return _edit_body(lambda body: body[0].__setitem__(0, tag))


DAMAGE = {
    "record-deep": ("record.json", lambda p: p.write_text(_deep(100_000))),
    "facts-deep": ("facts.json", lambda p: p.write_text(_deep(100_000))),
    "facts-bad-row": (
        "facts.json",
        lambda p: p.write_text(
            json.dumps(
                {**json.loads(p.read_text()), "files": {"x": [1, 2, 3, 4, False, 5, 6, 7, 8]}}
            )
        ),
    ),
    "summary-deep": ("summary", lambda p: p.write_text(_deep(100_000))),
    "summary-unknown-tag": ("summary", _body_tag(999)),
    "summary-negative-tag": ("summary", _body_tag(-1)),
    "summary-body-missing-field": ("summary", _edit_body(lambda body: body[0].pop())),
    "summary-body-extra-field": ("summary", _edit_body(lambda body: body[0].append(0))),
    "summary-body-not-json": ("summary", _step_field(4, "[[1,")),
    "summary-body-not-text": ("summary", _step_field(4, [])),
    "summary-bad-params": ("summary", _step_field(2, [[1]])),
    "summary-bad-decorators": ("summary", _step_field(3, [-5])),
    # Nested deeper than a recursive decoder follows.
    "summary-deep-body": ("summary", _step_field(4, _deep(5_000))),
    "record-fifo": ("record.json", lambda p: (p.unlink(), os.mkfifo(p))),
    "facts-fifo": ("facts.json", lambda p: (p.unlink(), os.mkfifo(p))),
    "summary-fifo": ("summary", lambda p: (p.unlink(), os.mkfifo(p))),
}


@pytest.mark.parametrize("case", DAMAGE, ids=DAMAGE)
def test_damaged_cache_entry_is_rebuilt(case: str, tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    cache = tmp_path / "cache"
    args = ["check", "--format", "json", "--jobs", "1", "--cache-dir", str(cache), str(project)]
    cold_code = main(args)
    cold = json.loads(capsys.readouterr().out)
    target, how = DAMAGE[case]
    path = cache / target if target != "summary" else _summary_of(cache, "engine/runner.py")
    how(path)
    if target == "summary":
        (cache / "record.json").unlink()  # make the run decode summaries
    for _ in range(2):  # the damaged run, then one from the rebuilt entry
        code = main(args)
        out, err = capsys.readouterr()
        assert "Traceback" not in err and code == cold_code
        assert json.loads(out)["findings"] == cold["findings"]
        (cache / "record.json").unlink(missing_ok=True)
    if target == "summary":  # replaced by a whole, valid entry
        from syncscan.index.summary import summary_from_data

        fresh = summary_from_data(json.loads(path.read_text())["summary"])
        assert fresh.classes["Runner"].methods["execute_model"].body


# ---------------------------------------------------------------- 8. stale findings
def test_same_size_edit_with_restored_mtime_is_seen(tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    cache = tmp_path / "cache"
    args = ["check", "--format", "json", "--jobs", "1", "--cache-dir", str(cache), str(project)]
    runner = project / "engine" / "runner.py"
    assert main(args) == 1
    capsys.readouterr()
    before = runner.stat()
    text = runner.read_text(encoding="utf-8")
    launch = "        embed_kernel[(n,)]("
    assert launch in text  # no launch: no device reader, so no finding
    runner.write_text(text.replace(launch, "        #mbed_kernel[(n,)](", 1), encoding="utf-8")
    os.utime(runner, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = runner.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    code = main(args)
    data = json.loads(capsys.readouterr().out)
    assert (code, data["findings"]) == (0, [])


def test_racy_facts_are_read_again(tmp_path, monkeypatch) -> None:
    """A file changed within the stat's resolution is re-read, not trusted; the
    facts are written again only where a row read again is one the next run
    trusts (a racy one it reads again anyway)."""
    from syncscan.index.cache import SummaryCache

    source = tmp_path / "m.py"
    source.write_text("class A(B):\n    pass\n")
    cache = SummaryCache(tmp_path / "cache")
    document = tmp_path / "cache" / "facts.json"
    table = FactsTable({"m": source}, cache)
    table.all()
    assert table.files_read == 1
    written = document.stat().st_ino  # written atomically: a new file each time
    source.write_text("class A(C):\n    pass\n")
    again = FactsTable({"m": source}, cache)
    assert again.all()["m"].classes == (("A", "C"),)
    assert again.files_read == 1  # just written: its stat cannot prove it unchanged
    assert document.stat().st_ino == written  # its racy row is not worth writing
    monkeypatch.setattr(facts_module, "_RACY_NS", 0)
    settled = FactsTable({"m": source}, cache)
    assert settled.all()["m"].classes == (("A", "C"),)
    assert settled.files_read == 1 and document.stat().st_ino != written
    after = FactsTable({"m": source}, cache)
    assert after.all()["m"].classes == (("A", "C"),)
    assert after.files_read == 0


# ---------------------------------------------------------------- 9. deep configuration
@pytest.mark.parametrize("which", ["pyproject", "pack", "baseline"])
def test_deeply_nested_configuration_is_a_configuration_error(which, tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    extra: list[str] = []
    if which == "pyproject":
        bad = project / "pyproject.toml"
        bad.write_text(bad.read_text() + "x = " + _deep(5_000) + "\n")
    elif which == "pack":
        bad = project / "step_pack.toml"
        bad.write_text("x = " + _deep(5_000) + "\n" + bad.read_text())
    else:
        bad = tmp_path / "baseline.json"
        bad.write_text(_deep(100_000))
        extra = ["--baseline", str(bad)]
    code = main(["check", "--no-cache", *extra, str(project)])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and str(bad) in err and "nested too deeply" in err


# ---------------------------------------------------------------- 10. size limit
@pytest.mark.parametrize("jobs", ["1", "2"], ids=["serial", "prefetch"])
def test_file_over_the_size_limit_is_skipped_as_too_large(jobs, tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "max_file_size = 10000\n")
    on_step_path(project, "big").write_text(
        "def helper(n):\n    return n\n" + "".join(f"def f{i}(): pass\n" for i in range(1000))
    )
    code, data, _ = check_json(capsys, "--jobs", jobs, project)
    assert_finding_kept(code, data)
    message = skipped(data)["engine/big.py"]
    assert message.startswith("the step path needs this file, which was skipped")
    assert "too large to parse: " in message and "max_file_size" in message


@pytest.mark.parametrize("value", ["0", "-1", '"5MB"', "true"])
def test_bad_size_limit_is_a_configuration_error(value, tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + f"max_file_size = {value}\n")
    assert main(["check", "--no-cache", str(project)]) == 2
    assert "max_file_size" in capsys.readouterr().err


# ---------------------------------------------------------------- 11. silent skips
def test_unlistable_directory_is_reported(tmp_path, monkeypatch, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    (project / "engine" / "locked").mkdir()
    (project / "engine" / "locked" / "m.py").write_text("x = 1\n")
    real_scandir = os.scandir

    def scandir(path=".", *rest):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path, *rest)

    monkeypatch.setattr(os, "scandir", scandir)
    code, data, _ = check_json(capsys, project)
    assert_finding_kept(code, data)
    assert skipped(data)["engine/locked"] == "directory not analysed: Permission denied"


def test_pyproject_that_is_a_directory_is_a_configuration_error(tmp_path, capsys) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    (project / "pyproject.toml").unlink()
    (project / "pyproject.toml").mkdir()
    assert main(["check", "--no-cache", str(project)]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml" in err and "not a regular file (a directory)" in err


# ---------------------------------------------------------------- 12. module names
def test_namespace_packages_are_named_and_the_rest_reported(tmp_path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/ns/deep/mod.py": "",  # namespace packages inside a package
        "tools/a/run.py": "",  # namespace packages below the root
        "tools/b/run.py": "",
        "src/lib/__init__.py": "",  # a src/ layout: the regular package names itself
        "src/lib/core.py": "",
        "pkg/dup.py": "",
        "pkg/dup/__init__.py": "",  # a second file for the name pkg.dup
        "my-scripts/go.py": "",  # a directory that is no package name
        "pkg/bad-name.py": "",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    project = discover(tmp_path, Config())
    named = {name: path.relative_to(tmp_path).as_posix() for name, path in project.modules.items()}
    assert named["pkg.ns.deep.mod"] == "pkg/ns/deep/mod.py"
    assert named["tools.a.run"] == "tools/a/run.py" and named["tools.b.run"] == "tools/b/run.py"
    assert named["lib.core"] == "src/lib/core.py"
    assert {"pkg.ns", "pkg.ns.deep", "tools", "lib"} <= project.packages
    reported = {p.relative_to(tmp_path).as_posix(): why for p, why in project.skipped}
    assert set(reported) == {"pkg/dup/__init__.py", "my-scripts/go.py", "pkg/bad-name.py"}
    assert reported["pkg/dup/__init__.py"] == "not analysed: module pkg.dup is already pkg/dup.py"
    assert set(named.values()) | set(reported) == set(files)  # nothing dropped silently


def test_finding_inside_a_namespace_subpackage(tmp_path, capsys) -> None:
    """The slot pool moved into engine/pools/ (no __init__.py): still found."""
    project = copy_project(BUGGY, tmp_path / "p")
    (project / "engine" / "pools").mkdir()
    (project / "engine" / "pool.py").rename(project / "engine" / "pools" / "pool.py")
    for path in (project / "engine").glob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace("engine.pool ", "engine.pools.pool "), encoding="utf-8")
    code, data, _ = check_json(capsys, project)
    assert_finding_kept(code, data)
    assert any(w["path"] == "engine/pools/pool.py" for w in data["findings"][0]["witness"])


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file names are always UTF-8")
@pytest.mark.parametrize("fmt", ["console", "json", "sarif", "github", "markdown"])
def test_file_names_that_are_not_utf8_are_reported_in_every_format(fmt, tmp_path) -> None:
    project = copy_project(BUGGY, tmp_path / "p")
    engine = os.fsencode(project / "engine")
    with open(engine + b"/\xff.py", "wb") as handle:
        handle.write(b"x = 1\n")
    os.mkdir(engine + b"/\xfe")
    with open(engine + b"/\xfe/m.py", "wb") as handle:
        handle.write(b"x = 1\n")
    out = tmp_path / "report"
    args = ["check", "--no-cache", "--format", fmt, "--output", str(out), str(project)]
    assert main(args) == 1
    report = out.read_text(encoding="utf-8")
    assert "xff.py" in report and "xfe/m.py" in report
