"""benchmarks/_record writes a benchmark's numbers with their machine; tools/measurements_page.py renders them."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import measurements_page  # tools/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("_record", ROOT / "benchmarks" / "_record" / "__init__.py")
_record = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_record)

LSCPU = """Architecture:             x86_64
  CPU op-mode(s):         32-bit, 64-bit
CPU(s):                   2
Vendor ID:                GenuineIntel
  Model name:             Intel(R) Xeon(R) Processor
    CPU family:           6
"""


def test_cpu_model_reads_lscpu_and_falls_back():
    assert _record.cpu_model(LSCPU) == "Intel(R) Xeon(R) Processor"
    assert _record.cpu_model("Architecture: x86_64\n") not in ("", None)  # /proc/cpuinfo or platform, else "unknown"


def test_record_writes_the_machine_and_the_date(tmp_path):
    when = dt.datetime(2026, 12, 2, 9, 30, tzinfo=dt.timezone.utc)
    path = _record.record("bench_toy", [{"what": "step", "value": 12.5, "unit": "steps/s"}],
                          settings={"steps": 60}, out_dir=tmp_path, when=when)
    assert path.name == "bench_toy-20261202T093000Z.json"
    data = json.loads(path.read_text())
    assert data["date"] == "2026-12-02T09:30:00+00:00" and data["settings"] == {"steps": 60}
    machine = data["machine"]
    assert machine["cores"] >= 1 and machine["cpu_model"] and machine["python"]
    import torch

    assert machine["torch"] == torch.__version__
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # a git checkout (CI's clean clone is one): the record names the commit measured
        assert data["commit"].split()[0] == head.stdout.strip()
    with pytest.raises(ValueError, match="same keys"):
        _record.record("bench_toy", [{"a": 1}, {"b": 2}], out_dir=tmp_path)
    with pytest.raises(ValueError, match="plain name"):
        _record.record("../escape", [{"a": 1}], out_dir=tmp_path)


def _write(folder: Path, name: str, cpu: str, date: str, rows: list[dict], isa: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    machine = {"cpu_model": cpu, "cores": 2, "torch": "2.14.1", "nhtlab": "0.2.4"} | ({"cpu_isa": isa} if isa else {})
    (folder / f"{name}-{date}.json").write_text(json.dumps({
        "schema": 1, "benchmark": name, "date": date, "settings": {"threads": 1}, "note": "",
        "machine": machine, "results": rows}))


def test_page_lists_each_run_under_its_machine(tmp_path):
    kept, local = tmp_path / "results", tmp_path / "measurements"
    _write(kept, "bench_grok", "CPU A", "2026-12-01T10:00:00+00:00", [{"what": "step", "value": 121.7}])
    _write(local, "bench_grok", "CPU B", "2026-12-02T10:00:00+00:00", [{"what": "step", "value": 93.25}])
    _write(local, "bench_dlr", "CPU B", "2026-12-02T11:00:00+00:00", [{"what": "probe", "value": 1234.0}])
    page = measurements_page.render(measurements_page.load([kept, local, tmp_path / "missing"]))
    assert "| M1 | CPU A | not recorded | 2 | 2.14.1 |" in page and "| M2 | CPU B | not recorded | 2 | 2.14.1 |" in page, page
    assert page.index("## `bench_dlr`") < page.index("## `bench_grok`")
    grok = page[page.index("## `bench_grok`"):]
    assert grok.index("machine M1") < grok.index("| step | 122 |") < grok.index("machine M2") < grok.index("| step | 93.2 |")
    assert "| probe | 1,234 |" in page and "(threads = 1)" in page
    (kept / "bench_dlr-2026-12-02T11:00:00+00:00.json").write_bytes(
        (local / "bench_dlr-2026-12-02T11:00:00+00:00.json").read_bytes())  # published: copied into the kept folder
    assert measurements_page.render(measurements_page.load([kept, local])).count("| probe | 1,234 |") == 1


def test_machines_that_lscpu_names_alike_are_told_apart_by_their_vector_isa(tmp_path):
    # "AMD EPYC" has named a 2-core AVX-512 machine and a 2-core AVX2 one; their timings differ
    _write(tmp_path, "bench_grok", "AMD EPYC", "2026-12-01T10:00:00+00:00", [{"what": "step", "value": 100.0}], "AVX512")
    _write(tmp_path, "bench_grok", "AMD EPYC", "2026-12-03T10:00:00+00:00", [{"what": "step", "value": 62.0}], "AVX2")
    page = measurements_page.render(measurements_page.load([tmp_path]))
    assert "| M1 | AMD EPYC | AVX512 | 2 | 2.14.1 |" in page and "| M2 | AMD EPYC | AVX2 | 2 | 2.14.1 |" in page, page


def test_the_record_names_the_vector_isa_torch_runs_on(tmp_path):
    import torch

    data = json.loads(_record.record("bench_toy", [{"a": 1}], out_dir=tmp_path).read_text())
    assert data["machine"]["cpu_isa"] == torch.backends.cpu.get_cpu_capability()


def test_a_record_without_its_machine_is_refused_by_name(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"benchmark": "x", "date": "d", "results": [{"a": 1}],
                                                   "machine": {"cores": 2}}))
    with pytest.raises(ValueError, match=r"bad\.json: the record lacks machine\.cpu_model, machine\.torch"):
        measurements_page.load([tmp_path])


def test_no_records_gives_a_page_that_says_so_and_check_finds_a_stale_page(tmp_path):
    out = tmp_path / "measurements.md"
    tool = [sys.executable, str(ROOT / "tools" / "measurements_page.py"), "--out", str(out), "--times-out", str(tmp_path / "times.md"),
            "--records", str(tmp_path / "none")]
    assert subprocess.run(tool, capture_output=True, timeout=60).returncode == 0
    assert "No benchmark has recorded a run yet" in out.read_text()
    assert subprocess.run([*tool, "--check"], capture_output=True, timeout=60).returncode == 0
    out.write_text(out.read_text() + "| hand-typed | 5 min |\n")
    assert subprocess.run([*tool, "--check"], capture_output=True, timeout=60).returncode == 1


def test_a_smoke_record_is_written_but_left_off_the_page_and_the_load_is_shown(tmp_path):
    _record.record("bench_toy", [{"what": "step", "value": 1.0}], smoke=True, out_dir=tmp_path,
                   when=dt.datetime(2026, 12, 3, 9, 0, tzinfo=dt.timezone.utc))
    real = _record.record("bench_toy", [{"what": "step", "value": 2.0}], out_dir=tmp_path,
                          when=dt.datetime(2026, 12, 3, 10, 0, tzinfo=dt.timezone.utc))
    data = json.loads(real.read_text())
    assert data["smoke"] is False and (data["load_average"] is None or data["load_average"] >= 0)
    loaded = measurements_page.load([tmp_path])
    assert [r["results"][0]["value"] for r in loaded] == [2.0]
    page = measurements_page.render(loaded)
    assert "| step | 1 |" not in page and "| step | 2 |" in page
    assert ("load average" in page) == (data["load_average"] is not None)


def test_the_commit_is_read_from_git_marked_when_files_changed_and_shown_on_the_page(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (repo / "f.txt").write_text("a")
    subprocess.run(git + ["add", "f.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    head = subprocess.run(git + ["rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert _record.commit(repo) == head
    (repo / "new.txt").write_text("untracked files do not change what was measured")
    assert _record.commit(repo) == head
    (repo / "f.txt").write_text("b")
    assert _record.commit(repo) == f"{head} with uncommitted changes"
    assert _record.commit(tmp_path / "not-a-repo") is None
    folder = tmp_path / "results"
    _write(folder, "bench_grok", "CPU A", "2026-12-01T10:00:00+00:00", [{"what": "step", "value": 1.0}])
    data = json.loads(next(folder.iterdir()).read_text())
    next(folder.iterdir()).write_text(json.dumps(data | {"commit": head}))
    page = measurements_page.render(measurements_page.load([folder]))
    assert f"machine M1, nhtlab 0.2.4, commit {head}" in page, page


def test_chapter_times_table_is_the_kept_build_records(tmp_path):
    """book/chapter_times.md (on the landing page) is what the kept build records give, and a new
    record of a profile replaces that profile's column: no chapter time is typed by hand."""
    kept = measurements_page.load([ROOT / "benchmarks" / "results"])
    stems = measurements_page.chapter_stems()
    assert len(stems) == 9 and stems[0] == "01_grokking" and stems[-1] == "08_evidence"  # eight lessons, one evidence page
    assert (ROOT / "book" / "chapter_times.md").read_text() == measurements_page.render_chapter_times(kept, stems), (
        "book/chapter_times.md is stale: run `make measurements`")
    record = {"benchmark": "build_book", "date": "2099-01-01T00:00:00+00:00", "settings": {"profile": "quick", "chapters at a time": 2},
              "machine": {"cpu_model": "CPU Q", "cores": 2, "torch": "2.14.1"},
              "results": [{"what": "chapter 01_grokking", "value": 45.4}, {"what": "chapter 02_regimes", "value": 150.0}]}
    table = measurements_page.render_chapter_times([record], stems[:3])
    assert "| {doc}`01_grokking` | 45 s | not measured yet | not measured yet |" in table, table
    assert "| {doc}`02_regimes` | 2 min |" in table and "| {doc}`03_delay_law` | not measured yet |" in table
    assert "- `quick`: CPU Q (vector ISA not recorded), 2 cores" in table


