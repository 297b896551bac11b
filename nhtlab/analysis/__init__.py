"""Numpy over histories: events (T_mem, T_grok), the delay law, regimes, layer order, separation, emergence, the scorecard."""
