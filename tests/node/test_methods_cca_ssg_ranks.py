"""CCA-SSG across ranks: several gloo processes, each holding an uneven share of the global
batch's rows (one row on a rank), equal one process on the union in float64 — the loss's
value (the mean over ranks), its gradient on each rank's rows (``world_size ×`` the
single-process one) and, averaged over ranks as DDP does, on a shared linear layer's weights.
The reference is the float64 loop over the formula (tests/node/test_methods_field.py)."""

import pytest
import torch

from cl2gnn.losses import cca_ssg_loss
from cl2gnn.node import NodeConfig

from .. import _ranks
from .test_methods_field import cca_ssg_reference

LAMBDAS = (0.0, 0.5)  # the invariance alone; with the decorrelation's Grams


def _rank_results(rank, world, lam, dead):
    """The function's and the method's results on this rank, both with weight ``lam``."""

    def loss(h1, h2):
        return cca_ssg_loss(h1, h2, lam, "gather")

    config = NodeConfig(out_channels=_ranks.WIDTH, options={"decorrelation": lam})
    return _ranks.rank_results(rank, world, loss, "cca_ssg", config, dead)


@pytest.fixture(scope="module", params=sorted(_ranks.SIZES), ids=lambda w: f"{w}ranks")
def ranks(request, tmp_path_factory):
    """``(world, [results of rank 0, rank 1, ...])`` from one spawned process group."""
    world = request.param
    cases = [(lam, False) for lam in LAMBDAS] + [(0.5, True)]
    out = tmp_path_factory.mktemp(f"cca_ssg_world{world}")
    return world, _ranks.spawn_ranks(world, out, _rank_results, cases)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_ranks_with_uneven_shares_equal_one_process_on_the_union(ranks, lam):
    world, results = ranks
    expected = _ranks.single_process(lambda a, b: cca_ssg_reference(a, b, lam))
    _ranks.assert_equals_one_process(world, [r[lam, False] for r in results], *expected)


def test_a_dead_unit_across_ranks_gets_the_single_process_gradient_not_nan(ranks):
    world, results = ranks
    # the loop reference divides by the dead column's zero deviation: the library's clamp
    expected = _ranks.single_process(lambda a, b: cca_ssg_loss(a, b, 0.5), dead=True)
    assert torch.isfinite(expected[3]).all()
    _ranks.assert_equals_one_process(world, [r[0.5, True] for r in results], *expected)
