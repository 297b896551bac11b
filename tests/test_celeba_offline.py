"""CelebA without the network: a tiny archive in torchvision's layout, read by nhtlab and torchvision.

torchvision checks the MD5 sums of CelebA's five text files (not the images), which a tiny archive
cannot match; the tests replace that check (``check_integrity``) and nothing else, as
tests/test_cifar_offline.py does for CIFAR-10, so the layout, the parsing and the reading are torchvision's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import nhtlab
from nhtlab.data.images import CELEBA_TASK, DatasetUnavailableError, celeba

torchvision = pytest.importorskip("torchvision")

ATTRS = ("5_o_Clock_Shadow Arched_Eyebrows Attractive Bags_Under_Eyes Bald Bangs Big_Lips Big_Nose Black_Hair "
         "Blond_Hair Blurry Brown_Hair Bushy_Eyebrows Chubby Double_Chin Eyeglasses Goatee Gray_Hair Heavy_Makeup "
         "High_Cheekbones Male Mouth_Slightly_Open Mustache Narrow_Eyes No_Beard Oval_Face Pale_Skin Pointy_Nose "
         "Receding_Hairline Rosy_Cheeks Sideburns Smiling Straight_Hair Wavy_Hair Wearing_Earrings Wearing_Hat "
         "Wearing_Lipstick Wearing_Necklace Wearing_Necktie Young").split()
PER_GROUP = {0: 8, 2: 4}  # partition (0 train, 1 valid, 2 test) → images of each (Smiling, Blond_Hair) group


def write_fake_celeba(root: Path, seed: int = 0) -> dict[str, tuple[int, int]]:
    """Write ``celeba/`` under ``root`` in torchvision's layout; return file name → (Smiling, Blond_Hair).

    Tiny 12 × 14 JPEGs in ``img_align_celeba/`` (blond images get a bright top band), the 40 attributes in
    ``list_attr_celeba.txt`` (±1, two header lines), ``list_eval_partition.txt``, ``identity_CelebA.txt``,
    ``list_bbox_celeba.txt`` and ``list_landmarks_align_celeba.txt`` (each read by torchvision's CelebA),
    two validation images included.
    """
    folder = root / "celeba"
    (folder / "img_align_celeba").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    rows = [(part, t, s) for part, n in PER_GROUP.items() for t in (0, 1) for s in (0, 1) for _ in range(n)]
    rows += [(1, 0, 0), (1, 1, 1)]
    truth, attr, part, ident, bbox, marks = {}, [], [], [], [], []
    for i, (p, t, s) in enumerate(rows, start=1):
        name = f"{i:06d}.jpg"
        pixels = rng.integers(0, 120, size=(14, 12, 3), dtype=np.uint8)
        pixels[:4] = 230 if s else 40
        Image.fromarray(pixels).save(folder / "img_align_celeba" / name, quality=95)
        bits = rng.choice([-1, 1], size=len(ATTRS))
        bits[ATTRS.index("Smiling")], bits[ATTRS.index("Blond_Hair")] = 2 * t - 1, 2 * s - 1
        truth[name] = (t, s)
        attr.append(f"{name} " + " ".join(f"{b:2d}" for b in bits))
        part.append(f"{name} {p}")
        ident.append(f"{name} {i % 5 + 1}")
        bbox.append(f"{name} 10 20 30 40")
        marks.append(f"{name} " + " ".join(str(v) for v in range(10)))
    n = len(rows)
    (folder / "list_attr_celeba.txt").write_text(f"{n}\n{' '.join(ATTRS)} \n" + "\n".join(attr) + "\n")
    (folder / "list_eval_partition.txt").write_text("\n".join(part) + "\n")
    (folder / "identity_CelebA.txt").write_text("\n".join(ident) + "\n")
    (folder / "list_bbox_celeba.txt").write_text(f"{n}\nimage_id x_1 y_1 width height\n" + "\n".join(bbox) + "\n")
    heads = "lefteye_x lefteye_y righteye_x righteye_y nose_x nose_y leftmouth_x leftmouth_y rightmouth_x rightmouth_y"
    (folder / "list_landmarks_align_celeba.txt").write_text(f"{n}\n{heads}\n" + "\n".join(marks) + "\n")
    return truth


@pytest.fixture
def archive(tmp_path, monkeypatch):
    """The tiny archive, with torchvision's MD5 check of the text files replaced (their sums are the real files')."""
    import torchvision.datasets.celeba as tv_celeba

    monkeypatch.setattr(tv_celeba, "check_integrity", lambda *args, **kwargs: True)
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    return tmp_path, write_fake_celeba(tmp_path)


def test_nhtlab_reads_the_archive_as_torchvision_does(archive):
    root, truth = archive
    data = celeba(root, size=8, n_train=16, n_test=8, rho=0.75, seed=1)
    assert data.num_classes == 2 and data.kind == "celeba" and data.x_train.shape == (16, 3, 8, 8)
    assert data.x_train.dtype == torch.float32 and 0.0 <= float(data.x_train.min()) <= float(data.x_train.max()) <= 1.0
    assert float((data.cue_train == data.y_train).float().mean()) == 0.75 and data.y_train.sum() == 8  # half smiling, 3 of 4 blond ↔ smiling
    ref = {split: torchvision.datasets.CelebA(str(root), split=split) for split in ("train", "test")}
    cols = [ref["train"].attr_names.index(a) for a in CELEBA_TASK]
    for split, files, y, cue in (("train", data.settings["train_files"], data.y_train, data.cue_train),
                                 ("test", data.settings["test_files"], *(s[1] for s in (data.test_sets["clean"],
                                                                                       data.test_sets["shortcut"])))):
        assert set(files) <= set(ref[split].filename)  # drawn from the split torchvision reads
        rows = [ref[split].filename.index(f) for f in files]
        assert y.tolist() == ref[split].attr[rows, cols[0]].tolist() == [truth[f][0] for f in files]
        assert cue.tolist() == ref[split].attr[rows, cols[1]].tolist() == [truth[f][1] for f in files]
    # a pixel as PIL decodes it: centre crop 12 × 12 of the 12 × 14 image, bilinear resize to 8 × 8
    image = Image.open(root / "celeba" / "img_align_celeba" / data.settings["train_files"][0]).convert("RGB")
    expected = np.array(image.crop((0, 1, 12, 13)).resize((8, 8), resample=Image.BILINEAR))
    assert torch.allclose(data.x_train[0], torch.from_numpy(expected).permute(2, 0, 1).float() / 255.0)
    # the test sets: four balanced groups, the conflicting two, the training distribution
    sets = data.test_sets
    assert [len(sets[f"group{t}{s}"][1]) for t in (0, 1) for s in (0, 1)] == [2, 2, 2, 2]
    assert (sets["conflict"][1] != sets["cue"][1]).all() and len(sets["conflict"][1]) == 4
    assert len(sets["coloured"][1]) == 8
    again = celeba(root, size=8, n_train=16, n_test=8, rho=0.75, seed=1)
    assert again.settings["train_files"] == data.settings["train_files"]  # seeded


def test_a_tiny_shortcut_run_on_celeba(archive):
    root, _ = archive
    run = nhtlab.ShortcutRun(kind="celeba", root=str(root), size=8, train_size=16, rho=0.75, channels=(4, 4, 8, 8, 8, 8),
                             steps=4, eval_every=2, batch_size=8, device="cpu")
    history = nhtlab.training.shortcut_run.run_shortcut(run, progress="none")
    assert history.status == "completed"
    assert {"clean_acc", "conflict_acc", "cue_acc", "group01_acc", "norm/conv1"} <= set(history.columns)
    from nhtlab.book.shortcut_report import domain_of

    assert domain_of(run).num_classes == 2


def test_named_errors(tmp_path, archive):
    with pytest.raises(DatasetUnavailableError, match=r"no img_align_celeba folder in .*absent.* and download=False.*download=True"):
        celeba(tmp_path / "absent")
    with pytest.raises(TypeError, match="'download' parameter of celeba must be a bool"):
        celeba(tmp_path, download="yes")
    root, _ = archive
    with pytest.raises(ValueError, match="holds 8 images with Smiling=1, Blond_Hair=1; 11 were asked"):
        celeba(root, n_train=40, n_test=8, rho=0.55)
    (root / "celeba" / "list_attr_celeba.txt").unlink()
    with pytest.raises(DatasetUnavailableError, match="could not read it under .*list_attr_celeba"):
        celeba(root, n_train=16)


def test_the_chapter_section_scores_celeba_beside_the_paper(archive, tmp_path):
    from nhtlab import book as nb
    from nhtlab.training.cache import ResultCache

    root, _ = archive
    tiny = dict(kind="celeba", root=str(root), download=False, size=8, train_size=16, rho=0.75,
                channels=(4, 4, 8, 8, 8, 8), steps=4, eval_every=2, batch_size=8, device="cpu")
    study = nb.ShortcutStudy.from_profile(dict(run={}, lam_main=0.1, seeds=[0, 1], celeba=tiny, celeba_lams=[0.01, 0.1]))
    assert [len(rs) for rs in nb.celeba_runs(study).values()] == [1, 2] and nb.celeba_problem(study) is None
    runs = [r for r in study.runs() if r.kind == "celeba"]  # the data can be had: the study's sweep holds them
    assert len(runs) == 3
    cache = ResultCache(tmp_path / "cache")
    trained = dict(zip(runs, nhtlab.sweep(runs, workers=1, cache=cache).histories))
    text = nb.celeba_scorecard(study, trained, cache=cache)
    assert "Paper: CelebA 4/6, separation −0.11." in text and "P1 norm ordering (CelebA)" in text
    assert "worst group" in text and "Ours: " in text and "3 runs" in text
    none = nb.ShortcutStudy.from_profile(dict(run={}, lam_main=0.1, seeds=[0]))
    assert nb.celeba_scorecard(none, {}).startswith("The CelebA runs are in the `full` profile")
    absent = nb.ShortcutStudy.from_profile(dict(run={}, lam_main=0.1, seeds=[0], celeba={**tiny, "root": str(tmp_path / "no")},
                                                celeba_lams=[0.1]))
    assert not [r for r in absent.runs() if r.kind == "celeba"]  # no data: the sweep trains the rest
    assert nb.celeba_scorecard(absent, {}).startswith("No CelebA scorecard here: CelebA is unavailable")
