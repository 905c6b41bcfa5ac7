"""Low-level OCI runtimes (runc, crun, youki, runsc) on bundles virtbench writes: base.py
is their shared driver, rootfs.py and security.py what a bundle is made of. No imports
here: the registry imports drivers by module."""
