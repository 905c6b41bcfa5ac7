"""LXC's family: lxc (liblxc's tools on the artifact rootfs) and lxd (system containers on
an imported image; lxd_config.py its image and raw.lxc as data). No imports here: the
registry imports drivers by module."""
