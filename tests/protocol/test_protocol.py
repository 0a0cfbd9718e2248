"""The protocol's strings, grids and splits against the literal values the paper states (PROTOCOL.md 1.1-1.8, 2.1,
3.3, 5)."""
from __future__ import annotations

import numpy as np
import pytest

from fasteval.core import protocol as P


def cell_texts(quantity: str, range_name: str) -> list[str]:
    """The paper's strings of one (quantity, range) cell, in range order, as Exam 1 embeds them."""
    return next(c.texts for c in P.exam1_cells() if (c.quantity, c.range_name) == (quantity, range_name))


def test_range_sizes_and_endpoints():
    sizes = {name: len(P.range_values(name)) for name in P.RANGE_NAMES}
    assert sizes == {"local_0_10": 21, "medium_0_1000": 21, "log_1_100k": 25, "sign_split": 21, "scientific": 25}
    assert P.range_values("log_1_100k").tolist() == [
        1, 2, 3, 4, 7, 11, 18, 29, 46, 75, 121, 196, 316, 511, 825, 1334, 2154, 3481, 5623, 9085, 14678, 23714,
        38312, 61897, 100000]
    sci = P.range_values("scientific")
    assert np.allclose(sci, 10.0 ** (-6 + np.arange(25) / 2), rtol=1e-15)
    for name in P.RANGE_NAMES:
        assert np.all(np.diff(P.range_values(name)) > 0), "values ascend, so the anchor is the minimum"


@pytest.mark.parametrize("quantity,range_name,expected", [
    ("meter", "local_0_10", ["0 meters", "0.5 meters", "1 meter", "1.5 meters", "2 meters"]),
    ("meter", "medium_0_1000", ["0 meters", "50 meters", "100 meters", "150 meters"]),
    ("meter", "log_1_100k", ["1 meter", "2 meters", "3 meters", "4 meters", "7 meters"]),
    ("meter", "sign_split", ["-100 meters", "-90 meters", "-80 meters"]),
    ("meter", "scientific", ["1e-06 meter", "3e-06 meter", "1e-05 meter", "3e-05 meter", "1e-04 meter"]),
    ("kilogram", "scientific", ["1e-06 kilogram", "3e-06 kilogram"]),
])
def test_cell_texts_start(quantity, range_name, expected):
    assert cell_texts(quantity, range_name)[:len(expected)] == expected


def test_cell_texts_specific_strings():
    assert "1334 meters" in cell_texts("meter", "log_1_100k")
    assert cell_texts("meter", "scientific")[12:14] == ["1e+00 meter", "3e+00 meter"]
    assert cell_texts("meter", "scientific")[-1] == "1e+06 meter"
    assert cell_texts("second", "sign_split")[10] == "0 seconds"
    assert cell_texts("liter", "log_1_100k")[-1] == "100000 liters"
    assert len(P.exam1_cells()) == 20


def test_digits_words():
    digits, words = P.digits_words_texts("meter")
    assert digits[5] == "5 meter" and words[5] == "five meter"
    assert words[-1] == "one-hundred meter" and digits[-1] == "100 meter"
    d, w = P.digits_words_texts("kilogram")
    assert d[-1] == "100 kilogram" and w[-1] == "one-hundred kilogram"
    assert len(digits) == len(words) == 12


def test_conversion_texts():
    x = [f"{v:g}" for v in P.conversion_values()]
    assert x[:4] == ["0.01", "0.013434", "0.0180472", "0.0242446"] and x[-2:] == ["744.38", "1000"]
    by_units = {(p.unit_a, p.unit_b): P.conversion_texts(p) for p in P.CONVERSION_PAIRS}
    assert by_units[("meter", "centimeter")][1][0] == "1 centimeter"
    km = by_units[("meter", "kilometer")][1]
    assert km[:2] == ["1e-05 kilometers", "1.3434e-05 kilometers"] and km[-1] == "1 kilometer"
    assert "0.000106082 kilometers" in km
    assert by_units[("kilogram", "ton")][1][-1] == "1 ton"
    assert by_units[("kilogram", "gram")][1][-1] == "1e+06 grams"
    assert by_units[("liter", "gallon")][1][:2] == ["0.03785 gallons", "0.0508477 gallons"]
    seconds = by_units[("minute", "second")][1]
    assert seconds[0] == "0.6 seconds" and seconds[-1] == "60000 seconds"
    assert len(P.CONVERSION_PAIRS) == 11


