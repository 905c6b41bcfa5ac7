/* vb-hello: print one line and exit 0. The smallest workload: its exit is the
 * "spawn -> exit" boot phase. Exit 1 if the write fails. */
#include <string.h>
#include <unistd.h>

int main(void)
{
	static const char msg[] = "hello from virtbench\n";
	ssize_t n = write(STDOUT_FILENO, msg, sizeof(msg) - 1);

	return n == (ssize_t)(sizeof(msg) - 1) ? 0 : 1;
}
