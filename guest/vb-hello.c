/* vb-hello: print one line and exit 0. The smallest workload: its exit is the
 * "spawn -> exit" boot phase. Exit 1 if the write fails.
 *
 *   vb-hello BYTES   instead writes exactly BYTES bytes ('x', a newline every 64) to
 *                    stdout and exits 0: what `exec` reads back through the runtime
 *                    (64 usage). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_all(const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, p, n);

		if (w <= 0)
			return 1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const char msg[] = "hello from virtbench\n";
	static char block[65536];
	char *end = NULL;
	long long left;

	if (argc < 2)
		return write_all(msg, sizeof(msg) - 1);
	left = strtoll(argv[1], &end, 10);
	if (argc > 2 || *end != '\0' || left < 0 || left > (1LL << 40))
		return 64;
	memset(block, 'x', sizeof(block));
	for (size_t i = 63; i < sizeof(block); i += 64)
		block[i] = '\n';
	while (left > 0) {
		size_t n = left < (long long)sizeof(block) ? (size_t)left : sizeof(block);

		if (write_all(block, n))
			return 1;
		left -= (long long)n;
	}
	return 0;
}
