/* vb-agent: runs the host's commands in a Linux guest (virtbench's exec into VMs).
 *
 * vb-init starts it with its channel to the host: the path of QEMU's virtio-serial port
 * named "vb.agent" (/dev/vportNpM), which the host reaches through a unix socket; or
 * "vsock:PORT", where it listens on that vsock port, which Firecracker and Cloud
 * Hypervisor offer the host as a unix socket ("CONNECT PORT\n"), a connection per exec.
 * One command at a time, each as the host asks:
 *
 *   host -> guest   "X <hex>\n"        the argv: each argument followed by a NUL, hex
 *   guest -> host   "O <n>\n" + n bytes    its standard output as it comes (repeated)
 *                   "R <status> <m>\n" + m bytes   its exit status (128 + signal when
 *                                      killed) and the last m (<= 4096) bytes of its
 *                                      standard error
 *
 * A command that cannot start answers "R 127 <m>" with why. Between commands the host may
 * be away (a read returns 0 or fails): the agent waits for it, or for its next connection.
 * On a virtio-serial port, whose reads return at once while the host is away, it waits
 * for the port's SIGIO (O_ASYNC: the host connected, or wrote), at most 250 ms: a guest
 * idles without waking 500 times a second, and a command is seen as soon as it comes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vb-hex.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#define VMADDR_CID_ANY (-1U)
struct sockaddr_vm { /* <linux/vm_sockets.h>'s, a stable ABI (musl has no kernel headers) */
	unsigned short svm_family, svm_reserved1;
	unsigned int svm_port, svm_cid;
	unsigned char svm_flags, svm_zero[3];
};

#define MAX_ARGS 256
#define LINE_MAX_ 65536
#define ERR_KEEP 4096

static int chan = -1;
static int listener = -1; /* on vsock: the listening socket, `chan` its connection */
static sigset_t sigio;	   /* blocked, and waited for, where the port sends it */
static int async_port;	   /* the virtio-serial port sends SIGIO */

/* Wait for the host to come back: its port's SIGIO, or 250 ms at most (2 ms without). */
static void wait_host(void)
{
	struct timespec most = { 0, 250 * 1000000L };

	if (async_port)
		sigtimedwait(&sigio, NULL, &most);
	else
		usleep(2000);
}

