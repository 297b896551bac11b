"""One place names the repository (_config.yml); the copies in chapters and CITATION.cff follow it."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest
import yaml

import nhtlab

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "book").glob("[0-9][0-9]_*.py"))


def test_colab_ref_is_main_or_an_existing_release_tag_of_this_version():
    """The launch button and the install cell share one ref: main, or a tag a release created."""
    import sync_repo

    repo = sync_repo.repository()
    assert sync_repo.package_version() == nhtlab.__version__
    if not repo.is_release_tag:
        assert repo.branch == "main", repo.branch
        return
    assert repo.branch == f"v{nhtlab.__version__}", "a release tag names the version it installs"
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: cannot see which tags exist")
    tags = subprocess.run(["git", "tag", "--list", repo.branch], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert tags.stdout.split() == [repo.branch], f"{repo.branch} is not a tag yet: run the release workflow first"


def test_launch_button_and_install_cell_use_the_same_ref():
    import sync_repo

    repo = sync_repo.repository()
    assert repo.install_requirement.endswith(f"@{repo.branch}")
    assert f"/blob/{repo.branch}/book/" in repo.colab_url("01_grokking")
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"


def test_install_cells_and_citation_are_in_sync():
    import sync_repo

    stale = sync_repo.sync(check=True)
    assert not stale, f"run `python tools/sync_repo.py`: {[p.name for p in stale]}"


def _printed(source: str) -> str:
    """The launch note a cell prints: its ``nhtlab.book.colab_launch(...)`` call, made with the cell's arguments."""
    import contextlib
    import io

    from nhtlab.book.colab import colab_launch

    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith("%"))
    calls = [node for node in ast.walk(ast.parse(code))
             if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "colab_launch"]
    assert len(calls) == 1, "the Colab cell prints its launch note through nhtlab.book.colab_launch"
    args = [ast.literal_eval(a) for a in calls[0].args]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        colab_launch(*args)  # keep stays False: nothing is mounted
    return out.getvalue()


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: p.stem)
def test_colab_cell_installs_from_the_config_and_gives_a_t4_estimate(src):
    import sync_repo

    repo = sync_repo.repository()
    first_code = next(c for c in jupytext.read(src).cells if c.cell_type == "code")
    assert f'%pip install -q "{repo.install_requirement}"' in first_code.source, first_code.source
    note = re.search(r"Launch note: (.*?)\(an estimate, not yet measured\)", _printed(first_code.source))
    assert note and "Colab T4" in note.group(1) and 'profile = "full"' in note.group(1), first_code.source


