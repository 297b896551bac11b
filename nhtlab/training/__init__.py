"""Running experiments: the loop, runs and presets, sweeps and their cache, stacked training, checkpoints, devices, callbacks."""
