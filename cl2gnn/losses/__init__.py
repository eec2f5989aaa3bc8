"""Contrastive objectives composed from the ``cl2gnn.nn`` operators (modules and functions).

Every loss takes two view batches ``(z1, z2)`` or stacked features with an augmentation
graph (``edge_index`` / ``sample_id``), so multi-view and kNN positives work alike. A loss
module's options are plain attributes: one set after construction applies from the next
call on (a bad value fails that call with the error construction gives). A loss of two
view batches (or of features with an augmentation graph) registers itself in
:data:`PAIR_LOSSES` (``@PAIR_LOSSES.register``), which the tests run on its example calls.
"""

from .._registry import PAIR_LOSSES
from .alignment_uniformity import AlignmentUniformityLoss, alignment, uniformity
from .attention_infonce import AttentionInfoNCELoss, attention_info_nce
from .barlow_twins import BarlowTwinsLoss, barlow_twins_loss
from .bootstrap import BootstrapLoss, bootstrap_loss
from .cca_ssg import CCASSGLoss, cca_ssg_loss
from .generalized_ntxent import GeneralizedNTXentLoss, generalized_nt_xent
from .graphacl import GraphACLLoss, graphacl_loss
from .infonce import InfoNCELoss, info_nce
from .kernel import KernelInfoNCELoss, kernel_info_nce, log_kernel
from .local_global import LocalGlobalLoss, local_global_loss
from .multistage import (
    MultiStageAlignmentLoss,
    MultiStageSimSiamLoss,
    multi_stage_alignment,
    multi_stage_simsiam,
)
from .random_walk import RandomWalkLoss, random_walk_loss
from .spectral import SpectralContrastiveLoss, spectral_contrastive

__all__ = [
    "PAIR_LOSSES",
    "AlignmentUniformityLoss",
    "AttentionInfoNCELoss",
    "BarlowTwinsLoss",
    "BootstrapLoss",
    "CCASSGLoss",
    "GeneralizedNTXentLoss",
    "GraphACLLoss",
    "InfoNCELoss",
    "KernelInfoNCELoss",
    "LocalGlobalLoss",
    "MultiStageAlignmentLoss",
    "MultiStageSimSiamLoss",
    "RandomWalkLoss",
    "SpectralContrastiveLoss",
    "alignment",
    "attention_info_nce",
    "barlow_twins_loss",
    "bootstrap_loss",
    "cca_ssg_loss",
    "generalized_nt_xent",
    "graphacl_loss",
    "info_nce",
    "kernel_info_nce",
    "local_global_loss",
    "log_kernel",
    "multi_stage_alignment",
    "multi_stage_simsiam",
    "random_walk_loss",
    "spectral_contrastive",
    "uniformity",
]
