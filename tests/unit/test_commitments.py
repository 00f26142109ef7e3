"""Commitments planned from recorded launches (#37): pure, with records made here and a catalog whose p4d.24xlarge
terms are the effective hourly rates `catalog refresh aws-public` computes from the recorded AWS price list file
(tests/fixtures/aws_public: on-demand 32.7726, 1-year standard All Upfront 157,680 / 8,760 = 18, 3-year
262,800 / 26,280 = 10; format samples, not AWS prices)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from support import offer

from gpu_assist import facts as f
from gpu_assist.commands import CommitCommand
from gpu_assist.commands.grammar import parse_command
from gpu_assist.errors import ParseError
from gpu_assist.facts import PricingModel
from gpu_assist.lifecycle.records import RequestRecord
from gpu_assist.lifecycle.specs import LaunchSpec
from gpu_assist.render import json as render_json  # noqa: F401 - registers the JSON
from gpu_assist.render import operations as _operations  # noqa: F401 - registers the JSON
from gpu_assist.render.commit import commitment_rows, coverage_costs, render_commitments
from gpu_assist.render.tables import fits
from gpu_assist.team.commitments import HOURS_PER_MONTH, plan_commitments

NOW = dt.datetime(2026, 12, 5, 9, 0, tzinfo=dt.timezone.utc)
ON_DEMAND = Decimal("32.7726")


def _launch(n: int, start: dt.datetime, hours: float, instances: int = 1) -> RequestRecord:
    spec = LaunchSpec(
        request_id=f"r-00000000000{n}", requester="slack:U-CAROL", text="launch 8xA100 500h", gpu="A100", gpus=8,
        instance_type="p4d.24xlarge", instances=instances, vcpus=96, region="us-east-1", zone="",
        pricing_model="on-demand",
        duration_s=int(hours * 3600), hourly=ON_DEMAND, ceiling_hourly=ON_DEMAND, estimated_total=ON_DEMAND * 500,
        currency="USD", candidates=(), price_source="aws-price-list 2026-12-01")
    return RequestRecord(
        id=spec.request_id, kind="launch", requester=spec.requester, spec=spec, estimated_cost=ON_DEMAND * 500,
        currency="USD", state="stopped", created_at=start, expires_at=start + dt.timedelta(days=1),
        approver="slack:U-BOB", decided_at=start, instance_ids=(f"i-{n:017x}",),
        ends_at=start + dt.timedelta(hours=hours), error=None, version=4, hourly_price=ON_DEMAND * instances,
        launched_at=start,
        stopped_at=start + dt.timedelta(hours=hours))


def _history(hours_by_month: list[float], instances: int = 1) -> list[RequestRecord]:
    """One launch a month of `instances` instances, running `hours` instance-hours in all."""
    starts = [dt.datetime(2026, month, 1, tzinfo=dt.timezone.utc) for month in (9, 10, 11)]
    return [_launch(n, start, hours / instances, instances)
            for n, (start, hours) in enumerate(zip(starts, hours_by_month), 1) if hours]


@pytest.fixture
def catalog(make_catalog):
    return make_catalog(offer(on_demand_hourly=ON_DEMAND, reserved_1y_hourly="18", reserved_3y_hourly="10",
                              source="aws-price-list", as_of="2026-12-01", reserved_source="aws-price-list",
                              reserved_as_of="2026-12-01"))


def test_steady_use_of_500_hours_a_month_recommends_one_1_year_reservation(catalog):
    advice = plan_commitments(_history([500, 495, 505]), catalog.offers_of_type, NOW, currency="USD")
    assert [m.isoformat() for m in advice.months] == ["2026-09-01", "2026-10-01", "2026-11-01"]
    (group,) = advice.groups
    assert [float(m.hours) for m in group.months] == [500, 495, 505]
    terms = {c.model: c for c in group.candidates}
    one_year = terms[PricingModel.RESERVED_1Y]
    assert one_year.recommended and one_year.instances == 1 and one_year.rate == 18
    assert one_year.break_even == Decimal(18) / ON_DEMAND  # 54.9 %: 401 of 730 h a month
    paid = ON_DEMAND * 1500
    assert one_year.saving_per_month == (paid - 3 * 730 * Decimal(18)) / 3  # all use covered: 1 instance, 730 h
    assert one_year.unused_hours == 730 - 495 and one_year.unused_cost == (730 - 495) * Decimal(18)
    assert (one_year.source, one_year.as_of) == ("aws-price-list", "2026-12-01")
    three_year = terms[PricingModel.RESERVED_3Y]  # cheaper, but three months say little about three years
    assert not three_year.recommended and f.CommitHistoryShort(3, 12) in three_year.reasons
    assert group.missing == (f.CommitNoPrice(PricingModel.MONTHLY),)
    text = render_commitments(advice)
    assert fits(text) and "recommended: 1× p4d.24xlarge reserved-1y in us-east-1, saving $3,246.30 a month" in text
    assert "a 3-year term is recommended only after 12 months of history; 3 recorded" in text


def test_a_spiky_history_recommends_none_and_says_why(catalog):
    advice = plan_commitments(_history([700, 20, 650]), catalog.offers_of_type, NOW, currency="USD")
    (group,) = advice.groups
    assert not advice.recommended
    one_year = next(c for c in group.candidates if c.model == PricingModel.RESERVED_1Y)
    assert one_year.instances == 0
    assert f.CommitUnsteady(Decimal(20), HOURS_PER_MONTH * Decimal(18) / ON_DEMAND, PricingModel.RESERVED_1Y) \
        in one_year.reasons
    text = render_commitments(advice)
    assert "recommended: none" in text and "the lowest month ran 20 instance-hours" in text
    assert "needs 401 a month to break even" in text and fits(text)


def test_no_launches_is_said_and_months_before_the_first_launch_do_not_count(catalog):
    nothing = plan_commitments([], catalog.offers_of_type, NOW, currency="USD")
    assert not nothing.groups and nothing.notices == (f.CommitNoHistory(3),)
    assert render_commitments(nothing).startswith("no commitment to recommend: no launches recorded")
    late = plan_commitments(_history([0, 0, 600]), catalog.offers_of_type, NOW, currency="USD")
    assert [m.month for m in late.months] == [11] and f.CommitHistoryShort(1, 3) in late.notices


def test_the_rows_json_and_the_chart_figures_agree(catalog):
    advice = plan_commitments(_history([500, 495, 505]), catalog.offers_of_type, NOW, currency="USD")
    rows = commitment_rows(advice)
    picked = [r for r in rows if r["recommended"]]
    assert [(r["term"], r["instances"], r["saving_per_month"]) for r in picked] == [("reserved-1y", 1, 3246.3)]
    payload = json.loads(render_json.render(advice))
    assert payload["candidates"] == json.loads(json.dumps(rows))
    assert payload["usage"][0]["months"][0] == {"month": "2026-09-01", "instance_hours": 500.0, "paid": 16386.3}
    costs = dict(coverage_costs(advice.groups[0]))  # monthly cost by instances committed (1-year term)
    assert costs[0] == ON_DEMAND * 500 and min(costs, key=costs.get) == 1


@pytest.mark.parametrize("words", ["commit months=0", "commit months=40", "commit soon"])
def test_bad_words_are_one_clear_error(catalog, words):
    with pytest.raises(ParseError, match="example: commit months=6|commit months=6"):
        parse_command(words, catalog.gpus)
    assert parse_command("commit months=6", catalog.gpus) == CommitCommand(6)


def test_the_count_is_the_one_that_saves_most_not_the_most_that_breaks_even(catalog):
    """At 1,500 h a month, three 1-year instances would still cost less than paying as you go, but two (1,460 h,
    the rest paid as you go) save more."""
    advice = plan_commitments(_history([1500, 1480, 1520], instances=3), catalog.offers_of_type, NOW,
                              currency="USD")
    one_year = next(c for c in advice.groups[0].candidates if c.model == PricingModel.RESERVED_1Y)
    assert one_year.recommended and one_year.instances == 2
    paid = ON_DEMAND * 4500
    two = 3 * 2 * 730 * Decimal(18) + (40 + 20 + 60) * ON_DEMAND
    assert one_year.saving_per_month == (paid - two) / 3
