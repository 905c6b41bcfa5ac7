"""`sleep`: signal ready over the probe, then block until killed (vb-ready + vb-sleep).

The idle instance of density and the background of scalability; boot is measured from
spawn to the ready datagram.
"""

NAME = "sleep"
ENDS = "ready"
DESCRIPTION = "signals ready, then sleeps until stopped (vb-ready -> vb-sleep)"


def argv(instance: str) -> tuple[str, ...]:
    return ("/bin/vb-ready", "{probe}", instance, "/bin/vb-sleep")
