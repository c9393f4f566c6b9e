"""A gain's band after a load sweep: inside and separating a 10% gain, by the distance."""

import math

from sim.model.model_error import Z90
from sim.validation.sweep_gains import SweepGain, sweep_lines


def test_band_inside_and_separation_follow_the_distance():
    s = 0.054
    # separable while 1.1 (1 - sinh(Z90 s d)) > 1: d below asinh(1 / 11) / (Z90 s) = 1.02
    edge = math.asinh(1 / 11) / (Z90 * s)
    near = SweepGain((16,), 32.0, 0.9 * edge, 1.10, 1.10)
    far = SweepGain((16,), 128.0, 1.1 * edge, 1.10, 1.10)
    missed = SweepGain((16,), 64.0, 1.5, 1.10 * math.exp(Z90 * s * 1.5 + 1e-3), 1.10)
    lines = sweep_lines([near, far, missed], lambda d: s * d)
    assert lines[2].endswith("| yes | yes |")
    assert lines[3].endswith("| yes | no |")
    assert lines[4].endswith("| no | no |")
    assert "| 16 | 64 | 1.50 |" in lines[4]
