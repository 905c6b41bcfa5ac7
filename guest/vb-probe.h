/* vb-probe.h: how a guest program tells the host it is ready (vb-ready, vb-sleep).
 *
 * ADDRESS is udp:IPv4:PORT (a host listener reachable over the instance's network),
 * unix:PATH (a datagram socket bind-mounted into the instance, for instances without
 * a network) or file:PATH (a VM guest's console: a line is written to PATH, e.g.
 * file:/dev/console, and the host reads it from the serial port) or fd:N (the same line
 * on an open descriptor: a WASI module's stdout, fd:1, which its runtime's host reads).
 * Built for WASI (wasm32-wasi: no sockets), only file: and fd: are compiled in.
 * No stdio here: a static program's text is faulted in whole, and vb-sleep keeps small. */
#ifndef VB_PROBE_H
#define VB_PROBE_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifndef __wasi__
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#endif

#define EX_USAGE_ 64
#define EX_ADDR 65
#define EX_SEND 70

#ifndef __wasi__
/* One datagram of `len` bytes to `addr`; 0, or EX_SEND. */
static int send_dgram(const struct sockaddr *addr, socklen_t addrlen, const char *msg, size_t len)
{
	int fd = socket(addr->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int rc = 0;

	if (fd < 0)
		return EX_SEND;
	if (sendto(fd, msg, len, 0, addr, addrlen) != (ssize_t)len)
		rc = EX_SEND;
	close(fd);
	return rc;
}

static int send_udp(const char *spec, const char *msg, size_t len)
{
	char host[64];
	const char *colon = strrchr(spec, ':');
	struct sockaddr_in sin = { .sin_family = AF_INET };
	const char *d;
	long port = 0;

	if (colon == NULL || (size_t)(colon - spec) >= sizeof(host))
		return EX_ADDR;
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	for (d = colon + 1; *d >= '0' && *d <= '9' && port <= 65535; d++)
		port = port * 10 + (*d - '0');
	if (*d != '\0' || port <= 0 || port > 65535)
		return EX_ADDR;
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return EX_ADDR;
	sin.sin_port = htons((unsigned short)port);
	return send_dgram((struct sockaddr *)&sin, sizeof(sin), msg, len);
}

static int send_unix(const char *path, const char *msg, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sun.sun_path))
		return EX_ADDR;
	strcpy(sun.sun_path, path);
	return send_dgram((struct sockaddr *)&sun, sizeof(sun), msg, len);
}
#endif

/* `len` bytes to descriptor `fd`, whole; 0, or EX_SEND. */
static int write_fd(int fd, const char *line, int len)
{
	while (len > 0) {
		ssize_t n = write(fd, line, (size_t)len);

		if (n <= 0)
			return EX_SEND;
		line += n;
		len -= (int)n;
	}
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
	if (write_fd(fd, line, len) != 0) {
		close(fd);
		return EX_SEND;
	}
	close(fd);
	return 0;
}

/* A line to ADDRESS file:PATH or fd:N; EX_ADDR for any other kind. */
static int write_to(const char *addr, const char *line, int len)
{
	if (len < 0)
		return EX_USAGE_;
	if (strncmp(addr, "file:", 5) == 0)
		return write_line(addr + 5, line, len);
	if (strncmp(addr, "fd:", 3) == 0 && addr[3] >= '0' && addr[3] <= '9' && addr[4] == '\0')
		return write_fd(addr[3] - '0', line, len);
	return EX_ADDR;
}

/* Whether ADDRESS takes lines (file:, fd:) rather than datagrams. */
static int is_line_addr(const char *addr)
{
	return strncmp(addr, "file:", 5) == 0 || strncmp(addr, "fd:", 3) == 0;
}

/* "PREFIX ID SUFFIX" into buf; its length, or -1 when it does not fit. */
static int join3(char *buf, size_t size, const char *prefix, const char *id, const char *suffix)
{
	size_t a = strlen(prefix), b = strlen(id), c = strlen(suffix);

	if (a + b + c >= size)
		return -1;
	memcpy(buf, prefix, a);
	memcpy(buf + a, id, b);
	memcpy(buf + a + b, suffix, c + 1);
	return (int)(a + b + c);
}

static int write_marker(const char *addr, const char *id)
{
	char line[256];

	return write_to(addr, line, join3(line, sizeof(line), "VB-READY ", id, "\n"));
}

static int send_to(const char *addr, const char *msg, int len)
{
	if (len < 0)
		return EX_USAGE_;
#ifndef __wasi__
	if (strncmp(addr, "udp:", 4) == 0)
		return send_udp(addr + 4, msg, (size_t)len);
	if (strncmp(addr, "unix:", 5) == 0)
		return send_unix(addr + 5, msg, (size_t)len);
#else
	(void)addr;
	(void)msg;
#endif
	return EX_ADDR;
}

/* Send "ready INSTANCE-ID" (file: and fd:, the line "VB-READY INSTANCE-ID"); 0, or an
 * exit code. */
static int signal_ready(const char *addr, const char *id)
{
	char msg[256];

	if (is_line_addr(addr))
		return write_marker(addr, id);
	return send_to(addr, msg, join3(msg, sizeof(msg), "ready ", id, ""));
}

#endif
