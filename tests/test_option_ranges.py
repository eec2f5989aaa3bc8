"""Options that would make nonsense refused where they are given: every
registered loss's temperatures and every operator's checked options (step, temperature,
...) must be valid (a temperature large enough for float32 logits), at construction and,
set later, at the next call;
edge weights a degree normalisation divides by must not be negative; a loss that averages
over pairs refuses a single row instead of returning NaN; every number a command or a
configuration takes has bounds, so that 10²⁰ or 1e308 is refused in one line naming them
instead of ending in a traceback (or an 8 GB allocation) later."""

import inspect
import math
from dataclasses import fields
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from cl2gnn._options import option_checks
from cl2gnn.losses import PAIR_LOSSES
from cl2gnn.nn import OPERATORS
from cl2gnn.node.config import FIELDS, check_field
from cl2gnn.node.methods import REGISTRY, option_value

NONSENSE_TEMPERATURES = [math.inf, math.nan, 0.0, -1.0, 1e-30]


def options(cls) -> list[str]:
    return list(inspect.signature(cls.__init__).parameters)[1:]


TEMPERATURE_OPTIONS = [
    (name, option)
    for name, cls in sorted(PAIR_LOSSES.items())
    for option in options(cls)
    if option.startswith("temperature") or option in ("t", "mu", "alpha", "gamma")
]
BASE = {("KernelInfoNCELoss", "temperature2"): {"mixture": "simple"}}


def test_the_cases_cover_every_temperature_of_a_registered_loss():
    named = {(n, o) for n, cls in PAIR_LOSSES.items() for o in options(cls) if "temperature" in o}
    assert named and named <= set(TEMPERATURE_OPTIONS)


