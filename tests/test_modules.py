"""timm-style checks over every registered operator and loss: forward, backward, every
parameter gets a gradient, repr, dtype moves, torch.compile, PyG graph input types."""

import io

import pytest
import torch
import torch.nn.functional as F
from torch_geometric import EdgeIndex
from torch_geometric.utils import to_torch_coo_tensor

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import PAIR_LOSSES
from cl2gnn.nn import OPERATORS, MultiStageMemory

N, D = 12, 6


def make_operator(name):
    """(operator, extra forward args) for a graph of N nodes."""
    edge_index = pair_graph(N // 2, 2)
    if name == "MultiStageMemory":
        op = MultiStageMemory(N, D, stages=2, mode="cat", step=0.5)
        op.push(torch.randn(N, D), torch.arange(N))
        op.next_stage()
        return op, (torch.arange(N),)
    if name == "UniformAttention":
        return OPERATORS[name](step=0.1), ()
    if name == "ContrastiveNorm":  # a normalisation layer: its width, the complete graph
        return OPERATORS[name](D, step=0.1), ()
    return OPERATORS[name](step=0.1), (edge_index,)


@pytest.mark.parametrize("name", sorted(OPERATORS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_operator_forward_backward(name, dtype):
    op, args = make_operator(name)
    op = op.to(dtype)
    x = torch.randn(N, D, dtype=dtype, requires_grad=True)
    out = op(x, *args)
    assert out.shape == (N, D) and out.dtype == dtype
    energy = op.energy(x, *args)
    assert energy.dim() == 0 and torch.isfinite(energy)
    (out.square().sum() + energy).backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    for pname, param in op.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", [*sorted(OPERATORS), "UniformAttention-keys"])
def test_operator_forward_under_bf16_autocast_matches_float32(name):
    """Mixed precision, as the image trainer runs on CUDA (here CPU autocast): the products
    in bfloat16, the update in x's dtype and within bfloat16's rounding of float32's."""
    op, args = make_operator(name.removesuffix("-keys"))
    kwargs = {"keys": torch.tensor([0, 3, 5, 7, 10])} if name.endswith("-keys") else {}
    x = F.normalize(torch.randn(N, D), dim=1)
    expected = op(x, *args, **kwargs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = op(x, *args, **kwargs)
    assert out.shape == expected.shape
    assert torch.allclose(out.float(), expected, atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_operator_repr(name):
    op, _ = make_operator(name)
    text = repr(op)
    assert text.startswith(name + "(") and "step=0." in text


@pytest.mark.parametrize("name", ["UniformAttention", "ContrastiveConv"])
def test_tau_is_a_deprecated_alias_of_temperature(name):
    cls, (_, args) = OPERATORS[name], make_operator(name)
    x = torch.randn(N, D, dtype=torch.float64)
    with pytest.warns(DeprecationWarning, match="use temperature"):
        old = cls(0.1, tau=0.3)
    new = cls(0.1, temperature=0.3)
    assert torch.equal(old(x, *args), new(x, *args))
    assert torch.equal(old.energy(x, *args), new.energy(x, *args))
    with pytest.warns(DeprecationWarning, match="use temperature"):
        assert old.tau == 0.3
    with pytest.warns(DeprecationWarning, match="use temperature"):
        old.tau = 0.7
    assert old.temperature == 0.7 and "temperature=0.7" in repr(old) and "tau" not in repr(old)
    with pytest.raises(TypeError, match="not both"):
        cls(temperature=0.3, tau=0.3)
    with pytest.raises(TypeError, match="not both"):
        cls(0.1, 0.3, tau=0.3)  # the temperature by position


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("step", 0.3),
        ("temperature", 0.2),
        ("positive_in_denominator", False),
        ("stop_gradient", True),
    ],
)
def test_contrastive_conv_option_set_later_reaches_its_operators(option, value):
    x, edge_index = torch.randn(N, D, dtype=torch.float64), pair_graph(N // 2, 2)
    op = OPERATORS["ContrastiveConv"]()
    setattr(op, option, value)
    fresh = OPERATORS["ContrastiveConv"](**{option: value})
    assert torch.equal(op(x, edge_index), fresh(x, edge_index))
    assert torch.equal(op.energy(x, edge_index), fresh.energy(x, edge_index))
    default = OPERATORS["ContrastiveConv"]()(x, edge_index)
    assert not torch.allclose(op(x, edge_index), default)


@pytest.mark.parametrize("name", ["AlignConv", "UniformAttention", "AttentionAlignConv"])
def test_operator_compiles(name):
    op, args = make_operator(name)
    x = torch.randn(N, D)
    compiled = torch.compile(op, backend="aot_eager", fullgraph=False)
    assert torch.allclose(compiled(x, *args), op(x, *args), atol=1e-6)


def test_align_compiles_with_inductor():
    op, args = make_operator("AlignConv")
    x = torch.randn(N, D)
    compiled = torch.compile(op)
    assert torch.allclose(compiled(x, *args), op(x, *args), atol=1e-5)


@pytest.mark.parametrize("name", ["AlignConv", "AttentionAlignConv", "ContrastiveConv"])
def test_edge_index_and_sparse_inputs(name):
    op, (edge_index,) = make_operator(name)
    x = torch.randn(N, D, dtype=torch.float64)
    expected = op(x, edge_index)
    typed = EdgeIndex(edge_index, sparse_size=(N, N))
    assert torch.allclose(op(x, typed), expected)
    if name != "ContrastiveConv":  # its uniformity term uses edge_index as a pair list
        adj_t = to_torch_coo_tensor(edge_index.flip(0), size=(N, N))
        assert torch.allclose(op(x, adj_t), expected)


def test_sparse_adjacency_is_read_as_adj_t():
    edge_index = torch.tensor([[0, 0], [1, 2]])  # directed: 0 -> 1, 0 -> 2
    weight = torch.tensor([2.0, 3.0], dtype=torch.float64)
    x = torch.randn(3, 2, dtype=torch.float64)
    op = OPERATORS["AlignConv"](step=0.3)
    adj_t = to_torch_coo_tensor(edge_index.flip(0), weight, size=(3, 3))
    assert torch.allclose(op(x, adj_t), op(x, edge_index, weight))


def test_memory_state_dict_roundtrip_and_storage_dtype():
    mem = MultiStageMemory(100, 8, stages=2, dtype=torch.bfloat16)
    ids = torch.arange(10)
    mem.push(torch.randn(10, 8), ids)
    mem.next_stage()
    assert mem.bank.dtype == torch.bfloat16
    assert mem.bank.element_size() * mem.bank.numel() == 2 * 100 * 8 * 2
    buffer = io.BytesIO()
    torch.save(mem.state_dict(), buffer)
    buffer.seek(0)
    restored = MultiStageMemory(100, 8, stages=2, dtype=torch.bfloat16)
    restored.load_state_dict(torch.load(buffer))
    x = torch.randn(10, 8)
    assert torch.equal(restored.aggregate_stages(x, ids), mem.aggregate_stages(x, ids))
    assert int(restored.pointer) == 1 and int(restored.stages_done) == 1


def pair_inputs(name, dtype=torch.float64):
    z1, z2 = torch.randn(8, D, dtype=dtype), torch.randn(8, D, dtype=dtype)
    if name == "AlignmentUniformityLoss":
        z1, z2 = F.normalize(z1, dim=1), F.normalize(z2, dim=1)
    return z1.requires_grad_(True), z2.requires_grad_(True)


@pytest.mark.parametrize("name", sorted(PAIR_LOSSES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_loss_forward_backward(name, dtype):
    loss_fn = PAIR_LOSSES[name]()
    z1, z2 = pair_inputs(name, dtype)
    loss = loss_fn(z1, z2)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(z1.grad).all() and z1.grad.abs().sum() > 0
    assert z2.grad is not None


# their pair forms are the authors' per-view estimators (tested in test_losses)
OWN_PAIR_FORM = {"SpectralContrastiveLoss", "AlignmentUniformityLoss"}


@pytest.mark.parametrize("name", sorted(set(PAIR_LOSSES) - OWN_PAIR_FORM))
def test_loss_graph_form_equals_pair_form(name):
    loss_fn = PAIR_LOSSES[name]()
    z1, z2 = pair_inputs(name)
    pair = loss_fn(z1, z2)
    x = torch.cat([z1, z2])
    assert torch.allclose(loss_fn(x, edge_index=pair_graph(8, 2)), pair)
    assert torch.allclose(loss_fn(x, sample_id=torch.arange(8).repeat(2)), pair)


@pytest.mark.parametrize("name", sorted(PAIR_LOSSES))
def test_loss_repr(name):
    text = repr(PAIR_LOSSES[name]())
    assert text.startswith(name + "(") and text != name + "()"
