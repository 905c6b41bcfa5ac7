/* vb-rr: request/response over TCP and UDP -- the server in an instance, the client on
 * the host.
 *
 *   vb-rr serve PORT
 *       Listens on 0.0.0.0:PORT for TCP and UDP. Each request starts with a header of two
 *       32-bit big-endian numbers, its own length and the reply length wanted (0: echo the
 *       request); the server answers each request with that many bytes.
 *   vb-rr ping tcp|udp HOST PORT COUNT SIZE
 *       COUNT round trips of SIZE-byte requests echoed back (one TCP connection, or UDP
 *       datagrams with a 1 s timeout, counted lost), after COUNT/10 untimed warm-up trips.
 *       Prints one line: rr proto=.. size=.. count=.. lost=.. min_us= avg_us= p50_us=
 *       p90_us= p99_us= p999_us= max_us=
 *   vb-rr flood HOST PORT COUNT GAP_US REQUEST_BYTES REPLY_BYTES
 *       S2's UDP test: COUNT datagrams paced GAP_US apart, each answered with
 *       REPLY_BYTES; replies are drained while sending and for up to 2 s after. Prints:
 *       flood sent=.. received=.. seconds=.. (first send to last reply)
 * Exit codes: 64 usage, 69 network error. Addresses are numeric IPv4. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_MSG 65536
#define MAX_CONNS 256

static unsigned char buf[MAX_MSG], out[MAX_MSG];

static int usage(void)
{
	fprintf(stderr, "usage: vb-rr serve PORT | ping tcp|udp HOST PORT COUNT SIZE | "
			"flood HOST PORT COUNT GAP_US REQUEST_BYTES REPLY_BYTES\n");
	return 64;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void put32(unsigned char *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return ntohl(v);
}

static int full_io(int fd, unsigned char *p, size_t n, int writing)
{
	while (n > 0) {
		ssize_t r = writing ? write(fd, p, n) : read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int addr_of(const char *host, const char *port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)atoi(port));
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -1;
}

/* The reply to a request of `len` bytes in buf: length from its header, echo if 0. */
static size_t reply_len(size_t len)
{
	uint32_t want = len >= 8 ? get32(buf + 4) : 0;

	if (want == 0)
		return len;
	return want > MAX_MSG ? MAX_MSG : want;
}

static int serve(const char *port)
{
	struct sockaddr_in sa;
	struct pollfd fds[MAX_CONNS + 2];
	int one = 1, nfds = 2;

	signal(SIGPIPE, SIG_IGN);
	if (addr_of("0.0.0.0", port, &sa) != 0)
		return usage();
	fds[0].fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	fds[1].fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	setsockopt(fds[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fds[0].fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fds[0].fd, 128) != 0 ||
	    bind(fds[1].fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		perror("vb-rr: bind");
		return 69;
	}
	fds[0].events = fds[1].events = POLLIN;
	fprintf(stderr, "vb-rr: serving tcp and udp on port %s\n", port);
	for (;;) {
		if (poll(fds, (nfds_t)nfds, -1) < 0) {
			if (errno == EINTR)
				continue;
			perror("vb-rr: poll");
			return 69;
		}
		if (fds[1].revents & POLLIN) { /* drain every queued datagram */
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n;

			while ((n = recvfrom(fds[1].fd, buf, sizeof(buf), MSG_DONTWAIT,
					     (struct sockaddr *)&from, &fl)) >= 0) {
				size_t r = reply_len((size_t)n);

				if (r != (size_t)n)
					memset(out, 'r', r);
				sendto(fds[1].fd, r == (size_t)n ? buf : out, r, 0,
				       (struct sockaddr *)&from, fl);
				fl = sizeof(from);
			}
		}
		for (int i = 2; i < nfds; i++) {
			uint32_t len;
			size_t r;

			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (full_io(fds[i].fd, buf, 8, 0) == 0 && (len = get32(buf)) >= 8 &&
			    len <= MAX_MSG && full_io(fds[i].fd, buf + 8, len - 8, 0) == 0) {
				r = reply_len(len);
				if (full_io(fds[i].fd, r == len ? buf : out, r, 1) == 0)
					continue;
			}
			close(fds[i].fd); /* closed by the client, or a broken request */
			fds[i--] = fds[--nfds];
		}
		if ((fds[0].revents & POLLIN) && nfds < MAX_CONNS + 2) {
			int c = accept4(fds[0].fd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0) {
				setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
				memset(out, 'r', sizeof(out));
				fds[nfds].fd = c;
				fds[nfds].events = POLLIN;
				fds[nfds++].revents = 0;
			}
		}
	}
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static double pct(const int64_t *v, long n, double p)
{
	long i = (long)(p / 100.0 * (double)(n - 1) + 0.5);

	return (double)v[i < n ? i : n - 1] / 1000.0;
}

static int ping(const char *proto, const char *host, const char *port, long count, long size)
{
	struct sockaddr_in sa;
	int tcp = strcmp(proto, "tcp") == 0, one = 1, fd;
	long warm = count / 10, lost = 0, n = 0;
	int64_t *rtt;
	double sum = 0;

	if ((!tcp && strcmp(proto, "udp") != 0) || count < 1 || size < 8 || size > MAX_MSG ||
	    addr_of(host, port, &sa) != 0)
		return usage();
	rtt = calloc((size_t)count, sizeof(*rtt));
	fd = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
	if (rtt == NULL || fd < 0)
		return 69;
	if (tcp)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	else {
		struct timeval tv = {1, 0};

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "vb-rr: connect %s:%s: %s\n", host, port, strerror(errno));
		return 69;
	}
	memset(buf, 'q', (size_t)size);
	put32(buf, (uint32_t)size);
	put32(buf + 4, 0);
	for (long i = 0; i < warm + count; i++) {
		int64_t t0 = now_ns();
		int ok;

		if (tcp) {
			ok = full_io(fd, buf, (size_t)size, 1) == 0 &&
			     full_io(fd, out, (size_t)size, 0) == 0;
			if (!ok) {
				fprintf(stderr, "vb-rr: tcp round trip %ld failed: %s\n", i,
					strerror(errno ? errno : ECONNRESET));
				return 69;
			}
		} else {
			ssize_t r;

			if (send(fd, buf, (size_t)size, 0) != size) {
				fprintf(stderr, "vb-rr: send: %s\n", strerror(errno));
				return 69;
			}
			r = recv(fd, out, sizeof(out), 0);
			ok = r == size;
			if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				fprintf(stderr, "vb-rr: udp recv: %s\n", strerror(errno));
				return 69;
			}
		}
		if (i < warm)
			continue;
		if (!ok) {
			lost++;
			continue;
		}
		rtt[n] = now_ns() - t0;
		sum += (double)rtt[n++];
	}
	if (n == 0) {
		fprintf(stderr, "vb-rr: no reply from %s:%s (%ld lost)\n", host, port, lost);
		return 69;
	}
	qsort(rtt, (size_t)n, sizeof(*rtt), cmp64);
	printf("rr proto=%s size=%ld count=%ld lost=%ld min_us=%.3f avg_us=%.3f p50_us=%.3f "
	       "p90_us=%.3f p99_us=%.3f p999_us=%.3f max_us=%.3f\n",
	       proto, size, n, lost, (double)rtt[0] / 1000.0, sum / (double)n / 1000.0,
	       pct(rtt, n, 50), pct(rtt, n, 90), pct(rtt, n, 99), pct(rtt, n, 99.9),
	       (double)rtt[n - 1] / 1000.0);
	return 0;
}

