"""Container engines (docker, podman) on an image imported from the artifact rootfs:
base.py is what they share (the image, the run's network), dockerd.py the Docker daemon,
docker_controls.py exec and pause over the Engine API. No imports here: the registry
imports drivers by module."""
