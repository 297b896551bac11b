"""nhtlab's docstrings and comments type no measured timing or machine: those live on the book's measurements page.

A time or a speed-up typed into the package's source is true of one machine on one day and false on the
next, in the one place no build regenerates; the benchmarks write them, with their machine, to the
generated measurements page (``benchmarks/_record``, ``tools/measurements_page.py``) instead.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A number with a unit of time or speed, a speed-up ratio, an overhead in percent of a step or of throughput,
# or a named machine: what a measurement typed by hand looks like. Definitions stay allowed: sizes computed
# from shapes (GB, MB), accuracies and fractions in percent, "8 × 8" shapes, steps.
TIMING = re.compile(
    r"\b\d+(?:[.,]\d+)*\s*(?:CPU\s+)?(?:ms|µs|us|ns|s|sec|seconds?|min|minutes?|h|hours?|steps/s|it/s)\b"
    r"|×\s*\d+\.\d+"                                                          # ×1.08
    r"|\b\d+(?:\.\d+)?(?:\s*[–-]\s*\d+(?:\.\d+)?)?\s*×(?!\s*\d)"             # 1.03–1.13× the steps
    r"|\b\d+(?:\.\d+)?\s*(?:x|times)\s+(?:faster|slower)"                    # 2x faster
    r"|\+\d+(?:\.\d+)?\s*%"                                                   # +3.5% per step
    r"|\b\d+(?:\.\d+)?\s*%\s+of\s+(?:\w+\s+){0,3}?(?:throughput|compute|cost|(?:training |bare )?step)\b"
    r"|(?i:development (?:cpu|machine)|\bepyc\b|\bxeon\b|\bavx)")


def test_timing_pattern_catches_measurements_and_spares_definitions():
    # each of these stood in nhtlab's docstrings or comments once
    for typed in ("On the development CPU", "2.96 CPU ms per bare step", "a record costs 0.10 ms", "×1.08 at every=1",
                  "1.03–1.13× the steps per CPU second", "(+3.5% per step", "about 14% of extra compute",
                  "costs about 10% of their throughput", "~10% of a companion training step", "~2x faster on the CPU",
                  "about 3 s of CPU per worker", "about 0.3 µs instead of 12 µs", "under 60 s on a 2-core CPU",
                  "122 steps/s", "an AMD EPYC"):
        assert TIMING.search(typed), typed
    for definition in ("99% test accuracy", "50% of the pairs", "8 × 8 grey pixels", "the p × p table", "2,000 steps",
                       "1e3 × the float", "{loss:.1f}× its minimum", "‖θ‖² 10% below its value at T_mem", "95% CI",
                       "the archive (about 170 MB)", "a quarter of a 16 GB T4", "every=10", "seeds 0–4",
                       "25%, 50% and 75% of its plateau", "within a second of this process dying"):
        assert not TIMING.search(definition), (definition, TIMING.findall(definition))


def test_nhtlab_source_types_no_timing():
    found = [f"{path.relative_to(ROOT)}:{number}: {match.group()!r}"
             for path in sorted((ROOT / "nhtlab").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             for match in TIMING.finditer(line)]
    assert not found, "measured timings belong on the measurements page, not in nhtlab:\n" + "\n".join(found)
