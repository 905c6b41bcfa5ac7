/* vb-cgexec: join cgroups, then exec a program. The native runtime's launcher.
 *
 *   vb-cgexec CGROUP-DIR... -- PROGRAM ARGS...
 *
 * Writes "0" (this process) to CGROUP-DIR/cgroup.procs for each directory, then execs
 * PROGRAM. Lets the host start a native instance inside its cgroup with vfork/exec
 * instead of a full fork of the (large) virtbench process.
 * Exit codes: 64 usage, 66 cannot join a cgroup, 71 exec failed. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int join(const char *dir)
{
	char path[4096];
	int fd, n;

	n = snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, "0", 1) != 1) {
		close(fd);
		return -1;
	}
	return close(fd);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (join(argv[i]) != 0) {
			perror(argv[i]);
			return 66;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: vb-cgexec CGROUP-DIR... -- PROGRAM ARGS...\n");
		return 64;
	}
	execv(argv[i + 1], &argv[i + 1]);
	perror("vb-cgexec: exec");
	return 71;
}
