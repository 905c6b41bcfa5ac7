/* vb-touch: ask the beat workload's vb-ready, in this instance, to touch the memory it
 * dirtied (after a restore: its first touch) and to say how long that took.
 *
 *   vb-touch
 *
 * Sends SIGUSR1 to every process of this instance whose name (/proc/PID/comm) is
 * vb-ready; prints how many it signalled. Exit codes: 0 one or more signalled, 1 none
 * found, 70 /proc unreadable. Run through the runtime's exec, in the instance's own
 * pid namespace (a VM's guest, a container), so the vb-ready it finds is the instance's. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int found = 0;
	pid_t me = getpid();

	if (d == NULL) {
		perror("vb-touch: /proc");
		return 70;
	}
	while ((e = readdir(d)) != NULL) {
		char path[64], comm[32] = "";
		char *end = NULL;
		long pid = strtol(e->d_name, &end, 10);
		FILE *f;

		if (*end != '\0' || pid <= 0 || pid == me)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		if (strcmp(comm, "vb-ready") == 0 && kill((pid_t)pid, SIGUSR1) == 0)
			found++;
	}
	closedir(d);
	printf("vb-touch: %d signalled\n", found);
	return found ? 0 : 1;
}
