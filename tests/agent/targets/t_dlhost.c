#include <stdio.h>
int host_load_plugins(void);
int main(void)
{
	int ok = host_load_plugins();
	printf("plugins loaded: %d of 2\n", ok);
	return ok == 2 ? 0 : 1;
}
