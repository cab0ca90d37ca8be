/* A program whose signal handler closes descriptors (close_range over all
 * above stderr, the spool's included) while its main thread floods
 * events. Under `record` with few small buffers (PHASEPROF_MAX_BUFFERS),
 * the main thread often writes the spool itself, holding the spool's lock,
 * when the signal lands: it must finish, every event recorded. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "phaseprof_annotate.h"

#define EVENTS 200000

static volatile sig_atomic_t handled;
static volatile int stop;

static void on_usr1(int sig)
{
	(void)sig;
	close_range(3, ~0U, 0);
	handled++;
}

static void *sender(void *arg)
{
	pthread_t to = *(pthread_t *)arg;
	while (!stop) {
		pthread_kill(to, SIGUSR1);
		usleep(200);
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t self = pthread_self(), t;
	pthread_create(&t, NULL, sender, &self);
	for (int i = 0; i < EVENTS; i++) {
		PPA_PHASE_BEGIN(PP_SPAN, "flood");
		PPA_PHASE_END();
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("%d spans, signals handled: %s\n", EVENTS, handled > 0 ? "yes" : "no");
	return 0;
}
