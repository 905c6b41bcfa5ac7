/* vb-sleep: block until killed, with the smallest RSS a static binary allows.
 * Used as the background/idle instance for density and scalability. SIGTERM and
 * SIGINT end it with status 0 so a clean stop is distinguishable from a crash. */
#include <signal.h>
#include <unistd.h>

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_term };

	if (sigemptyset(&sa.sa_mask) != 0)
		return 2;
	if (sigaction(SIGTERM, &sa, NULL) != 0 || sigaction(SIGINT, &sa, NULL) != 0)
		return 2;
	for (;;)
		pause();
}
