"""The chapter executions the tests read, run in a process of their own (not a test module).

Usage: python chapter_executions.py RESULT [quick] [html] [smoke FOLDER]

``quick``: every chapter in the quick profile through ``tools/build_book.py``'s cache (what
``executed_chapters`` reads); ``html``: then the book rendered from them into ``_build/html-quick``
(what the browser tests look at); ``smoke``: every chapter's ``full`` profile under the smoke cap
into FOLDER (:func:`test_full_smoke.execute_all_smoke`). RESULT gets ``{"quick": ..., "html": ...,
"smoke": ...}``: per chapter its seconds or the error's text, and the html folder. ``tests/conftest.py``
starts this when collection holds tests that read chapters, so the other tests run beside the
executions instead of after them. RESULT is written after each part, so the tests that read the
quick chapters run while the html renders and the smoke executes (the two side by side).
"""

import json
import os
import sys
import threading
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
    lock = threading.Lock()  # the html thread and this one both add their part and publish

    def add(part: str, value: dict[str, float | str]) -> None:
        with lock:
            result[part] = value
            publish(result_file, result)

    def render_html() -> None:
        try:
            add("html", {"html": str(build_book.render("quick", build_book.BUILD / "html-quick"))})
        except Exception:  # left out: the browser fixture renders again in the test process and reports it
            pass

    html = None
    if "quick" in parts:
        import build_book

        try:
            quick = {stem: s for stem, (s, _) in build_book.execute_all("quick", jobs=jobs).items()}
        except Exception as error:  # the fixture executes again in the test process and reports the failing cell
            quick = {"error": f"{type(error).__name__}: {error}"}
        add("quick", quick)  # the quick readers start while the html renders and the smoke executes
        if "html" in parts and "error" not in quick:
            # Rendering is one process on one core: beside the smoke's kernels, not before them, so that
            # the other core is not idle while the browser tests wait for the pages.
            html = threading.Thread(target=render_html)
            html.start()
    if "smoke" in parts:
        from test_full_smoke import execute_all_smoke

        smoke = execute_all_smoke(Path(parts[parts.index("smoke") + 1]), jobs)
        with lock:
            result["smoke"] = smoke
    if html is not None:
        html.join()
    with lock:
        publish(result_file, result)