def views(rows: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return tuple(F.normalize(torch.randn(rows, 6, generator=generator), dim=1) for _ in "12")


@pytest.mark.parametrize(("name", "option"), TEMPERATURE_OPTIONS)
@pytest.mark.parametrize("bad", NONSENSE_TEMPERATURES)
def test_a_loss_refuses_a_nonsense_scale_at_construction_and_at_the_next_call(name, option, bad):
    if option != "temperature" and not option.startswith("temperature") and bad == 1e-30:
        return  # a tiny alpha, t, mu or gamma is a valid (if odd) value
    cls, base = PAIR_LOSSES[name], BASE.get((name, option), {})
    with pytest.raises(ValueError, match=option):
        cls(**base, **{option: bad})
    loss = cls(**base)
    setattr(loss, option, bad)
    with pytest.raises(ValueError, match=option):
        loss(*views())


def first_example(cls):
    (example, *_) = cls.examples(6, 3, torch.Generator().manual_seed(0)).values()
    return example


# a nonsense value of each checked operator option (a new option needs one here)
BAD_OPERATOR_OPTIONS = {
    "step": [math.inf, -math.inf, math.nan],
    "temperature": NONSENSE_TEMPERATURES,
    "beta": [math.nan],
    "normalize": ["rows"],
    "implementation": ["sparse"],
    "tile_size": [0, 2.5],
    "distributed": ["all"],
    "matmul_dtype": ["float16"],
    "K": [0, 2.5],
    "pass_band": ["band"],
}
CHECKED_OPERATOR_OPTIONS = [
    (name, option, bad)
    for name, cls in sorted(OPERATORS.items())
    for option in option_checks(cls.__init__)
    for bad in BAD_OPERATOR_OPTIONS[option]
]


def test_every_operator_checks_its_step_and_temperature():
    checked = {(name, option) for name, option, _ in CHECKED_OPERATOR_OPTIONS}
    assert {(name, "step") for name in OPERATORS} <= checked
    assert {("UniformAttention", "temperature"), ("ContrastiveConv", "temperature")} <= checked


@pytest.mark.parametrize(("name", "option", "bad"), CHECKED_OPERATOR_OPTIONS)
def test_an_operator_option_is_checked_at_construction_and_set_later_at_the_next_call(
    name, option, bad
):
    example = first_example(OPERATORS[name])
    with pytest.raises(ValueError, match=option):
        example.build(**{option: bad})
    operator = example.build()
    setattr(operator, option, bad)  # a plain attribute: refused where it is used
    with pytest.raises(ValueError, match=option):
        operator(*example.args, **example.kwargs)
    with pytest.raises(ValueError, match=option):
        operator.energy(*example.args, **example.kwargs)


def test_a_valid_negative_step_is_kept():
    """eq. 12: ``step = -temperature`` is self-attention, not a mistake."""
    assert OPERATORS["UniformAttention"](step=-0.5, temperature=0.5).step == -0.5


def graph_loss(cls, x, edge_index, edge_weight):
    return cls()(x, edge_index=edge_index, edge_weight=edge_weight)


NEGATIVE_WEIGHT_CALLS = {
    "AlignConv": lambda x, e, w: OPERATORS["AlignConv"]()(x, e, w),
    "AlignConv.energy": lambda x, e, w: OPERATORS["AlignConv"]().energy(x, e, w),
    "AttentionAlignConv": lambda x, e, w: OPERATORS["AttentionAlignConv"]()(x, e, w),
    "ContrastiveConv": lambda x, e, w: OPERATORS["ContrastiveConv"]()(x, e, w),
    **{name: partial(graph_loss, cls) for name, cls in PAIR_LOSSES.items()},
}


@pytest.mark.parametrize("name", sorted(NEGATIVE_WEIGHT_CALLS))
def test_a_negative_edge_weight_is_refused_where_degrees_normalise(name):
    x = F.normalize(torch.randn(6, 4), dim=1)
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    weight = torch.tensor([1.0, 1.0, -0.5, 1.0])
    with pytest.raises(ValueError, match="edge_weight must be >= 0"):
        NEGATIVE_WEIGHT_CALLS[name](x, edge_index, weight)


def test_the_spectral_loss_refuses_one_row_instead_of_nan():
    loss = PAIR_LOSSES["SpectralContrastiveLoss"]()
    with pytest.raises(ValueError, match="at least 2"):
        loss(*views(1))
    assert torch.isfinite(loss(*views(2)))


# -- every number a command or a configuration takes is bounded -----------------------------------

HUGE = ["1e20", str(10**20), "1e308", "-1e308", str(-(10**20))]


def numeric(action) -> bool:
    """Whether an option reads a number (its type turns some number's text into one)."""
    for text in ("1", "2", "4", "16", "0.5", "0", "-1"):
        try:
            value = action.type(text)
        except Exception:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            return True
    return False


def command_parsers() -> dict[str, object]:
    """Every command's parser: ``cl2gnn``'s sub-commands and the image commands (which
    parse their own options)."""
    import argparse
    import importlib

    from cl2gnn.cli.main import build_parser

    (commands,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parsers = {name: p for name, p in commands.choices.items() if name not in ("simclr", "simsiam")}

    class Built(Exception):
        pass

    for name in ("simclr", "simsiam"):
        module = importlib.import_module(f"cl2gnn.cli.{name}")

        def capture(parser, argv, per_dataset):
            raise Built(parser)

        real, module.parse_args = module.parse_args, capture
        try:
            module.parse([], name)
        except Built as built:
            parsers[name] = built.args[0]
        finally:
            module.parse_args = real
    return parsers


NUMERIC_OPTIONS = [
    (command, action.option_strings[0])
    for command, parser in command_parsers().items()
    for action in parser._actions
    if action.option_strings and action.type is not None and numeric(action)
]


def test_the_numeric_options_found_are_every_commands():
    found = set(NUMERIC_OPTIONS)
    assert {("node", "--epochs"), ("node", "--probe-timeout"), ("verify", "--nodes")} <= found
    assert {("simclr", "--batch-size"), ("simsiam", "--warmup-stages")} <= found
    assert len(found) >= 35


@pytest.mark.parametrize(("command", "option"), NUMERIC_OPTIONS, ids="{0[0]} {0[1]}".format)
@pytest.mark.parametrize("value", HUGE)
def test_a_huge_number_is_refused_in_one_line_naming_the_option(
    command, option, value, capsys, monkeypatch
):
    """10²⁰ or 1e308 anywhere: refused while parsing (``prog: error: argument --x: ...``,
    exit 2), never a traceback later (only the parsing runs here: a value it lets through
    would start the command)."""
    import importlib

    from cl2gnn.cli.main import build_parser

    with pytest.raises(SystemExit) as exit_info:
        if command in ("simclr", "simsiam"):
            importlib.import_module(f"cl2gnn.cli.{command}").parse([option, value], command)
        else:
            build_parser().parse_args([command, option, value])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and len(err.splitlines()) == 1, err
    assert f"argument {option}" in err, err


def numeric_field(name: str) -> bool:
    for value in (1, 2, 16, 0.5, 0):
        try:
            checked = check_field(name, value)
        except ValueError:
            continue
        if isinstance(checked, int | float) and not isinstance(checked, bool):
            return True
    return False


NUMERIC_FIELDS = [name for name in FIELDS if numeric_field(name)]


def numeric_option(name: str) -> bool:
    for value in (1, 2, 16, 0.5, 0):
        try:
            checked = option_value(name, value)
        except ValueError:
            continue
        if isinstance(checked, int | float) and not isinstance(checked, bool):
            return True
    return False


NUMERIC_OPTIONS_OF_METHODS = sorted(
    {f.name for cls in REGISTRY.values() for f in fields(cls.Options) if numeric_option(f.name)}
)


def test_the_numeric_fields_found_are_every_one():
    assert {"epochs", "layers", "out_channels", "weight_decay"} <= set(NUMERIC_FIELDS)
    assert {"temperature", "samples_per_node", "ema_decay", "num_keys"} <= set(
        NUMERIC_OPTIONS_OF_METHODS
    )


@pytest.mark.parametrize("name", NUMERIC_OPTIONS_OF_METHODS)
@pytest.mark.parametrize("value", [10**20, 1e308, -1e308, -(10**20)])
def test_a_huge_number_in_a_method_option_is_refused_naming_the_bound(name, value):
    with pytest.raises(ValueError, match=rf"NodeConfig\.{name} must be .*in [\[(]"):
        option_value(name, value)


@pytest.mark.parametrize("name", NUMERIC_FIELDS)
@pytest.mark.parametrize("value", [10**20, 1e308, -1e308, -(10**20)])
def test_a_huge_number_in_a_configuration_field_is_refused_naming_the_bound(name, value):
    with pytest.raises(ValueError, match=rf"NodeConfig\.{name} must be .*in [\[(]"):
        check_field(name, value)


def test_samples_per_node_is_bounded_naming_the_bound():
    """GraphACL draws that many neighbors and negatives per node and step: 10**6 on any graph
    is refused, naming what is allowed."""
    with pytest.raises(ValueError, match=r"samples_per_node must be .*1024"):
        option_value("samples_per_node", 10**6)