def test_changing_the_owner_is_one_line_and_the_sync_command(tmp_path):
    for name in ("_config.yml", "CITATION.cff", "nhtlab/_version.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "book", tmp_path / "book", ignore=shutil.ignore_patterns("*.md", "*.bib", "__pycache__"))
    config = tmp_path / "_config.yml"
    old = yaml.safe_load(config.read_text())["repository"]["url"]
    lines = config.read_text().splitlines(keepends=True)
    url_lines = [i for i, line in enumerate(lines) if line.strip() == f"url: {old}"]
    assert len(url_lines) == 1, "repository.url is set on exactly one line"
    lines[url_lines[0]] = lines[url_lines[0]].replace(old, "https://github.com/someone-else/nht-book")
    config.write_text("".join(lines))

    check = subprocess.run([sys.executable, str(ROOT / "tools" / "sync_repo.py"), "--check", "--root", str(tmp_path)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 1 and "stale: book/01_grokking.py" in check.stdout, check.stdout + check.stderr
    assert "stale: CITATION.cff" in check.stdout, check.stdout

    import sync_repo

    stale = sync_repo.sync(root=tmp_path)
    assert len(stale) == 2 * len(SOURCES) + 1, [p.name for p in stale]
    assert sync_repo.sync(root=tmp_path, check=True) == []
    for src in sorted((tmp_path / "book").glob("[0-9][0-9]_*.py")):
        for path in (src, src.with_suffix(".ipynb")):
            text = path.read_text()
            assert "git+https://github.com/someone-else/nht-book@main" in text and old not in text, path.name
        # The rewritten pair still matches cell by cell, and the notebook is still valid JSON.
        json.loads(src.with_suffix(".ipynb").read_text())
        assert [c.source for c in jupytext.read(src).cells] == [c.source for c in jupytext.read(src.with_suffix(".ipynb")).cells]
    citation = yaml.safe_load((tmp_path / "CITATION.cff").read_text())
    assert citation["repository-code"] == "https://github.com/someone-else/nht-book"
    repo = sync_repo.repository(tmp_path)
    assert repo.colab_url("04_dlr") == ("https://colab.research.google.com/github/someone-else/nht-book/blob/main/"
                                        "book/04_dlr.ipynb")


@pytest.mark.parametrize("url", ["https://gitlab.com/a/b", "github.com/a/b", "https://github.com/a"])
def test_bad_repository_url_is_named(tmp_path, url):
    import sync_repo

    (tmp_path / "_config.yml").write_text(f"repository:\n  url: {url}\n  branch: main\n")
    with pytest.raises(ValueError, match=r"repository\.url must be https://github\.com/<owner>/<name>; got '"
                       + re.escape(url)):
        sync_repo.repository(tmp_path)


def test_missing_branch_and_retired_release_tag_are_named(tmp_path):
    import sync_repo

    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/a/b\n")
    with pytest.raises(ValueError, match=r"repository\.branch must be set .* got None"):
        sync_repo.repository(tmp_path)
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/a/b\n  branch: main\n"
                                          "  release_tag: v0.1.0\n")
    with pytest.raises(ValueError, match=r"release_tag is retired"):
        sync_repo.repository(tmp_path)


def test_a_release_tag_ref_is_recognised(tmp_path):
    import sync_repo

    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/a/b\n  branch: v1.2.0\n")
    repo = sync_repo.repository(tmp_path)
    assert repo.is_release_tag and repo.install_requirement == "nhtlab @ git+https://github.com/a/b@v1.2.0"
    assert not sync_repo.Repository("https://github.com/a/b", "main").is_release_tag


def test_citation_cites_nhtlab_and_the_papers():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0" and citation["type"] == "software"
    assert citation["title"].startswith("nhtlab") and citation["license"] == "MIT"
    assert citation["version"] == nhtlab.__version__
    cited = {ident["value"] for ref in citation["references"] for ident in ref["identifiers"]}
    assert cited == {"arXiv:2603.07323", "arXiv:2603.13331", "arXiv:2410.04264"}
    for arxiv in sorted(cited):
        assert arxiv in " ".join(citation["message"].split()), f"the message does not ask readers to cite {arxiv}"
    bib = (ROOT / "book" / "references.bib").read_text()
    for ref in citation["references"]:
        assert ref["title"] in " ".join(bib.split()), f"{ref['title']!r} is not in book/references.bib"


def test_run_a_chapter_table_gives_the_launch_notes_estimates():
    """The T4 column of Run a chapter is FULL_ON_T4, the estimates each chapter's launch note prints."""
    from nhtlab.book.colab import FULL_ON_T4, colab_launch

    text = (ROOT / "book" / "run_a_chapter.md").read_text()
    rows = {int(m.group(1)): m.group(2).strip() for m in re.finditer(r"(?m)^\| (\d) \|.*\| ([^|]+) \|$", text)}
    assert sorted(rows) == list(range(1, len(FULL_ON_T4) + 1))
    for number, stem in enumerate(FULL_ON_T4, start=1):
        assert rows[number] == FULL_ON_T4[stem][0], (stem, rows[number])
    with pytest.raises(ValueError, match="'chapter' must be one of"):
        colab_launch("09_missing")
    with pytest.raises(TypeError, match="'chapter' parameter of colab_launch"):
        colab_launch(["03_delay_law"])
