"""Write the repository named in ``_config.yml`` into every file that repeats it.

``_config.yml``'s ``repository`` section is the one place that names the
repository (``url``), the branch Colab opens chapters from (``branch``) and the
release tag Colab installs nhtlab from (``release_tag``). Jupyter Book's Colab
launch buttons read it directly; this command rewrites the copies that cannot
read it: each chapter's Colab install cell (``book/NN_*.py`` and its ``.ipynb``)
and ``CITATION.cff``. ``tests/test_repo_config.py`` fails when a copy is stale.

    python tools/sync_repo.py            # rewrite the copies
    python tools/sync_repo.py --check    # list stale copies, exit 1 if any
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The Colab install line's requirement, as it appears in a chapter's .py and (JSON-escaped) .ipynb.
INSTALL = re.compile(r'nhtlab @ git\+[^"\\\s]+')
URL = re.compile(r"^https://github\.com/(?P<owner>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+)$")


@dataclass(frozen=True)
class Repository:
    """The repository as set in ``_config.yml`` (``repository:`` section)."""

    url: str
    branch: str
    release_tag: str

    @property
    def owner(self) -> str:
        return URL.match(self.url).group("owner")

    @property
    def name(self) -> str:
        return URL.match(self.url).group("name")

    @property
    def install_requirement(self) -> str:
        """What the Colab cell pip-installs: nhtlab at the release tag."""
        return f"nhtlab @ git+{self.url}@{self.release_tag}"

    def colab_url(self, stem: str) -> str:
        """Where the book's launch button opens chapter ``stem`` in Colab."""
        return f"https://colab.research.google.com/github/{self.owner}/{self.name}/blob/{self.branch}/book/{stem}.ipynb"


def repository(root: Path = ROOT) -> Repository:
    """Read and check the ``repository`` section of ``root/_config.yml``.

    Raises
    ------
    ValueError
        When ``url`` is not ``https://github.com/<owner>/<name>`` or ``branch`` / ``release_tag`` is missing.
    """
    import yaml

    section = (yaml.safe_load((root / "_config.yml").read_text()) or {}).get("repository") or {}
    url = str(section.get("url", "")).rstrip("/")
    if not URL.match(url):
        raise ValueError(f"_config.yml repository.url must be https://github.com/<owner>/<name>; got {url!r}")
    for key in ("branch", "release_tag"):
        if not str(section.get(key, "")).strip():
            raise ValueError(f"_config.yml repository.{key} must be set (e.g. branch: main, release_tag: v0.1.0); got "
                             f"{section.get(key)!r}")
    return Repository(url=url, branch=str(section["branch"]), release_tag=str(section["release_tag"]))


def chapter_files(root: Path = ROOT) -> list[Path]:
    """Every chapter's text form and notebook (``book/NN_*.py`` and ``.ipynb``)."""
    return sorted(p for p in (root / "book").glob("[0-9][0-9]_*") if p.suffix in (".py", ".ipynb"))


def _rewrite_chapter(path: Path, repo: Repository) -> str:
    text = path.read_text(encoding="utf-8")
    found = INSTALL.findall(text)
    if len(found) != 1:
        raise ValueError(f"{path.name}: expected exactly one Colab install requirement 'nhtlab @ git+…' in the first "
                         f"code cell, found {len(found)}")
    return INSTALL.sub(lambda _: repo.install_requirement, text)


def _rewrite_citation(path: Path, repo: Repository) -> str:
    text = path.read_text(encoding="utf-8")
    for key, value in (("repository-code", repo.url), ("version", repo.release_tag.removeprefix("v"))):
        pattern = re.compile(rf"^{key}: .*$", re.M)
        if len(pattern.findall(text)) != 1:
            raise ValueError(f"{path.name}: expected exactly one top-level '{key}:' line")
        text = pattern.sub(f'{key}: "{value}"', text)
    return text


def sync(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Rewrite the copies under ``root`` (or with ``check``, only report them); return the stale files."""
    repo = repository(root)
    stale = []
    targets = [(p, _rewrite_chapter) for p in chapter_files(root)] + [(root / "CITATION.cff", _rewrite_citation)]
    for path, rewrite in targets:
        new = rewrite(path, repo)
        if new != path.read_text(encoding="utf-8"):
            stale.append(path)
            if not check:
                path.write_text(new, encoding="utf-8")
    return stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list stale files; exit 1 if there are any")
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root (default: this checkout)")
    args = parser.parse_args()
    stale = sync(root=args.root, check=args.check)
    for path in stale:
        print(f"{'stale' if args.check else 'rewrote'}: {path.relative_to(args.root).as_posix()}")
    if args.check and stale:
        print("run `python tools/sync_repo.py` to write _config.yml's repository into these files", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
