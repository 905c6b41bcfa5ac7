/* vb-mcload: a closed-loop memcached load generator with latency percentiles (the host
 * side of the memcached workload).
 *
 *   vb-mcload HOST PORT CONNECTIONS SECONDS KEYS VALUE_BYTES GET_PERCENT
 *
 * First every key (key:0 .. key:KEYS-1) is set once, untimed, over one connection. Then
 * CONNECTIONS connections each keep one request outstanding for SECONDS: a get of a
 * random key (GET_PERCENT of requests) or a set of VALUE_BYTES bytes. Each request's
 * latency is the time from its send to the last byte of its reply, by the monotonic
 * clock, in a histogram of 1 us buckets up to 100 ms (slower ones in the last bucket,
 * counted apart). Prints one line:
 *   mcload conns=.. seconds=.. ops=.. ops_per_s=.. gets=.. sets=.. misses=.. errors=..
 *   p50_us=.. p90_us=.. p99_us=.. p999_us=.. max_us=.. over_100ms=..
 * Exit codes: 64 usage, 69 network or protocol error. Addresses are numeric IPv4. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 4096
#define MAX_VALUE 65536
#define BUCKETS 100000 /* 1 us each: up to 100 ms */

struct conn {
	int fd;
	int is_get;
	int64_t sent_ns;
	size_t got;
	size_t want; /* a get's reply length once known (0: not yet) */
	char in[MAX_VALUE + 256];
};

static struct conn conns[MAX_CONNS];
static struct pollfd pfds[MAX_CONNS];
static uint64_t hist[BUCKETS];
static char value[MAX_VALUE];
static uint64_t over, gets, sets, misses, errors_;
static int64_t max_ns;

static int usage(void)
{
	fprintf(stderr, "usage: vb-mcload HOST PORT CONNECTIONS(1..%d) SECONDS KEYS "
			"VALUE_BYTES(1..%d) GET_PERCENT(0..100)\n", MAX_CONNS, MAX_VALUE);
	return 64;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int fail(const char *what)
{
	fprintf(stderr, "vb-mcload: %s: %s\n", what, strerror(errno));
	return 69;
}

static int dial(struct sockaddr_in *to)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)to, sizeof(*to)) != 0) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int send_request(struct conn *c, long keys, size_t vbytes, int get_pct)
{
	char head[128];
	long key = random() % keys;
	int n;

	c->is_get = (random() % 100) < get_pct;
	c->got = 0;
	c->want = 0;
	c->sent_ns = now_ns();
	if (c->is_get) {
		n = snprintf(head, sizeof(head), "get key:%ld\r\n", key);
		return send_all(c->fd, head, (size_t)n);
	}
	n = snprintf(head, sizeof(head), "set key:%ld 0 0 %zu\r\n", key, vbytes);
	if (send_all(c->fd, head, (size_t)n) != 0 || send_all(c->fd, value, vbytes) != 0)
		return -1;
	return send_all(c->fd, "\r\n", 2);
}

/* 1: the reply is whole, 0: not yet, -1: a protocol error */
static int reply_done(struct conn *c)
{
	if (!c->is_get) {
		if (c->got >= 8 && memcmp(c->in, "STORED\r\n", 8) == 0)
			return 1;
		return memchr(c->in, '\n', c->got) ? -1 : 0;
	}
	if (c->got >= 5 && memcmp(c->in, "END\r\n", 5) == 0) {
		misses++;
		return 1;
	}
	if (c->want == 0) {
		char *eol = memchr(c->in, '\n', c->got);
		unsigned long flags, bytes;
		char key[64];

		if (eol == NULL)
			return 0;
		if (sscanf(c->in, "VALUE %63s %lu %lu", key, &flags, &bytes) != 3)
			return -1;
		c->want = (size_t)(eol - c->in + 1) + bytes + 2 + 5; /* data\r\nEND\r\n */
	}
	return c->got >= c->want ? 1 : 0;
}

static void record(int64_t ns)
{
	int64_t us = ns / 1000;

	if (ns > max_ns)
		max_ns = ns;
	if (us >= BUCKETS) {
		over++;
		us = BUCKETS - 1;
	}
	hist[us]++;
}

