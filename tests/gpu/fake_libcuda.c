/* A fake libcuda for the probe tests: cuInit returns $FAKE_CUINIT (default 0),
 * cuDeviceGetCount gives $FAKE_DEVICES (default 1), cuDriverGetVersion
 * $FAKE_DRIVER_VERSION (default 13000). Loaded by path, never installed. */
#include <stdlib.h>
#include <string.h>

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : def;
}

int cuInit(unsigned flags)
{
	(void)flags;
	return env_int("FAKE_CUINIT", 0);
}

int cuDriverGetVersion(int *v)
{
	*v = env_int("FAKE_DRIVER_VERSION", 13000);
	return 0;
}

int cuDeviceGetCount(int *n)
{
	*n = env_int("FAKE_DEVICES", 1);
	return 0;
}

int cuDeviceGet(int *dev, int ordinal)
{
	*dev = ordinal;
	return 0;
}

int cuDeviceGetName(char *name, int len, int dev)
{
	(void)dev;
	strncpy(name, "Fake GPU 9000", (size_t)len - 1);
	name[len - 1] = 0;
	return 0;
}
