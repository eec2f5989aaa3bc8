"""Graph Barlow Twins across ranks: several gloo processes, each holding an uneven share of
the global batch's rows (one row on a rank), equal one process on the union in float64 —
the loss's value (the mean over ranks), its gradient on each rank's rows (``world_size ×``
the single-process one) and, averaged over ranks as DDP does, on a shared linear layer's
weights. The cross-correlation is the ranks' summed ``Z1ᵀZ2`` over the global ``N``: a
mean of the ranks' own cross-correlations (reduce, then divide by each rank's rows) fails.
The reference is the float64 loop over the formula (tests/node/test_methods_zoo.py)."""

import pytest
import torch

from cl2gnn.losses import barlow_twins_loss
from cl2gnn.node import NodeConfig

from .. import _ranks
from .test_methods_zoo import barlow_twins_reference

LAMBDAS = (None, 0.5)  # the authors' 1/d; another weight


def _rank_results(rank, world, lam, dead):
    """The function's results on this rank with weight ``lam``, the method's with the
    authors' λ."""

    def loss(h1, h2):
        return barlow_twins_loss(h1, h2, lam, "gather")

    return _ranks.rank_results(
        rank, world, loss, "gbt", NodeConfig(out_channels=_ranks.WIDTH), dead
    )


@pytest.fixture(scope="module", params=sorted(_ranks.SIZES), ids=lambda w: f"{w}ranks")
def ranks(request, tmp_path_factory):
    """``(world, [results of rank 0, rank 1, ...])`` from one spawned process group."""
    world = request.param
    cases = [(lam, False) for lam in LAMBDAS] + [(None, True)]
    out = tmp_path_factory.mktemp(f"gbt_world{world}")
    return world, _ranks.spawn_ranks(world, out, _rank_results, cases)


@pytest.mark.parametrize("lam", LAMBDAS, ids=["1/d", "0.5"])
def test_ranks_with_uneven_shares_equal_one_process_on_the_union(ranks, lam):
    world, results = ranks
    expected = _ranks.single_process(lambda a, b: barlow_twins_reference(a, b, lam))
    # the method uses the authors' λ = 1/d
    _ranks.assert_equals_one_process(
        world, [r[lam, False] for r in results], *expected, lam is None
    )


def test_a_dead_unit_across_ranks_gets_the_single_process_gradient_not_nan(ranks):
    world, results = ranks
    expected = _ranks.single_process(barlow_twins_loss, dead=True)
    assert torch.isfinite(expected[3]).all()
    _ranks.assert_equals_one_process(world, [r[None, True] for r in results], *expected)