def test_the_page_shows_each_builds_efficiency_per_run_kind(tmp_path):
    """tools/build_book.py records each run kind's share of the step's floor; the page tables it per build."""
    rows = [{"what": "chapter 01_grokking", "value": 45.4}, {"what": "ModularRun: steps with a floor", "value": 106900},
            {"what": "ModularRun: their training CPU", "value": 817.0}, {"what": "ModularRun: their floor", "value": 353.0},
            {"what": "ModularRun: efficiency", "value": 0.432}, {"what": "ShortcutRun: efficiency", "value": 0.25}]
    _write(tmp_path, "build_book", "CPU A", "2026-12-05T10:00:00+00:00", rows, "AVX512")
    _write(tmp_path, "bench_grok", "CPU A", "2026-12-05T11:00:00+00:00", [{"what": "step", "value": 1.0}], "AVX512")
    page = measurements_page.render(measurements_page.load([tmp_path]))
    table = page[page.index("## The book's training against the step's floor"):page.index("## `bench_grok`")]
    assert ("| build | machine | profile | run kind | steps | training CPU s | floor s | efficiency (floor / CPU) |"
            in table), table
    assert "| 2026-12-05T10:00 | M1 | ? | ModularRun | 106,900 | 817 | 353 | 43% |" in table
    assert "| 2026-12-05T10:00 | M1 | ? | ShortcutRun |  |  |  | 25% |" in table
    _write(tmp_path, "build_book", "CPU A", "2026-12-05T10:00:00+00:00", rows[:1], "AVX512")  # an older record
    assert "against the step's floor" not in measurements_page.render(measurements_page.load([tmp_path]))


