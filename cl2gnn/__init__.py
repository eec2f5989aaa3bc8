"""cl2gnn: contrastive learning as message passing on PyTorch Geometric."""

from . import graphs, losses, nn
from ._validation import set_validation

__version__ = "0.1.0"

__all__ = ["__version__", "graphs", "losses", "nn", "set_validation"]
