"""Model expressions printed as a person writes them (occmodel.exprfmt)."""

import sympy

from occmodel.exprfmt import fmt, prune

S = sympy.Symbol("num_stages", integer=True, positive=True)
T = sympy.Symbol("BLOCK_T", integer=True, positive=True)
H = sympy.Symbol("BLOCK_H", integer=True, positive=True)
STAGES = {"num_stages": range(1, 17)}


def test_the_decode_shared_memory_view():
    # sympy: Max(32768, Piecewise((51200, Eq(num_stages, 1)), (18432*num_stages + 512, True)));
    # at num_stages >= 2 the ring term is >= 18,432 x 2 + 512 = 37,376 > 32,768, so the max never picks 32,768
    e = sympy.Max(32768, sympy.Piecewise((51200, sympy.Eq(S, 1)), (18432 * S + 512, True)))
    assert fmt(prune(e, STAGES)) == "18,432 × num_stages + 512 for num_stages ≥ 2; 51,200 at 1"


def test_a_piecewise_inside_a_sum_is_folded():
    e = sympy.Piecewise((40, sympy.Eq(S, 1)), (0, True)) + 86
    assert fmt(prune(e, STAGES)) == "86 for num_stages ≥ 2; 126 at 1"


def test_a_max_argument_that_wins_somewhere_stays():
    e = sympy.Max(2 * H * T + 1152 * H, sympy.Min(32768, 2048 * H))
    # BLOCK_H >= 32: 2*32*16 + 1152*32 = 37,888 >= 32,768, the cap of the second argument
    assert fmt(prune(e, {"BLOCK_H": [32, 64], "BLOCK_T": [16, 32]})) == "2 × BLOCK_H × BLOCK_T + 1,152 × BLOCK_H"
    # BLOCK_H = 16: 18,944 < 32,768 = min(32768, 2048*16); BLOCK_H = 64: the first wins: the max stays,
    # and its min is 32,768 at both values (2,048 x 16 = 32,768)
    assert fmt(prune(e, {"BLOCK_H": [16, 64], "BLOCK_T": [16]})) == \
        "max(32,768, 2 × BLOCK_H × BLOCK_T + 1,152 × BLOCK_H)"


def test_numbers_products_and_fractions():
    assert fmt(sympy.Rational(25, 8) * H + T + 20) == "3.125 × BLOCK_H + BLOCK_T + 20"
    assert fmt(sympy.Rational(1, 3) * H) == "BLOCK_H / 3" and fmt(sympy.Rational(2, 3) * H) == "2/3 × BLOCK_H"
    assert fmt(1024 * H - 512) == "1,024 × BLOCK_H - 512"
    assert fmt(2 * H * (T + 64)) == "2 × BLOCK_H × (BLOCK_T + 64)"
    assert fmt(sympy.ceiling(H / 4)) == "⌈BLOCK_H / 4⌉"
    assert fmt(sympy.Integer(101376)) == "101,376" and fmt(sympy.Integer(512)) == "512"


def test_a_general_piecewise_reads_as_if_otherwise():
    e = sympy.Piecewise((1, S >= 3), (S - 1, True))
    assert fmt(e) == "1 if num_stages ≥ 3; num_stages - 1 otherwise"


def test_prune_never_changes_a_value_on_the_domain():
    e = sympy.Max(sympy.Piecewise((4 * T, sympy.Eq(S, 1)), (T * S * 100, True)), 700 + T, sympy.Min(H, 3 * T))
    dom = {"num_stages": range(1, 6), "BLOCK_T": [1, 8, 64], "BLOCK_H": [16, 64]}
    p = prune(e, dom)
    for s in dom["num_stages"]:
        for t in dom["BLOCK_T"]:
            for h in dom["BLOCK_H"]:
                assert p.subs({S: s, T: t, H: h}) == e.subs({S: s, T: t, H: h})
