"""Which cloud this machine is an instance of, told from local facts only: the firmware's DMI strings that Linux
shows every user under /sys/class/dmi/id, never a call to a metadata service.

The cloud SDKs' default credential chains end in a link that asks the instance's metadata service for a role's
keys (EC2's and Huawei's 169.254.169.254, Alibaba's 100.100.100.200, Tencent's metadata.tencentyun.com, Google's
metadata.google.internal). Off that cloud the call goes to an address that means nothing there, waits for its
timeout, and is a network call nobody asked for; so `aws.client` and the China importers build their chains with
that link only where `metadata_allowed` says so: on an instance of that cloud, or where the user named a role or a
metadata endpoint (`ROLE_VARIABLES`). `GPU_ASSIST_CLOUD_HOST` names the cloud where the firmware does not say (a
container without /sys/class/dmi, a hypervisor that hides it), or `none`.

What each cloud's firmware says; any one sign is enough:
- aws: sys_vendor, board_vendor or bios_vendor `Amazon EC2` (Nitro instances), bios_version ending in `.amazon`
  (Xen instances, `4.2.amazon`): AWS's "Detect whether a host is an EC2 instance".
- aliyun: sys_vendor `Alibaba Cloud`, product_name `Alibaba Cloud ECS` (cloud-init's AliYun data source).
- tencent: sys_vendor `Tencent Cloud`, as CVM instances report it; no documentation of Tencent's or cloud-init's
  states it, so where a CVM's firmware says otherwise GPU_ASSIST_CLOUD_HOST=tencent tells it.
- huawei: chassis_asset_tag `HUAWEICLOUD` (cloud-init's OpenStack data source).
- gcp: product_name `Google Compute Engine`, bios_vendor `Google` (google-auth's own GCE check reads product_name;
  sys_vendor `Google` is a Chromebook's too). No GCP refresher exists yet: one built on google-auth's
  application-default credentials sets `NO_GCE_CHECK=true` before importing google.auth where
  `metadata_allowed("gcp")` is false, as google-auth otherwise pings the metadata server first.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from ..errors import ConfigError

DMI_DIR = Path("/sys/class/dmi/id")  # read when asked, so a test can point it at a folder of its own
HOST_VARIABLE = "GPU_ASSIST_CLOUD_HOST"
# cloud → (DMI file, what it says in full, as a regular expression)
SIGNS: dict[str, tuple[tuple[str, str], ...]] = {
    "aws": (("sys_vendor", "Amazon EC2"), ("board_vendor", "Amazon EC2"), ("bios_vendor", "Amazon EC2"),
            ("bios_version", r".*\.amazon")),
    "aliyun": (("sys_vendor", "Alibaba Cloud"), ("product_name", "Alibaba Cloud ECS")),
    "tencent": (("sys_vendor", "Tencent Cloud"),),
    "huawei": (("chassis_asset_tag", "HUAWEICLOUD"),),
    "gcp": (("product_name", "Google Compute Engine"), ("bios_vendor", "Google")),
}
CLOUDS = tuple(SIGNS)
# cloud → the variables by which a user names its instance role or metadata endpoint, as its SDK or tools read them:
# botocore's endpoint (a profile's `credential_source = Ec2InstanceMetadata` is botocore's own, and kept), the
# Alibaba SDK's role name, Tencent's CAM role name (its Terraform provider's; the Python SDK reads none), google-auth's
# metadata host. The Huawei SDK reads none: GPU_ASSIST_CLOUD_HOST=huawei says it.
ROLE_VARIABLES: dict[str, tuple[str, ...]] = {
    "aws": ("AWS_EC2_METADATA_SERVICE_ENDPOINT",), "aliyun": ("ALIBABA_CLOUD_ECS_METADATA",),
    "tencent": ("TENCENTCLOUD_CAM_ROLE_NAME",), "huawei": (),
    "gcp": ("GCE_METADATA_HOST", "GCE_METADATA_ROOT", "GCE_METADATA_IP"),
}


def _dmi(dmi_dir: Path, name: str) -> str:
    try:
        return (dmi_dir / name).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:  # no such file, not Linux, or not readable by this user
        return ""


def host_cloud(dmi_dir: Path | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The cloud this machine is an instance of (one of CLOUDS), None for none of them (a laptop, another cloud,
    no DMI to read). GPU_ASSIST_CLOUD_HOST, when set, is the answer; ConfigError when it names no such cloud."""
    environ = os.environ if environ is None else environ
    named = environ.get(HOST_VARIABLE, "").strip().lower()
    if named:
        if named not in (*CLOUDS, "none"):
            raise ConfigError(f"{HOST_VARIABLE}='{named[:40]}' names no cloud gpu-assist knows",
                              hint=f"one of {', '.join(CLOUDS)}, or none")
        return None if named == "none" else named
    dmi_dir = DMI_DIR if dmi_dir is None else dmi_dir
    found: dict[str, str] = {}
    for cloud, signs in SIGNS.items():
        for name, pattern in signs:
            if name not in found:
                found[name] = _dmi(dmi_dir, name)
            if re.fullmatch(pattern, found[name]):
                return cloud
    return None


def metadata_allowed(cloud: str, dmi_dir: Path | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a credential chain may ask `cloud`'s instance metadata service for a role's keys: where the user named
    a role or an endpoint for it, or on an instance of that cloud."""
    environ = os.environ if environ is None else environ
    return any(environ.get(name) for name in ROLE_VARIABLES[cloud]) or host_cloud(dmi_dir, environ) == cloud
