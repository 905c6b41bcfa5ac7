/* vb-ready: tell the host this instance is ready, then exec the rest of argv.
 *
 *   vb-ready ADDRESS INSTANCE-ID [PROGRAM ARGS...]
 *
 * ADDRESS is udp:IPv4:PORT (a host listener reachable over the instance's
 * network) or unix:PATH (a datagram socket bind-mounted into the instance, for
 * instances without a network), or file:PATH (a VM guest's console: the line
 * "VB-READY INSTANCE-ID" is written to PATH, e.g. file:/dev/console, and the host
 * reads it from the serial port). Sends one datagram "ready INSTANCE-ID" and then
 * execs PROGRAM, or exits 0 when none is given.
 *
 *   vb-ready ADDRESS INSTANCE-ID --beat PERIOD-MS
 *
 * instead stays, and every PERIOD-MS sends "beat INSTANCE-ID TOKEN SEQ" (file: the
 * line "VB-BEAT INSTANCE-ID TOKEN SEQ"): TOKEN is 16 random hex digits drawn once, at
 * start, and SEQ counts from 1. A paused instance stops beating; a restored one goes on
 * with the same TOKEN and the next SEQ, which proves it is the one checkpointed. A
 * beat that cannot be sent is skipped (the host may be away for a moment).
 * Exit codes: 64 usage, 65 bad address, 70 socket/send failed, 71 exec failed. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EX_USAGE_ 64
#define EX_ADDR 65
#define EX_SEND 70
#define EX_EXEC 71

static int send_udp(const char *spec, const char *msg, size_t len)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char *end = NULL;
	long port;
	int fd;

	if (colon == NULL || (size_t)(colon - spec) >= sizeof(host))
		return EX_ADDR;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (*end != '\0' || port <= 0 || port > 65535)
		return EX_ADDR;
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return EX_ADDR;
	sin.sin_port = htons((unsigned short)port);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return EX_SEND;
	if (sendto(fd, msg, len, 0, (struct sockaddr *)&sin, sizeof(sin)) != (ssize_t)len) {
		close(fd);
		return EX_SEND;
	}
	close(fd);
	return 0;
}

static int send_unix(const char *path, const char *msg, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return EX_ADDR;
	strcpy(sun.sun_path, path);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return EX_SEND;
	if (sendto(fd, msg, len, 0, (struct sockaddr *)&sun, sizeof(sun)) != (ssize_t)len) {
		close(fd);
		return EX_SEND;
	}
	close(fd);
	return 0;
}

static int write_line(const char *path, const char *line, int len)
{
	int fd;

	if (len < 0)
		return EX_USAGE_;
	fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return EX_ADDR;
	if (write(fd, line, (size_t)len) != len) {
		close(fd);
		return EX_SEND;
	}
	close(fd);
	return 0;
}

static int write_marker(const char *path, const char *id)
{
	char line[256];
	int len = snprintf(line, sizeof(line), "VB-READY %s\n", id);

	if (len < 0 || (size_t)len >= sizeof(line))
		return EX_USAGE_;
	return write_line(path, line, len);
}

static int send_to(const char *addr, const char *msg, int len)
{
	if (len < 0)
		return EX_USAGE_;
	if (strncmp(addr, "udp:", 4) == 0)
		return send_udp(addr + 4, msg, (size_t)len);
	if (strncmp(addr, "unix:", 5) == 0)
		return send_unix(addr + 5, msg, (size_t)len);
	return EX_ADDR;
}

static int beat(const char *addr, const char *id, const char *period)
{
	char msg[256], *end = NULL;
	unsigned long long token = 0, seq;
	long ms = strtol(period, &end, 10);
	struct timespec ts, pause;

	if (*end != '\0' || ms <= 0 || ms > 60000)
		return EX_USAGE_;
	if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token)) {
		clock_gettime(CLOCK_REALTIME, &ts); /* no entropy yet: time and pid */
		token = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec ^
			((unsigned long long)getpid() << 40);
	}
	pause.tv_sec = ms / 1000;
	pause.tv_nsec = (ms % 1000) * 1000000L;
	for (seq = 1;; seq++) {
		int len;

		if (strncmp(addr, "file:", 5) == 0) {
			len = snprintf(msg, sizeof(msg), "VB-BEAT %s %016llx %llu\n", id, token, seq);
			write_line(addr + 5, msg, len);
		} else {
			len = snprintf(msg, sizeof(msg), "beat %s %016llx %llu", id, token, seq);
			send_to(addr, msg, len);
		}
		nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	char msg[256];
	int len, rc;

	if (argc < 3) {
		fprintf(stderr, "usage: vb-ready udp:IP:PORT|unix:PATH|file:PATH INSTANCE-ID [PROGRAM ARGS...|--beat MS]\n");
		return EX_USAGE_;
	}
	len = snprintf(msg, sizeof(msg), "ready %s", argv[2]);
	if (len < 0 || (size_t)len >= sizeof(msg))
		return EX_USAGE_;
	if (strncmp(argv[1], "file:", 5) == 0)
		rc = write_marker(argv[1] + 5, argv[2]);
	else
		rc = send_to(argv[1], msg, len);
	if (rc != 0) {
		fprintf(stderr, "vb-ready: cannot signal %s (exit %d)\n", argv[1], rc);
		return rc;
	}
	if (argc == 3)
		return 0;
	if (strcmp(argv[3], "--beat") == 0)
		return argc == 5 ? beat(argv[1], argv[2], argv[4]) : EX_USAGE_;
	execv(argv[3], &argv[3]);
	perror("vb-ready: exec");
	return EX_EXEC;
}
