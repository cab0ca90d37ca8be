/* Leaves through _exit(3): no atexit handlers, no destructors. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	for (int i = 0; i < 300; i++)
		free(malloc(200));
	printf("leaving via _exit\n");
	fflush(stdout);
	_exit(3);
}