static double pct(uint64_t total, double q)
{
	uint64_t want = (uint64_t)(q * (double)total), seen = 0;
	int i;

	if (want >= total)
		want = total - 1;
	for (i = 0; i < BUCKETS; i++) {
		seen += hist[i];
		if (seen > want)
			return i + 0.5; /* the bucket's middle */
	}
	return BUCKETS;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to;
	int nconn, get_pct, i;
	long keys, k;
	double seconds;
	size_t vbytes;
	int64_t t0, end;
	uint64_t ops = 0;

	if (argc != 8)
		return usage();
	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	to.sin_port = htons((uint16_t)atoi(argv[2]));
	nconn = atoi(argv[3]);
	seconds = atof(argv[4]);
	keys = atol(argv[5]);
	vbytes = (size_t)atol(argv[6]);
	get_pct = atoi(argv[7]);
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1 || to.sin_port == 0 || nconn < 1 ||
	    nconn > MAX_CONNS || seconds <= 0 || keys < 1 || vbytes < 1 || vbytes > MAX_VALUE ||
	    get_pct < 0 || get_pct > 100)
		return usage();
	memset(value, 'v', sizeof(value));
	srandom(1);
	/* fill: every key once, over one connection */
	conns[0].fd = dial(&to);
	if (conns[0].fd < 0)
		return fail("connect");
	for (k = 0; k < keys; k++) {
		char head[128];
		int n = snprintf(head, sizeof(head), "set key:%ld 0 0 %zu\r\n", k, vbytes);
		ssize_t r;

		if (send_all(conns[0].fd, head, (size_t)n) != 0 ||
		    send_all(conns[0].fd, value, vbytes) != 0 || send_all(conns[0].fd, "\r\n", 2))
			return fail("fill: send");
		r = read(conns[0].fd, conns[0].in, 8);
		if (r != 8 || memcmp(conns[0].in, "STORED\r\n", 8) != 0) {
			fprintf(stderr, "vb-mcload: fill: the server did not store key:%ld\n", k);
			return 69;
		}
	}
	close(conns[0].fd);
	for (i = 0; i < nconn; i++) {
		conns[i].fd = dial(&to);
		if (conns[i].fd < 0)
			return fail("connect");
		pfds[i].fd = conns[i].fd;
		pfds[i].events = POLLIN;
	}
	t0 = now_ns();
	end = t0 + (int64_t)(seconds * 1e9);
	for (i = 0; i < nconn; i++)
		if (send_request(&conns[i], keys, vbytes, get_pct) != 0)
			return fail("send");
	while (now_ns() < end) {
		int ready = poll(pfds, (nfds_t)nconn, 100);

		if (ready < 0 && errno != EINTR)
			return fail("poll");
		for (i = 0; i < nconn && ready > 0; i++) {
			struct conn *c = &conns[i];
			ssize_t r;
			int done;

			if (!(pfds[i].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			r = read(c->fd, c->in + c->got, sizeof(c->in) - 1 - c->got);
			if (r <= 0) {
				if (r < 0 && errno == EINTR)
					continue;
				fprintf(stderr, "vb-mcload: connection %d closed by the server\n", i);
				return 69;
			}
			c->got += (size_t)r;
			done = reply_done(c);
			if (done < 0) {
				errors_++;
				c->in[c->got] = '\0';
				fprintf(stderr, "vb-mcload: unexpected reply: %.60s\n", c->in);
				return 69;
			}
			if (done == 0)
				continue;
			record(now_ns() - c->sent_ns);
			ops++;
			if (c->is_get)
				gets++;
			else
				sets++;
			if (send_request(c, keys, vbytes, get_pct) != 0)
				return fail("send");
		}
	}
	seconds = (double)(now_ns() - t0) / 1e9;
	if (ops == 0) {
		fprintf(stderr, "vb-mcload: no request completed in %.1f s\n", seconds);
		return 69;
	}
	printf("mcload conns=%d seconds=%.3f ops=%llu ops_per_s=%.1f gets=%llu sets=%llu "
	       "misses=%llu errors=%llu p50_us=%.1f p90_us=%.1f p99_us=%.1f p999_us=%.1f "
	       "max_us=%.1f over_100ms=%llu\n",
	       nconn, seconds, (unsigned long long)ops, (double)ops / seconds,
	       (unsigned long long)gets, (unsigned long long)sets, (unsigned long long)misses,
	       (unsigned long long)errors_, pct(ops, 0.50), pct(ops, 0.90), pct(ops, 0.99),
	       pct(ops, 0.999), (double)max_ns / 1e3, (unsigned long long)over);
	return 0;
}
