/* vb-attack: a misbehaving neighbour for the isolation experiment; loops until SIGTERM.
 *
 * usage: vb-attack MODE [ARG]
 *   cpu [LIMIT]       primality test of 2..LIMIT by trial division, over and over
 *                     (S1's CPU attacker; LIMIT defaults to 1000000000)
 *   memory [ELEMS]    the STREAM copy/scale/add/triad kernels over three arrays of ELEMS
 *                     doubles (default 10000000, 80 MB each), over and over
 *   open PATH         open(PATH, O_RDONLY) + close()
 *   stat PATH         stat(PATH)
 *   read [BYTES]      pread() of BYTES (default 4096) from a memfd (a file on tmpfs)
 *   write [BYTES]     pwrite() of BYTES (default 4096) to a memfd, at offset 0
 *   fork              fork(); the child _exit()s; the parent waits: at most two processes
 *   mempressure [MIB] mmap MIB (default 256) anonymous memory, touch every page, unmap
 *   net [BYTES]       TCP bulk transfer over the instance's loopback, like iperf3 -c
 *                     127.0.0.1: a forked reader drains what the writer sends in BYTES
 *                     (default 131072) writes; the port is the kernel's choice, so any
 *                     number of attackers can share a network namespace
 *
 * On SIGTERM or SIGINT it prints one line and exits 0:
 *   attack mode=<mode> ops=<loop iterations> seconds=<s>
 * so a test (or a person reading the console log) can see the attacker really worked.
 * Exit 2 on bad usage, 1 when the first operation fails (e.g. a missing PATH). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static volatile unsigned long sink; /* results land here so no loop is optimised away */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int usage(void)
{
	fprintf(stderr, "usage: vb-attack cpu [LIMIT] | memory [ELEMS] | open PATH | stat PATH |"
			" read [BYTES] | write [BYTES] | fork | mempressure [MIB] | net [BYTES]\n");
	return 2;
}

static long number(const char *s, long dflt, long min)
{
	char *end;
	long v;

	if (s == NULL)
		return dflt;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min)
		return -1;
	return v;
}

static int fail(const char *mode, const char *what)
{
	fprintf(stderr, "vb-attack %s: %s: %s\n", mode, what, strerror(errno));
	return 1;
}

static unsigned long attack_cpu(long limit)
{
	unsigned long ops = 0, found = 0;
	long n, d;

	while (!stop) {
		for (n = 2; n <= limit && !stop; n++) {
			for (d = 2; d * d <= n; d++)
				if (n % d == 0)
					break;
			found += d * d > n;
			ops++;
		}
	}
	sink = found;
	return ops;
}

static int attack_memory(long n, unsigned long *ops)
{
	double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double));
	double *c = malloc(n * sizeof(double));
	/* s = sqrt(2) - 1 makes a pass map a to b + s*c = (2s + s*s) a = a: the values stay
	 * where they are (STREAM's s = 3 grows them 15-fold a pass, to inf) and the memory
	 * traffic is the same */
	const double s = 0.41421356237309515;
	long i;

	if (!a || !b || !c)
		return fail("memory", "malloc");
	for (i = 0; i < n; i++) {
		a[i] = 1.0;
		b[i] = 2.0;
		c[i] = 0.0;
	}
	while (!stop) {
		for (i = 0; i < n; i++)
			c[i] = a[i];
		for (i = 0; i < n; i++)
			b[i] = s * c[i];
		for (i = 0; i < n; i++)
			c[i] = a[i] + b[i];
		for (i = 0; i < n; i++)
			a[i] = b[i] + s * c[i];
		(*ops)++;
	}
	return 0;
}

static int memfd(const char *mode, long bytes, char **buf)
{
	int fd = (int)syscall(SYS_memfd_create, "vb-attack", 0);

	if (fd < 0)
		return fail(mode, "memfd_create"), -1;
	*buf = calloc(1, bytes);
	if (*buf == NULL)
		return fail(mode, "calloc"), -1;
	if (pwrite(fd, *buf, bytes, 0) != bytes)
		return fail(mode, "pwrite"), -1;
	return fd;
}

static void wait_ready(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	poll(&p, 1, 100);
}

