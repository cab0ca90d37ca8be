/* A library whose RUNPATH is $ORIGIN/plugins; it dlopens its plugin by bare
 * name and by an $ORIGIN path. Under a naive dlopen interposer both fail. */
#include <dlfcn.h>
#include <stdio.h>

int host_load_plugins(void)
{
	int ok = 0;
	void *a = dlopen("libplugin.so", RTLD_NOW);
	if (a) {
		int (*f)(void) = (int (*)(void))dlsym(a, "plugin_answer");
		ok += f && f() == 42;
	} else
		fprintf(stderr, "bare name: %s\n", dlerror());
	void *b = dlopen("$ORIGIN/plugins/libplugin.so", RTLD_NOW);
	if (b)
		ok += 1;
	else
		fprintf(stderr, "$ORIGIN path: %s\n", dlerror());
	return ok;
}
