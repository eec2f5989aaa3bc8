"""timm-style checks over every registered operator and loss: forward, backward, every
parameter gets a gradient, repr, dtype moves, torch.compile, PyG graph input types."""

import io

import pytest
import torch
import torch.nn.functional as F
from torch_geometric import EdgeIndex
from torch_geometric.utils import to_torch_coo_tensor

from cl2gnn._registry import Registry
from cl2gnn.graphs import pair_graph
from cl2gnn.losses import PAIR_LOSSES
from cl2gnn.nn import OPERATORS, MultiStageMemory

N, D = 12, 6


def examples(registry):
    """``(name/label, class, example)`` of every example call of every registered class."""
    generator = torch.Generator().manual_seed(0)
    return [
        pytest.param(cls, example, id=f"{name}-{label}")
        for name, cls in sorted(registry.items())
        if hasattr(cls, "examples")  # one without: test_every_registered_class_has_example_calls
        for label, example in cls.examples(N, D, generator).items()
    ]


def cast(example, dtype):
    """The example's module and inputs in ``dtype`` (floating tensors only, copied: a test
    may make them require gradients)."""

    def to(value):
        floating = isinstance(value, torch.Tensor) and value.is_floating_point()
        return value.to(dtype, copy=True) if floating else value

    module = example.build().to(dtype)
    return module, tuple(map(to, example.args)), {k: to(v) for k, v in example.kwargs.items()}


def test_a_registry_refuses_a_second_class_of_one_name():
    registry = Registry()

    @registry.register
    class Step:
        pass

    with pytest.raises(ValueError, match="'Step' is registered already"):
        registry.register(type("Step", (), {}))
    assert registry.register("named")(Step) is Step and Step.name == "named"


OPERATOR_EXAMPLES = examples(OPERATORS)
LOSS_EXAMPLES = examples(PAIR_LOSSES)


@pytest.mark.parametrize("registry", [OPERATORS, PAIR_LOSSES], ids=["operators", "losses"])
def test_every_registered_class_has_example_calls(registry):
    generator = torch.Generator().manual_seed(0)
    for name, cls in registry.items():
        assert callable(getattr(cls, "examples", None)), f"{name} has no example calls"
        calls = cls.examples(N, D, generator)
        assert calls and all(isinstance(e.build(), cls) for e in calls.values()), name


@pytest.mark.parametrize(("cls", "example"), OPERATOR_EXAMPLES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_operator_forward_backward(cls, example, dtype):
    op, (x, *args), kwargs = cast(example, dtype)
    x = x.requires_grad_(True)
    out = op(x, *args, **kwargs)
    assert out.shape == x.shape and out.dtype == dtype
    energy = op.energy(x, *args, **kwargs)
    assert energy.dim() == 0 and torch.isfinite(energy)
    (out.square().sum() + energy).backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
    for pname, param in op.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, pname


@pytest.mark.parametrize(("cls", "example"), OPERATOR_EXAMPLES)
def test_operator_forward_under_bf16_autocast_matches_float32(cls, example):
    """Mixed precision, as the image trainer runs on CUDA (here CPU autocast): the products
    in bfloat16, the update in x's dtype and within bfloat16's rounding of float32's."""
    op, (x, *args), kwargs = cast(example, torch.float32)
    x = F.normalize(x, dim=1)
    expected = op(x, *args, **kwargs)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = op(x, *args, **kwargs)
    assert out.shape == expected.shape
    assert torch.allclose(out.float(), expected, atol=3e-2, rtol=3e-2)


@pytest.mark.parametrize(("cls", "example"), OPERATOR_EXAMPLES)
def test_operator_repr(cls, example):
    text = repr(example.build())
    assert text.startswith(cls.__name__ + "(") and "step=0." in text


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


def first_example(name):
    (example, *_) = OPERATORS[name].examples(N, D, torch.Generator().manual_seed(0)).values()
    return cast(example, torch.float32)


@pytest.mark.parametrize("name", ["AlignConv", "UniformAttention", "AttentionAlignConv"])
def test_operator_compiles(name):
    op, args, kwargs = first_example(name)
    compiled = torch.compile(op, backend="aot_eager", fullgraph=False)
    assert torch.allclose(compiled(*args, **kwargs), op(*args, **kwargs), atol=1e-6)


def test_align_compiles_with_inductor():
    op, args, kwargs = first_example("AlignConv")
    compiled = torch.compile(op)
    assert torch.allclose(compiled(*args, **kwargs), op(*args, **kwargs), atol=1e-5)


@pytest.mark.parametrize("name", ["AlignConv", "AttentionAlignConv", "ContrastiveConv"])
def test_edge_index_and_sparse_inputs(name):
    op, x = first_example(name)[0].double(), torch.randn(N, D, dtype=torch.float64)
    edge_index = pair_graph(N // 2, 2)
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


@pytest.mark.parametrize(("cls", "example"), LOSS_EXAMPLES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_loss_forward_backward(cls, example, dtype):
    loss_fn, (z1, *rest), kwargs = cast(example, dtype)
    z1 = z1.requires_grad_(True)
    loss = loss_fn(z1, *rest, **kwargs)
    assert loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(z1.grad).all() and z1.grad.abs().sum() > 0


# their pair forms are the authors' per-view estimators (tested in test_losses)
OWN_PAIR_FORM = {"SpectralContrastiveLoss", "AlignmentUniformityLoss"}


@pytest.mark.parametrize("name", sorted(set(PAIR_LOSSES) - OWN_PAIR_FORM))
def test_loss_graph_form_equals_pair_form(name):
    """The example calls of a loss: two views, and the same rows stacked with their pair
    graph as ``edge_index`` or ``sample_id``."""
    calls = PAIR_LOSSES[name].examples(N, D, torch.Generator().manual_seed(0))
    values = {
        label: example.build()(*example.args, **example.kwargs) for label, example in calls.items()
    }
    assert set(values) == {"views", "edge_index", "sample_id"}
    assert torch.allclose(values["edge_index"], values["views"])
    assert torch.allclose(values["sample_id"], values["views"])


@pytest.mark.parametrize("name", sorted(PAIR_LOSSES))
def test_loss_repr(name):
    text = repr(PAIR_LOSSES[name]())
    assert text.startswith(name + "(") and text != name + "()"
