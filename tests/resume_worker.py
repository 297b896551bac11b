"""Training subprocess for tests/test_checkpoint.py (not a test module).

Usage: python resume_worker.py OUT [RUN_DIR] [--slow]

Trains a small fixed run (minibatches with replacement, cosine schedule, so the
sampler and scheduler states matter), checkpointing into RUN_DIR when given,
and saves the final history and parameters to OUT. ``--slow`` sleeps 100 ms
after each evaluation, to give the test time to kill the process mid-run; the
sleep does not touch any state, so the results are the same.
"""

import json
import sys
import time

import torch

torch.set_num_threads(1)

import nhtlab  # noqa: E402

RUN = nhtlab.ModularRun(p=23, model_kwargs=dict(width=64), steps=240, eval_every=10, batch_size=32,
                        schedule="cosine", lr=3e-3, weight_decay=1.0, seed=1, device="cpu")
CHECKPOINT_EVERY = 20

if __name__ == "__main__":
    out = sys.argv[1]
    run_dir = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "--slow" else None
    callbacks = [lambda state: time.sleep(0.1)] if "--slow" in sys.argv else []
    history = nhtlab.run_modular(RUN, callbacks=callbacks, progress="none", run_dir=run_dir,
                                 checkpoint_every=CHECKPOINT_EVERY if run_dir else None)
    torch.save({"history": json.dumps(history.to_dict()), "params": history.model.state_dict()}, out)
