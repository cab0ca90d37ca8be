/* Works, then is killed by a signal it sends itself (argv[1]: TERM or KILL). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	for (int i = 0; i < 500; i++)
		free(malloc(1000));
	printf("about to be killed\n");
	fflush(stdout);
	kill(getpid(), argc > 1 && strcmp(argv[1], "KILL") == 0 ? SIGKILL : SIGTERM);
	pause();
	return 0;
}
