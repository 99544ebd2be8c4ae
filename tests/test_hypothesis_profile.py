"""The hypothesis profile: derandomized in CI, the example database kept locally (issue 13)."""

from __future__ import annotations

import os

import pytest
from conftest import hypothesis_profile
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase


@pytest.mark.parametrize(
    "environ, expected",
    [
        ({}, "theorylab"),
        ({"CI": ""}, "theorylab"),
        ({"CI": "0"}, "theorylab"),
        ({"CI": "false"}, "theorylab"),
        ({"CI": "true"}, "ci"),
        ({"CI": "1"}, "ci"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "theorylab"}, "theorylab"),
        ({"HYPOTHESIS_PROFILE": "ci"}, "ci"),
    ],
)
def test_profile_choice(environ, expected):
    assert hypothesis_profile(environ) == expected


def test_ci_profile_is_derandomized_without_a_database():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True
    assert ci.database is None
    assert ci.deadline is None


def test_local_profile_keeps_the_example_database():
    local = settings.get_profile("theorylab")
    assert local.derandomize is False
    assert isinstance(local.database, DirectoryBasedExampleDatabase)


def test_the_loaded_profile_follows_the_environment():
    expected = settings.get_profile(hypothesis_profile(os.environ))
    assert settings.default.derandomize == expected.derandomize
    assert (settings.default.database is None) == (expected.database is None)
