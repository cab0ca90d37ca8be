/* Uses its own SIGPROF timer (ITIMER_PROF) while burning CPU in busy_loop;
 * the agent's sampler (a real-time signal) must leave it alone. Prints
 * whether its own ticks arrived. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t ticks;
static void on_prof(int s) { (void)s; ticks++; }

__attribute__((noinline)) double busy_loop(long n)
{
	volatile double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	return x;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sigaction(SIGPROF, &sa, NULL);
	struct itimerval it = {{0, 5000}, {0, 5000}};
	setitimer(ITIMER_PROF, &it, NULL);
	double x = 0;
	for (int r = 0; r < 40 && ticks < 20; r++)
		x += busy_loop(5000000);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_PROF, &off, NULL);
	printf("own SIGPROF ticks: %s\n", ticks > 0 ? "yes" : "no");
	return x < 0;
}
