"""The provisioners: each cloud's answer to `lifecycle.ports.Provisioner` (AWS, Tencent Cloud, Alibaba Cloud).
"""
