/* vb-syscall: the cost of system calls and page faults, in ns per operation.
 *
 * usage: vb-syscall [batches] [batch_ms] [sizes] [pages]
 *   batches, batch_ms  default 10 batches of ~20 ms each
 *   sizes   payload sizes in bytes, comma-separated, 1..8192 (default 1,64,512,4096,8192)
 *   pages   page counts for the first-touch cost of k fresh pages, comma-separated,
 *           1..64 (default none)
 * Operations (S4-style, plus the usual suspects):
 *   getppid; read from /dev/zero and write to /dev/null, sendto+recvfrom of a UDP datagram
 *   to itself on 127.0.0.1 (a unix datagram socketpair when there is no loopback), each
 *   with every payload size; open+close and stat of a file in /tmp; fork+exit+wait; first
 *   touch of an anonymous page; and per page count k, the first touch of k fresh pages
 *   (mapped untimed, pre-fault nothing; only the touches are timed).
 * The iteration count of a batch is calibrated so one batch takes about batch_ms; each
 * batch prints one line:
 *   syscall <op> bytes=<n> batch=<i> iters=<n> ns_per_op=<x>
 *   syscall page_fault_run pages=<k> batch=<i> iters=<n> ns_per_op=<x>  (x: all k touches)
 * Exit 1 if an operation fails, 2 on bad arguments. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char buf[8192];
static int zero_fd, null_fd, tx, rx;
static struct sockaddr_in to;
static socklen_t tolen;
static char statpath[] = "/tmp/vb-syscall-XXXXXX"; /* made at start, removed at exit */

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	if (statpath[sizeof(statpath) - 2] != 'X')
		unlink(statpath);
	exit(1);
}

/* one operation of kind `op` with `n` bytes; returns 0 */
static void op_once(int op, size_t n)
{
	struct stat st;
	pid_t pid;
	int fd;

	switch (op) {
	case 0:
		getppid();
		break;
	case 1:
		if (read(zero_fd, buf, n) != (ssize_t)n)
			die("read");
		break;
	case 2:
		if (write(null_fd, buf, n) != (ssize_t)n)
			die("write");
		break;
	case 3:
		if (sendto(tx, buf, n, 0, (struct sockaddr *)&to, tolen) != (ssize_t)n)
			die("sendto");
		if (recvfrom(rx, buf, sizeof(buf), 0, NULL, NULL) != (ssize_t)n)
			die("recvfrom");
		break;
	case 4:
		fd = open(statpath, O_RDONLY);
		if (fd < 0 || close(fd) != 0)
			die("open/close");
		break;
	case 5:
		if (stat(statpath, &st) != 0)
			die("stat");
		break;
	case 6:
		pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, NULL, 0) != pid)
			die("waitpid");
		break;
	}
}

