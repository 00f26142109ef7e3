"""Launch, stop and extension specs are typed values that round-trip to the store's JSON column: rows written in
the old form (an 18-key dict, money as decimal strings) load unchanged, and the quote card's launch button carries
an option id and seconds as data."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
import sqlalchemy
from support import OLD_LAUNCH

from gpu_assist.errors import ParseError
from gpu_assist.lifecycle.records import describe
from gpu_assist.lifecycle.specs import Candidate, Checks, LaunchSpec, OptionId, StopSpec, spec_from_json, to_json
from gpu_assist.store import Store
from slackbot.blocks import launch_button_choice, launch_button_value


def test_a_row_written_in_the_old_form_loads_typed_and_writes_back_the_same(tmp_path):
    store = Store(f"sqlite:///{tmp_path / 'old.db'}")
    with store.engine.begin() as connection:
        connection.execute(sqlalchemy.text(
            "INSERT INTO requests (id, kind, requester, spec, estimated_cost, currency, state, created_at, "
            "expires_at, instance_ids, version) VALUES ('r-0123456789ab', 'launch', 'slack:U-CAROL', :spec, "
            "1580.950224, 'USD', 'running', :t, :t, '[\"i-0123456789abcdef0\"]', 3)"),
            {"spec": json.dumps(OLD_LAUNCH), "t": "2026-12-01 09:00:00"})
    record = store.get("r-0123456789ab")
    spec = record.spec
    assert isinstance(spec, LaunchSpec) and spec.project is None
    assert (spec.hourly, spec.estimated_total, spec.duration_s) == (Decimal("21.957642"), Decimal("1580.950224"),
                                                                     259200)
    assert spec.candidates[1] == Candidate("us-west-2", "usw2-az1", Decimal("21.957642"))
    assert spec.checks == Checks("ok", "quota unknown") and spec.where == "us-west-2"
    assert to_json(spec) == OLD_LAUNCH and list(to_json(spec)) == list(OLD_LAUNCH)
    assert describe(record) == ("r-0123456789ab [running] 1xp4d.24xlarge (8xA100) on-demand in us-east-1 for 72h, "
                                "est. 1,580.95 USD — by slack:U-CAROL")


def test_every_kind_round_trips_through_its_json_form():
    launch = spec_from_json("launch", {**OLD_LAUNCH, "project": "vision"})
    stop = StopSpec("r-000000000002", ("i-0123456789abcdef0",), "us-east-1", ("r-0123456789ab",))
    extension = spec_from_json("extend", {
        "request_id": "r-000000000003", "launch_request": "r-0123456789ab", "extra_s": 86400,
        "launch_ends_at": "2026-12-04T09:00:00Z", "ttl_s": 345600, "hourly": "21.957642",
        "estimated_total": "526.983408", "gpu": "A100", "gpus": 8, "instance_type": "p4d.24xlarge", "instances": 1,
        "pricing_model": "on-demand", "region": "us-west-2"})
    assert extension.launch_ends_at == dt.datetime(2026, 12, 4, 9, tzinfo=dt.timezone.utc)
    for spec in (launch, stop, extension):
        assert spec_from_json(spec.kind, json.loads(json.dumps(to_json(spec)))) == spec


def test_the_launch_button_carries_an_option_id_and_seconds():
    option = OptionId.parse("aws:p4d.24xlarge:us-east-1:spot")
    assert option == OptionId("p4d.24xlarge", "us-east-1", "spot") and str(option) == "aws:p4d.24xlarge:us-east-1:spot"
    assert OptionId.parse("AWS:P4D.24XLARGE:US-EAST-1:SPOT") == option and OptionId.parse("8xA100") is None
    azure = OptionId.parse("azure:Standard_NC24ads_A100_v4:eastus:on-demand")  # through SkyPilot, names as written
    assert azure == OptionId("Standard_NC24ads_A100_v4", "eastus", "on-demand", "azure")
    assert OptionId.parse("lium:1xH100:us:on-demand") is None  # prices only: no route launches there
    value = launch_button_value(option, 72 * 3600)
    assert json.loads(value) == {"option": "aws:p4d.24xlarge:us-east-1:spot", "duration_s": 259200}
    assert launch_button_choice(value) == (option, 259200)


@pytest.mark.parametrize("value", ["aws:p4d.24xlarge:us-east-1:spot 72h",  # a card posted before this version
                                   '{"option": "aws:p4d.24xlarge:us-east-1:spot", "duration_s": 0}',
                                   '{"option": "aws:p4d.24xlarge:us-east-1:spot", "duration_s": "72h"}',
                                   '{"option": "nonsense", "duration_s": 3600}', "[]"])
def test_a_button_value_this_version_did_not_make_is_out_of_date(value):
    with pytest.raises(ParseError, match="that button is out of date — quote again and use the new card"):
        launch_button_choice(value)
