"""A scenario file's comments on its values (sim/scenario/toml_comments.py), read back
from what the writer writes and from what a person writes."""

from __future__ import annotations

from sim.scenario.toml_comments import value_comments
from sim.scenario.toml_writer import dumps

TEXT = '''# a header, not a value's
# its second line

name = "x"

[model]
# config.json: num_hidden_layers
layers = 80
hidden_size = 8192  # config.json: hidden_size
# above
# and below
layer_params = 1.0  # on its line

# cut off by the blank line

weight_bytes_per_param = 2.0
label = "a # b"  # after the string's hash
"quoted key" = 1 # quoted
path = 'C:\\dir # x'

[timing]
# an array over lines
per_position = [
  0.8,  # not a key
  0.7,
]
after = 3
# a multi-line string
note = """one # two
three = 4
"""
inline = { a = 1 }  # an inline table's

[[timing.points]]
# a point's, one of many
tok_s = 80.0

[workload]
# back in a table
requests = 50
'''


def test_comments_above_and_after_a_value_are_its_own() -> None:
    got = value_comments(TEXT)
    assert got == {
        "model.layers": "config.json: num_hidden_layers",
        "model.hidden_size": "config.json: hidden_size",
        "model.layer_params": "above\nand below\non its line",
        "model.label": "after the string's hash",
        "model.quoted key": "quoted",
        "timing.per_position": "an array over lines",
        "timing.note": "a multi-line string",
        "workload.requests": "back in a table",
    }


def test_what_the_writer_writes_reads_back() -> None:
    comments = {"model.layers": "config.json: num_hidden_layers", "server.engine": "--engine"}
    text = dumps(
        {"name": "x", "model": {"layers": 80, "hidden_size": 8192}, "server": {"engine": "vllm"}},
        header="a header\nover two lines",
        comments=comments,
    )
    assert value_comments(text) == comments
