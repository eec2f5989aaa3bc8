"""The command's torch-free catalogue of names (``cl2gnn/cli/catalogue.py``) equals the
library's registries and name lists, each read from where it is defined: a name added to,
renamed in or removed from the library without the catalogue fails here, naming both."""

import pytest

from cl2gnn.cli import catalogue
from cl2gnn.datasets import generators, nodes
from cl2gnn.graphs import knn_tiles
from cl2gnn.nn import tiled
from cl2gnn.node import api, config
from cl2gnn.node.encoders import activations
from cl2gnn.node.evaluation import probes
from cl2gnn.studies import run
from cl2gnn.vision import data, models, objectives

# (the catalogue's name, the library's value: as a tuple of names, in the library's order)
TIES = [
    ("EMBEDDED_DATASET", nodes.EMBEDDED_DATASET),
    ("PYG_DATASETS", nodes.PYG_DATASETS),
    ("HETEROPHILOUS", nodes.HETEROPHILOUS),
    ("DATASETS", nodes.DATASETS),
    ("GRAPH_PRESETS", tuple(generators.PRESETS)),
    ("KNN_TILE_PRECISIONS", knn_tiles.TILE_PRECISIONS),
    ("PROTOCOLS", probes.PROTOCOLS),
    ("AUTO", api.AUTO),
    ("MATMUL_DTYPES", tiled.MATMUL_DTYPES),
    ("IMAGE_DATASETS", data.DATASETS),
    ("ARCHS", models.ARCHS),
    ("KERNELS", tuple(objectives.KERNELS)),
    ("STUDY_NAMES", run.STUDY_NAMES),
]


@pytest.mark.parametrize(("name", "library"), TIES, ids=[name for name, _ in TIES])
def test_every_catalogue_name_equals_the_librarys(name, library):
    assert getattr(catalogue, name) == library


def test_every_catalogue_list_is_tied():
    """A list added to the catalogue without its tie above fails here."""
    listed = {
        name
        for name, value in vars(catalogue).items()
        if name.isupper() and isinstance(value, str | tuple)
    }
    assert listed - {"ENCODERS", "EMBEDDINGS"} == {name for name, _ in TIES}
    # the configuration's choices are imported from it, not repeated
    assert catalogue.ENCODERS is config.ENCODERS and catalogue.EMBEDDINGS is config.EMBEDDINGS


def test_the_encoders_activations_are_the_configurations():
    assert tuple(activations.ACTIVATION_MODULES) == config.ACTIVATIONS
