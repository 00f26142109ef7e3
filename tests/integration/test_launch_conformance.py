"""Every launch scenario against every native cloud's fake and the engine's (`native_clouds.py`), stated as what a
buyer gets: a cloud passes by its idempotency token or by the lookup by tag, and one that cannot run a scenario
fails it. The clouds are the provider registry's native ones, so a fifth one is in this suite the day it is
registered, and SkyPilot, the engine every other launch cloud goes through (its cluster name is the token); the
scenarios that do not apply to the engine say why (`native_clouds.ENGINE_NOT_APPLICABLE`) and are skipped."""

from __future__ import annotations

import threading

import pytest
from native_clouds import APPROVERS, HARNESSES
from support import Clock, submit_launch

from gpu_assist.catalog.providers import NATIVE_PROVIDERS
from gpu_assist.errors import PolicyError
from gpu_assist.lifecycle.approvals import Approvals
from gpu_assist.lifecycle.ports import Clouds, Launched
from gpu_assist.store import Store

pytestmark = pytest.mark.slow


class Crash(Exception):
    """The approver's process dying right after the cloud made the instances (before the store heard of them)."""


def test_every_native_cloud_of_the_registry_and_the_engine_have_a_fake():
    assert set(HARNESSES) == {*NATIVE_PROVIDERS, "skypilot"}


@pytest.fixture(params=list(HARNESSES))
def cloud(request):
    with HARNESSES[request.param](request) as harness:
        if request.node.originalname in harness.not_applicable:
            pytest.skip(f"not for {request.param}: {harness.not_applicable[request.node.originalname]}")
        yield harness


@pytest.fixture
def team(cloud, tmp_path, make_catalog):
    """The lifecycle over a SQLite store, an injected clock, and `cloud` beside AWS."""
    policy = cloud.policy()
    provisioner = cloud.provisioner(policy, cloud.pauses.append)
    return Approvals(Store(f"sqlite:///{tmp_path / 'state.db'}"), policy, Clouds({cloud.provider: provisioner}),
                     make_catalog(cloud.row), Clock())


def _requests(cloud, request_id):
    return sorted(i for i, tag in cloud.live().items() if tag == request_id)


def test_concurrent_approvals_end_with_exactly_the_requests_instances(cloud, team):
    record = submit_launch(team, "slack:U-CAROL", cloud.words)
    assert record.spec.provider == cloud.provider and record.spec.checks.dry_run == "ok"
    gate = threading.Barrier(len(APPROVERS))

    def click(approver):
        gate.wait()
        try:
            team.approve(record.id, approver)
        except PolicyError:
            pass

    threads = [threading.Thread(target=click, args=(a,)) for a in APPROVERS]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    done = team.store.fetch(record.id)
    assert done.state == "running" and sorted(done.instance_ids) == _requests(cloud, record.id)
    assert len(done.instance_ids) == 1


def test_a_launch_taken_over_after_a_crash_ends_with_exactly_the_requests_instances(cloud, team):
    record = submit_launch(team, "slack:U-CAROL", cloud.words)
    provisioner = team.provisioner.of(cloud.provider)
    real_run = provisioner._run

    def run_then_die(*args, **kwargs):
        real_run(*args, **kwargs)
        raise Crash

    provisioner._run = run_then_die
    with pytest.raises(Crash):
        team.approve(record.id, APPROVERS[0])
    provisioner._run = real_run
    team.clock.advance(minutes=6)  # the dead owner's lease is over
    assert team.orchestration.reconcile() == [record.id]
    done = team.store.fetch(record.id)
    assert done.state == "running" and sorted(done.instance_ids) == _requests(cloud, record.id)
    trail = {e.action: e.detail for e in team.store.audit_trail(record.id)}
    assert "found by tag, not launched again" in trail["running"]