def test_the_page_sets_the_step_floor_of_each_machine_side_by_side(tmp_path):
    """bench_grok's eager and compiled shares of the floor, one row per record, the machine's ISA named."""
    fractions = [{"what": "floor ms", "value": 5.59}, {"what": "eager floor fraction", "value": 0.532},
                 {"what": "compiled floor fraction", "value": 0.555}, {"what": "ratio", "value": 1.043}]
    _write(tmp_path, "bench_grok", "CPU A", "2026-12-05T10:00:00+00:00", fractions, "AVX512")
    _write(tmp_path, "bench_grok", "CPU A", "2026-12-04T10:00:00+00:00", fractions[1:2], "AVX2")
    _write(tmp_path, "bench_grok", "CPU A", "2026-12-03T10:00:00+00:00", [{"what": "step", "value": 1.0}], "AVX2")
    page = measurements_page.render(measurements_page.load([tmp_path]))
    table = page[page.index("## The companion step against its floor"):page.index("## `bench_grok`")]
    assert "| 2026-12-05T10:00 | M2 | CPU A (AVX512) | 5.59 | 53% | 56% | 1.04 |" in table, table
    assert "| 2026-12-04T10:00 | M1 | CPU A (AVX2) |  | 53% |  |  |" in table, table
    assert table.count("| 2026-12-0") == 2  # the record that measured no fraction has no row
