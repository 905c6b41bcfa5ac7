/* vb-sleep: block until killed, with a static binary's small RSS.
 *
 *   vb-sleep [ADDRESS INSTANCE-ID]
 *
 * Used as the background/idle instance for density and scalability. SIGTERM and
 * SIGINT end it with status 0 so a clean stop is distinguishable from a crash.
 * Given an ADDRESS (as in vb-probe.h), it signals ready itself once its handlers are
 * in place: the host then hears ready from the program it measures, not from a
 * vb-ready still on its way into exec (whose memory is another program's, and which
 * /proc cannot read while the exec is under way).
 * Built for WASI (no signals: its runtime's process ends when stopped), it sleeps in
 * long naps instead.
 * Exit codes: 2 cannot set its handlers, 64 usage, 65 bad address, 70 send failed. */
#include <unistd.h>
#ifndef __wasi__
#include <signal.h>
#endif

#include "vb-probe.h"

/* say why on stderr, and exit with rc */
static int fail(const char *msg, size_t len, int rc)
{
	ssize_t n = write(2, msg, len);

	(void)n; /* nothing more to do when even stderr is gone */
	return rc;
}

#ifndef __wasi__
static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

/* SIGTERM and SIGINT end it with status 0; 0, or 2 when they cannot be set */
static int handlers(void)
{
	struct sigaction sa = { .sa_handler = on_term };

	if (sigemptyset(&sa.sa_mask) != 0)
		return 2;
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return 2;
	return 0;
}
#endif

int main(int argc, char **argv)
{
	int rc;

	if (argc != 1 && argc != 3) {
		static const char use[] = "usage: vb-sleep [udp:IP:PORT|unix:PATH|file:PATH INSTANCE-ID]\n";

		return fail(use, sizeof(use) - 1, EX_USAGE_);
	}
#ifndef __wasi__
	if (handlers() != 0)
		return 2;
#endif
	if (argc == 3) {
		rc = signal_ready(argv[1], argv[2]);
		if (rc != 0) {
			static const char err[] = "vb-sleep: cannot signal the host\n";

			return fail(err, sizeof(err) - 1, rc);
		}
	}
	for (;;) {
#ifdef __wasi__
		sleep(3600);
#else
		pause();
#endif
	}
}
