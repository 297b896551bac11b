import pytest
import torch

from nhtlab.data.modular import is_prime, modular_data


@pytest.mark.parametrize("op,fn", [("+", lambda a, b, p: (a + b) % p), ("-", lambda a, b, p: (a - b) % p),
                                   ("*", lambda a, b, p: (a * b) % p)])
def test_labels_match_the_operation(op, fn):
    data = modular_data(p=11, operation=op, train_fraction=0.5, seed=1)
    for x, y in ((data.x_train, data.y_train), (data.x_test, data.y_test)):
        assert torch.equal(y, fn(x[:, 0], x[:, 1], 11))


def test_division_inverts_multiplication():
    p = 13
    data = modular_data(p=p, operation="/", train_fraction=0.5, seed=0)
    x = torch.cat([data.x_train, data.x_test])
    y = torch.cat([data.y_train, data.y_test])
    assert len(y) == p * (p - 1)  # b = 0 is left out
    assert (x[:, 1] != 0).all()
    assert torch.equal((y * x[:, 1]) % p, x[:, 0])


def test_sizes_and_disjoint_split_cover_the_table():
    data = modular_data(p=17, train_fraction=0.3, seed=3)
    assert len(data.y_train) == round(0.3 * 17 * 17)
    assert len(data.y_train) + len(data.y_test) == 17 * 17
    train = {tuple(r) for r in data.x_train.tolist()}
    test = {tuple(r) for r in data.x_test.tolist()}
    assert not train & test
    assert len(train | test) == 17 * 17
    assert data.x_train.dtype == torch.long and data.x_train.shape[1] == 2


def test_split_is_seeded():
    a, b, c = (modular_data(p=11, seed=s) for s in (5, 5, 6))
    assert torch.equal(a.x_train, b.x_train)
    assert not torch.equal(a.x_train, c.x_train)


def test_is_prime():
    assert [n for n in range(20) if is_prime(n)] == [2, 3, 5, 7, 11, 13, 17, 19]


@pytest.mark.parametrize("kwargs,exc,message", [
    (dict(p=1), ValueError, "'p' parameter of modular_data must be an int in the range [2, 4096] (the p² pairs are built in memory). Got 1"),
    (dict(p=2.5), TypeError, "'p' parameter of modular_data must be an int"),
    (dict(p=12, operation="/"), ValueError, "must be a prime number when operation='/'"),
    (dict(operation="^"), ValueError, "'operation' parameter of modular_data must be one of '+', '-', '*', '/'. Got '^'"),
    (dict(train_fraction=0.0), ValueError, "'train_fraction' parameter of modular_data must be a finite float in the range (0.0, 1.0). Got 0.0"),
    (dict(train_fraction=1.0), ValueError, "in the range (0.0, 1.0)"),
    (dict(train_fraction=1.5), ValueError, "Got 1.5 instead"),
    (dict(p=3, train_fraction=0.01), ValueError, "leaves an empty train or test set"),
    (dict(seed=-1), ValueError, "'seed' parameter of modular_data"),
])
def test_bad_input_names_the_parameter(kwargs, exc, message):
    with pytest.raises(exc) as info:
        modular_data(**kwargs)
    assert message in str(info.value)
