"""Spot interruption warnings on the instance itself: watch the instance metadata service and act once.

EC2 announces a spot interruption two minutes ahead at `/latest/meta-data/spot/instance-action` (404 until then;
then `{"action": "terminate" | "stop" | "hibernate", "time": "2026-12-02T12:02:00Z"}`), read with an IMDSv2
session token (`PUT /latest/api/token` with `X-aws-ec2-metadata-token-ttl-seconds`, then the token in
`X-aws-ec2-metadata-token`). Documented in the EC2 User Guide, "Spot Instance interruption notices" and "Use
IMDSv2". The service's address is `AWS_EC2_METADATA_SERVICE_ENDPOINT` as the AWS SDKs read it, else
`http://169.254.169.254`.

`watch(on_warning=save_checkpoint)` polls every 5 s in a daemon thread and calls the function once, with the
`InstanceAction`; off EC2 (no metadata service answers) it prints one line and does nothing.
`gpu-assist spot watch --on-warning CMD -- python train.py` runs a job under the same watch: at the warning it
runs CMD, sends the job SIGTERM, and SIGKILL at the interruption time if it is still running.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import requests

log = logging.getLogger("gpu_assist.spot")
DEFAULT_ENDPOINT = "http://169.254.169.254"
TOKEN_TTL_S = 21600  # IMDSv2's longest session
CONNECT_TIMEOUT_S = 1.0  # the metadata service is a link-local hop away: a slower answer means there is none


@dataclass(frozen=True)
class InstanceAction:
    action: str          # terminate, stop or hibernate
    time: dt.datetime    # when EC2 takes the instance back (UTC)


class NotOnEc2(Exception):
    """No instance metadata service answered at the endpoint."""


def metadata_endpoint() -> str:
    return os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT", DEFAULT_ENDPOINT).rstrip("/")


class InstanceMetadata:
    """The two IMDSv2 calls the watch needs: a session token (renewed before it ends, or when refused), then the
    spot instance-action document."""

    def __init__(self, endpoint: str | None = None, *, session: requests.Session | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.endpoint = endpoint or metadata_endpoint()
        self._session = session or requests.Session()
        self._clock = clock
        self._token: tuple[str, float] | None = None  # token, when to renew it

    def _token_now(self) -> str:
        if self._token is None or self._clock() >= self._token[1]:
            try:
                answer = self._session.put(f"{self.endpoint}/latest/api/token", timeout=CONNECT_TIMEOUT_S,
                                           headers={"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL_S)})
            except requests.RequestException as error:
                raise NotOnEc2(f"no instance metadata service at {self.endpoint} ({type(error).__name__})") from None
            if answer.status_code != 200:
                raise NotOnEc2(f"the instance metadata service at {self.endpoint} refused a token "
                               f"(HTTP {answer.status_code})")
            self._token = (answer.text, self._clock() + TOKEN_TTL_S - 60)
        return self._token[0]

    def instance_action(self) -> InstanceAction | None:
        """The pending interruption, or None (404: no interruption is scheduled)."""
        for _ in range(2):  # a token the service no longer takes (401) is renewed once
            answer = self._session.get(f"{self.endpoint}/latest/meta-data/spot/instance-action", timeout=5,
                                       headers={"X-aws-ec2-metadata-token": self._token_now()})
            if answer.status_code == 401:
                self._token = None
                continue
            if answer.status_code == 404:
                return None
            answer.raise_for_status()
            document = answer.json()
            moment = dt.datetime.fromisoformat(document["time"].replace("Z", "+00:00"))
            return InstanceAction(str(document["action"]), moment.astimezone(dt.timezone.utc))
        raise requests.HTTPError("the instance metadata service refused a fresh token")


class SpotWatch:
    """Polls `metadata` every `interval_s` in a daemon thread; calls `on_warning` once, at the first notice.
    A failed poll (the service hiccups) is logged and the next one tries again."""

    def __init__(self, on_warning: Callable[[InstanceAction], object], metadata: InstanceMetadata, *,
                 interval_s: float = 5.0):
        self.on_warning, self.metadata, self.interval_s = on_warning, metadata, interval_s
        self.warned: InstanceAction | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpu-assist-spot-watch", daemon=True)

    def start(self) -> SpotWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                action = self.metadata.instance_action()
            except (requests.RequestException, NotOnEc2, ValueError, KeyError) as error:
                log.warning("spot watch: could not read the instance action: %s", error)
                action = None
            if action is not None:
                self.warned = action
                try:
                    self.on_warning(action)
                finally:
                    self._stop.set()
                return
            self._stop.wait(self.interval_s)


def watch(on_warning: Callable[[InstanceAction], object], *, interval_s: float = 5.0,
          endpoint: str | None = None) -> SpotWatch | None:
    """Call `on_warning(action)` once when EC2 announces this spot instance's interruption; None (and one line on
    stderr) where no instance metadata service answers: not on EC2, or IMDS turned off."""
    metadata = InstanceMetadata(endpoint)
    try:
        metadata.instance_action()
    except NotOnEc2 as error:
        print(f"gpu-assist spot watch: {error}; not watching (off EC2 this does nothing)", file=sys.stderr)
        return None
    return SpotWatch(on_warning, metadata, interval_s=interval_s).start()


def run_job(job: list[str], *, on_warning: str | None = None, interval_s: float = 5.0,
            endpoint: str | None = None) -> int:
    """`gpu-assist spot watch`: run `job` under the watch; at the warning run `on_warning` (a shell command, given
    until the interruption time), send the job SIGTERM, and SIGKILL at the interruption time if it still runs.
    The job's exit status is the command's (killed by a signal: 128 + its number, as a shell says it)."""
    child = subprocess.Popen(job)
    warned = threading.Event()
    deadline: list[dt.datetime] = []

    def act(action: InstanceAction) -> None:
        deadline.append(action.time)
        print(f"gpu-assist spot watch: EC2 will {action.action} this instance at {action.time:%H:%M:%S} UTC",
              file=sys.stderr)
        if on_warning:
            left = (action.time - dt.datetime.now(dt.timezone.utc)).total_seconds()
            try:
                subprocess.run(on_warning, shell=True, timeout=max(1.0, left))
            except subprocess.TimeoutExpired:
                print("gpu-assist spot watch: --on-warning ran past the interruption time; stopped", file=sys.stderr)
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
        warned.set()

    watcher = watch(act, interval_s=interval_s, endpoint=endpoint)
    try:
        while child.poll() is None:
            if warned.wait(0.2):
                left = (deadline[0] - dt.datetime.now(dt.timezone.utc)).total_seconds()
                try:
                    child.wait(timeout=max(0.0, left))
                except subprocess.TimeoutExpired:
                    print("gpu-assist spot watch: the job outlived the warning; killed at the interruption time",
                          file=sys.stderr)
                    child.kill()
                    child.wait()
    except KeyboardInterrupt:
        child.terminate()
        child.wait()
    finally:
        if watcher is not None:
            watcher.stop()
    return child.returncode if child.returncode >= 0 else 128 - child.returncode
