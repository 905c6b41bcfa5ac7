/* vb-cgexec: join cgroups (and a network namespace), then exec a program. The native
 * runtime's launcher.
 *
 *   vb-cgexec [-N | -n NETNS] CGROUP-DIR... -- PROGRAM ARGS...
 *
 * Writes "0" (this process) to CGROUP-DIR/cgroup.procs for each directory; with -N it
 * then unshares a new, empty network namespace (what a container with no network gets),
 * with -n it joins the network namespace NETNS (a file under /run/netns: the run's
 * bridge); then execs PROGRAM. Lets the host start a native instance inside its cgroup
 * with vfork/exec instead of a full fork of the (large) virtbench process.
 * Exit codes: 64 usage, 66 cannot join a cgroup, 67 network namespace, 71 exec failed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
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

static int enter_netns(const char *path)
{
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	rc = setns(fd, CLONE_NEWNET);
	close(fd);
	return rc;
}

int main(int argc, char **argv)
{
	const char *netns = NULL;
	int unshare_net = 0;
	int i = 1;

	if (i < argc && strcmp(argv[i], "-N") == 0) {
		unshare_net = 1;
		i++;
	} else if (i + 1 < argc && strcmp(argv[i], "-n") == 0) {
		netns = argv[i + 1];
		i += 2;
	}
	for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (join(argv[i]) != 0) {
			perror(argv[i]);
			return 66;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: vb-cgexec [-N | -n NETNS] CGROUP-DIR... -- PROGRAM ARGS...\n");
		return 64;
	}
	if (unshare_net && unshare(CLONE_NEWNET) != 0) {
		perror("vb-cgexec: unshare(CLONE_NEWNET)");
		return 67;
	}
	if (netns != NULL && enter_netns(netns) != 0) {
		perror(netns);
		return 67;
	}
	execv(argv[i + 1], &argv[i + 1]);
	perror("vb-cgexec: exec");
	return 71;
}
