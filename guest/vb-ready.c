/* vb-ready: tell the host this instance is ready, then exec the rest of argv.
 *
 *   vb-ready ADDRESS INSTANCE-ID [PROGRAM ARGS...]
 *
 * ADDRESS is as in vb-probe.h. Sends one datagram "ready INSTANCE-ID" (file: the
 * line "VB-READY INSTANCE-ID") and then execs PROGRAM, or exits 0 when none is
 * given. The host hears ready before the exec is done: a program whose own state is
 * measured right after ready signals itself (vb-sleep).
 *
 *   vb-ready ADDRESS INSTANCE-ID --beat PERIOD-MS [DIRTY-MIB]
 *
 * first writes DIRTY-MIB MiB of its own memory with bytes that do not compress (a
 * xorshift stream, every page touched: what a checkpoint must save), then signals
 * ready, stays, and every PERIOD-MS sends "beat INSTANCE-ID TOKEN SEQ" (file: the
 * line "VB-BEAT INSTANCE-ID TOKEN SEQ"): TOKEN is 16 random hex digits drawn once, at
 * start, and SEQ counts from 1. A paused instance stops beating; a restored one goes on
 * with the same TOKEN and the next SEQ, which proves it is the one checkpointed. A
 * beat that cannot be sent is skipped (the host may be away for a moment).
 * On SIGUSR1 (vb-touch sends it: after a restore), before its next beat it reads one
 * word of every 4 KiB page it dirtied, timed on its monotonic clock, and from then on
 * every beat carries that time in ns as a fifth field ("beat ID TOKEN SEQ TOUCH-NS";
 * without it until then): the first touch of the restored memory.
 * Built for WASI, there is no PROGRAM to exec (71), and ADDRESS is file: or fd:.
 * Exit codes: 64 usage, 65 bad address, 70 socket/send failed, 71 exec failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef __wasi__
#include <sys/random.h>
#endif
#include <unistd.h>
#ifndef __wasi__
#include <signal.h>
#endif

#include "vb-probe.h"

#define EX_EXEC 71

/* the dirtied memory, kept (never freed); a global, so the writes cannot be elided */
unsigned long long *volatile vb_dirty;
static size_t vb_dirty_words;
unsigned long long volatile vb_sum; /* what the touch read, so the reads cannot be elided */
#ifndef __wasi__
static volatile sig_atomic_t vb_touch_asked;

static void asked(int sig)
{
	(void)sig;
	vb_touch_asked = 1;
}
#endif

#ifndef __wasi__
/* ns to read one word of every 4 KiB page dirtied (at least 1: 0 means not touched) */
static unsigned long long touch(void)
{
	struct timespec a, b;
	unsigned long long sum = 0, ns;
	size_t i;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < vb_dirty_words; i += 512)
		sum += vb_dirty[i];
	clock_gettime(CLOCK_MONOTONIC, &b);
	vb_sum = sum;
	ns = (unsigned long long)(b.tv_sec - a.tv_sec) * 1000000000ULL + (unsigned long long)b.tv_nsec;
	ns -= (unsigned long long)a.tv_nsec;
	return ns ? ns : 1;
}
#endif

/* DIRTY-MIB MiB written with a xorshift64 stream */
static int dirty(const char *mib_arg)
{
	char *end = NULL;
	long mib = strtol(mib_arg, &end, 10);
	unsigned long long x = 0x9e3779b97f4a7c15ULL, *p;
	size_t i, n;

	if (*end != '\0' || mib < 0 || mib > 1048576)
		return EX_USAGE_;
	n = (size_t)mib << 17; /* 8-byte words */
	p = n ? malloc(n * sizeof(*p)) : NULL;
	if (n && p == NULL) {
		perror("vb-ready: dirty");
		return EX_EXEC;
	}
	vb_dirty = p;
	vb_dirty_words = n;
	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		vb_dirty[i] = x;
	}
	return 0;
}

static int beat(const char *addr, const char *id, const char *period)
{
	char msg[256], *end = NULL;
	unsigned long long token = 0, seq, touched_ns = 0;
	long ms = strtol(period, &end, 10);
	struct timespec ts, pause;

	if (*end != '\0' || ms <= 0 || ms > 60000)
		return EX_USAGE_;
#ifdef __wasi__
	if (getentropy(&token, sizeof(token)) != 0) {
		clock_gettime(CLOCK_REALTIME, &ts); /* no entropy: time */
		token = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec;
	}
#else
	if (getrandom(&token, sizeof(token), 0) != (ssize_t)sizeof(token)) {
		clock_gettime(CLOCK_REALTIME, &ts); /* no entropy yet: time and pid */
		token = ((unsigned long long)ts.tv_nsec << 20) ^ (unsigned long long)ts.tv_sec ^
			((unsigned long long)getpid() << 40);
	}
#endif
	pause.tv_sec = ms / 1000;
	pause.tv_nsec = (ms % 1000) * 1000000L;
#ifndef __wasi__
	signal(SIGUSR1, asked);
#endif
	for (seq = 1;; seq++) {
		char touched[32] = "";
		int len;

#ifndef __wasi__
		if (vb_touch_asked) {
			vb_touch_asked = 0;
			touched_ns = touch();
		}
#endif
		if (touched_ns)
			snprintf(touched, sizeof(touched), " %llu", touched_ns);
		if (is_line_addr(addr)) {
			len = snprintf(msg, sizeof(msg), "VB-BEAT %s %016llx %llu%s\n", id, token, seq,
				       touched);
			write_to(addr, msg, len);
		} else {
			len = snprintf(msg, sizeof(msg), "beat %s %016llx %llu%s", id, token, seq,
				       touched);
			send_to(addr, msg, len);
		}
		nanosleep(&pause, NULL);
	}
}

int main(int argc, char **argv)
{
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: vb-ready udp:IP:PORT|unix:PATH|file:PATH|fd:N INSTANCE-ID [PROGRAM ARGS...|--beat MS [DIRTY-MIB]]\n");
		return EX_USAGE_;
	}
	if (argc == 6 && strcmp(argv[3], "--beat") == 0 && (rc = dirty(argv[5])) != 0)
		return rc;
	rc = signal_ready(argv[1], argv[2]);
	if (rc != 0) {
		fprintf(stderr, "vb-ready: cannot signal %s (exit %d)\n", argv[1], rc);
		return rc;
	}
	if (argc == 3)
		return 0;
	if (strcmp(argv[3], "--beat") == 0)
		return argc == 5 || argc == 6 ? beat(argv[1], argv[2], argv[4]) : EX_USAGE_;
#ifdef __wasi__
	fprintf(stderr, "vb-ready: a WASI module cannot exec %s\n", argv[3]);
#else
	execv(argv[3], &argv[3]);
	perror("vb-ready: exec");
#endif
	return EX_EXEC;
}