/* `iters` times: map k fresh pages (untimed), touch each once (timed), unmap */
static double fault_run(long k, long iters)
{
	long page = sysconf(_SC_PAGESIZE);
	long long spent = 0;
	long i, j;

	for (i = 0; i < iters; i++) {
		char *m = mmap(NULL, k * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		long long t0;

		if (m == MAP_FAILED)
			die("mmap");
		t0 = now_ns();
		for (j = 0; j < k; j++)
			m[j * page] = 1;
		spent += now_ns() - t0;
		if (munmap(m, k * page) != 0)
			die("munmap");
	}
	return (double)spent / iters;
}

/* a comma-separated list of integers in [lo, hi] into out (at most max); count or -1 */
static int parse_list(const char *text, long lo, long hi, long *out, int max)
{
	int n = 0;
	char *end;

	if (*text == '\0')
		return 0;
	for (;;) {
		long v = strtol(text, &end, 10);

		if (end == text || v < lo || v > hi || n == max)
			return -1;
		out[n++] = v;
		if (*end == '\0')
			return n;
		if (*end != ',')
			return -1;
		text = end + 1;
	}
}

static double batch(int op, size_t n, long iters)
{
	long long t0 = now_ns();
	long i;

	if (op == 7) { /* first touch of `iters` anonymous pages */
		long page = sysconf(_SC_PAGESIZE);
		char *m = mmap(NULL, iters * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			die("mmap");
		t0 = now_ns();
		for (i = 0; i < iters; i++)
			m[i * page] = 1;
		t0 = now_ns() - t0;
		munmap(m, iters * page);
		return (double)t0 / iters;
	}
	for (i = 0; i < iters; i++)
		op_once(op, n);
	return (double)(now_ns() - t0) / iters;
}

int main(int argc, char **argv)
{
	static const char *names[8] = { "getppid", "read", "write", "sendto_recvfrom",
					"open_close", "stat", "fork", "page_fault" };
	long sizes[64] = { 1, 64, 512, 4096, 8192 }, pages[64];
	int nsizes_all = 5, npages = 0;
	int batches = argc > 1 ? atoi(argv[1]) : 10;
	double batch_ms = argc > 2 ? atof(argv[2]) : 20.0;
	const char *transport = "udp";
	int op, s, b;

	if (argc > 3)
		nsizes_all = parse_list(argv[3], 1, sizeof(buf), sizes, 64);
	if (argc > 4)
		npages = parse_list(argv[4], 1, 64, pages, 64);
	if (batches < 1 || batch_ms <= 0 || nsizes_all < 1 || npages < 0 || argc > 5) {
		fprintf(stderr, "usage: vb-syscall [batches >= 1] [batch_ms > 0] "
				"[sizes 1..8192,...] [pages 1..64,...]\n");
		return 2;
	}
	{
		int fd = mkstemp(statpath);

		if (fd < 0)
			die("mkstemp /tmp");
		close(fd);
	}
	zero_fd = open("/dev/zero", O_RDONLY);
	null_fd = open("/dev/null", O_WRONLY);
	if (zero_fd < 0 || null_fd < 0)
		die("open /dev/zero, /dev/null");
	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	tolen = sizeof(to);
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	if (rx < 0 || bind(rx, (struct sockaddr *)&to, tolen) != 0 ||
	    getsockname(rx, (struct sockaddr *)&to, &tolen) != 0 ||
	    (tx = socket(AF_INET, SOCK_DGRAM, 0)) < 0 ||
	    sendto(tx, buf, 1, 0, (struct sockaddr *)&to, tolen) != 1 ||
	    recvfrom(rx, buf, sizeof(buf), MSG_DONTWAIT, NULL, NULL) != 1) {
		int sv[2];

		if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) != 0)
			die("socketpair");
		tx = sv[0];
		rx = sv[1];
		tolen = 0; /* sendto on a connected socketpair ignores the address */
		transport = "unix";
	}
	printf("syscall transport=%s\n", transport);
	for (op = 0; op < 8; op++) {
		int nsizes = (op >= 1 && op <= 3) ? nsizes_all : 1;

		for (s = 0; s < nsizes; s++) {
			size_t n = (op >= 1 && op <= 3) ? (size_t)sizes[s] : 0;
			long iters = 1;
			double per;

			/* calibrate: double until one batch takes batch_ms */
			for (;;) {
				per = batch(op, n, iters);
				if (per * iters >= batch_ms * 1e6 || iters >= (1L << 26))
					break;
				iters *= 2;
			}
			for (b = 0; b < batches; b++) {
				per = batch(op, n, iters);
				printf("syscall %s bytes=%zu batch=%d iters=%ld ns_per_op=%.1f\n",
				       names[op], n, b, iters, per);
			}
		}
	}
	for (s = 0; s < npages; s++) {
		long iters = 1;
		double per;

		for (;;) {
			per = fault_run(pages[s], iters);
			if (per * iters >= batch_ms * 1e6 || iters >= (1L << 22))
				break;
			iters *= 2;
		}
		for (b = 0; b < batches; b++) {
			per = fault_run(pages[s], iters);
			printf("syscall page_fault_run pages=%ld batch=%d iters=%ld ns_per_op=%.1f\n",
			       pages[s], b, iters, per);
		}
	}
	unlink(statpath);
	return 0;
}
