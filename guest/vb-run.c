/* vb-run: prepare a data directory, drop privileges, run set-up steps, exec the last one.
 *
 *   vb-run [--mkdir DIR]... [--chdir DIR] [--user UID:GID] [--env NAME=VALUE]...
 *          [--stdin FILE] PROGRAM ARGS... [';' [--stdin FILE] PROGRAM ARGS...]...
 *
 * Servers that need an initialised data directory (initdb, mariadbd --bootstrap) or
 * programs that need prepare/run/cleanup (sysbench fileio) run as one instance with no
 * shell in the rootfs: each --mkdir DIR is created (mode 0700, owned by --user when
 * given), then the process changes directory, sets the environment, drops to UID:GID,
 * runs every step but the last to its exit (a failing step ends vb-run with its status)
 * and execs the last step, which keeps the instance's process. `--stdin FILE` feeds a
 * step from a file. PROGRAM is an absolute path.
 * Exit codes: 64 usage, 66 cannot prepare (mkdir, chown, chdir, setuid, open),
 * 71 exec failed, or a failing step's status. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_STEPS 16

struct step {
	char **argv;
	const char *stdin_file;
};

static int usage(void)
{
	fprintf(stderr, "usage: vb-run [--mkdir DIR]... [--chdir DIR] [--user UID:GID] "
			"[--env N=V]... [--stdin FILE] PROGRAM ARGS... [';' ...]\n");
	return 64;
}

static int mkdir_owned(const char *dir, int uid, int gid)
{
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return -1;
	if (uid >= 0 && chown(dir, (uid_t)uid, (gid_t)gid) != 0)
		return -1;
	return 0;
}

static void feed(const char *file)
{
	int fd;

	if (file == NULL)
		return;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || dup2(fd, 0) < 0) {
		perror(file);
		_exit(66);
	}
}

int main(int argc, char **argv)
{
	struct step steps[MAX_STEPS];
	const char *chdir_to = NULL, *stdin_file = NULL;
	int uid = -1, gid = -1, nsteps = 0, i = 1, s;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		}
		if (i + 1 >= argc)
			return usage();
		if (strcmp(argv[i], "--mkdir") == 0) {
			continue; /* done once the user is known */
		} else if (strcmp(argv[i], "--chdir") == 0) {
			chdir_to = argv[i + 1];
		} else if (strcmp(argv[i], "--user") == 0) {
			if (sscanf(argv[i + 1], "%d:%d", &uid, &gid) != 2 || uid < 0 || gid < 0)
				return usage();
		} else if (strcmp(argv[i], "--env") == 0) {
			if (strchr(argv[i + 1], '=') == NULL || putenv(argv[i + 1]) != 0)
				return usage();
		} else if (strcmp(argv[i], "--stdin") == 0) {
			stdin_file = argv[i + 1];
		} else {
			return usage();
		}
	}
	for (int j = 1; j + 1 < i; j += 2) {
		if (strcmp(argv[j], "--mkdir") == 0 && mkdir_owned(argv[j + 1], uid, gid) != 0) {
			fprintf(stderr, "vb-run: mkdir %s: %s\n", argv[j + 1], strerror(errno));
			return 66;
		}
	}
	while (i < argc) { /* split the rest into steps at ';' */
		if (nsteps == MAX_STEPS)
			return usage();
		if (strcmp(argv[i], "--stdin") == 0 && i + 1 < argc) {
			stdin_file = argv[i + 1];
			i += 2;
		}
		if (i >= argc || strcmp(argv[i], ";") == 0)
			return usage();
		steps[nsteps].argv = &argv[i];
		steps[nsteps].stdin_file = stdin_file;
		stdin_file = NULL;
		nsteps++;
		while (i < argc && strcmp(argv[i], ";") != 0)
			i++;
		if (i < argc)
			argv[i++] = NULL; /* terminates the previous step's argv */
	}
	if (nsteps == 0)
		return usage();
	if (chdir_to != NULL && chdir(chdir_to) != 0) {
		fprintf(stderr, "vb-run: chdir %s: %s\n", chdir_to, strerror(errno));
		return 66;
	}
	if (uid >= 0 && (setgroups(0, NULL) != 0 || setgid((gid_t)gid) != 0 ||
			 setuid((uid_t)uid) != 0)) {
		fprintf(stderr, "vb-run: cannot become %d:%d: %s\n", uid, gid, strerror(errno));
		return 66;
	}
	for (s = 0; s + 1 < nsteps; s++) {
		pid_t pid = fork();
		int status;

		if (pid < 0) {
			perror("vb-run: fork");
			return 71;
		}
		if (pid == 0) {
			feed(steps[s].stdin_file);
			execv(steps[s].argv[0], steps[s].argv);
			fprintf(stderr, "vb-run: exec %s: %s\n", steps[s].argv[0], strerror(errno));
			_exit(71);
		}
		while (waitpid(pid, &status, 0) < 0) {
			if (errno != EINTR) {
				perror("vb-run: waitpid");
				return 71;
			}
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
			int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			fprintf(stderr, "vb-run: step %d (%s) failed with status %d\n", s + 1,
				steps[s].argv[0], code);
			return code;
		}
	}
	fflush(stdout);
	feed(steps[s].stdin_file);
	execv(steps[s].argv[0], steps[s].argv);
	fprintf(stderr, "vb-run: exec %s: %s\n", steps[s].argv[0], strerror(errno));
	return 71;
}
