/* Counts the malloc arenas in the process's address space (the 64 MiB
 * reservations glibc makes for a thread's own arena: mappings of 60 MiB or
 * more) after 100 ms, while the agent's threads ran, and prints it: the
 * program has one thread and no arena of its own, so the agent's threads
 * must have none either (with --sample, the stats thread's failing dlsym
 * gave it one: +64 MiB of address space, 128 MiB at its peak). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	free(malloc(100));
	usleep(100000);
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 1;
	char l[512];
	int big = 0;
	while (fgets(l, sizeof l, f)) {
		unsigned long a, b;
		if (sscanf(l, "%lx-%lx", &a, &b) == 2 && b - a >= (60ul << 20))
			big++;
	}
	fclose(f);
	printf("%d big mappings\n", big);
	return 0;
}