static int attack_net(long bytes, unsigned long *ops)
{
	struct sockaddr_in addr;
	socklen_t len = sizeof(addr);
	int lsock, sock;
	char *buf = calloc(1, bytes);
	pid_t reader;

	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (buf == NULL)
		return fail("net", "calloc");
	lsock = socket(AF_INET, SOCK_STREAM, 0);
	if (lsock < 0 || bind(lsock, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(lsock, 1) < 0 || getsockname(lsock, (struct sockaddr *)&addr, &len) < 0)
		return fail("net", "listen on 127.0.0.1");
	reader = fork();
	if (reader < 0)
		return fail("net", "fork");
	if (reader == 0) { /* drain until the writer goes away */
		int c = accept(lsock, NULL, NULL);

		if (c < 0)
			_exit(1);
		for (;;) {
			ssize_t n = read(c, buf, bytes);

			if (n > 0)
				continue;
			if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
				wait_ready(c, POLLIN);
				continue;
			}
			_exit(0);
		}
	}
	close(lsock);
	sock = socket(AF_INET, SOCK_STREAM, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		return fail("net", "connect to 127.0.0.1");
	while (!stop) {
		if (write(sock, buf, bytes) < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) { /* gVisor's netstack says so on blocking sockets */
				wait_ready(sock, POLLOUT);
				continue;
			}
			return fail("net", "write");
		}
		(*ops)++;
	}
	close(sock);
	kill(reader, SIGTERM);
	waitpid(reader, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *arg = argc > 2 ? argv[2] : NULL;
	unsigned long ops = 0;
	struct sigaction sa;
	double t0;
	long v;

	if (argc < 2 || argc > 3)
		return usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: a blocked call returns, the loop ends */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	t0 = now();
	if (strcmp(mode, "cpu") == 0) {
		if ((v = number(arg, 1000000000L, 2)) < 0)
			return usage();
		ops = attack_cpu(v);
	} else if (strcmp(mode, "memory") == 0) {
		if ((v = number(arg, 10000000L, 1000)) < 0)
			return usage();
		if (attack_memory(v, &ops))
			return 1;
	} else if (strcmp(mode, "open") == 0) {
		int fd;

		if (arg == NULL)
			return usage();
		while (!stop) {
			fd = open(arg, O_RDONLY);
			if (fd < 0)
				return fail(mode, arg);
			close(fd);
			ops++;
		}
	} else if (strcmp(mode, "stat") == 0) {
		struct stat st;

		if (arg == NULL)
			return usage();
		while (!stop) {
			if (stat(arg, &st) < 0)
				return fail(mode, arg);
			ops++;
		}
	} else if (strcmp(mode, "read") == 0 || strcmp(mode, "write") == 0) {
		int writing = mode[0] == 'w';
		char *buf;
		int fd;

		if ((v = number(arg, 4096, 1)) < 0)
			return usage();
		if ((fd = memfd(mode, v, &buf)) < 0)
			return 1;
		while (!stop) {
			ssize_t n = writing ? pwrite(fd, buf, v, 0) : pread(fd, buf, v, 0);

			if (n != v && !stop)
				return fail(mode, writing ? "pwrite" : "pread");
			ops++;
		}
	} else if (strcmp(mode, "fork") == 0) {
		if (arg != NULL)
			return usage();
		while (!stop) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(0);
			if (pid < 0) {
				if (errno == EAGAIN) { /* at a pids limit: back off, keep going */
					struct timespec ms = { 0, 1000000 };

					nanosleep(&ms, NULL);
					continue;
				}
				return fail(mode, "fork");
			}
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			ops++;
		}
	} else if (strcmp(mode, "mempressure") == 0) {
		long page = sysconf(_SC_PAGESIZE), i;
		size_t size;

		if ((v = number(arg, 256, 1)) < 0)
			return usage();
		size = (size_t)v << 20;
		while (!stop) {
			char *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return fail(mode, "mmap");
			for (i = 0; i < (long)size && !stop; i += page)
				p[i] = 1;
			munmap(p, size);
			ops++;
		}
	} else if (strcmp(mode, "net") == 0) {
		if ((v = number(arg, 131072, 1)) < 0)
			return usage();
		if (attack_net(v, &ops))
			return 1;
	} else {
		return usage();
	}
	printf("attack mode=%s ops=%lu seconds=%.3f\n", mode, ops, now() - t0);
	return 0;
}
