"""The cut-offs that several of nhtlab's rules share, each typed once.

A rule that reads "memorised", "grokked", "contracted" or "the border was fitted" takes its cut-off from
here, so that T_mem of :func:`nhtlab.analysis.events.find_events`, the trainer's early stop, the Monitor's
memorisation and the regime rules cannot drift apart. A rule's own parameter still overrides its default.
"""

from __future__ import annotations

__all__ = ["FITTED_ACCURACY", "SHORTCUT_FITTED_ACCURACY", "CONTRACTION_DROP", "ONLINE_MIN_POINTS", "BORDER_FITTED",
           "BORDER_DROPPED", "IMAGE_GENERALISED", "ETA_COVERAGE", "ETA_SHIP_CUT", "ETA_COVERAGE_TOLERANCE"]

#: Accuracy at which a set counts as fitted (the companion's 99%, arXiv 2603.13331): the first evaluated step
#: with train accuracy at least this is T_mem (memorised), with test accuracy at least this T_grok (grokked).
FITTED_ACCURACY = 0.99
#: Train accuracy at which a shortcut-image run counts as fitted in its regime (above the cue's ceiling ρ).
SHORTCUT_FITTED_ACCURACY = 0.97
#: Relative fall of ‖θ‖² below its running peak that the online regime rule reads as a contraction.
CONTRACTION_DROP = 0.05
#: Fewest records before the online regime rule names a regime ("too early" before).
ONLINE_MIN_POINTS = 5
#: Share of the conflict images on which following the border counts as fitting it (three times chance).
BORDER_FITTED = 0.3
#: Share of the conflict images on which reading the digit counts as having dropped the border.
BORDER_DROPPED = 0.5
#: Test accuracy at which an MNIST-5k grokking run counts as generalised (its runs top out near 90%, never 99%).
IMAGE_GENERALISED = 0.8
#: Stated coverage of a forecast interval of T_grok (the ETA, its baselines and their evaluation).
ETA_COVERAGE = 0.8
#: The ETA's ship rule (issue 46) compares its error with the baselines' at this fraction of the plateau,
ETA_SHIP_CUT = 0.5
#: and needs its interval's measured coverage within this of :data:`ETA_COVERAGE` at every cut.
ETA_COVERAGE_TOLERANCE = 0.10