static int flood(const char *host, const char *port, long count, long gap_us, long req, long rep)
{
	struct sockaddr_in sa;
	long received = 0, sent = 0;
	int64_t first = 0, last = 0, next, deadline;
	int fd;

	if (count < 1 || gap_us < 0 || req < 8 || req > MAX_MSG || rep < 1 || rep > MAX_MSG ||
	    addr_of(host, port, &sa) != 0)
		return usage();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "vb-rr: connect %s:%s: %s\n", host, port, strerror(errno));
		return 69;
	}
	memset(buf, 'q', (size_t)req);
	put32(buf, (uint32_t)req);
	put32(buf + 4, (uint32_t)rep);
	next = first = now_ns();
	deadline = INT64_MAX;
	while (received < count) {
		int64_t t = now_ns();
		ssize_t r;

		if (sent < count && t >= next) {
			if (send(fd, buf, (size_t)req, MSG_DONTWAIT) == req || errno == ECONNREFUSED)
				sent++;
			next += gap_us * 1000;
			if (sent == count)
				deadline = now_ns() + 2000000000LL;
			continue;
		}
		while ((r = recv(fd, out, sizeof(out), MSG_DONTWAIT)) >= 0 || errno == ECONNREFUSED) {
			if (r == rep) {
				received++;
				last = now_ns();
			}
		}
		if (t > deadline)
			break;
		{ /* sleep until the next send is due or a reply arrives */
			int64_t wait = sent < count ? next - now_ns() : 10000000;
			struct timespec ts = {0, wait > 0 ? (long)wait : 0};
			struct pollfd p = {fd, POLLIN, 0};

			if (wait > 0)
				ppoll(&p, 1, &ts, NULL);
		}
	}
	if (received == 0) {
		fprintf(stderr, "vb-rr: no reply from %s:%s (%ld sent)\n", host, port, sent);
		return 69;
	}
	printf("flood sent=%ld received=%ld request_bytes=%ld reply_bytes=%ld gap_us=%ld "
	       "seconds=%.6f\n",
	       sent, received, req, rep, gap_us, (double)(last - first) / 1e9);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2]);
	if (argc == 7 && strcmp(argv[1], "ping") == 0)
		return ping(argv[2], argv[3], argv[4], atol(argv[5]), atol(argv[6]));
	if (argc == 8 && strcmp(argv[1], "flood") == 0)
		return flood(argv[2], argv[3], atol(argv[4]), atol(argv[5]), atol(argv[6]),
			     atol(argv[7]));
	return usage();
}
