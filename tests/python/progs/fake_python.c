/* Stands for a Python the agent does not know: named python*, without the
 * CPython C API. */
#include <stdio.h>

int main(void)
{
	puts("fake python");
	return 0;
}