PAPER_FLOATS = (  # PROTOCOL.md 2.1, verbatim
    "-166.76025, -979.66166, 650.41302, -402.72029, -263.17662, -612.67730, 132.01634, -676.62435, -751.46623, "
    "-134.12746, 124.15698, -651.31288, 106.44217, -290.19723, 916.12957, -817.41180, 957.27999, -175.76121, "
    "7.87074, -703.70766, 437.93428, -620.05724, -316.87915, -952.95756, -320.96446, 934.96492, 957.59691, "
    "489.06008, -993.09078, 880.47701, 741.53394, 541.66868, -642.25247, -801.00073, -170.93506, 771.07293, "
    "156.17205, 473.16443, -534.75779, 47.19516, 418.77287, 649.66789, 614.24907, -535.38377, 746.37993, "
    "-567.23914, 603.79848, 110.17060, -628.34328, 177.21724")
PAPER_INTS = (
    "61, 876, 963, -735, -915, -664, -383, 770, 704, -981, -693, 976, -531, -284, 104, -300, -679, -210, -337, "
    "-974, -899, -876, 457, -89, -840, -206, 636, 885, -633, 615, -977, 581, 458, -247, -559, 389, 49, 559, "
    "-752, -16, 273, -874, -972, 282, 7, -333, 581, 249, 978, -139")


def test_exam2_strings_are_methods_verbatim():
    texts = [i.text for i in P.exam2_items()]
    assert texts == PAPER_FLOATS.split(", ") + PAPER_INTS.split(", ")


def test_exam2_items_match_method():
    items = P.exam2_items()
    assert len(items) == 100
    floats = [i.text for i in items if i.kind == "float"]
    ints = [i.text for i in items if i.kind == "int"]
    assert floats[:6] == ["-166.76025", "-979.66166", "650.41302", "-402.72029", "-263.17662", "-612.67730"]
    assert floats[-3:] == ["110.17060", "-628.34328", "177.21724"]
    assert "7.87074" in floats
    assert ints[:5] == ["61", "876", "963", "-735", "-915"] and ints[-3:] == ["249", "978", "-139"]
    assert ints.count("581") == 2
    assert all(i.sign == ("positive" if i.value >= 0 else "negative") for i in items)


SPLITS = {  # PROTOCOL.md 3.3, test indices
    (21, 0): [0, 6, 11, 12, 15, 17, 19], (21, 1): [8, 10, 14, 15, 16, 18, 19], (21, 2): [1, 4, 8, 10, 13, 14, 18],
    (21, 3): [0, 1, 5, 7, 10, 13, 20], (21, 4): [0, 7, 10, 11, 12, 16, 18],
    (25, 0): [0, 6, 10, 12, 15, 17, 18, 20, 22], (25, 1): [0, 6, 8, 10, 12, 15, 17, 19, 21],
    (25, 2): [0, 1, 4, 8, 9, 10, 12, 13, 17], (25, 3): [0, 1, 4, 5, 7, 10, 14, 17, 20],
    (25, 4): [0, 4, 7, 8, 10, 11, 16, 19, 21],
}


@pytest.mark.parametrize("n,split", sorted(SPLITS))
def test_probe_splits(n, split):
    test, train = P.probe_split(n, split)
    assert test.tolist() == SPLITS[(n, split)]
    assert sorted(test.tolist() + train.tolist()) == list(range(n))
    assert len(train) == {21: 14, 25: 16}[n]


def test_probe_alphas_and_model_id():
    assert len(P.PROBE_ALPHAS) == 13 and P.PROBE_ALPHAS[0] == 0.01 and P.PROBE_ALPHAS[-1] == 10000.0
    assert P.model_id("sentence-transformers/all-MiniLM-L6-v2") == "all_MiniLM_L6_v2"
    assert P.model_id("BAAI/bge-large-en-v1.5") == "bge_large_en_v1.5"
    assert P.model_id("microsoft/harrier-oss-v1-0.6b") == "harrier_oss_v1_0.6b"
