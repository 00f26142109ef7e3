"""The quote grammar: every documented spelling, and clear errors for everything else."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_assist.errors import ParseError
from gpu_assist.pricing.query import HOUR_S, Query
from gpu_assist.pricing.query_parser import parse_request


@pytest.mark.parametrize("text, gpu, count, hours", [
    ("8xA100 72h", "A100", 8, 72),
    ("8x A100 72h", "A100", 8, 72),
    ("A100:8 3d", "A100", 8, 72),
    ("8 A100s for 72 hours", "A100", 8, 72),
    ("2×H100 1w", "H100", 2, 168),
    ("h100*8 10h", "H100", 8, 10),
    ("4xA100-80GB 2d spot", "A100-80GB", 4, 48),
    ("8 x a100-80gb for 72 hours spot", "A100-80GB", 8, 72),
    ("8xA100 72h region=us-east-1", "A100", 8, 72),
    ("8卡A100 72小时", "A100", 8, 72),
    ("8张A100 3天", "A100", 8, 72),
    ("1个月 2卡H100", "H100", 2, 730),
    ("A100 80GB 90m", "A100-80GB", 1, 1.5),
    ("８ｘＡ１００ ７２ｈ", "A100", 8, 72),
    ("4xa100-sxm4-80gb 1.5d", "A100-80GB", 4, 36),
    ("2xrtx6000 1h", "RTX6000", 2, 1),
    ("8xH100 2mo", "H100", 8, 1460),
])
def test_spellings_give_the_same_request(gpus, text, gpu, count, hours):
    request = parse_request(text, gpus)
    assert (request.gpu, request.count, request.duration_s) == (gpu, count, round(hours * HOUR_S))


def test_filters_and_pricing_models(gpus):
    request = parse_request("8xA100 72h spot reserved aws provider=gcp region=us-east-1,us-west-2 currency=cny", gpus)
    assert request.pricing_models == ("spot", "reserved-1y", "reserved-3y")
    assert request.providers == ("aws", "gcp")
    assert request.regions == ("us-east-1", "us-west-2")
    assert request.currency == "CNY"


def test_no_duration_means_one_hour_and_says_so(gpus):
    request = parse_request("8xA100", gpus)
    assert request.duration_s == HOUR_S
    assert request.assumptions == ("no duration given: quoting 1 hour",)


@pytest.mark.parametrize("text, expected", [
    ("8xA1000 72h", "unknown GPU 'A1000' — did you mean A100?"),
    ("A1000 72h", "unknown GPU 'A1000' — did you mean A100?"),
    ("8xA100 72h banana", "didn't understand 'banana'"),
    ("72h", "no GPU named"),
    ("", "empty request"),
    ("0xA100 1h", "GPU count must be between 1 and"),
    ("8xA100 72h 3d", "two durations"),
    ("8xA100 H100 1h", "two GPUs"),
    ("8xA100 0h", "out of range"),
    ("8xA100 1h region=", "has no value"),
    ("8xA100 1h color=red", "unknown option 'color'"),
    ("8xA100 1h provider=ibm", "unknown provider 'ibm'"),
    ("8xA100 1h currency=EUR", "unknown currency 'EUR'"),
    ("8xA100 1h pricing=cheap", "unknown pricing model 'cheap'"),
    ("H100 40GB 1h", "no 40 GB variant of H100"),
    # A newcomer's mistakes, each told what is wrong rather than blamed on something else.
    ("8xA100 72", "'72': a duration needs a unit: 72h, 3d, 1w"),
    ("8 A100 72", "'72': a duration needs a unit: 72h, 3d, 1w"),
    ("8xA100 6y", "duration '6y' is out of range — use 1 minute to 5 years"),
    ("8xA100 30s", "duration '30s' is too short: the shortest is 1 minute"),
    ("8xA100 45 seconds", "duration '45 seconds' is too short: the shortest is 1 minute"),
    ("1.5xA100 72h", "'1.5xA100': a GPU count is a whole number"),
    ("A100:2.5 72h", "'A100:2.5': a GPU count is a whole number"),
])
def test_bad_input_is_a_parse_error_with_a_working_example(gpus, text, expected):
    with pytest.raises(ParseError) as raised:
        parse_request(text, gpus)
    message = str(raised.value)
    assert expected in message
    assert "example: " in message or "did you mean" in message


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=60))
def test_no_text_raises_anything_but_parse_error(gpus, text):
    try:
        parsed = parse_request(text, gpus)
    except ParseError as error:
        assert "example: " in str(error) or "did you mean" in str(error), str(error)
        return
    assert isinstance(parsed, Query) and parsed.gpu and parsed.count >= 1, parsed


_WORDS = st.sampled_from(["8x", "A100", "a100:8", "72h", "3天", "8卡", "spot", "x", "for", "hours", "80GB",
                          "region=", "region=us", "=", ":", "*", "×", "1e9h", "99999999999x", "-1", "h100*",
                          "provider=aws,", "currency=", "0.0001m", "mo", "1.5", "小时"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_WORDS, max_size=8))
def test_near_miss_sentences_raise_only_parse_error(gpus, words):
    try:
        parsed = parse_request(" ".join(words), gpus)
    except ParseError as error:
        assert "example: " in str(error) or "did you mean" in str(error), str(error)
        return
    assert isinstance(parsed, Query) and parsed.gpu and parsed.count >= 1, parsed


@pytest.mark.parametrize("text, hours", [("8xA100 1y", 8760), ("8xA100 1 year", 8760), ("8xA100 5 years", 43800),
                                         ("8xA100 2yrs", 17520)])
def test_years_are_durations_within_the_five_year_range(gpus, text, hours):
    assert parse_request(text, gpus).duration_s == hours * HOUR_S