def test_an_owner_taken_over_right_before_its_launch_ends_with_exactly_the_requests_instances(cloud, team):
    """The approver passed its ownership check and is about to launch when its lease ends; the reconciler takes
    over and launches; the old owner's late call gets the same instances by the token, or its duplicate is
    terminated by the surplus check (a cloud without token deduplication: moto)."""
    record = submit_launch(team, "slack:U-CAROL", cloud.words)
    provisioner = team.provisioner.of(cloud.provider)
    paused, go_on, real_run = threading.Event(), threading.Event(), provisioner._run

    def pause_first_run(spec, region, zone, ends_at, still_ours, attempts):
        def checked_then_paused():
            ours = still_ours()
            if not paused.is_set():
                paused.set()
                assert go_on.wait(60)
            return ours
        return real_run(spec, region, zone, ends_at, checked_then_paused, attempts)

    provisioner._run = pause_first_run
    approver = threading.Thread(target=lambda: team.approve(record.id, APPROVERS[0]))
    approver.start()
    assert paused.wait(60)
    team.clock.advance(minutes=6)
    assert team.orchestration.reconcile() == [record.id]
    go_on.set()
    approver.join(60)
    final = team.store.fetch(record.id)
    assert final.state == "running" and sorted(final.instance_ids) == _requests(cloud, record.id)
    actions = [e.action for e in team.store.audit_trail(record.id)]
    assert "give up" in actions
    assert ("terminate duplicates" in actions) == (not cloud.tokens)


def test_a_sold_out_zone_fails_over_to_the_next_one(cloud, team):
    cloud.sell_out(cloud.zones[0])
    record = submit_launch(team, "slack:U-CAROL", cloud.words)
    done = team.approve(record.id, APPROVERS[0])
    assert done.state == "running" and done.spec.launched_zone != cloud.zones[0]
    assert sorted(done.instance_ids) == _requests(cloud, record.id)
    running = [e for e in team.store.audit_trail(record.id) if e.action == "running"][0]
    assert f"tried: {cloud.zones[0]}: " in running.detail


def test_surplus_instances_of_a_request_are_terminated_and_the_recorded_ones_kept(cloud, team):
    record = team.approve(submit_launch(team, "slack:U-CAROL", cloud.words).id, APPROVERS[0])
    duplicate = cloud.add_tagged(record.id)
    said = team.provisioner.terminate_surplus(record.id, Launched(cloud.provider, cloud.region, record.instance_ids))
    assert said.startswith("terminated 1 duplicate instance(s)") and duplicate in said
    assert _requests(cloud, record.id) == sorted(record.instance_ids)


def test_a_stop_acts_only_on_what_gpu_assist_launched(cloud, team):
    foreign = cloud.add_foreign()
    with pytest.raises(PolicyError, match=f"not launched by gpu-assist: {foreign}"):
        team.provisioner.stop(Launched(cloud.provider, cloud.region, (foreign,)))
    assert foreign in cloud.live() and not cloud.stopped(foreign)
    team.policy = cloud.policy(stop_action="stop")
    team.provisioner.of(cloud.provider).policy = team.policy
    launch = team.approve(submit_launch(team, "slack:U-CAROL", cloud.words).id, APPROVERS[0])
    stop = team.submit_stop("slack:U-CAROL", list(launch.instance_ids))
    assert stop.spec.provider == cloud.provider  # placed by the launch record
    assert team.approve(stop.id, APPROVERS[1]).state == "stopped"
    assert all(cloud.stopped(i) for i in launch.instance_ids) and not cloud.stopped(foreign)


def test_throttling_is_ridden_out_and_ends_with_exactly_the_requests_instances(cloud, team):
    record = submit_launch(team, "slack:U-CAROL", cloud.words)
    cloud.throttle(2)
    done = team.approve(record.id, APPROVERS[0])
    assert done.state == "running", done.error
    assert sorted(done.instance_ids) == _requests(cloud, record.id) and len(done.instance_ids) == 1
    if cloud.provider != "aws":  # boto3's standard retry mode sleeps on its own clock
        assert cloud.pauses == [0.5, 1.0]
