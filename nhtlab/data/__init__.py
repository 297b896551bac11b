"""Datasets: modular arithmetic, images (digits offline, CIFAR-10 opt-in) and the shortcut cues painted on them."""
