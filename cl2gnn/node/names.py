"""The names the ``cl2gnn node`` command offers, importable without torch (so that
``cl2gnn --help`` stays fast); the modules that implement them import them from here.
:data:`METHODS` is read off the ``@register_method("name")`` decorators of
:mod:`cl2gnn.node.methods` (the keys of its ``REGISTRY``), sorted, without importing them."""

from __future__ import annotations

import re
from pathlib import Path


def _registered_methods() -> tuple[str, ...]:
    folder = Path(__file__).with_name("methods")
    decorator = re.compile(r'^@register_method\("(\w+)"\)$', re.MULTILINE)
    return tuple(sorted(n for f in folder.glob("*.py") for n in decorator.findall(f.read_text())))


METHODS = _registered_methods()
# cl2gnn node's --method: a registered method, or "auto" (chosen on the graph's own validation
# nodes among cl2gnn.node.config.CANDIDATES), the default
AUTO = "auto"
METHOD_CHOICES = (AUTO, *METHODS)
# grace: random 10/90, C by CV; gca: random 10/10/80; public: Planetoid's split;
# splits: the dataset's own shipped splits (C on their validation nodes)
PROTOCOLS = ("grace", "gca", "public", "splits")

ENCODERS = ("gcn", "sage", "gat")
ACTIVATIONS = ("relu", "prelu", "rrelu", "elu", "none")  # "none": a linear encoder
# what the probe reads: the last layer, both layers (jumping knowledge), or every layer with
# the input features, each unit-normalised
EMBEDDINGS = ("last", "concat", "layers")
# what GCA's adaptive views read a node's importance off
CENTRALITIES = ("degree", "pagerank", "eigenvector")
# NodeConfig.matmul_dtype: the exact InfoNCE's products in bfloat16 (cl2gnn.nn.tiled's
# MATMUL_DTYPES, repeated here without torch; a test ties the two)
MATMUL_DTYPES = ("bfloat16",)
