"""Datasets: modular arithmetic, images (digits offline, MNIST-5k offline with the ``mnist`` extra, CIFAR-10 opt-in) and the shortcut cues painted on them."""
