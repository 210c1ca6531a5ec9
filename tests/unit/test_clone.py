"""Copies of a call's inputs: what a call may move is copied."""

import random

import numpy as np

from pytest_autotune.tune.clone import clone_value


def test_a_random_generator_is_copied_so_each_call_draws_what_the_first_did() -> None:
    for make, draw in (
        (lambda: np.random.default_rng(0), lambda g: g.random(3).tolist()),
        (lambda: np.random.RandomState(0), lambda g: g.rand(3).tolist()),
        (lambda: random.Random(0), lambda g: [g.random() for _ in range(3)]),
    ):
        rng = make()
        first = draw(clone_value(rng))
        assert draw(clone_value(rng)) == first
        assert draw(rng) == first  # the caller's own, unmoved by the copies' draws
        (inside,) = clone_value((rng,))
        assert inside is not rng
