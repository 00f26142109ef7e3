"""`cloud_host`: which cloud this machine is an instance of, from a DMI folder the test writes, and whether a
credential chain may ask that cloud's metadata service."""

from __future__ import annotations

import pytest
from offline import INSTANCES, LAPTOP, dmi_folder

from gpu_assist.errors import ConfigError
from gpu_assist.host import cloud_host


@pytest.mark.parametrize("cloud", cloud_host.CLOUDS)
def test_each_clouds_firmware_names_it(cloud, tmp_path):
    assert cloud_host.host_cloud(dmi_folder(tmp_path, INSTANCES[cloud]), {}) == cloud


@pytest.mark.parametrize("strings", [
    LAPTOP,
    {},  # no DMI at all: a container, a sandbox, macOS
    {"sys_vendor": "Google", "product_name": "Eve", "bios_vendor": "coreboot"},  # a Chromebook is no GCE instance
    {"sys_vendor": "Xen", "product_name": "HVM domU", "bios_version": "4.11.4"},  # Xen, not EC2's
    {"sys_vendor": "OpenStack Foundation", "product_name": "OpenStack Nova", "chassis_asset_tag": "OpenTelekomCloud"},
], ids=["laptop", "no DMI", "Chromebook", "another Xen", "another OpenStack"])
def test_other_machines_are_no_clouds_instance(strings, tmp_path):
    assert cloud_host.host_cloud(dmi_folder(tmp_path, strings), {}) is None


def test_an_ec2_instance_on_xen_is_told_by_its_bios_version(tmp_path):
    dmi = dmi_folder(tmp_path, {"sys_vendor": "Xen", "product_name": "HVM domU", "bios_version": "4.2.amazon"})
    assert cloud_host.host_cloud(dmi, {}) == "aws"


def test_the_folder_read_is_the_modules_unless_given(tmp_path, monkeypatch):
    monkeypatch.setattr(cloud_host, "DMI_DIR", dmi_folder(tmp_path, INSTANCES["aliyun"]))
    assert cloud_host.host_cloud(environ={}) == "aliyun"
    assert cloud_host.metadata_allowed("aliyun", environ={}) and not cloud_host.metadata_allowed("aws", environ={})


def test_the_variable_names_the_cloud_where_the_firmware_does_not_say_or_should_not_be_believed(tmp_path):
    laptop, ecs = dmi_folder(tmp_path / "laptop", LAPTOP), dmi_folder(tmp_path / "ecs", INSTANCES["aliyun"])
    assert cloud_host.host_cloud(laptop, {"GPU_ASSIST_CLOUD_HOST": "Huawei"}) == "huawei"
    assert cloud_host.host_cloud(ecs, {"GPU_ASSIST_CLOUD_HOST": "none"}) is None
    with pytest.raises(ConfigError, match="GPU_ASSIST_CLOUD_HOST='azure' names no cloud"):
        cloud_host.host_cloud(laptop, {"GPU_ASSIST_CLOUD_HOST": "azure"})


@pytest.mark.parametrize("cloud, variable", [(cloud, variable) for cloud, variables in cloud_host.ROLE_VARIABLES.items()
                                              for variable in variables])
def test_a_role_or_endpoint_the_user_names_lets_the_chain_ask_off_that_cloud(cloud, variable, tmp_path):
    laptop = dmi_folder(tmp_path, LAPTOP)
    assert not cloud_host.metadata_allowed(cloud, laptop, {})
    assert cloud_host.metadata_allowed(cloud, laptop, {variable: "gpu-assist-prices"})
    assert not cloud_host.metadata_allowed(cloud, laptop, {variable: ""})
