"""The mutation cross-table (issue 26): every registered mutation is caught, by a claim that
lists it or by the pinned-constant tests it names, and ``theorylab validate --mutations`` prints
the table.

CI (quick): each mutation that names pinned-constant tests makes every one of them FAIL (an
assertion, not a crash); the claims that list a mutation are run under it by
tests/test_validations.py (a claim's controls must all fail it). ``-m slow``: the whole table,
every mutation against every claim of its family at quick scale (docs/validations.md records it).
"""

from __future__ import annotations

import json

import pytest

from theorylab.cli import main
from theorylab.validations import VALIDATIONS, list_validations
from theorylab.validations.mutants import (
    family_claims,
    mutation_table,
    pinned_test_name,
    run_pinned_test,
    summarise,
)
from theorylab.validations.mutations import MUTATIONS

PINNED = [(m, t) for m in MUTATIONS for t in m.tests]


@pytest.mark.parametrize(
    ("mutation", "test"), PINNED, ids=[f"{m.name}-{pinned_test_name(t)}" for m, t in PINNED]
)
def test_each_mutation_fails_the_pinned_tests_it_names(mutation, test):
    assert run_pinned_test(test, mutation) == "FAIL"


def test_every_mutation_is_caught_by_a_claim_or_a_pinned_test():
    names = list_validations()
    for mutation in MUTATIONS:
        listing = [n for n in names if mutation.name in VALIDATIONS.controls(n)]
        assert listing or mutation.tests, mutation.name
        assert family_claims(mutation), f"{mutation.name}: no claim in its family"


def test_the_pinned_tests_pass_without_a_mutation():
    # one per file, the rest run as ordinary tests of their files
    seen = {}
    for _, test in PINNED:
        seen.setdefault(test[0], test)
    for test in seen.values():
        assert run_pinned_test(test) == "PASS", pinned_test_name(test)


def test_cli_prints_the_table(tmp_path, capsys):
    out = tmp_path / "table.json"
    rc = main(
        [
            "validate", "--mutations", "--control", "ucbvi-ajks-bonus-halved", "--no-claims",
            "--no-progress", "--json", str(out),
        ]
    )  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 0
    assert "ucbvi-ajks-bonus-halved" in text and "FAIL" in text and "caught by" in text
    saved = json.loads(out.read_text())
    assert saved["summary"][0]["tests"] == "2/2"


def test_cli_rejects_bad_mutation_arguments(capsys):
    assert main(["validate", "--mutations", "--control", "no-such-mutation"]) != 0
    assert "no-such-mutation" in capsys.readouterr().err
    assert main(["validate", "ucbvi-ajks-riverswim", "--control", "x"]) != 0


@pytest.mark.slow
def test_the_full_mutation_table_catches_every_mutation():
    rows = mutation_table("quick")
    missed = [s["mutation"] for s in summarise(rows) if s["caught by"] == "NOTHING"]
    assert missed == []