static void put(const void *buf, size_t n)
{
	const char *p = buf;

	while (n > 0) {
		ssize_t w = write(chan, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			usleep(1000); /* the host went away: what it missed is lost */
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void frame(char kind, long a, const char *data, size_t n, int with_a)
{
	char head[64];
	int h = with_a ? snprintf(head, sizeof(head), "%c %ld %zu\n", kind, a, n)
		       : snprintf(head, sizeof(head), "%c %zu\n", kind, n);

	put(head, (size_t)h);
	put(data, n);
}

/* One request line (without its '\n') into `line`; waits while the host is away. 0: the
 * host closed its vsock connection. */
static int read_line(char *line, size_t size)
{
	size_t len = 0;

	for (;;) {
		char c;
		ssize_t r = read(chan, &c, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 && listener >= 0)
			return 0;
		if (r <= 0) {
			wait_host();
			continue;
		}
		if (c == '\n') {
			line[len] = '\0';
			return 1;
		}
		if (len + 1 < size)
			line[len++] = c;
	}
}

static int decode(char *hex, char **argv)
{
	size_t n = 0, i;
	int argc = 0;

	for (i = 0; hex[i] && hex[i + 1]; i += 2) {
		int hi = unhex(hex[i]), lo = unhex(hex[i + 1]);

		if (hi < 0 || lo < 0)
			return 0;
		hex[n++] = (char)(hi << 4 | lo);
	}
	for (i = 0; i < n && argc < MAX_ARGS - 1; i += strlen(hex + i) + 1)
		argv[argc++] = hex + i;
	argv[argc] = NULL;
	return argc;
}

/* Drain the command's pipes: stdout framed to the host, the tail of stderr kept. */
static size_t drain(int out, int err, char *errbuf)
{
	static char buf[65536];
	struct pollfd fds[2] = { { out, POLLIN, 0 }, { err, POLLIN, 0 } };
	size_t errlen = 0;
	int open_ = 2;

	while (open_ > 0) {
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int k = 0; k < 2; k++) {
			ssize_t r;

			if (fds[k].fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = read(fds[k].fd, buf, sizeof(buf));
			if (r <= 0) {
				close(fds[k].fd);
				fds[k].fd = -1;
				open_--;
			} else if (k == 0) {
				frame('O', 0, buf, (size_t)r, 0);
			} else {
				size_t keep = (size_t)r > ERR_KEEP ? ERR_KEEP : (size_t)r;

				if (errlen + keep > ERR_KEEP) { /* keep the last ERR_KEEP bytes */
					size_t drop = errlen + keep - ERR_KEEP;

					memmove(errbuf, errbuf + drop, errlen - drop);
					errlen -= drop;
				}
				memcpy(errbuf + errlen, buf + r - keep, keep);
				errlen += keep;
			}
		}
	}
	return errlen;
}

static void run(char **argv)
{
	static char errbuf[ERR_KEEP + 256];
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", NULL };
	int out[2], err[2], st = 0;
	size_t errlen;
	pid_t pid;

	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		errlen = (size_t)snprintf(errbuf, sizeof(errbuf), "pipe: %s", strerror(errno));
		frame('R', 127, errbuf, errlen, 1);
		return;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL); /* the command gets no blocked SIGIO */
		dup2(null, 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		execve(argv[0], argv, envp);
		dprintf(2, "exec %s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	if (pid < 0) {
		close(out[0]);
		close(err[0]);
		errlen = (size_t)snprintf(errbuf, sizeof(errbuf), "fork: %s", strerror(errno));
		frame('R', 127, errbuf, errlen, 1);
		return;
	}
	errlen = drain(out[0], err[0], errbuf);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	frame('R', WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), errbuf, errlen, 1);
}

/* "vsock:PORT": listen on that port; else open the virtio-serial port at that path. */
static int open_channel(const char *spec)
{
	if (strncmp(spec, "vsock:", 6) == 0) {
		struct sockaddr_vm a = { .svm_family = AF_VSOCK, .svm_cid = VMADDR_CID_ANY,
					 .svm_port = (unsigned)atoi(spec + 6) };

		listener = socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof(a)) != 0)
			return -1;
		return listen(listener, 16);
	}
	chan = open(spec, O_RDWR | O_CLOEXEC);
	if (chan < 0)
		return -1;
	sigemptyset(&sigio);
	sigaddset(&sigio, SIGIO);
	sigprocmask(SIG_BLOCK, &sigio, NULL); /* queued for sigtimedwait, never delivered */
	async_port = fcntl(chan, F_SETOWN, getpid()) == 0 &&
		     fcntl(chan, F_SETFL, fcntl(chan, F_GETFL) | O_ASYNC) == 0;
	return 0;
}

int main(int argc, char **argv)
{
	static char line[LINE_MAX_];
	char *cmd[MAX_ARGS];

	if (argc != 2) {
		fprintf(stderr, "usage: vb-agent CHANNEL\n");
		return 2;
	}
	if (open_channel(argv[1]) != 0) {
		printf("VB-AGENT cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (;;) {
		if (chan < 0 && (chan = accept4(listener, NULL, NULL, SOCK_CLOEXEC)) < 0)
			continue;
		if (!read_line(line, sizeof(line))) {
			close(chan);
			chan = -1;
			continue;
		}
		if (line[0] != 'X' || line[1] != ' ' || decode(line + 2, cmd) == 0) {
			static const char bad[] = "bad request";

			frame('R', 127, bad, sizeof(bad) - 1, 1);
			continue;
		}
		run(cmd);
	}
}
