"""The chapter executions the tests read, run in a process of their own (not a test module).

Usage: python chapter_executions.py RESULT [quick] [html] [smoke FOLDER]

``quick``: every chapter in the quick profile through ``tools/build_book.py``'s cache (what
``executed_chapters`` reads); ``html``: then the book rendered from them into ``_build/html-quick``
(what the browser tests look at); ``smoke``: every chapter's ``full`` profile under the smoke cap
into FOLDER (:func:`test_full_smoke.execute_all_smoke`). RESULT gets ``{"quick": ..., "html": ...,
"smoke": ...}``: per chapter its seconds or the error's text, and the html folder. ``tests/conftest.py``
starts this when collection holds tests that read chapters, so the other tests run beside the
executions instead of after them. RESULT is written after each part, so the tests that read the
quick chapters run while the smoke executes.
"""

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tools")]


def publish(result_file: Path, result: dict) -> None:
    """Write the parts done so far, whole or not at all: a fixture reads its part as soon as it is there."""
    partial = result_file.with_suffix(".partial")
    partial.write_text(json.dumps(result))
    partial.replace(result_file)


if __name__ == "__main__":
    result_file, parts = Path(sys.argv[1]), sys.argv[2:]
    jobs = int(os.environ.get("NHTLAB_TEST_JOBS", "2"))
    result: dict[str, dict[str, float | str]] = {}
    if "quick" in parts:
        import build_book

        try:
            result["quick"] = {stem: s for stem, (s, _) in build_book.execute_all("quick", jobs=jobs).items()}
        except Exception as error:  # the fixture executes again in the test process and reports the failing cell
            result["quick"] = {"error": f"{type(error).__name__}: {error}"}
        if "html" in parts and "error" not in result["quick"]:
            try:
                result["html"] = {"html": str(build_book.render("quick", build_book.BUILD / "html-quick"))}
            except Exception:  # left out: the browser fixture renders again in the test process and reports it
                pass
        publish(result_file, result)  # the quick and html readers start while the smoke executes
    if "smoke" in parts:
        from test_full_smoke import execute_all_smoke

        result["smoke"] = execute_all_smoke(Path(parts[parts.index("smoke") + 1]), jobs)
    publish(result_file, result)
