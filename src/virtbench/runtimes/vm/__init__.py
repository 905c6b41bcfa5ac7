"""VM-class drivers: one VMM process per instance booting a guest kernel. base.py is the
shared driver (boot.py, guest.py, image.py and presets.py: what a VM boots; agent.py: exec
through vb-agent), qemu.py with qmp.py, and api.py the HTTP API over a unix socket that
Firecracker and Cloud Hypervisor share. No imports here: the registry imports drivers by
module."""
