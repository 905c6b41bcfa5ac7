"""`hello`: print one line and exit. Boot is measured from spawn to the exit."""

NAME = "hello"
ENDS = "exit"
DESCRIPTION = "prints a line and exits (vb-hello)"


def argv(instance: str) -> tuple[str, ...]:
    del instance
    return ("/bin/vb-hello",)
