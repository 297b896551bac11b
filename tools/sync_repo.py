"""Write the repository named in ``_config.yml`` into every file that repeats it.

``_config.yml``'s ``repository`` names the repository (``url``) and the ref Colab opens a chapter from and
installs nhtlab from (``branch``: ``main`` or a release tag). The launch buttons read it; this rewrites the
copies that cannot: each chapter's Colab install cell and ``CITATION.cff`` (URL and version).

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
TAG = re.compile(r"^v\d+(\.\d+)*$")
URL = re.compile(r"^https://github\.com/(?P<owner>[A-Za-z0-9_.-]+)/(?P<name>[A-Za-z0-9_.-]+)$")


@dataclass(frozen=True)
class Repository:
    url: str
    branch: str  # a branch or a release tag: the one ref the launch button opens and the install cell installs

    @property
    def is_release_tag(self) -> bool:
        return TAG.match(self.branch) is not None

    @property
    def install_requirement(self) -> str:
        return f"nhtlab @ git+{self.url}@{self.branch}"

    def colab_url(self, stem: str) -> str:
        repo = URL.match(self.url)
        return f"https://colab.research.google.com/github/{repo['owner']}/{repo['name']}/blob/{self.branch}/book/{stem}.ipynb"


def repository(root: Path = ROOT) -> Repository:
    """The ``repository`` section of ``root/_config.yml``, checked (ValueError naming what is wrong)."""
    import yaml

    section = (yaml.safe_load((root / "_config.yml").read_text()) or {}).get("repository") or {}
    url = str(section.get("url", "")).rstrip("/")
    if not URL.match(url):
        raise ValueError(f"_config.yml repository.url must be https://github.com/<owner>/<name>; got {url!r}")
    if not str(section.get("branch", "") or "").strip():
        raise ValueError(f"_config.yml repository.branch must be set (main, or a release tag such as v0.3.0); got "
                         f"{section.get('branch')!r}")
    if "release_tag" in section:
        raise ValueError("_config.yml repository.release_tag is retired: Colab opens and installs the same ref, "
                         "repository.branch (set it to a release tag once a release has created the tag)")
    return Repository(url=url, branch=str(section["branch"]).strip())


def package_version(root: Path = ROOT) -> str:
    """``__version__`` as written in ``root/nhtlab/_version.py`` (read, not imported)."""
    text = (root / "nhtlab" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if found is None:
        raise ValueError(f"{root / 'nhtlab' / '_version.py'}: no __version__ line")
    return found.group(1)


def _rewrite_chapter(path: Path, repo: Repository) -> str:
    text = path.read_text(encoding="utf-8")
    found = INSTALL.findall(text)
    if len(found) != 1:
        raise ValueError(f"{path.name}: expected exactly one Colab install requirement 'nhtlab @ git+…' in the first "
                         f"code cell, found {len(found)}")
    return INSTALL.sub(lambda _: repo.install_requirement, text)


def _rewrite_citation(path: Path, repo: Repository, version: str) -> str:
    text = path.read_text(encoding="utf-8")
    for key, value in (("repository-code", repo.url), ("version", version)):
        pattern = re.compile(rf"^{key}: .*$", re.M)
        if len(pattern.findall(text)) != 1:
            raise ValueError(f"{path.name}: expected exactly one top-level '{key}:' line")
        text = pattern.sub(f'{key}: "{value}"', text)
    return text


def sync(root: Path = ROOT, check: bool = False) -> list[Path]:
    """Rewrite the copies under ``root`` (or with ``check``, only report them); return the stale files."""
    repo = repository(root)
    chapters = sorted(p for p in (root / "book").glob("[0-9][0-9]_*") if p.suffix in (".py", ".ipynb"))
    new = {p: _rewrite_chapter(p, repo) for p in chapters}
    new[root / "CITATION.cff"] = _rewrite_citation(root / "CITATION.cff", repo, package_version(root))
    stale = [path for path, text in new.items() if text != path.read_text(encoding="utf-8")]
    if not check:
        for path in stale:
            path.write_text(new[path], encoding="utf-8")
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
