"""Sweep subprocess for tests/test_keep_on_drive.py (not a test module).

Usage: python drive_worker.py CACHE_DIR OUT

Sweeps two small runs sequentially through the result cache in CACHE_DIR with checkpoints on
(NHTLAB_CHECKPOINTS=on), as a Colab chapter does after nhtlab.book.keep_on_drive(), and writes to OUT
each run's source ("cache" or "computed"), the step its training resumed from (None: from
scratch) and its history rows.
"""

import json
import os
import sys

import torch

torch.set_num_threads(1)

import nhtlab  # noqa: E402
from nhtlab.training import loop  # noqa: E402

RUNS = [nhtlab.ModularRun(p=23, model_kwargs=dict(width=64), steps=steps, eval_every=10, batch_size=32, lr=3e-3,
                          weight_decay=1.0, seed=1, device="cpu") for steps in (200, 3000)]

if __name__ == "__main__":
    resumed = {}
    original = loop.load_checkpoint

    def recording(run_dir, *args, **kwargs):  # which run resumed, from which step
        saved = original(run_dir, *args, **kwargs)
        resumed[str(run_dir)] = None if saved is None else int(saved["step"])
        return saved

    loop.load_checkpoint = recording
    os.environ["NHTLAB_CACHE_DIR"] = sys.argv[1]  # as keep_on_drive sets it in Colab
    from nhtlab import book

    cache = book.cache()
    result = nhtlab.sweep(RUNS, strategy="sequential", cache=cache, progress="none")
    out = [{"source": row.source, "resumed_from": resumed.get(str(cache.run_dir(row.run.cache_config()))),
            "rows": row.history.rows} for row in result]
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)
